"""The pytest plugin: options, suite collection, score transport, tables and the report.

Registered through the ``pytest11`` entry point as ``budget``.  Everything that does not
need pytest lives in the core modules; this module only wires them to pytest's hooks.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_budget import hookspecs, suite_hooks
from pytest_budget.options import BudgetOptions, OptionError, parse_options
from pytest_budget.suite_registry import (
    cell_module_paths,
    kind_of_test_file,
    registered_suites,
    suite_names,
)

if TYPE_CHECKING:
    from pytest_budget.session import BudgetSession

# The shared fixtures, then each registered suite's own.
pytest_plugins = [
    "pytest_budget.fixtures.core",
    *(module for suite in registered_suites().values() for module in suite.fixture_modules),
]

SESSION_KEY = pytest.StashKey["BudgetSession"]()
CELL_KEY = pytest.StashKey[str]()


#: The ``--budget-*`` option group, kept for :func:`rerun_command_for`.
_OPTION_GROUP: dict[str, Any] = {}


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_hookspecs(suite_hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("budget", "pytest-budget: budget-awareness suites")
    _OPTION_GROUP["budget"] = group  # read by the re-run commands (every option added here)
    group.addoption(
        "--budget-suite",
        help=f"run the installed suite(s): {', '.join(suite_names())}, all, or a comma list",
    )
    group.addoption(
        "--budget-agent",
        help=f"agent(s) to evaluate, comma list: a reference agent ({_reference_agents()}) or "
        "'user' for the agent from your hook (default: the suite's reference agents, or "
        "'user' when your conftest supplies one)",
    )
    group.addoption("--budget-seed", help="seed for every random choice (default 42)")
    group.addoption(
        "--budget-concurrency",
        help="agent calls in flight at once per process, across its cells (default 8)",
    )
    group.addoption("--budget-report", metavar="PATH", help="write the run's JSON report here")
    group.addoption(
        "--budget-html",
        metavar="PATH",
        help="write the run's report as one self-contained HTML page with score tables and "
        'figures (needs matplotlib: pip install "pytest-budget[report]")',
    )
    group.addoption(
        "--budget-allow-partial",
        action="store_true",
        default=False,
        help="a cell some of whose model calls failed after the retries passes (marked "
        "partial in the report) instead of failing as incomplete",
    )
    group.addoption(
        "--budget-snapshot-dir",
        metavar="DIR",
        help="where score snapshots live (default: ini budget_snapshot_dir)",
    )
    group.addoption(
        "--budget-gate",
        help="tolerance: fail on regressions past tolerance against stored baselines; ci: "
        "fail only when a score's whole confidence interval is on the worse side of the "
        "stored value; overlap: only when it is on the worse side of the stored interval; "
        "paired: a paired test of each query's new values against the stored ones; off: "
        f"score and report without comparing (default per suite: {_default_gates()})",
    )
    group.addoption(
        "--budget-ci-level",
        metavar="LEVEL",
        help="coverage of the bootstrap confidence interval of every score, strictly between "
        "0 and 1 (default: ini budget_ci_level, else 0.95)",
    )
    group.addoption(
        "--budget-ci-resamples",
        metavar="N",
        help="bootstrap resamples per cell (default: ini budget_ci_resamples, else 1000; "
        "0 turns intervals off)",
    )
    group.addoption(
        "--budget-repeat",
        metavar="K",
        help="run each cell's agent K times and report mean, spread and pass^k consistency "
        "(default: ini budget_repeat, else 1)",
    )
    group.addoption(
        "--budget-base-url",
        help="base URL of the model endpoint for openai:/anthropic: agents, e.g. "
        "http://localhost:8000/v1 (default: the provider's public API)",
    )
    group.addoption(
        "--budget-model-header",
        action="append",
        metavar="HEADER=ENV_VAR",
        help="extra request header for model calls (e.g. a gateway token), its value read "
        "from the environment variable ENV_VAR (repeatable); redacted like the key",
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
        "--budget-max-usd-mode",
        choices=("refuse", "stop-at-cap"),
        help="what --budget-max-usd does when the forecast's worst case exceeds it: refuse "
        "(default: stop before any call) or stop-at-cap (start, and stop calling once the "
        "spend reaches the cap; the remaining cells are incomplete)",
    )
    group.addoption(
        "--budget-dry-run",
        action="store_true",
        default=False,
        help="print the cost forecast of the run's model calls (calls, tokens, USD) and exit "
        "without calling any model",
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
    group.addoption(
        "--budget-model-timeout",
        help="seconds per model HTTP call, a total deadline for the whole answer (default 60)",
    )
    group.addoption(
        "--budget-cache-dir",
        metavar="DIR",
        help="where Phase 0 results and recorded model calls are kept (default: inside "
        "pytest's cache directory, .pytest_cache/d/pytest_budget)",
    )
    group.addoption(
        "--budget-retries",
        help="retries of a model call after a 429, 5xx, timeout or dropped connection (default 5)",
    )
    group.addoption(
        "--budget-retry-max-s",
        help="give up retrying a model call after this many seconds in all (default 300)",
    )
    group.addoption(
        "--budget-agent-timeout",
        metavar="S",
        help="seconds one agent call (Python or HTTP, sync or async) may take before it is "
        "that item's error and the run goes on (default: ini budget_agent_timeout, else 900; "
        "0: no limit)",
    )
    group.addoption(
        "--budget-max-output-chars",
        metavar="N",
        help="a raw agent output longer than N characters is scored invalid (the size is "
        "recorded) instead of parsed (default: ini budget_max_output_chars, else 1000000)",
    )
    group.addoption(
        "--budget-shard",
        metavar="I/N",
        help="run only shard I of N (1-based) of the collected tests, chosen by a hash of each "
        "test's id; merge the shards' reports with budget-report merge",
    )
    # Each registered suite's own flags and ini keys.
    for suite in registered_suites().values():
        if suite.options is not None:
            suite.options.add(group.addoption, parser.addini)
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
    parser.addini("budget_ci_level", "coverage of the scores' bootstrap intervals", default="")
    parser.addini("budget_ci_resamples", "bootstrap resamples per cell (0: none)", default="")
    parser.addini("budget_repeat", "runs of each cell's agent (default 1)", default="")
    parser.addini(
        "budget_cache_dir",
        "where Phase 0 results are cached (default: inside pytest's cache directory)",
        default="",
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
    parser.addini(
        "budget_max_output_chars",
        "longest raw agent output parsed, in characters (default 1000000)",
        default="",
    )
    parser.addini("budget_retries", "retries of a failed model call (default 5)", default="")
    parser.addini(
        "budget_agent_timeout", "seconds one agent call may take (default 900; 0: none)", default=""
    )
    parser.addini(
        "budget_retry_max_s", "seconds after which a model call stops retrying", default=""
    )


def _reference_agents() -> str:
    """``triage: cheapest-first, random, ...; awareness: ...`` from the registry."""
    return "; ".join(
        f"{name}: {', '.join(suite.kinds[0].reference_agents)}"
        for name, suite in registered_suites().items()
        if suite.kinds and suite.kinds[0].reference_agents
    )


def _default_gates() -> str:
    return ", ".join(f"{name} {suite.default_gate}" for name, suite in registered_suites().items())


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
    from pytest_budget.session import BudgetSession

    session = BudgetSession(options)
    config.stash[SESSION_KEY] = session
    from pytest_budget.replies import set_run_output_limit

    set_run_output_limit(options.max_output_chars)
    from pytest_budget.agent_log import set_agent_timeout

    set_agent_timeout(options.agent_timeout)
    session.extra["shard"] = options.shard.as_dict() if options.shard else None
    config.pluginmanager.register(_RunReporter(config, session), "budget-run")
    _check_model_agents(options)
    _set_up_model_runtime(config, session)
    _map_suite_args(config)
    if options.suites:
        _add_suite_paths(config, options)


def _register_model_providers() -> None:
    """``openai:MODEL`` and ``anthropic:MODEL`` agents (before options are validated)."""
    from pytest_budget.agents import register_provider

    for provider in _MODEL_PROVIDERS:
        register_provider(provider, _lazy_provider_factory(provider))


#: The model providers (``models.provider.PROVIDERS``, which imports the HTTP stack: it is
#: loaded only when a run names a model agent; a test checks the two lists agree).
_MODEL_PROVIDERS = ("openai", "anthropic")


def _lazy_provider_factory(provider: str) -> Any:
    def factory(model: str, role: str, settings: dict[str, Any]) -> Any:
        from pytest_budget.llm_agents import provider_factory

        return provider_factory(provider)(model, role, settings)

    return factory


def _names_model_agent(options: BudgetOptions) -> bool:
    """Whether any agent name of the run could be a model agent (reference agent names
    have no ``:`` or ``/``); the model machinery is imported only then."""
    names = (*options.agents, *options.role_agents.values())
    return any(":" in name or "/" in name for name in names)


def _check_model_agents(options: BudgetOptions) -> None:
    """Build every named model agent's client once: a missing key or a bad URL is a usage
    error before anything runs (no network traffic here)."""
    if not _names_model_agent(options):
        return
    from pytest_budget.models.provider import PROVIDERS, ProviderConfigError, check_provider_config

    names = [*options.agents, *options.role_agents.values()]
    for name in names:
        provider, sep, model = name.partition(":")
        if not sep or provider not in PROVIDERS:
            continue
        try:
            check_provider_config(
                provider, model, options.base_url, options.api_key_env, options.model_headers
            )
        except (ProviderConfigError, ValueError) as exc:
            raise pytest.UsageError(f"--budget-agent={name}: {exc}") from None


RUNTIME_PAYLOAD_KEY = "budget_model_runtime"


def _pytest_cache_root(config: pytest.Config) -> Path:
    """Where pytest's cache plugin keeps plugin data (``<cache_dir>/d/pytest_budget``)."""
    try:
        value = str(config.getini("cache_dir") or ".pytest_cache")
    except ValueError:  # -p no:cacheprovider: the ini key is not registered
        value = ".pytest_cache"
    root = Path(value).expanduser()
    if not root.is_absolute():
        root = config.rootpath / root
    return root / "d" / "pytest_budget"


