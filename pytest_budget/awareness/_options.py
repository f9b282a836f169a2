"""The awareness suite's options: its flags, ini keys and their parsed value.

:func:`add_options` registers them (the plugin calls it with pytest's option group);
:func:`parse_options` reads them into :class:`AwarenessOptions`, one line per bad value.
The online mode's own options are parsed by :mod:`pytest_budget.awareness.online._options`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_budget._core.sizes import DEFAULT_SIZE, SIZES
from pytest_budget.awareness.online._options import OnlineOptionError, parse_online_options

if TYPE_CHECKING:  # the checks load when options are parsed, not registered
    from pytest_budget._core.option_checks import OptionReader
    from pytest_budget.awareness._replay.answers import ParsePolicy  # imports numpy

__all__ = [
    "AWARENESS_ENVS",
    "EXTRA_AWARENESS_ENVS",
    "PARSE_MODES",
    "ROLLOUT_FORMATS",
    "AwarenessOptions",
    "add_options",
    "parse_options",
]

#: Awareness environments with a built-in actor (``--budget-env``).
AWARENESS_ENVS: tuple[str, ...] = (
    "sokoban-8x8", "sokoban-6x6", "warehouse", "search", "swe-synthetic",
)  # fmt: skip
#: Built-in environments run only when named in ``--budget-env`` (the paper's Warehouse
#: scheme, whose time cap leaks the label).
EXTRA_AWARENESS_ENVS: tuple[str, ...] = ("warehouse-paper",)
#: ``--budget-rollout-format``: how ``--budget-rollouts`` files are read.
ROLLOUT_FORMATS = ("auto", "pytest-budget", "mini-swe-agent", "openai-chat", "bagen", "inspect")
#: Which parser reads awareness answers: ``bagen`` is BAGEN's public parser, ``strict`` the
#: stricter reading (see ``awareness/answers.py``).
PARSE_MODES: tuple[ParsePolicy, ...] = ("bagen", "strict")
DESTS = (
    "budget_env", "budget_rollouts", "budget_rollout_count", "budget_rollout_format",
    "budget_rollout_env", "budget_rollout_missing_usage", "budget_rollout_cap",
    "budget_search_url", "budget_warehouse_demand", "budget_parse", "budget_swe_report",
    "budget_logged_estimates",
)  # fmt: skip
LIST_DESTS = ("budget_env",)


@dataclass(frozen=True)
class AwarenessOptions:
    """What an awareness run was asked to do (replay mode, and the online mode's settings)."""

    rollouts: tuple[str, ...] = ()
    envs: tuple[str, ...] = AWARENESS_ENVS
    rollout_count: int = SIZES[DEFAULT_SIZE].rollout_count
    parse: ParsePolicy = "bagen"
    warehouse_demand: str | None = None
    rollout_format: str = "auto"
    rollout_env: str | None = None
    missing_usage: str = "error"
    rollout_cap: float | None = None
    swe_reports: tuple[str, ...] = ()
    logged_estimates: tuple[str, ...] = ()
    search_url: str | None = None
    awareness_mode: str = "replay"
    online_protocols: tuple[str, ...] = ("single",)
    online_caps: tuple[float, ...] = (0.5, 1.0, 2.0)
    online_charge: str = "acting"
    online_episodes: int = 32
    online_success_value: float = 1.0

    @property
    def awareness_online(self) -> bool:
        """Whether the online cells run (``--budget-awareness-mode=online|both``)."""
        return self.awareness_mode in ("online", "both")


def add_options(add: Callable[..., None], add_ini: Callable[..., None]) -> None:
    """The awareness suite's flags (rollouts, then the online mode) and its ini key."""
    _add_rollout_flags(add)
    _add_online_flags(add)
    add_ini("budget_parse", "awareness: answer parser, bagen or strict", default="")


def _add_rollout_flags(add: Callable[..., None]) -> None:
    """Which rollouts are replayed: environments, imported logs, their budgets."""
    add(
        "--budget-env",
        help="awareness: environments, comma list of sokoban-8x8, sokoban-6x6, warehouse, "
        "search, swe-synthetic (bundled coding-agent logs) (default: all)",
    )
    add(
        "--budget-rollouts",
        action="append",
        metavar="PATH",
        help="awareness: a JSONL rollout file (repeatable); replaces generated rollouts",
    )
    add(
        "--budget-rollout-count",
        help=f"awareness: rollouts generated per environment (default "
        f"{SIZES[DEFAULT_SIZE].rollout_count}; --budget-size=paper: BAGEN's 128)",
    )
    add(
        "--budget-rollout-format",
        help="awareness: format of --budget-rollouts files: auto (default), pytest-budget, "
        "mini-swe-agent, openai-chat, bagen (BAGEN's dialogue logs), inspect (inspect_ai logs)",
    )
    add(
        "--budget-swe-report",
        action="append",
        metavar="PATH",
        help="awareness: a SWE-bench harness report (resolved_ids) deciding which imported "
        "coding-agent logs succeeded (repeatable)",
    )
    add(
        "--budget-logged-estimates",
        action="append",
        metavar="PATH",
        help="awareness: answers already logged (BAGEN's estimation output or a pytest-budget "
        "JSON report), replayed by the 'logged' estimator without calling a model (repeatable)",
    )
    add(
        "--budget-rollout-env",
        metavar="LABEL",
        help="awareness: env label for imported coding-agent logs (default swe-<model>)",
    )
    add(
        "--budget-rollout-missing-usage",
        help="awareness: an imported assistant call without usage: error (default) or skip",
    )
    add(
        "--budget-rollout-cap",
        metavar="TOKENS",
        help="awareness: token budget for imported coding-agent logs (default: the family's "
        "median total)",
    )
    add(
        "--budget-search-url",
        metavar="URL",
        help="awareness: use your own retrieval server (POST /search) for the search environment",
    )
    add(
        "--budget-warehouse-demand",
        metavar="CSV",
        help="awareness: your own Warehouse demand panel (columns week,retailer,sku,units,price)",
    )


def _add_online_flags(add: Callable[..., None]) -> None:
    """The online mode (the agent acts under a cap), and the answer parser."""
    add(
        "--budget-awareness-mode",
        help="awareness: replay (BAGEN's rollout-replay, default), online (the agent acts "
        "under a hard cap and estimates while it acts) or both",
    )
    add(
        "--budget-online-protocol",
        help="awareness online: single (action and estimate in one reply, default), two "
        "(a separate estimate call after each action), or single,two",
    )
    add(
        "--budget-online-caps",
        help="awareness online: cap levels as multiples of each environment's cap, comma "
        "list (default 0.5,1,2)",
    )
    add(
        "--budget-online-charge",
        help="awareness online: what the cap is charged with: acting (default) or both "
        "(acting and estimation tokens)",
    )
    add("--budget-online-episodes", help="awareness online: episodes per cell (default 32)")
    add(
        "--budget-online-success-value",
        help="awareness online: the value of one success in average runs' tokens, for the "
        "early-stop net value (default 1)",
    )
    add(
        "--budget-parse",
        help="awareness: answer parser, bagen (BAGEN's public parser, default) or strict",
    )


_Choice = TypeVar("_Choice", bound=str)


def _choice(option: str, value: str, choices: tuple[_Choice, ...], what: str) -> _Choice:
    from pytest_budget._core.option_checks import OptionError

    for choice in choices:  # the matching element keeps its Literal type
        if choice == value:
            return choice
    raise OptionError(f"{option}: unknown {what} {value!r}; choose from {', '.join(choices)}")


def _rollout_cap(value: Any) -> float | None:
    from pytest_budget._core.option_checks import OptionError

    if value is None:
        return None
    try:
        cap = float(value)
    except ValueError:
        raise OptionError(f"--budget-rollout-cap: {value!r} is not a number of tokens") from None
    if not math.isfinite(cap) or cap <= 0:
        raise OptionError(f"--budget-rollout-cap: must be a positive number, got {value}")
    return cap


def parse_options(read: OptionReader) -> AwarenessOptions:
    from pytest_budget._core.option_checks import OptionError, positive_int

    get: Callable[[str], Any] = read.get_option
    rollouts = read.input_files("budget_rollouts", "give a JSONL rollout file")
    warehouse_demand = read.input_file(
        "budget_warehouse_demand",
        "give a demand CSV with columns week,retailer,sku,units,price",
    )
    env_value = str(get("budget_env") or ",".join(AWARENESS_ENVS))
    envs = tuple(dict.fromkeys(e.strip() for e in env_value.split(",") if e.strip()))
    for env in envs:
        if env not in AWARENESS_ENVS + EXTRA_AWARENESS_ENVS:
            raise OptionError(
                f"--budget-env: unknown environment {env!r}; choose from "
                f"{', '.join(AWARENESS_ENVS + EXTRA_AWARENESS_ENVS)} (or give logged rollouts "
                "with --budget-rollouts)"
            )
    rollout_format = _choice(
        "--budget-rollout-format",
        str(get("budget_rollout_format") or "auto").strip(),
        ROLLOUT_FORMATS,
        "format",
    )
    missing_usage = str(get("budget_rollout_missing_usage") or "error").strip()
    if missing_usage not in ("error", "skip"):
        raise OptionError(
            f"--budget-rollout-missing-usage: {missing_usage!r}; choose error (stop at the "
            "first assistant call without usage) or skip (drop such turns and count them)"
        )
    rollout_cap = _rollout_cap(get("budget_rollout_cap"))
    swe_reports = read.input_files(
        "budget_swe_report", "give the SWE-bench harness report (<model>.<run_id>.json)"
    )
    if swe_reports and not rollouts:
        raise OptionError(
            "--budget-swe-report: verdicts apply to imported logs; give them with "
            "--budget-rollouts=PATH"
        )
    logged_estimates = read.input_files(
        "budget_logged_estimates",
        "give BAGEN's estimation output (<run>.json) or a pytest-budget --budget-report file",
    )
    search_url = get("budget_search_url")
    if search_url and not str(search_url).startswith(("http://", "https://")):
        raise OptionError(
            f"--budget-search-url: {search_url!r} is not an http(s) URL, e.g. http://127.0.0.1:8000"
        )
    parse = _choice(
        "--budget-parse",
        str(get("budget_parse") or read.get_ini("budget_parse") or "bagen").strip(),
        PARSE_MODES,
        "policy",
    )
    try:
        online = parse_online_options(get)
    except OnlineOptionError as exc:
        raise OptionError(str(exc)) from None
    return AwarenessOptions(
        rollouts=rollouts,
        envs=envs or AWARENESS_ENVS,
        rollout_count=positive_int(
            "--budget-rollout-count",
            get("budget_rollout_count") or read.size().rollout_count,
            minimum=2,
            maximum=100_000,
        ),
        parse=parse,
        warehouse_demand=warehouse_demand,
        rollout_format=rollout_format,
        rollout_env=(get("budget_rollout_env") or None),
        missing_usage=missing_usage,
        rollout_cap=rollout_cap,
        swe_reports=swe_reports,
        logged_estimates=logged_estimates,
        search_url=str(search_url).rstrip("/") if search_url else None,
        **online,
    )
