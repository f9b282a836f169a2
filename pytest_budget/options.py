"""Run options as one frozen value of plain, serializable fields.

The plugin reads command-line flags and ini values and hands them to :func:`parse_options`;
everything downstream (fixtures, suites, xdist workers) sees only :class:`BudgetOptions`.
Every malformed value raises :class:`OptionError` with one line naming the option, the bad
value and what is expected.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_budget.ci_defaults import DEFAULT_LEVEL, DEFAULT_RESAMPLES
from pytest_budget.option_checks import (
    MAXIMUMS,
    OPTION_DESTS,
    check_directory_option,
    check_empty_values,
    check_output_file,
)
from pytest_budget.replies import DEFAULT_MAX_OUTPUT_CHARS
from pytest_budget.shard import Shard, ShardSpecError, parse_shard

__all__ = [
    "AWARENESS_ENVS",
    "DEFAULT_SEED",
    "PARSE_MODES",
    "PLANNING_MODES",
    "PLANNING_TASKS",
    "RECORD_MODES",
    "ROLE_NAMES",
    "ROLLOUT_FORMATS",
    "BudgetOptions",
    "OptionError",
    "Scenario",
    "parse_float_list",
    "parse_options",
    "parse_scenarios",
    "parse_suites",
]

DEFAULT_SEED = 42
DEFAULT_ALPHAS = "0.25,0.5,0.75,1.0"
DEFAULT_UNSOLVABLE = "0,0.5"
#: ``tolerance`` compares with stored baselines by absolute tolerance; ``ci`` fails only when
#: a score's whole confidence interval is on the worse side of the stored value; ``off``
#: records scores without gating; ``overlap`` fails only when a score's whole interval is on
#: the worse side of the stored interval; ``paired`` compares each query's stored and new
#: values (a paired test on the same queries; suites without per-query values: ``overlap``).
GATE_MODES = ("tolerance", "ci", "overlap", "paired", "off")
#: Planning: generated queries per task.  200 is what the default gate needs to tell a 20-point
#: EMR drop from a sampling agent's noise (benchmarks/bench_planning_gate.py).
DEFAULT_QUERY_COUNT = 200
#: Awareness environments with a built-in actor (``--budget-env``).
AWARENESS_ENVS: tuple[str, ...] = (
    "sokoban-8x8", "sokoban-6x6", "warehouse", "search", "swe-synthetic",
)  # fmt: skip
#: Built-in awareness environments run only when named in ``--budget-env`` (the paper's
#: Warehouse scheme, whose time cap leaks the label).
EXTRA_AWARENESS_ENVS: tuple[str, ...] = ("warehouse-paper",)
#: ``--budget-record-mode``: how model calls are recorded and replayed (VCR-style).
RECORD_MODES = ("none", "once", "new", "all")
#: Retries of a transient model-call failure after the first attempt.
DEFAULT_RETRIES = 5
#: Roles whose agent may be named per role in ini ``budget_role_agents``.
ROLE_NAMES = ("planner", "solver", "estimator", "actor", "tool_agent")
#: ``--budget-rollout-format``: how ``--budget-rollouts`` files are read.
ROLLOUT_FORMATS = ("auto", "pytest-budget", "mini-swe-agent", "openai-chat")
#: Which parser reads awareness answers: ``bagen`` is BAGEN's public parser, ``strict`` the
#: stricter reading (see ``awareness/answers.py``).
PARSE_MODES = ("bagen", "strict")
PLANNING_TASKS: tuple[str, ...] = (
    "location", "transportation", "accommodation", "attraction", "dining", "shopping",
)  # fmt: skip
PLANNING_MODES: tuple[str, ...] = (
    "static", "ban_tool", "preference_change", "cost_change", "remove_tools",
)  # fmt: skip
#: The default planning scenarios: L = 2 static, and L = 5 with each blocking mode once.
DEFAULT_SCENARIOS = "static@2,ban_tool:1@5,preference_change:1@5,cost_change:1@5,remove_tools:1@5"


@dataclass(frozen=True)
class Scenario:
    """A planning setting: blocking ``mode`` with ``blocks`` events at refinement ``level``."""

    mode: str
    blocks: int
    level: int

    @property
    def id(self) -> str:
        blocks = "" if self.mode == "static" else str(self.blocks)
        return f"{self.mode}{blocks}-L{self.level}"


def parse_scenarios(value: str) -> tuple[Scenario, ...]:
    """``MODE[:N]@L`` items, comma separated, e.g. ``static@2,ban_tool:2@5``."""
    example = "e.g. --budget-scenario=static@2,ban_tool:1@5"
    out: list[Scenario] = []
    for raw in str(value).split(","):
        text = raw.strip()
        if not text:
            continue
        head, sep, level_text = text.partition("@")
        mode, colon, blocks_text = head.strip().partition(":")
        mode = mode.strip()
        if not sep or mode not in PLANNING_MODES:
            raise OptionError(
                f"--budget-scenario: {text!r} is not MODE[:N]@L with MODE one of "
                f"{', '.join(PLANNING_MODES)} ({example})"
            )
        try:
            level = int(level_text)
            blocks = int(blocks_text) if colon else (0 if mode == "static" else 1)
        except ValueError:
            raise OptionError(
                f"--budget-scenario: {text!r}: N and L must be integers ({example})"
            ) from None
        if not 0 <= level <= 5:
            raise OptionError(f"--budget-scenario: {text!r}: refinement level must be 0..5")
        if mode == "static" and blocks != 0:
            raise OptionError(f"--budget-scenario: {text!r}: static takes no block count")
        if mode != "static" and not 1 <= blocks <= 3:
            raise OptionError(f"--budget-scenario: {text!r}: block count must be 1..3")
        scenario = Scenario(mode, blocks, level)
        if scenario not in out:
            out.append(scenario)
    if not out:
        raise OptionError(f"--budget-scenario: no scenario given ({example})")
    return tuple(out)


class OptionError(ValueError):
    """A bad option value; the message is one line for a usage error."""


#: Seconds one agent call may take by default: above a model call's whole retry budget
#: (``--budget-retry-max-s``, 300) plus one more attempt, so only a hung agent reaches it.
DEFAULT_AGENT_TIMEOUT = 900.0


@dataclass(frozen=True)
class BudgetOptions:
    """Everything a run was asked to do, as plain values (safe to send to xdist workers)."""

    suites: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    agents_explicit: bool = False
    seed: int = DEFAULT_SEED
    concurrency: int = 8
    report_path: str | None = None
    html_path: str | None = None
    alphas: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    unsolvable: tuple[float, ...] = (0.0, 0.5)
    pools: tuple[str, ...] = ()
    pool_size: int = 30
    chunk_size: int = 30
    variants: tuple[str, ...] = ("A",)
    resolve: bool = False
    # --budget-allow-partial: a cell with model calls that failed after retries passes
    # (marked ``partial``) instead of failing as ``incomplete``.
    allow_partial: bool = False
    snapshot_dir: str = "__budget_snapshots__"
    tolerances: dict[str, float] = field(default_factory=dict)
    default_tolerance: float | None = None
    cache_dir: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    # --budget-model-header: "HEADER=ENV_VAR" (variable names only, never values).
    model_headers: tuple[str, ...] = ()
    random_samples: int = 1000
    gate: str = "tolerance"
    gate_given: bool = False  # --budget-gate was given (else each suite's default gate)
    rollouts: tuple[str, ...] = ()
    envs: tuple[str, ...] = AWARENESS_ENVS
    rollout_count: int = 128
    parse: str = "bagen"
    warehouse_demand: str | None = None
    max_usd: float | None = None
    max_usd_mode: str = "refuse"  # or "stop-at-cap" (see --budget-max-usd-mode)
    dry_run: bool = False
    record_mode: str = "new"
    price_file: str | None = None
    prices: tuple[str, ...] = ()
    retries: int = 5
    retry_max_s: float = 300.0
    role_agents: dict[str, str] = field(default_factory=dict)
    model_timeout: float = 60.0
    rollout_format: str = "auto"
    rollout_env: str | None = None
    missing_usage: str = "error"
    rollout_cap: float | None = None
    search_url: str | None = None
    scenarios: tuple[Scenario, ...] = field(
        default_factory=lambda: parse_scenarios(DEFAULT_SCENARIOS)
    )
    tasks: tuple[str, ...] = PLANNING_TASKS
    query_count: int = DEFAULT_QUERY_COUNT
    queries: tuple[str, ...] = ()
    # Planning protocol (CostBench as coded by default): ban the longest tool, read the
    # metrics as eval.py codes them, no feedback on a turn without a call or answer.
    planning_ban_longest: bool = True
    planning_reading: str = "code"
    planning_answer_feedback: bool = False
    # Bootstrap intervals (--budget-ci-level, --budget-ci-resamples; 0 resamples = none;
    # the defaults are bootstrap.DEFAULT_LEVEL and DEFAULT_RESAMPLES) and repeats per cell
    # (--budget-repeat).
    ci_level: float = 0.95
    ci_resamples: int = 1000
    repeat: int = 1
    # --budget-shard=i/N: this process runs shard i of N (None = the whole run).
    shard: Shard | None = None
    # --budget-max-output-chars: a longer raw agent output is invalid, not parsed.
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    # --budget-agent-timeout: seconds one agent call may take (0: no limit).
    agent_timeout: float = DEFAULT_AGENT_TIMEOUT
    # Awareness online mode (online_options.py parses these).
    awareness_mode: str = "replay"
    online_protocols: tuple[str, ...] = ("single",)
    online_caps: tuple[float, ...] = (0.5, 1.0, 2.0)
    online_charge: str = "acting"
    online_episodes: int = 32
    online_success_value: float = 1.0

    @property
    def awareness_online(self) -> bool:
        """Whether the awareness suite runs its online cells (``--budget-awareness-mode``)."""
        return self.awareness_mode in ("online", "both")

    def gate_for(self, suite: str) -> str:
        """The gate rule of ``suite``: ``--budget-gate`` when given, else the suite's default."""
        if self.gate_given:
            return self.gate
        from pytest_budget.suite_registry import suite_by_name_or_kind

        found = suite_by_name_or_kind(suite)
        return found.default_gate if found is not None else self.gate

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view for the report (no secrets live here: keys come from env vars,
        and credentials in a URL are masked, ``https://***@host/v1``)."""
        from pytest_budget.redact import redact_url

        data = asdict(self)
        # The rule each selected suite is gated by (--budget-gate, else the suite's default).
        data["gates"] = {suite: self.gate_for(suite) for suite in self.suites}
        data["base_url"] = redact_url(self.base_url)
        data["search_url"] = redact_url(self.search_url)
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in data.items()
        }


