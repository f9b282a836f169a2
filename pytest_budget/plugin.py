"""The pytest plugin: options, suite collection, score transport, tables and the report.

Registered through the ``pytest11`` entry point as ``budget``.  Everything that does not
need pytest lives in the core modules; this module only wires them to pytest's hooks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_budget import hookspecs
from pytest_budget.options import AVAILABLE_SUITES, BudgetOptions, OptionError, parse_options
from pytest_budget.session import BudgetSession

pytest_plugins = [
    "pytest_budget.fixtures.core",
    "pytest_budget.fixtures.triage",
    "pytest_budget.fixtures.awareness",
    "pytest_budget.fixtures.planning",
]

SESSION_KEY = pytest.StashKey[BudgetSession]()
CELL_KEY = pytest.StashKey[str]()

_SUITE_MODULES = {name: f"test_{name}.py" for name in AVAILABLE_SUITES}
# Optional cell types, collected only when their option is on.
_OPTIONAL_MODULES = {"triage": [("resolve", "test_triage_resolve.py")]}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("budget", "pytest-budget: budget-awareness suites")
    group.addoption(
        "--budget-suite",
        help="run the installed suite(s): triage, awareness, planning, all, or a comma list",
    )
    group.addoption(
        "--budget-agent",
        help="agent(s) to evaluate, comma list: a reference agent (triage: oracle, random, "
        "cheapest-first, attempt-all; awareness: oracle, linear, always-feasible, "
        "always-impossible, random; planning: oracle, greedy, random-valid, atomic-only) or "
        "'user' for the agent from your hook (default: the suite's reference agents, or "
        "'user' when your conftest supplies one)",
    )
    group.addoption("--budget-seed", help="seed for every random choice (default 42)")
    group.addoption(
        "--budget-concurrency", help="agent calls in flight at once inside a cell (default 8)"
    )
    group.addoption("--budget-report", metavar="PATH", help="write the run's JSON report here")
    group.addoption(
        "--budget-alpha", help="triage budget levels alpha, comma list (default 0.25,0.5,0.75,1.0)"
    )
    group.addoption(
        "--budget-unsolvable",
        help="triage: shares of each pool replaced with unsolvable items (default 0,0.5)",
    )
    group.addoption(
        "--budget-pool",
        action="append",
        metavar="PATH",
        help="triage: a JSONL pool file (repeatable); replaces the bundled pools",
    )
    group.addoption("--budget-pool-size", help="triage: items per bundled pool (default 30)")
    group.addoption(
        "--budget-chunk-size", help="triage: split user pools into chunks of this size (default 30)"
    )
    group.addoption(
        "--budget-variant", help="triage: planner prompt variant(s) A, B, C (default A)"
    )
    group.addoption(
        "--budget-resolve",
        action="store_true",
        default=False,
        help="triage: add the budget-aware re-solve cells (compliance with own allocations)",
    )
    group.addoption(
        "--budget-snapshot-dir",
        metavar="DIR",
        help="where score snapshots live (default: ini budget_snapshot_dir)",
    )
    group.addoption(
        "--budget-gate",
        help="tolerance: fail on regressions against stored baselines (default); "
        "off: score and report without comparing",
    )
    group.addoption(
        "--budget-env",
        help="awareness: environments, comma list of sokoban-8x8, sokoban-6x6, warehouse, "
        "search, swe-synthetic (bundled coding-agent logs) (default: all)",
    )
    group.addoption(
        "--budget-rollouts",
        action="append",
        metavar="PATH",
        help="awareness: a JSONL rollout file (repeatable); replaces generated rollouts",
    )
    group.addoption(
        "--budget-rollout-count", help="awareness: rollouts generated per environment (default 128)"
    )
    group.addoption(
        "--budget-rollout-format",
        help="awareness: format of --budget-rollouts files: auto (default), pytest-budget, "
        "mini-swe-agent, openai-chat",
    )
    group.addoption(
        "--budget-rollout-env",
        metavar="LABEL",
        help="awareness: env label for imported coding-agent logs (default swe-<model>)",
    )
    group.addoption(
        "--budget-rollout-missing-usage",
        help="awareness: an imported assistant call without usage: error (default) or skip",
    )
    group.addoption(
        "--budget-rollout-cap",
        metavar="TOKENS",
        help="awareness: token budget for imported coding-agent logs (default: the family's "
        "median total)",
    )
    group.addoption(
        "--budget-search-url",
        metavar="URL",
        help="awareness: use your own retrieval server (POST /search) for the search environment",
    )
    group.addoption(
        "--budget-warehouse-demand",
        metavar="CSV",
        help="awareness: your own Warehouse demand panel (columns week,retailer,sku,units,price)",
    )
    group.addoption(
        "--budget-parse",
        help="awareness: bagen (swap a reversed interval, default) or strict (reversed = invalid)",
    )
    group.addoption(
        "--budget-scenario",
        help="planning: MODE[:N]@L comma list, MODE static, ban_tool, preference_change, "
        "cost_change or remove_tools, N blocks 1..3, L refinement level 0..5 (default "
        "static@2 and each blocking mode once at L 5)",
    )
    group.addoption("--budget-task", help="planning: travel tasks, comma list (default: all six)")
    group.addoption(
        "--budget-query-count", help="planning: generated queries per task (default 10)"
    )
    group.addoption(
        "--budget-queries",
        action="append",
        metavar="PATH",
        help="planning: a JSON/JSONL query file in CostBench's layout (repeatable); "
        "replaces generated queries",
    )
    group.addoption(
        "--budget-base-url",
        help="base URL of the model endpoint for openai:/anthropic: agents, e.g. "
        "http://localhost:8000/v1 (default: the provider's public API)",
    )
    group.addoption(
        "--budget-api-key-env",
        help="name of the environment variable holding the API key (default OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY); keys are only ever read from the environment",
    )
    group.addoption(
        "--budget-max-usd",
        help="spend cap in USD for the whole run, shared by all xdist workers; when reached, no "
        "further model calls are made and remaining cells are skipped",
    )
    group.addoption(
        "--budget-record-mode",
        help="model-call record/replay: none, once, new (default: replay recorded calls, record "
        "new ones), all (re-record everything)",
    )
    group.addoption(
        "--budget-price-file",
        metavar="PATH",
        help="price table for model calls (USD per million input/output/cached tokens)",
    )
    group.addoption("--budget-model-timeout", help="seconds per model HTTP call (default 60)")
    parser.addini(
        "budget_snapshot_dir",
        "directory for score snapshots, relative to rootdir",
        default="__budget_snapshots__",
    )
    parser.addini(
        "budget_tolerances",
        "per-metric absolute tolerances, one 'metric = value' per line",
        type="linelist",
        default=[],
    )
    parser.addini("budget_tolerance", "absolute tolerance for every gated metric", default="")
    parser.addini(
        "budget_cache_dir",
        "where Phase 0 results are cached (default: inside pytest's cache directory)",
        default="",
    )
    parser.addini("budget_chunk_size", "triage: chunk size for user pools", default="")
    parser.addini(
        "budget_parse", "awareness: reversed-interval policy, bagen or strict", default=""
    )
    parser.addini("budget_record_mode", "model-call record/replay mode", default="")
    parser.addini("budget_price_file", "price table file for model calls", default="")
    parser.addini(
        "budget_prices",
        "model prices per million tokens, one 'MODEL = INPUT_USD OUTPUT_USD [CACHED_USD]' per line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "budget_role_agents",
        "agent per role, one 'ROLE = AGENT' per line, e.g. 'solver = openai:gpt-4o-mini'",
        type="linelist",
        default=[],
    )
    parser.addini("budget_model_timeout", "seconds per model HTTP call", default="")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "budget(**caps): cap the test's budget, e.g. @pytest.mark.budget(tokens=2500, "
        "tool_calls=20, usd=0.5); read it through the budget_cap fixture",
    )
    _register_model_providers()
    try:
        options = parse_options(
            config.getoption,
            config.getini,
            rootdir=config.rootpath,
            invocation_dir=config.invocation_params.dir,
        )
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    session = BudgetSession(options)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(_RunReporter(config, session), "budget-run")
    _check_model_agents(options)
    if options.suites:
        _add_suite_paths(config, options)
        if options.pools:
            from pytest_budget.fixtures.triage import load_user_pools

            try:
                load_user_pools(session)
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
        if options.warehouse_demand and "awareness" in options.suites:
            from pytest_budget.awareness.warehouse import load_demand_panel

            try:
                load_demand_panel(options.warehouse_demand)
            except ValueError as exc:
                raise pytest.UsageError(f"--budget-warehouse-demand: {exc}") from None
        if options.queries and "planning" in options.suites:
            from pytest_budget.fixtures.planning import load_user_queries

            try:
                load_user_queries(session)
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
        searches = "search" in options.envs and not options.rollouts
        if options.search_url and "awareness" in options.suites and searches:
            _check_search_url(options.search_url)
        if options.rollouts and "awareness" in options.suites:
            from pytest_budget.fixtures.awareness import load_user_rollouts

            try:
                load_user_rollouts(session)
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None


def _register_model_providers() -> None:
    """``openai:MODEL`` and ``anthropic:MODEL`` agents (before options are validated)."""
    from pytest_budget.agents import register_provider
    from pytest_budget.models.provider import PROVIDERS, provider_factory

    for provider in PROVIDERS:
        register_provider(provider, provider_factory(provider))


def _check_model_agents(options: BudgetOptions) -> None:
    """Build every named model agent's client once: a missing key or a bad URL is a usage
    error before anything runs (no network traffic here)."""
    from pytest_budget.models.provider import PROVIDERS, ProviderConfigError, check_provider_config

    names = [*options.agents, *options.role_agents.values()]
    for name in names:
        provider, sep, model = name.partition(":")
        if not sep or provider not in PROVIDERS:
            continue
        try:
            check_provider_config(provider, model, options.base_url, options.api_key_env)
        except (ProviderConfigError, ValueError) as exc:
            raise pytest.UsageError(f"--budget-agent={name}: {exc}") from None


def _check_search_url(url: str) -> None:
    """A user's retrieval server must answer before any cell runs (one-line usage error)."""
    import anyio

    from pytest_budget.awareness.retrieval import RetrievalError, wait_until_healthy

    try:
        anyio.run(lambda: wait_until_healthy(url, 5.0))
    except RetrievalError as exc:
        raise pytest.UsageError(f"--budget-search-url: {exc}") from None


