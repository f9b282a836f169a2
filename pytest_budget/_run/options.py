"""Run options as one frozen value of plain, serializable fields.

The plugin reads command-line flags and ini values and hands them to :func:`parse_options`;
everything downstream (fixtures, suites, xdist workers) sees only :class:`BudgetOptions`.
Every malformed value raises :class:`OptionError` with one line naming the option, the bad
value and what is expected.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_budget._core.option_checks import (
    LIST_OPTIONS,
    OPTION_DESTS,
    OptionError,
    OptionReader,
    check_directory_option,
    check_empty_values,
    check_output_file,
    first_set,
    parse_float_list,
    positive_int,
)
from pytest_budget._core.registry import registered_roles
from pytest_budget._core.replies import DEFAULT_MAX_OUTPUT_CHARS
from pytest_budget._run.shard import Shard, ShardSpecError, parse_shard
from pytest_budget._stats.ci_defaults import DEFAULT_LEVEL, DEFAULT_RESAMPLES

__all__ = [
    "DEFAULT_SEED",
    "RECORD_MODES",
    "BudgetOptions",
    "OptionError",
    "parse_float_list",
    "parse_options",
    "parse_suites",
]

T = TypeVar("T")
DEFAULT_SEED = 42
#: ``tolerance`` compares with stored baselines by absolute tolerance; ``ci`` fails only when
#: a score's whole confidence interval is on the worse side of the stored value; ``off``
#: records scores without gating; ``overlap`` fails only when a score's whole interval is on
#: the worse side of the stored interval; ``paired`` compares each query's stored and new
#: values (a paired test on the same queries; suites without per-query values: ``overlap``).
GATE_MODES = ("tolerance", "ci", "overlap", "paired", "off")
#: ``--budget-record-mode``: how model calls are recorded and replayed (VCR-style).
RECORD_MODES = ("none", "once", "new", "all")
#: Retries of a transient model-call failure after the first attempt.
DEFAULT_RETRIES = 5
#: Seconds one agent call may take by default: above a model call's whole retry budget
#: (``--budget-retry-max-s``, 300) plus one more attempt, so only a hung agent reaches it.
DEFAULT_AGENT_TIMEOUT = 900.0
#: With no --budget-max-usd, a live run whose forecast *worst case* is above this many
#: dollars does not start.  The worst case assumes every call writes its whole max_tokens
#: and every episode runs to its turn cap, so it is ~60x the expected cost: the default
#: size with gpt-4o-mini (expected $4.52, worst $267) runs, while a gpt-4o-class model
#: (16x the price) or --budget-size=paper (worst $1,830) stops and asks first.
DEFAULT_MAX_USD_DEFAULT = 500.0


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
    # --budget-sequential: auto (metered agents), on, off (pytest_budget._stats.sequential).
    sequential: str = "auto"
    max_usd: float | None = None
    max_usd_mode: str = "refuse"  # or "stop-at-cap" (see --budget-max-usd-mode)
    # --budget-max-usd-default: the worst case a live run may forecast without --budget-max-usd.
    max_usd_default: float = DEFAULT_MAX_USD_DEFAULT
    # --budget-size: the run size in force (pytest_budget._core.sizes).
    size: str = "default"
    dry_run: bool = False
    record_mode: str = "new"
    price_file: str | None = None
    prices: tuple[str, ...] = ()
    retries: int = 5
    retry_max_s: float = 300.0
    role_agents: dict[str, str] = field(default_factory=dict)
    model_timeout: float = 60.0
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
    # Each selected suite's own options value, by suite name (see :meth:`of`).
    per_suite: Mapping[str, Any] = field(default_factory=dict)

    def of(self, kind: type[T]) -> T:
        """The options value of type ``kind`` a suite parsed (``options.of(PlanningOptions)``);
        the type's defaults when that suite's options were not read (not selected, or
        options built by hand)."""
        for value in self.per_suite.values():
            if isinstance(value, kind):
                return value
        return kind()

    def gate_for(self, suite: str) -> str:
        """The gate rule of ``suite``: ``--budget-gate`` when given, else the suite's default."""
        if self.gate_given:
            return self.gate
        from pytest_budget._core.registry import suite_by_name_or_kind

        found = suite_by_name_or_kind(suite)
        return found.default_gate if found is not None else self.gate

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready view for the report (no secrets live here: keys come from env vars,
        and credentials in a URL are masked, ``https://***@host/v1``)."""
        from pytest_budget._core.redact import redact_url

        data = asdict(self)
        # A suite's options sit beside the run's (their names are unique across suites).
        for own in data.pop("per_suite").values():
            data.update(own)
        # The rule each selected suite is gated by (--budget-gate, else the suite's default).
        data["gates"] = {suite: self.gate_for(suite) for suite in self.suites}
        data["base_url"] = redact_url(self.base_url)
        if "search_url" in data:
            data["search_url"] = redact_url(data["search_url"])
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in data.items()
        }