def parse_suites(value: str | None) -> tuple[str, ...]:
    """A registered suite's name, ``all`` or a comma list; unknown names list the valid ones."""
    from pytest_budget.suite_registry import suite_names

    if value is None or not value.strip():
        return ()
    available = suite_names()
    names: list[str] = []
    for raw in value.split(","):
        name = raw.strip()
        if not name:
            continue
        if name == "all":
            candidates: Sequence[str] = available
        elif name in available:
            candidates = (name,)
        else:
            raise OptionError(
                f"--budget-suite: unknown suite {name!r}; valid: {', '.join((*available, 'all'))}"
            )
        names.extend(candidate for candidate in candidates if candidate not in names)
    return tuple(names)


def parse_float_list(
    option: str, value: str, *, low: float, high: float, low_open: bool = False
) -> tuple[float, ...]:
    """A comma list of numbers within [low, high] (or (low, high] when ``low_open``)."""
    numbers: list[float] = []
    for raw in str(value).split(","):
        text = raw.strip()
        if not text:
            continue
        try:
            number = float(text)
        except ValueError:
            raise OptionError(
                f"{option}: {text!r} is not a number (expected e.g. {option}=0.5,1.0)"
            ) from None
        below = number <= low if low_open else number < low
        if not math.isfinite(number) or below or number > high:
            bracket = "(" if low_open else "["
            raise OptionError(f"{option}: {text} is outside {bracket}{low:g}, {high:g}]")
        if number not in numbers:
            numbers.append(number)
    if not numbers:
        raise OptionError(f"{option}: no values given (expected e.g. {option}=0.5,1.0)")
    return tuple(numbers)