def _with_cache_dir(options: BudgetOptions, config: pytest.Config) -> BudgetOptions:
    """Default the Phase 0 cache to pytest's cache directory (when the cache plugin is on)."""
    from dataclasses import replace

    cache = getattr(config, "cache", None)
    if options.cache_dir is not None or cache is None:
        return options
    return replace(options, cache_dir=str(cache.mkdir("pytest_budget")))


def _add_suite_paths(config: pytest.Config, options: BudgetOptions) -> None:
    """Collect the installed suite modules, like ``--pyargs pytest_budget.suites.test_x``.

    With no explicit paths on the command line only the suites run (not the project's
    own tests under the current directory); with explicit paths the suites are added.
    """
    import pytest_budget.suites as suites_package

    folder = Path(suites_package.__file__).parent
    wanted = []
    for name in options.suites:
        wanted.append(str(folder / _SUITE_MODULES[name]))
        for flag, module in _OPTIONAL_MODULES.get(name, []):
            if getattr(options, flag):
                wanted.append(str(folder / module))
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    current = list(config.args) if explicit else []
    for path in wanted:
        if path not in current:
            current.append(path)
    config.args[:] = current


def budget_session(config: pytest.Config) -> BudgetSession:
    """The run's :class:`BudgetSession` (available after ``pytest_configure``)."""
    return config.stash[SESSION_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    record = item.stash.get(CELL_KEY, None)
    if record is not None and report.when == "call":
        # Travels to the xdist controller with the report (plain string attribute).
        report.budget_cell = record  # type: ignore[attr-defined]
    return report


class _RunReporter:
    """Registered per run in ``pytest_configure``: merges cells, prints tables, writes JSON."""

    def __init__(self, config: pytest.Config, session: BudgetSession) -> None:
        self.config = config
        self.session = session

    def pytest_sessionstart(self) -> None:
        # config.cache exists only after every plugin's pytest_configure has run.
        self.session.options = _with_cache_dir(self.session.options, self.config)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "budget_cell", None)
        if record is None or report.when != "call" or _is_worker(self.config):
            return
        cell = json.loads(record)
        cell["test_outcome"] = report.outcome
        cell["duration_s"] = round(report.duration, 4)
        self.session.add_cell(cell)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config):
            return
        for title, lines in self.session.table_lines():
            terminalreporter.write_sep("=", title)
            for line in lines:
                terminalreporter.write_line(line)
        if self.session.options.report_path:
            terminalreporter.write_line(f"budget report: {self.session.options.report_path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        if not _is_worker(self.config):
            self.session.write_report()


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """Readable failures for ``assert scores == expected`` on score objects."""
    from pytest_budget.triage.evaluate import TriageScores

    if op != "==" or not isinstance(left, TriageScores):
        return None
    other = right.as_dict() if isinstance(right, TriageScores) else right
    if not isinstance(other, dict):
        return None
    mine = left.as_dict()
    lines = ["TriageScores differ:"]
    for key in sorted(set(mine) | set(other)):
        a, b = mine.get(key), other.get(key)
        if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, abs_tol=1e-9):
            continue
        if a != b:
            lines.append(f"  {key}: {a!r} != {b!r}")
    return lines