def parse_suites(value: str | None) -> tuple[str, ...]:
    """A registered suite's name, ``all`` or a comma list; unknown names list the valid ones."""
    from pytest_budget._core.registry import suite_names

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


def _dollars(option: str, value: object) -> float:
    """A limit in dollars: a positive finite number."""
    try:
        amount = float(str(value).strip())
    except ValueError:
        amount = math.nan
    if not math.isfinite(amount) or amount <= 0:
        raise OptionError(
            f"{option}: {value!r} is not a positive number of dollars; give e.g. {option}=5"
        )
    return amount


def parse_options(
    get_option: Callable[[str], Any],
    get_ini: Callable[[str], Any],
    *,
    rootdir: str | os.PathLike[str],
    invocation_dir: str | os.PathLike[str],
) -> BudgetOptions:
    """Build :class:`BudgetOptions` from raw option/ini getters (values as pytest gives them).

    The options are read, and a bad one reported, in a fixed order: one reader per group.
    """
    from pytest_budget._core.registry import registered_suites

    own_options = {
        name: suite.options
        for name, suite in registered_suites().items()
        if suite.options is not None
    }
    check_empty_values(
        get_option,
        (*OPTION_DESTS, *(dest for spec in own_options.values() for dest in spec.dests)),
        (*LIST_OPTIONS, *(dest for spec in own_options.values() for dest in spec.list_dests)),
    )
    suites = parse_suites(get_option("budget_suite"))
    base = Path(invocation_dir)
    reader = OptionReader(get_option, get_ini, Path(rootdir), base)
    # Every registered suite's options are read (a bad value is an error even when the
    # suite is not selected this run, as it was before suites owned their options).
    per_suite = {name: spec.parse(reader) for name, spec in own_options.items()}
    agents = _agents(get_option("budget_agent"))
    seed = _seed(get_option("budget_seed"))
    snapshot_dir = _snapshot_dir(get_option, get_ini, Path(rootdir))
    tolerances = _tolerances(get_ini)
    cache_dir = _cache_dir(get_option, get_ini, Path(rootdir), base)
    report_path, html_path = _output_paths(get_option, base)
    max_usd, max_usd_default = _spend_limits(get_option, get_ini)
    size = reader.size()
    model_calls = _model_calls(get_option, get_ini, base)
    role_agents = _role_agents(get_ini("budget_role_agents"))
    timeouts = _timeouts(get_option, get_ini)
    gate, ci_level, ci_resamples = _gate(get_option, get_ini)
    repeat = positive_int(
        "--budget-repeat", get_option("budget_repeat") or get_ini("budget_repeat") or 1
    )
    sequential = _sequential(get_option("budget_sequential") or get_ini("budget_sequential"))
    return BudgetOptions(
        gate=gate,
        gate_given=bool(get_option("budget_gate")),
        sequential=sequential,
        suites=suites,
        agents=agents,
        agents_explicit=bool(agents),
        seed=seed,
        concurrency=positive_int("--budget-concurrency", get_option("budget_concurrency") or 8),
        report_path=report_path,
        html_path=html_path,
        allow_partial=bool(get_option("budget_allow_partial")),
        snapshot_dir=snapshot_dir,
        tolerances=tolerances,
        default_tolerance=_tolerance_value(get_ini("budget_tolerance") or ""),
        cache_dir=cache_dir,
        base_url=get_option("budget_base_url"),
        model_headers=_model_headers(get_option("budget_model_header")),
        api_key_env=get_option("budget_api_key_env"),
        max_usd=max_usd,
        max_usd_mode=get_option("budget_max_usd_mode") or "refuse",
        max_usd_default=max_usd_default,
        size=size.name,
        dry_run=bool(get_option("budget_dry_run")),
        **model_calls,
        role_agents=role_agents,
        **timeouts,
        ci_level=ci_level,
        ci_resamples=ci_resamples,
        repeat=repeat,
        shard=_shard(get_option("budget_shard")),
        max_output_chars=_max_output_chars(get_option, get_ini),
        per_suite=per_suite,
    )