def _positive_int(option: str, value: Any, *, minimum: int = 1) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"{option}: {value!r} is not a whole number") from None
    if number < minimum:
        raise OptionError(f"{option}: must be at least {minimum}, got {number}")
    maximum = MAXIMUMS.get(option)
    if maximum is not None and number > maximum:
        raise OptionError(f"{option}: must be at most {maximum}, got {number}")
    return number


def _first_set(*values: Any) -> Any:
    """The first value that was given (0 counts as given; ``None`` and "" do not)."""
    for value in values:
        if value is not None and str(value).strip() != "":
            return value
    return None


def _ci_level(value: Any) -> float:
    text = str(value).strip()
    try:
        level = float(text)
    except ValueError:
        level = math.nan
    if not (0.0 < level < 1.0):
        raise OptionError(
            f"--budget-ci-level: {text!r} is not a confidence level strictly between 0 and 1 "
            "(e.g. 0.95)"
        )
    return level


def _tolerance_value(value: str) -> float | None:
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise OptionError(f"budget_tolerance (ini): {text!r} is not a number, e.g. 0.02") from None
    if not math.isfinite(number) or number < 0:
        raise OptionError(f"budget_tolerance (ini): must be >= 0, got {text}")
    return number


def _agent_timeout(value: object) -> float:
    """``--budget-agent-timeout`` (ini ``budget_agent_timeout``): seconds, 0 = no limit."""
    if value is None or value == "":
        return DEFAULT_AGENT_TIMEOUT
    try:
        seconds = float(str(value))
    except ValueError:
        raise OptionError(
            f"--budget-agent-timeout: {value!r} is not seconds (e.g. 600; 0 turns it off)"
        ) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise OptionError(
            f"--budget-agent-timeout: must be 0 (no limit) or positive seconds, got {value}"
        )
    return seconds