def _set_up_model_runtime(config: pytest.Config, session: BudgetSession) -> None:
    """Give the run's model agents their runtime (record/replay, retries, spend cap).

    The controller decides the settings, checks prices and the endpoints up front, and
    hands the settings to xdist workers through ``workerinput``.
    """
    if not _names_model_agent(session.options):
        return
    from pytest_budget.models.run import (
        config_from_payload,
        model_agents,
        new_runtime_config,
        price_table,
        unpriced_models,
    )
    from pytest_budget.models.runtime import ModelRuntime

    options = session.options
    agents = model_agents(options)
    if not agents:
        return
    if _is_worker(config):
        payload = config.workerinput.get(RUNTIME_PAYLOAD_KEY)  # type: ignore[attr-defined]
        if payload is None:
            return
        from dataclasses import replace

        # Workers share the run: the same request is sent by one of them only.
        runtime_config = replace(config_from_payload(json.loads(payload)), claim_files=True)
    else:
        table = price_table(options)
        missing = unpriced_models(options, table)
        if options.max_usd is not None and missing:
            raise pytest.UsageError(
                f"--budget-max-usd: no price for {', '.join(missing)}; add a line "
                "'MODEL = INPUT_USD OUTPUT_USD' (per million tokens) to ini budget_prices or "
                "--budget-price-file"
            )
        cache_root = options.cache_dir or str(_pytest_cache_root(config))
        runtime_config = new_runtime_config(
            options, cache_root=cache_root, run_id=f"{os.getpid()}-{os.urandom(6).hex()}"
        )
        if options.suites:
            # After the cost forecast (pytest_sessionstart): a dry run sends nothing at all.
            session.memo["preflight"] = (agents, runtime_config)
    session.memo["model-runtime-config"] = runtime_config
    session.memo["model-runtime-factory"] = ModelRuntime(runtime_config, price_table(options))
    if _is_worker(config):  # Ctrl-C: the worker stops at once (pytest_budget.interrupt)
        from pytest_budget.interrupt import WorkerInterrupt

        config.pluginmanager.register(WorkerInterrupt(session.memo), "budget-worker-interrupt")


