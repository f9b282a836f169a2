"""The pytest plugin: options, suite collection, score transport, tables and the report.

Registered through the ``pytest11`` entry point as ``budget``.  Everything that does not
need pytest lives in the core modules; this module only wires them to pytest's hooks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_budget import hookspecs, suite_hooks
from pytest_budget.options import BudgetOptions, OptionError, parse_options
from pytest_budget.plugin_models import (
    check_model_agents,
    register_model_providers,
    set_up_model_runtime,
)
from pytest_budget.plugin_options import add_options, rerun_command_for
from pytest_budget.plugin_state import CELL_KEY, GATE_KEY, SESSION_KEY, budget_session
from pytest_budget.run_reporter import RunReporter
from pytest_budget.suite_registry import (
    bundled_cells_folder,
    cell_module_paths,
    kind_of_test_file,
    registered_suites,
)

if TYPE_CHECKING:
    pass

# The shared fixtures, then each registered suite's own.
pytest_plugins = [
    "pytest_budget.fixtures.core",
    *(module for suite in registered_suites().values() for module in suite.fixture_modules),
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_hookspecs(suite_hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "budget(**caps): cap the test's budget, e.g. @pytest.mark.budget(tokens=2500, "
        "tool_calls=20, usd=0.5); read it through the budget_cap fixture",
    )
    register_model_providers()
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
    config.pluginmanager.register(RunReporter(config, session), "budget-run")
    from pytest_budget.plugin_markdown import configure_markdown

    configure_markdown(config)  # --budget-markdown, GITHUB_STEP_SUMMARY
    check_model_agents(options)
    set_up_model_runtime(config, session)
    _map_suite_args(config)
    if options.suites:
        _add_suite_paths(config, options)


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
    return bundled_cells_folder()


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


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The conftest.py of the folder pytest runs from reaches the bundled suites.

    pytest scopes a conftest's fixtures to its own folder, and the suite modules live in
    site-packages: a ``budget_planner`` override in a conftest below the rootdir (a folder
    made inside a project, or inside a clone of this repository) would be silently ignored.
    The conftests from the invocation folder up to (not including) the rootdir, whose
    fixtures a user means for this run, are made visible to every test instead.
    """
    config = session.config
    if not budget_session(config).options.suites:
        return
    for plugin in _conftests_on_invocation_path(config):
        _register_fixtures_everywhere(session, plugin)


def _conftests_on_invocation_path(config: pytest.Config) -> list[object]:
    here, root = config.invocation_params.dir.resolve(), config.rootpath.resolve()
    if here == root or not here.is_relative_to(root):
        return []  # the rootdir's own conftest already reaches every test
    found = []
    for plugin in config.pluginmanager.get_plugins():
        name = config.pluginmanager.get_name(plugin) or ""
        if not name.endswith("conftest.py"):
            continue
        folder = Path(name).resolve().parent
        if folder != root and folder.is_relative_to(root) and here.is_relative_to(folder):
            found.append(plugin)
    return found


def _register_fixtures_everywhere(session: pytest.Session, plugin: object) -> None:
    """Register the conftest's attributes, hooks left out, as a plain plugin: pytest gives a
    plugin's fixtures global reach (its hooks are already registered with the conftest)."""
    import types

    manager = session.config.pluginmanager
    # Not ending in "conftest.py": pytest would scope it to a folder again.
    name = f"budget-fixtures-of:{manager.get_name(plugin)}:global"
    if manager.get_plugin(name) is not None:
        return
    holder = types.ModuleType(name)  # pytest reads a module's own attributes for fixtures
    for attr in dir(plugin):
        if not attr.startswith(("pytest_", "__")):
            setattr(holder, attr, getattr(plugin, attr))
    manager.register(holder, name)


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
        from pytest_budget.fixtures.core import CELL_WRITTEN_KEY, cell_calls

        counts = cell_calls(item)
        if counts is not None:  # the cell's own calls, for the controller's progress line
            report.budget_cell_calls = json.dumps(counts.as_dict())  # type: ignore[attr-defined]
        written = item.stash.get(CELL_WRITTEN_KEY, None)
        if written is not None:  # reference tokens its unmetered agents wrote, per role
            report.budget_cell_written = json.dumps(written)  # type: ignore[attr-defined]
    record = item.stash.get(CELL_KEY, None)
    if record is not None and report.when in ("setup", "call"):
        # Travels to the xdist controller with the report (plain string attribute).
        report.budget_cell = record  # type: ignore[attr-defined]
    changes = item.stash.get(GATE_KEY, None)
    if changes is not None and report.when == "call":
        report.budget_gate = changes  # type: ignore[attr-defined]
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
    from pytest_budget.records import cell_from_json, cell_to_json

    excinfo = call.excinfo
    reason = excinfo.exconly().splitlines()[0][:500] if excinfo is not None else "failed"
    record = item.stash.get(CELL_KEY, None)
    if record is not None:
        expected = (AssertionError, pytest.fail.Exception, pytest.skip.Exception)
        if excinfo is None or excinfo.errisinstance(expected):
            return
        data = mark_crashed(
            cell_from_json(json.loads(record)), reason=reason, traceback=report.longreprtext
        )
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
    item.stash[CELL_KEY] = json.dumps(cell_to_json(data), allow_nan=False, default=str)


def _stop_if_endpoint_down(item: pytest.Item) -> None:
    """Most calls to a model endpoint fail: stop the run with one line naming it (pytest's
    ``-x`` mechanism, which xdist workers pass on to the controller)."""
    state = item.config.stash.get(SESSION_KEY, None)
    runtime = state.memo.get("model-runtime-factory") if state is not None else None
    reason = runtime.endpoint_down() if runtime is not None else None
    if reason and not item.session.shouldstop:
        item.session.shouldstop = f"budget: {reason}"


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