def parse_options(
    get_option: Callable[[str], Any],
    get_ini: Callable[[str], Any],
    *,
    rootdir: str | os.PathLike[str],
    invocation_dir: str | os.PathLike[str],
) -> BudgetOptions:
    """Build :class:`BudgetOptions` from raw option/ini getters (values as pytest gives them)."""
    from pytest_budget.agents import (
        UnknownAgentError,
        normalize_agent_name,
        validate_agent_name,
    )

    check_empty_values(get_option, OPTION_DESTS)
    suites = parse_suites(get_option("budget_suite"))
    agent_value = get_option("budget_agent")
    agents: tuple[str, ...] = ()
    if agent_value:
        names = (name.strip() for name in str(agent_value).split(","))
        try:
            # provider/model and provider:model are one agent (one cell, one baseline).
            agents = tuple(dict.fromkeys(normalize_agent_name(name) for name in names if name))
        except UnknownAgentError as exc:
            raise OptionError(str(exc)) from None
        for name in agents:
            try:
                validate_agent_name(name)
            except UnknownAgentError as exc:
                raise OptionError(str(exc)) from None
    seed_value = get_option("budget_seed")
    try:
        seed = int(seed_value) if seed_value is not None else DEFAULT_SEED
    except ValueError:
        raise OptionError(f"--budget-seed: {seed_value!r} is not an integer") from None

    variants = tuple(
        v.strip().upper() for v in str(get_option("budget_variant") or "A").split(",") if v.strip()
    )
    for variant in variants:
        if variant not in ("A", "B", "C"):
            raise OptionError(
                f"--budget-variant: unknown prompt variant {variant!r}; choose from A, B, C"
            )

    base = Path(invocation_dir)
    pools = tuple(str((base / path).resolve()) for path in (get_option("budget_pool") or ()))
    for path in pools:
        if not Path(path).is_file():
            raise OptionError(f"--budget-pool: no such file {path}; give a JSONL pool file")

    snapshot_dir = str(
        get_option("budget_snapshot_dir")
        or get_ini("budget_snapshot_dir")
        or "__budget_snapshots__"
    )
    snapshot_path = Path(snapshot_dir)
    if not snapshot_path.is_absolute():
        snapshot_path = Path(rootdir) / snapshot_path
    check_directory_option("--budget-snapshot-dir", str(snapshot_path))

    from pytest_budget.gating import parse_tolerances
    from pytest_budget.metrics import gated_metric_names

    try:
        tolerances = parse_tolerances(get_ini("budget_tolerances") or (), gated_metric_names())
    except ValueError as exc:
        raise OptionError(str(exc)) from None

    cache_option = get_option("budget_cache_dir")
    cache_value = cache_option or get_ini("budget_cache_dir")
    cache_dir: str | None = None
    if cache_value:
        cache_path = Path(str(cache_value))
        # A command-line path is relative to where pytest was started, an ini one to rootdir.
        anchor = Path(invocation_dir) if cache_option else Path(rootdir)
        cache_dir = str(cache_path if cache_path.is_absolute() else anchor / cache_path)
        check_directory_option("--budget-cache-dir", cache_dir)

    report_value = get_option("budget_report")
    report_path = str((base / report_value).resolve()) if report_value else None
    html_value = get_option("budget_html")
    html_path = str((base / html_value).resolve()) if html_value else None
    if report_path:
        check_output_file("--budget-report", report_path)
    if html_path:
        from pytest_budget.html import MissingReportExtra, require_matplotlib

        try:
            require_matplotlib()
        except MissingReportExtra as exc:
            raise OptionError(f"--budget-html: {exc}") from None
        check_output_file("--budget-html", html_path)  # now, not after every cell has run

    rollouts = tuple(str((base / path).resolve()) for path in (get_option("budget_rollouts") or ()))
    for path in rollouts:
        if not Path(path).is_file():
            raise OptionError(f"--budget-rollouts: no such file {path}; give a JSONL rollout file")
    demand_value = get_option("budget_warehouse_demand")
    warehouse_demand = str((base / demand_value).resolve()) if demand_value else None
    if warehouse_demand and not Path(warehouse_demand).is_file():
        raise OptionError(
            f"--budget-warehouse-demand: no such file {warehouse_demand}; give a demand CSV "
            "with columns week,retailer,sku,units,price"
        )
    task_value = str(get_option("budget_task") or ",".join(PLANNING_TASKS))
    tasks = tuple(dict.fromkeys(t.strip() for t in task_value.split(",") if t.strip()))
    for task in tasks:
        if task not in PLANNING_TASKS:
            raise OptionError(
                f"--budget-task: unknown task {task!r}; choose from {', '.join(PLANNING_TASKS)}"
            )
    queries = tuple(str((base / path).resolve()) for path in (get_option("budget_queries") or ()))
    for path in queries:
        if not Path(path).is_file():
            raise OptionError(
                f"--budget-queries: no such file {path}; give a JSON or JSONL query file"
            )
    env_value = str(get_option("budget_env") or ",".join(AWARENESS_ENVS))
    envs = tuple(dict.fromkeys(e.strip() for e in env_value.split(",") if e.strip()))
    for env in envs:
        if env not in AWARENESS_ENVS + EXTRA_AWARENESS_ENVS:
            raise OptionError(
                f"--budget-env: unknown environment {env!r}; choose from "
                f"{', '.join(AWARENESS_ENVS + EXTRA_AWARENESS_ENVS)} (or give logged rollouts "
                "with --budget-rollouts)"
            )
    max_usd_value = get_option("budget_max_usd")
    max_usd: float | None = None
    if max_usd_value is not None:
        try:
            max_usd = float(max_usd_value)
        except ValueError:
            raise OptionError(
                f"--budget-max-usd: {max_usd_value!r} is not a number of dollars, e.g. 5"
            ) from None
        if not math.isfinite(max_usd) or max_usd < 0:
            raise OptionError(f"--budget-max-usd: must be >= 0, got {max_usd_value}")
    record_mode = str(
        get_option("budget_record_mode") or get_ini("budget_record_mode") or "new"
    ).strip()
    if record_mode not in RECORD_MODES:
        raise OptionError(
            f"--budget-record-mode: unknown mode {record_mode!r}; choose from "
            f"{', '.join(RECORD_MODES)}"
        )
    price_value = get_option("budget_price_file") or get_ini("budget_price_file")
    price_file = str((base / price_value).resolve()) if price_value else None
    if price_file and not Path(price_file).is_file():
        raise OptionError(f"--budget-price-file: no such file {price_file}")
    prices = tuple(str(line) for line in (get_ini("budget_prices") or ()))
    if prices or price_file:  # (the model layer is imported only when there is a table)
        from pytest_budget.models.prices import PriceTableError, load_price_table

        try:
            load_price_table(prices, price_file)  # a typo is a usage error before anything runs
        except PriceTableError as exc:
            raise OptionError(str(exc)) from None
    retries = _positive_int(
        "--budget-retries",
        get_option("budget_retries") or get_ini("budget_retries") or DEFAULT_RETRIES,
        minimum=0,
    )
    retry_value = get_option("budget_retry_max_s") or get_ini("budget_retry_max_s") or 300
    try:
        retry_max_s = float(retry_value)
    except ValueError:
        raise OptionError(f"--budget-retry-max-s: {retry_value!r} is not seconds") from None
    if not math.isfinite(retry_max_s) or retry_max_s < 0:
        raise OptionError(f"--budget-retry-max-s: must be >= 0, got {retry_value}")
    role_agents: dict[str, str] = {}
    for line in get_ini("budget_role_agents") or ():
        text = str(line).strip()
        if not text or text.startswith("#"):
            continue
        role, sep, name = (part.strip() for part in text.partition("="))
        if not sep or role not in ROLE_NAMES or not name:
            raise OptionError(
                f"budget_role_agents (ini): {text!r} is not 'ROLE = AGENT' with ROLE one of "
                f"{', '.join(ROLE_NAMES)}, e.g. 'solver = openai:gpt-4o-mini'"
            )
        if name != "reference":  # the role's built-in agent
            try:
                name = normalize_agent_name(name)
                validate_agent_name(name)
            except UnknownAgentError as exc:
                raise OptionError(f"budget_role_agents (ini): {exc}") from None
        role_agents[role] = name
    timeout_value = get_option("budget_model_timeout") or get_ini("budget_model_timeout") or 60
    try:
        model_timeout = float(timeout_value)
    except ValueError:
        raise OptionError(f"--budget-model-timeout: {timeout_value!r} is not seconds") from None
    if not math.isfinite(model_timeout) or model_timeout <= 0:
        raise OptionError(f"--budget-model-timeout: must be positive, got {timeout_value}")
    agent_timeout = _agent_timeout(
        get_option("budget_agent_timeout") or get_ini("budget_agent_timeout")
    )
    rollout_format = str(get_option("budget_rollout_format") or "auto").strip()
    if rollout_format not in ROLLOUT_FORMATS:
        raise OptionError(
            f"--budget-rollout-format: unknown format {rollout_format!r}; choose from "
            f"{', '.join(ROLLOUT_FORMATS)}"
        )
    missing_usage = str(get_option("budget_rollout_missing_usage") or "error").strip()
    if missing_usage not in ("error", "skip"):
        raise OptionError(
            f"--budget-rollout-missing-usage: {missing_usage!r}; choose error (stop at the "
            "first assistant call without usage) or skip (drop such turns and count them)"
        )
    cap_value = get_option("budget_rollout_cap")
    rollout_cap: float | None = None
    if cap_value is not None:
        try:
            rollout_cap = float(cap_value)
        except ValueError:
            raise OptionError(
                f"--budget-rollout-cap: {cap_value!r} is not a number of tokens"
            ) from None
        if not math.isfinite(rollout_cap) or rollout_cap <= 0:
            raise OptionError(f"--budget-rollout-cap: must be a positive number, got {cap_value}")
    search_url = get_option("budget_search_url")
    if search_url and not str(search_url).startswith(("http://", "https://")):
        raise OptionError(
            f"--budget-search-url: {search_url!r} is not an http(s) URL, e.g. http://127.0.0.1:8000"
        )
    parse = str(get_option("budget_parse") or get_ini("budget_parse") or "bagen").strip()
    if parse not in PARSE_MODES:
        raise OptionError(
            f"--budget-parse: unknown policy {parse!r}; choose from {', '.join(PARSE_MODES)}"
        )

    gate_given = bool(get_option("budget_gate"))
    gate = str(get_option("budget_gate") or "tolerance").strip()
    if gate not in GATE_MODES:
        raise OptionError(
            f"--budget-gate: unknown mode {gate!r}; choose from {', '.join(GATE_MODES)}"
        )
    ci_level = _ci_level(
        get_option("budget_ci_level") or get_ini("budget_ci_level") or DEFAULT_LEVEL
    )
    ci_resamples = _positive_int(
        "--budget-ci-resamples",
        _first_set(
            get_option("budget_ci_resamples"), get_ini("budget_ci_resamples"), DEFAULT_RESAMPLES
        ),
        minimum=0,
    )
    if gate in ("ci", "overlap") and ci_resamples == 0:
        raise OptionError(
            f"--budget-gate={gate} needs confidence intervals: drop --budget-ci-resamples=0 "
            "(or give a positive number of resamples)"
        )
    repeat = _positive_int(
        "--budget-repeat", get_option("budget_repeat") or get_ini("budget_repeat") or 1
    )

    return BudgetOptions(
        gate=gate,
        gate_given=gate_given,
        suites=suites,
        agents=agents,
        agents_explicit=bool(agents),
        seed=seed,
        concurrency=_positive_int("--budget-concurrency", get_option("budget_concurrency") or 8),
        report_path=report_path,
        html_path=html_path,
        alphas=parse_float_list(
            "--budget-alpha",
            get_option("budget_alpha") or DEFAULT_ALPHAS,
            low=0.0,
            high=1.0,
            low_open=True,
        ),
        # User pools carry their own unsolvable flags: no injection unless asked for.
        unsolvable=parse_float_list(
            "--budget-unsolvable",
            get_option("budget_unsolvable") or ("0" if pools else DEFAULT_UNSOLVABLE),
            low=0.0,
            high=1.0,
        ),
        pools=pools,
        pool_size=_positive_int(
            "--budget-pool-size", get_option("budget_pool_size") or 30, minimum=2
        ),
        chunk_size=_positive_int(
            "--budget-chunk-size",
            get_option("budget_chunk_size") or get_ini("budget_chunk_size") or 30,
        ),
        variants=variants or ("A",),
        resolve=bool(get_option("budget_resolve")),
        allow_partial=bool(get_option("budget_allow_partial")),
        snapshot_dir=str(snapshot_path),
        tolerances=tolerances,
        default_tolerance=_tolerance_value(get_ini("budget_tolerance") or ""),
        cache_dir=cache_dir,
        base_url=get_option("budget_base_url"),
        model_headers=_model_headers(get_option("budget_model_header")),
        api_key_env=get_option("budget_api_key_env"),
        rollouts=rollouts,
        envs=envs or AWARENESS_ENVS,
        rollout_count=_positive_int(
            "--budget-rollout-count", get_option("budget_rollout_count") or 128, minimum=2
        ),
        parse=parse,
        warehouse_demand=warehouse_demand,
        rollout_format=rollout_format,
        rollout_env=(get_option("budget_rollout_env") or None),
        missing_usage=missing_usage,
        max_usd=max_usd,
        max_usd_mode=get_option("budget_max_usd_mode") or "refuse",
        dry_run=bool(get_option("budget_dry_run")),
        record_mode=record_mode,
        price_file=price_file,
        prices=prices,
        retries=retries,
        retry_max_s=retry_max_s,
        role_agents=role_agents,
        model_timeout=model_timeout,
        agent_timeout=agent_timeout,
        rollout_cap=rollout_cap,
        search_url=str(search_url).rstrip("/") if search_url else None,
        scenarios=parse_scenarios(get_option("budget_scenario") or DEFAULT_SCENARIOS),
        tasks=tasks or PLANNING_TASKS,
        query_count=_positive_int(
            "--budget-query-count", get_option("budget_query_count") or DEFAULT_QUERY_COUNT
        ),
        queries=queries,
        planning_ban_longest=not get_option("budget_planning_keep_longest"),
        planning_reading=_planning_reading(get_option("budget_planning_reading")),
        planning_answer_feedback=bool(get_option("budget_planning_answer_feedback")),
        ci_level=ci_level,
        ci_resamples=ci_resamples,
        repeat=repeat,
        shard=_shard(get_option("budget_shard")),
        max_output_chars=_positive_int(
            "--budget-max-output-chars",
            get_option("budget_max_output_chars")
            or get_ini("budget_max_output_chars")
            or DEFAULT_MAX_OUTPUT_CHARS,
        ),
        **_online_options(get_option),
    )