def _preflight(options: BudgetOptions, agents: list[tuple[str, str]], runtime_config: Any) -> None:
    """One free request per endpoint before any call is paid for (skipped when every
    model's calls will be replayed)."""
    from pytest_budget.models.preflight import PreflightError, preflight
    from pytest_budget.models.provider import ProviderConfigError

    for provider, model in agents:
        if runtime_config.mode_for(provider, model) == "none":
            continue
        try:
            preflight(
                provider,
                model,
                base_url=options.base_url,
                api_key_env=options.api_key_env,
                header_envs=options.model_headers,
            )
        except (PreflightError, ProviderConfigError) as exc:
            raise pytest.UsageError(f"--budget-agent={provider}:{model}: {exc}") from None


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
    folder = _suites_folder()
    wanted = [str(path) for path in cell_module_paths(options.suites, options)]
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    current = list(config.args) if explicit else []
    here = config.invocation_params.dir
    if any(_in_suites_folder(arg, folder.resolve(), here) for arg in current):
        return  # the command line names suite cells or modules itself (a re-run)
    for path in wanted:
        if path not in current:
            current.append(path)
    config.args[:] = current


def _suites_folder() -> Path:
    import pytest_budget.suites as suites_package

    return Path(suites_package.__file__).resolve().parent


def _in_suites_folder(arg: str, folder: Path, here: Path) -> bool:
    try:
        return (here / arg.partition("::")[0]).resolve().is_relative_to(folder)
    except OSError:
        return False