#: pytest's getters of a flag's value and of an ini value.
_Getter = Callable[[str], Any]


def _agents(value: Any) -> tuple[str, ...]:
    """``--budget-agent``: comma-separated names, normalised, each checked, no repeats."""
    from pytest_budget._run.agent_names import (
        UnknownAgentError,
        normalize_agent_name,
        validate_agent_name,
    )

    agents: tuple[str, ...] = ()
    if value:
        names = (name.strip() for name in str(value).split(","))
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
    return agents


def _seed(value: Any) -> int:
    try:
        return int(value) if value is not None else DEFAULT_SEED
    except ValueError:
        raise OptionError(f"--budget-seed: {value!r} is not an integer") from None


def _snapshot_dir(get_option: _Getter, get_ini: _Getter, rootdir: Path) -> str:
    snapshot_dir = str(
        get_option("budget_snapshot_dir")
        or get_ini("budget_snapshot_dir")
        or "__budget_snapshots__"
    )
    snapshot_path = Path(snapshot_dir)
    if not snapshot_path.is_absolute():
        snapshot_path = rootdir / snapshot_path
    check_directory_option("--budget-snapshot-dir", str(snapshot_path))
    return str(snapshot_path)


def _tolerances(get_ini: _Getter) -> dict[str, float]:
    from pytest_budget._stats.gated_metrics import gated_metric_names
    from pytest_budget._stats.gating import parse_tolerances

    try:
        return parse_tolerances(get_ini("budget_tolerances") or (), gated_metric_names())
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def _cache_dir(get_option: _Getter, get_ini: _Getter, rootdir: Path, base: Path) -> str | None:
    cache_option = get_option("budget_cache_dir")
    cache_value = cache_option or get_ini("budget_cache_dir")
    if not cache_value:
        return None
    cache_path = Path(str(cache_value))
    # A command-line path is relative to where pytest was started, an ini one to rootdir.
    anchor = base if cache_option else rootdir
    cache_dir = str(cache_path if cache_path.is_absolute() else anchor / cache_path)
    check_directory_option("--budget-cache-dir", cache_dir)
    return cache_dir


def _output_paths(get_option: _Getter, base: Path) -> tuple[str | None, str | None]:
    """(``--budget-report``, ``--budget-html``), absolute and checked writable now."""
    report_value = get_option("budget_report")
    report_path = str((base / report_value).resolve()) if report_value else None
    html_value = get_option("budget_html")
    html_path = str((base / html_value).resolve()) if html_value else None
    if report_path:
        check_output_file("--budget-report", report_path)
    if html_path:
        from pytest_budget.report._html import MissingReportExtra, require_matplotlib

        try:
            require_matplotlib()
        except MissingReportExtra as exc:
            raise OptionError(f"--budget-html: {exc}") from None
        check_output_file("--budget-html", html_path)  # now, not after every cell has run
    return report_path, html_path