def _online_options(get_option: Callable[[str], Any]) -> dict[str, Any]:
    from pytest_budget.online_options import OnlineOptionError, parse_online_options

    try:
        return parse_online_options(get_option)
    except OnlineOptionError as exc:
        raise OptionError(str(exc)) from None


def _model_headers(values: Any) -> tuple[str, ...]:
    specs = tuple(str(value).strip() for value in (values or ()))
    if not specs:
        return specs  # (the model layer, and the HTTP stack, load only when there are any)
    from pytest_budget.models.provider import ProviderConfigError, parse_header_env

    for spec in specs:
        try:
            parse_header_env(spec)
        except ProviderConfigError as exc:
            raise OptionError(f"{exc} (got {spec.partition('=')[0]!r}=...)") from None
    return specs


def _planning_reading(value: Any) -> str:
    reading = str(value or "code").strip().lower()
    if reading not in ("code", "prose"):
        raise OptionError(
            f"--budget-planning-reading: {value!r} is not code or prose (code: CostBench's "
            "eval.py, the default; prose: the paper's App. B.3 text)"
        )
    return reading


def _shard(value: Any) -> Shard | None:
    if value is None or not str(value).strip():
        return None
    try:
        return parse_shard(str(value))
    except ShardSpecError as exc:
        raise OptionError(str(exc)) from None