def _map_suite_args(config: pytest.Config) -> None:
    """Printed suite node ids (``pytest_budget/suites/test_x.py::...``) run as shown."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    from pytest_budget.rerun import map_suite_arg

    folder, here = _suites_folder(), config.invocation_params.dir
    config.args[:] = [map_suite_arg(arg, folder, here) for arg in config.args]


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    """A bundled suite module gets the node id ``pytest_budget/suites/<file>`` wherever the
    package is installed (pytest would print ``::test_x[...]`` for a file outside the
    rootdir, which cannot be re-run)."""
    if module_path.resolve().parent != _suites_folder() or not kind_of_test_file(module_path.name):
        return None
    from pytest_budget.rerun import suite_node_path

    return pytest.Module.from_parent(
        parent, path=module_path, nodeid=suite_node_path(module_path.name)
    )


def _addopts_values(addopts: str) -> set[str]:
    """The values of ``-o``/``-p`` options in a PYTEST_ADDOPTS string."""
    words = shlex.split(addopts)
    values: set[str] = set()
    for index, word in enumerate(words):
        if word in ("-o", "--override-ini", "-p") and index + 1 < len(words):
            values.add(words[index + 1])
        elif word.startswith("--override-ini="):
            values.add(word.partition("=")[2])
        elif word.startswith(("-o", "-p")) and len(word) > 2:
            values.add(word[2:])
    return values


def rerun_command_for(item: pytest.Item, extra: tuple[str, ...] = ()) -> str:
    """The exact command that runs ``item`` again with every option of this run that
    changes its cells, scores or snapshot (``extra``, e.g. ``--snapshot-update``, added)."""
    from pytest_budget.rerun import OptionValue, rerun_command, suite_of_module

    config = item.config
    group = _OPTION_GROUP.get("budget")
    budget_options: list[OptionValue] = []
    for option in group.options if group is not None else ():
        flag = option.names()[-1]
        value = config.getoption(option.dest)
        if value is None or value is False or value == option.attrs().get("default"):
            continue
        budget_options.append((flag, value))
    pytest_options: list[OptionValue] = []
    known = config.option
    if getattr(known, "inifilename", None):
        pytest_options.append(("-c", str(known.inifilename)))
    if getattr(known, "rootdir", None):
        pytest_options.append(("--rootdir", str(known.rootdir)))
    # PYTEST_ADDOPTS applies to the re-run as well: its options are not repeated.
    from_env = _addopts_values(os.environ.get("PYTEST_ADDOPTS", ""))
    for flag, dest in (("-o", "override_ini"), ("-p", "plugins")):
        values = [str(v) for v in getattr(known, dest, None) or () if str(v) not in from_env]
        if values:
            pytest_options.append((flag, values))
    in_suite = Path(item.path).resolve().parent == _suites_folder()
    suite = suite_of_module(Path(item.path).name, suite_names()) if in_suite else None
    return rerun_command(
        item.nodeid,
        suite=suite,
        budget_options=budget_options,
        pytest_options=pytest_options,
        extra=extra,
    )


def budget_session(config: pytest.Config) -> BudgetSession:
    """The run's :class:`BudgetSession` (available after ``pytest_configure``)."""
    return config.stash[SESSION_KEY]