def _spend_limits(get_option: _Getter, get_ini: _Getter) -> tuple[float | None, float]:
    """(``--budget-max-usd`` or None, ``--budget-max-usd-default``)."""
    max_usd_value = get_option("budget_max_usd")
    max_usd = None if max_usd_value is None else _dollars("--budget-max-usd", max_usd_value)
    default_value = get_option("budget_max_usd_default") or get_ini("budget_max_usd_default")
    if not default_value:
        return max_usd, DEFAULT_MAX_USD_DEFAULT
    return max_usd, _dollars("--budget-max-usd-default", default_value)


def _model_calls(get_option: _Getter, get_ini: _Getter, base: Path) -> dict[str, Any]:
    """The model-call options: record mode, price table, retries (BudgetOptions fields)."""
    record_mode = _record_mode(get_option, get_ini)
    price_file, prices = _price_table(get_option, get_ini, base)
    retries = positive_int(
        "--budget-retries",
        get_option("budget_retries") or get_ini("budget_retries") or DEFAULT_RETRIES,
        minimum=0,
    )
    retry_max_s = _retry_max_s(get_option("budget_retry_max_s") or get_ini("budget_retry_max_s"))
    return {
        "record_mode": record_mode,
        "price_file": price_file,
        "prices": prices,
        "retries": retries,
        "retry_max_s": retry_max_s,
    }


def _timeouts(get_option: _Getter, get_ini: _Getter) -> dict[str, Any]:
    """``model_timeout`` (one HTTP call) and ``agent_timeout`` (one agent call)."""
    model_timeout = _model_timeout(
        get_option("budget_model_timeout") or get_ini("budget_model_timeout")
    )
    agent_timeout = _agent_timeout(
        get_option("budget_agent_timeout") or get_ini("budget_agent_timeout")
    )
    return {"model_timeout": model_timeout, "agent_timeout": agent_timeout}


def _max_output_chars(get_option: _Getter, get_ini: _Getter) -> int:
    return positive_int(
        "--budget-max-output-chars",
        get_option("budget_max_output_chars")
        or get_ini("budget_max_output_chars")
        or DEFAULT_MAX_OUTPUT_CHARS,
    )


def _record_mode(get_option: _Getter, get_ini: _Getter) -> str:
    record_mode = str(
        get_option("budget_record_mode") or get_ini("budget_record_mode") or "new"
    ).strip()
    if record_mode not in RECORD_MODES:
        raise OptionError(
            f"--budget-record-mode: unknown mode {record_mode!r}; choose from "
            f"{', '.join(RECORD_MODES)}"
        )
    return record_mode


def _price_table(
    get_option: _Getter, get_ini: _Getter, base: Path
) -> tuple[str | None, tuple[str, ...]]:
    """(``--budget-price-file``, ini ``budget_prices`` lines), the table read once to check it."""
    price_value = get_option("budget_price_file") or get_ini("budget_price_file")
    price_file = str((base / price_value).resolve()) if price_value else None
    if price_file and not Path(price_file).is_file():
        raise OptionError(f"--budget-price-file: no such file {price_file}")
    prices = tuple(str(line) for line in (get_ini("budget_prices") or ()))
    if prices or price_file:  # (the model layer is imported only when there is a table)
        from pytest_budget.models._prices import PriceTableError, load_price_table

        try:
            load_price_table(prices, price_file)  # a typo is a usage error before anything runs
        except PriceTableError as exc:
            raise OptionError(str(exc)) from None
    return price_file, prices