def pytest_report_header(config: pytest.Config) -> str | None:
    shard = budget_session(config).options.shard
    if shard is None:
        return None
    return f"budget shard: {shard} (each test's shard comes from a hash of its id)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--budget-shard=i/N``: keep this shard's tests (every test, cells or not), so the
    N shards together run each collected test exactly once.  A pure function of each
    test's id: every xdist worker deselects the same tests."""
    shard = budget_session(config).options.shard
    if shard is None:
        return
    import pytest_budget.suites as suites_package
    from pytest_budget.shard import partition

    folder = Path(suites_package.__file__).resolve().parent
    kept, dropped = partition((_shard_identity(item, folder) for item in items), shard)
    if dropped:
        config.hook.pytest_deselected(items=[items[i] for i in dropped])
        items[:] = [items[i] for i in kept]


def _shard_identity(item: pytest.Item, suites_folder: Path) -> str:
    """The node id, with the install location of the bundled suite modules left out."""
    from pytest_budget.shard import suite_identity

    path = Path(item.path).resolve()
    return suite_identity(item.nodeid, path.name if path.parent == suites_folder else None)


AGENT_ERRORS_KEY = pytest.StashKey[list[Any]]()
_TRACEBACKS_SHOWN = 3


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A live run starts the work of the cells this process will run now (one concurrency
    limit spans cells); each test then waits for its own cell's result."""
    state = item.config.stash.get(SESSION_KEY, None)
    if state is not None and "model-runtime-factory" in state.memo:
        from pytest_budget.fixtures.cells import schedule_ahead

        schedule_ahead(item, state)


def pytest_keyboard_interrupt() -> None:
    """Ctrl-C: stop the work on the process's event loop too (cells started ahead)."""
    loop_module = sys.modules.get("pytest_budget.models.loop")
    if loop_module is not None:
        loop_module.cancel_worker_loop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Collect the errors of agents called during the test (for the failure report)."""
    from pytest_budget.agent_log import collect_agent_errors

    with collect_agent_errors() as log:
        item.stash[AGENT_ERRORS_KEY] = log
        return (yield)


def agent_error_section(errors: list[Any]) -> str:
    """The agents' own tracebacks (the first few distinct ones), for a failed test."""
    shown: list[str] = []
    for error in errors:
        text = f"{error.role} {error.agent!r} {error.reason}\n{error.traceback}".rstrip()
        if text not in shown:
            shown.append(text)
        if len(shown) == _TRACEBACKS_SHOWN:
            break
    more = len(errors) - sum(1 for _ in shown)
    tail = f"\n({len(errors)} agent errors in this test in all)" if more > 0 else ""
    return "\n\n".join(shown) + tail


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        _stop_if_endpoint_down(item)
    if report.failed and report.when in ("setup", "call"):
        _record_crashed_cell(item, call, report)
    if report.failed and kind_of_test_file(Path(item.path).name) is not None:
        # The id alone is not enough when the run's options made the cell (pool, alpha...).
        report.sections.append(("budget: re-run this cell", rerun_command_for(item)))
    if report.when == "call" and "budget_record" in getattr(item, "fixturenames", ()):
        from pytest_budget.fixtures.core import cell_calls

        counts = cell_calls(item)
        if counts is not None:  # the cell's own calls, for the controller's progress line
            report.budget_cell_calls = json.dumps(counts.as_dict())  # type: ignore[attr-defined]
    record = item.stash.get(CELL_KEY, None)
    if record is not None and report.when in ("setup", "call"):
        # Travels to the xdist controller with the report (plain string attribute).
        report.budget_cell = record  # type: ignore[attr-defined]
    errors = item.stash.get(AGENT_ERRORS_KEY, None)
    if errors and report.when == "call" and report.failed:
        # The user's own traceback, as pytest shows a test's: file and line in their code.
        report.sections.append(("agent error traceback", agent_error_section(errors)))
    return report


def _record_crashed_cell(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """A bundled suite's cell that failed before recording becomes an ``error`` cell with
    its traceback; a recorded cell whose test then crashed (not a gate failure or a
    ``pytest.fail``) becomes ``error`` and keeps its scores.  Never lost from the reports."""
    import pytest_budget.suites as suites_package
    from pytest_budget.crashed import error_cell, mark_crashed

    excinfo = call.excinfo
    reason = excinfo.exconly().splitlines()[0][:500] if excinfo is not None else "failed"
    record = item.stash.get(CELL_KEY, None)
    if record is not None:
        expected = (AssertionError, pytest.fail.Exception, pytest.skip.Exception)
        if excinfo is None or excinfo.errisinstance(expected):
            return
        data = mark_crashed(json.loads(record), reason=reason, traceback=report.longreprtext)
    else:
        if Path(item.path).resolve().parent != Path(suites_package.__file__).resolve().parent:
            return  # a test of your own that recorded nothing is not a cell
        callspec = getattr(item, "callspec", None)
        data = error_cell(
            nodeid=item.nodeid,
            module=Path(item.path).stem,
            params=dict(callspec.params) if callspec is not None else {},
            phase=report.when,
            reason=reason,
            traceback=report.longreprtext,
            seed=budget_session(item.config).options.seed,
        )
    item.stash[CELL_KEY] = json.dumps(data, allow_nan=False, default=str)


def _stop_if_endpoint_down(item: pytest.Item) -> None:
    """Most calls to a model endpoint fail: stop the run with one line naming it (pytest's
    ``-x`` mechanism, which xdist workers pass on to the controller)."""
    state = item.config.stash.get(SESSION_KEY, None)
    runtime = state.memo.get("model-runtime-factory") if state is not None else None
    reason = runtime.endpoint_down() if runtime is not None else None
    if reason and not item.session.shouldstop:
        item.session.shouldstop = f"budget: {reason}"


class _RunReporter:
    """Registered per run in ``pytest_configure``: merges cells, prints tables, writes JSON."""

    def __init__(self, config: pytest.Config, session: BudgetSession) -> None:
        self.config = config
        self.session = session
        self.tests_total = 0
        self.tests_done = 0
        self.spend_skipped = 0
        self.spend_incomplete: list[dict[str, str]] = []  # cells not run for the spend cap
        self._last_progress = -math.inf
        self._cell_calls: dict[str, str | None] = {}  # running cells' own calls (JSON)

    def pytest_sessionstart(self) -> None:
        # config.cache exists only after every plugin's pytest_configure has run.
        self.session.options = _with_cache_dir(self.session.options, self.config)
        pending = self.session.memo.pop("preflight", None)
        if pending is not None and not _is_worker(self.config):
            from pytest_budget.forecast_suites import forecast_before_run

            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_sep("=", "budget: cost forecast")
            write = reporter.write_line if reporter is not None else print
            forecast_before_run(self.config, self.session, write)
            _preflight(self.session.options, *pending)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: every worker gets the controller's runtime settings (one ledger, one
        record-mode decision)."""
        runtime_config = self.session.memo.get("model-runtime-config")
        if runtime_config is not None:
            from pytest_budget.models.run import config_to_payload

            node.workerinput[RUNTIME_PAYLOAD_KEY] = json.dumps(config_to_payload(runtime_config))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not _is_worker(self.config) and session.items:
            self.tests_total = len(session.items)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any | None:
        """xdist's scheduler.  A run that calls a model hands every worker all of its tests
        at the start (``--dist load`` or ``worksteal``), so its cells are in flight together
        and none moves once paid for; an offline ``-n`` run without ``--dist`` sends the
        tests that share prepared work to one worker together
        (:mod:`pytest_budget.distribute`).  None: xdist's own scheduler."""
        if "model-runtime-config" in self.session.memo:
            from pytest_budget.fixtures.cells import live_scheduler

            return live_scheduler(config, log)
        from pytest_budget.distribute import make_scheduler

        return make_scheduler(config, log, self.session.options)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.tests_total = max(self.tests_total, len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_worker(self.config):
            return
        if report.skipped and "model-runtime-config" in self.session.memo:
            from pytest_budget.models.run import SPEND_SKIP_MARK

            if SPEND_SKIP_MARK in str(report.longrepr):
                self.spend_skipped += 1
                longrepr = report.longrepr
                reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
                reason = reason.removeprefix("Skipped: ")
                self.spend_incomplete.append({"nodeid": report.nodeid, "reason": reason})
        if report.when == "call":
            self._cell_calls[report.nodeid] = getattr(report, "budget_cell_calls", None)
        if report.when == "teardown":
            self.tests_done += 1
            self._progress(report.nodeid)
        record = getattr(report, "budget_cell", None)
        if record is None or report.when not in ("setup", "call"):
            return
        cell = json.loads(record)
        cell["test_outcome"] = report.outcome
        cell["duration_s"] = round(report.duration, 4)
        self.session.add_cell(cell)

    def _ledger_state(self) -> Any:
        runtime = self.session.memo.get("model-runtime-factory")
        if runtime is not None:
            runtime.flush()  # this process's own buffered counters (no xdist)
        runtime_config = self.session.memo.get("model-runtime-config")
        if runtime_config is None or runtime_config.ledger_path is None:
            return None, None
        from pytest_budget.models.ledger import SpendLedger

        return runtime_config, SpendLedger(runtime_config.ledger_path).read()

    def _progress(self, nodeid: str = "") -> None:
        """A live line of model calls, tokens and spend, and the finished cell's own
        (:mod:`pytest_budget.progress`: one per cell off a terminal; silent under -q)."""
        if self.config.get_verbosity() < 0 or "model-runtime-config" not in self.session.memo:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        from pytest_budget.progress import cell_part, due

        now = time.monotonic()
        cell = self._cell_calls.pop(nodeid, None)
        if not due(bool(getattr(reporter, "isatty", False)), now, self._last_progress):
            return
        runtime_config, state = self._ledger_state()
        if state is None or not (state.count("calls") or state.count("replayed") or cell):
            return
        self._last_progress = now
        from pytest_budget.models.run import progress_line

        line = progress_line(runtime_config, state, self.tests_done, self.tests_total)
        writer = getattr(reporter, "_tw", None)
        if getattr(writer, "width_of_current_line", 0):  # after xdist's progress dots
            reporter.write("\n")
        reporter.ensure_newline()
        reporter.write_line(line + cell_part(nodeid, cell))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config):
            return
        for title, lines in self.session.table_lines():
            terminalreporter.write_sep("=", title)
            for line in lines:
                terminalreporter.write_line(line)
        options = self.session.options
        if self.session.cells and options.suites and options.gate != "off":
            rules = ", ".join(f"{suite} {options.gate_for(suite)}" for suite in options.suites)
            terminalreporter.write_line(f"budget gate: {rules}")
        runtime_config, state = self._ledger_state()
        if state is not None:
            from pytest_budget.models.run import summary_line

            terminalreporter.write_sep("=", "budget: model calls")
            for line in summary_line(runtime_config, state, self.spend_skipped):
                terminalreporter.write_line(line)
            from pytest_budget.forecast_suites import forecast_after_run

            for line in forecast_after_run(self.session, state):
                terminalreporter.write_line(line)
        if self.session.options.report_path:
            terminalreporter.write_line(f"budget report: {self.session.options.report_path}")
        if self.session.options.html_path:
            terminalreporter.write_line(f"budget html: {self.session.options.html_path}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        if _is_worker(self.config):
            return
        runtime_config, state = self._ledger_state()
        if state is not None:
            from pytest_budget.models.run import models_report

            self.session.extra["models"] = models_report(runtime_config, state, self.spend_skipped)
            from pytest_budget.forecast_suites import forecast_report

            self.session.extra["models"]["forecast"] = forecast_report(self.session)
            self.session.extra["models"]["cells_incomplete"] = self.spend_incomplete
        report = self.session.report()
        self.session.write_report(report)
        self.session.write_html(report)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Workers write their last buffered model-call counters before they exit."""
    state = session.config.stash.get(SESSION_KEY, None)
    runtime = state.memo.get("model-runtime-factory") if state is not None else None
    scheduler = state.memo.get("cell-scheduler") if state is not None else None
    if scheduler is not None:
        scheduler.cancel_all()  # cells started ahead whose tests did not run (-x, Ctrl-C)
    if runtime is not None:
        runtime.flush()
    loop_module = sys.modules.get("pytest_budget.models.loop")
    if loop_module is not None:
        loop_module.close_worker_loop()


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """Readable failures for ``assert scores == expected`` on score objects."""
    # No TriageScores exists unless its module was imported (never import it here: this
    # hook runs for every failed == of every test in the environment).
    evaluate = sys.modules.get("pytest_budget.triage.evaluate")
    TriageScores = getattr(evaluate, "TriageScores", None)
    if op != "==" or TriageScores is None or not isinstance(left, TriageScores):
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