def _retry_max_s(value: Any) -> float:
    value = value or 300
    try:
        retry_max_s = float(value)
    except ValueError:
        raise OptionError(f"--budget-retry-max-s: {value!r} is not seconds") from None
    if not math.isfinite(retry_max_s) or retry_max_s < 0:
        raise OptionError(f"--budget-retry-max-s: must be >= 0, got {value}")
    return retry_max_s


def _role_agents(lines: Any) -> dict[str, str]:
    """ini ``budget_role_agents``: ``ROLE = AGENT`` lines."""
    from pytest_budget._run.agent_names import (
        UnknownAgentError,
        normalize_agent_name,
        validate_agent_name,
    )

    role_agents: dict[str, str] = {}
    role_names = tuple(registered_roles())  # every registered suite's roles
    for line in lines or ():
        text = str(line).strip()
        if not text or text.startswith("#"):
            continue
        role, sep, name = (part.strip() for part in text.partition("="))
        if not sep or role not in role_names or not name:
            raise OptionError(
                f"budget_role_agents (ini): {text!r} is not 'ROLE = AGENT' with ROLE one of "
                f"{', '.join(role_names)}, e.g. 'solver = openai:gpt-4o-mini'"
            )
        if name != "reference":  # the role's built-in agent
            try:
                name = normalize_agent_name(name)
                validate_agent_name(name)
            except UnknownAgentError as exc:
                raise OptionError(f"budget_role_agents (ini): {exc}") from None
        role_agents[role] = name
    return role_agents


def _model_timeout(value: Any) -> float:
    value = value or 60
    try:
        model_timeout = float(value)
    except ValueError:
        raise OptionError(f"--budget-model-timeout: {value!r} is not seconds") from None
    if not math.isfinite(model_timeout) or model_timeout <= 0:
        raise OptionError(f"--budget-model-timeout: must be positive, got {value}")
    return model_timeout


def _gate(get_option: _Getter, get_ini: _Getter) -> tuple[str, float, int]:
    """(``--budget-gate``, ``--budget-ci-level``, ``--budget-ci-resamples``), consistent."""
    gate = str(get_option("budget_gate") or "tolerance").strip()
    if gate not in GATE_MODES:
        raise OptionError(
            f"--budget-gate: unknown mode {gate!r}; choose from {', '.join(GATE_MODES)}"
        )
    ci_level = _ci_level(
        get_option("budget_ci_level") or get_ini("budget_ci_level") or DEFAULT_LEVEL
    )
    ci_resamples = positive_int(
        "--budget-ci-resamples",
        first_set(
            get_option("budget_ci_resamples"), get_ini("budget_ci_resamples"), DEFAULT_RESAMPLES
        ),
        minimum=0,
    )
    if gate in ("ci", "overlap") and ci_resamples == 0:
        raise OptionError(
            f"--budget-gate={gate} needs confidence intervals: drop --budget-ci-resamples=0 "
            "(or give a positive number of resamples)"
        )
    return gate, ci_level, ci_resamples


def _sequential(value: Any) -> str:
    sequential = str(value or "auto")
    if sequential.strip() not in ("auto", "on", "off"):
        raise OptionError(
            f"budget_sequential: unknown mode {sequential!r}; choose from auto, on, off"
        )
    return sequential.strip()


def _model_headers(values: Any) -> tuple[str, ...]:
    specs = tuple(str(value).strip() for value in (values or ()))
    if not specs:
        return specs  # (the model layer, and the HTTP stack, load only when there are any)
    from pytest_budget.models._provider import ProviderConfigError, parse_header_env

    for spec in specs:
        try:
            parse_header_env(spec)
        except ProviderConfigError as exc:
            raise OptionError(f"{exc} (got {spec.partition('=')[0]!r}=...)") from None
    return specs


def _shard(value: Any) -> Shard | None:
    if value is None or not str(value).strip():
        return None
    try:
        return parse_shard(str(value))
    except ShardSpecError as exc:
        raise OptionError(str(exc)) from None
