"""The pytest plugin: options, suite collection, score transport, tables and the report.

Registered through the ``pytest11`` entry point as ``budget``.  Everything that does not
need pytest lives in the core modules; this module only wires them to pytest's hooks.

Nothing loads until it is used: an unrelated pytest run imports this module, the hook
specifications and what registering the options needs, and nothing else.  The run's
session, option checks, reporter and fixture modules are *engaged* (:func:`engage`) when a
``--budget-*`` option or ``budget_*`` ini key is given, the command line names a bundled
suite cell, or a test's fixture closure asks for a budget fixture (:data:`BUDGET_FIXTURES`;
found while collecting, before the test's fixtures are resolved).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_budget._core.rewrite_mark import narrow_rewrite_marks
from pytest_budget._plugin import hookspecs, suite_hooks
from pytest_budget._plugin.options import (
    INI_DEFAULTS,
    OPTION_GROUP,
    add_options,
    refuse_a_gate_that_cannot_fail,
    rerun_command_for,
)

if TYPE_CHECKING:
    from pytest_budget._run.options import BudgetOptions
    from pytest_budget._run.session import BudgetSession

#: Every fixture the plugin's fixture modules define (tests/test_import_cost.py checks the
#: list against them): a test whose fixture closure names one engages the plugin.
BUDGET_FIXTURES = frozenset(
    {
        "budget_session_state", "budget_options", "budget_seed", "budget_agent",
        "budget_planner", "budget_solver", "budget_estimator", "budget_actor",
        "budget_tool_agent", "budget_online_actor", "budget_cap", "budget_meter",
        "budget_snapshot", "budget_record", "budget_role_agent", "_budget_spend_guard",
        "_budget_own_planner",
        "_budget_own_solver", "_budget_own_estimator", "_budget_own_actor",
        "_budget_own_tool_agent", "_budget_own_online_actor", "triage_ground_truth",
        "triage_pools", "awareness_search_url", "awareness_rollouts", "planning_queries",
    }
)  # fmt: skip
#: The attributes a worker's test report carries to the xdist controller for the reporter.
_REPORT_ATTRIBUTES = ("budget_cell", "budget_cell_calls", "budget_gate")
#: The fixture modules every engaged run registers (each suite adds its own).
CORE_FIXTURES = "pytest_budget.fixtures.core"
#: Set on the config once the plugin is engaged (the session is in plugin_state's key).
_ENGAGED = pytest.StashKey[bool]()
_REPORTER = "budget-run"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_hookspecs(suite_hooks)
    _rewrite_only_test_code(pluginmanager)


def _rewrite_only_test_code(pluginmanager: pytest.PytestPluginManager) -> None:
    """Narrow pytest's assertion rewriting to the bundled suites (see
    :mod:`pytest_budget._core.rewrite_mark`; a later hook in the same process, too)."""
    hook = getattr(pluginmanager, "rewrite_hook", None)
    if hook is not None:
        narrow_rewrite_marks(hook)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "budget(**caps): cap the test's budget, e.g. @pytest.mark.budget(tokens=2500, "
        "tool_calls=20, usd=0.5); read it through the budget_cap fixture",
    )
    if _asked_for(config):
        engage(config)
    else:
        config.pluginmanager.register(_Engager(config), "budget-engager")


def engaged(config: pytest.Config) -> bool:
    return config.stash.get(_ENGAGED, False)


def _asked_for(config: pytest.Config) -> bool:
    """Whether the run uses the plugin from its start: a ``--budget-*`` option or a
    ``budget_*`` ini key given, a bundled suite cell named, the fixtures listed, or an xdist
    controller that was engaged."""
    group = OPTION_GROUP.get("budget")
    for option in group.options if group is not None else ():
        value = config.getoption(option.dest)
        if value is not None and value is not False and value != option.attrs().get("default"):
            return True
    if any(config.getini(name) != default for name, default in INI_DEFAULTS.items()):
        return True
    if getattr(config.option, "showfixtures", False) or getattr(
        config.option, "show_fixtures_per_test", False
    ):
        return True
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get("budget_engaged"):
        return True
    here = config.invocation_params.dir
    pyargs = bool(getattr(config.option, "pyargs", False))
    return any(_names_bundled_cells(str(arg), here, pyargs=pyargs) for arg in config.args)


def _names_bundled_cells(arg: str, here: Path, *, pyargs: bool = False) -> bool:
    if pyargs and arg.partition("::")[0].split(".")[:2] == ["pytest_budget", "suites"]:
        return True  # --pyargs pytest_budget.suites[.test_x]
    path_part = arg.partition("::")[0].replace("\\", "/").removeprefix("./")
    if path_part == "pytest_budget/suites" or path_part.startswith("pytest_budget/suites/"):
        return True
    spec = importlib.util.find_spec("pytest_budget.suites")
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        return False
    return _in_suites_folder(arg, Path(next(iter(locations))).resolve(), here)


def engage(config: pytest.Config, *, started: bool = False) -> BudgetSession:
    """Parse and check the options, start the run's session and reporter and register the
    fixture modules.  ``started``: the pytest session is running already (engaged by a test
    asking for a budget fixture), so the reporter's session-start work is done now."""
    from pytest_budget._plugin.state import SESSION_KEY

    if engaged(config):
        return config.stash[SESSION_KEY]
    config.stash[_ENGAGED] = True
    from pytest_budget._core.registry import registered_suites
    from pytest_budget._plugin.fixture_modules import import_fixture_module
    from pytest_budget._plugin.models import (
        check_model_agents,
        register_model_providers,
        set_up_model_runtime,
    )
    from pytest_budget._plugin.reporter import RunReporter
    from pytest_budget._run.options import OptionError, parse_options
    from pytest_budget._run.session import BudgetSession

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
    refuse_a_gate_that_cannot_fail(config, options.gate)

    session = BudgetSession(options)
    config.stash[SESSION_KEY] = session
    from pytest_budget._core.replies import set_run_output_limit

    set_run_output_limit(options.max_output_chars)
    from pytest_budget._core.agent_log import set_agent_timeout

    set_agent_timeout(options.agent_timeout)
    session.extra["shard"] = options.shard.as_dict() if options.shard else None
    reporter = RunReporter(config, session)
    config.pluginmanager.register(reporter, _REPORTER)
    from pytest_budget._plugin.markdown import configure_markdown

    configure_markdown(config)  # --budget-markdown, GITHUB_STEP_SUMMARY
    check_model_agents(options)
    set_up_model_runtime(config, session)
    # Shared fixtures and run hooks, then each suite's own (registering checks their inputs).
    modules = [CORE_FIXTURES, "pytest_budget._plugin.heap", "pytest_budget._plugin.prefetch"]
    modules += [m for suite in registered_suites().values() for m in suite.fixture_modules]
    for module in modules:
        import_fixture_module(config.pluginmanager, module)
    if started:
        reporter.pytest_sessionstart()
        return session
    _map_suite_args(config)
    if options.suites:
        _add_suite_paths(config, options)
    return session


class _Engager:
    """Registered while the plugin is idle: engages it when a test asks for a budget
    fixture, or when an xdist worker's report carries a cell to this controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # xdist controller: the workers' collected ids, told to the reporter if engaged later.
        self.collected: list[tuple[Any, list[str]]] = []

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object) -> Any:
        """Its items are made again once the plugin is engaged, with the budget fixtures
        registered (pytest resolves a test's fixtures when it makes the item)."""
        made = yield
        if made is None or engaged(self.config):
            return made
        items = made if isinstance(made, list) else [made]
        if not any(BUDGET_FIXTURES.intersection(getattr(i, "fixturenames", ())) for i in items):
            return made
        engage(self.config, started=True)
        return collector.ihook.pytest_pycollect_makeitem(collector=collector, name=name, obj=obj)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The xdist controller collects nothing itself; its reporter, registered now, gets
        this report too."""
        if engaged(self.config) or not _carries_budget_data(report):
            return
        engage(self.config, started=True)
        reporter = self.config.pluginmanager.get_plugin(_REPORTER)
        if reporter is not None:
            # What the reporter missed: the tests' count and the run's gated pairs.
            for node, ids in self.collected:
                reporter.pytest_xdist_node_collection_finished(node=node, ids=ids)
            reporter.pytest_runtest_logreport(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not engaged(self.config):
            self.collected.append((node, list(ids)))


def _carries_budget_data(report: pytest.TestReport) -> bool:
    if any(hasattr(report, name) for name in _REPORT_ATTRIBUTES):
        return True
    return any(str(key).startswith("budget_") for key, _ in report.user_properties)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: an engaged controller engages every worker from its start."""
    if engaged(node.config):
        node.workerinput["budget_engaged"] = True


def _add_suite_paths(config: pytest.Config, options: BudgetOptions) -> None:
    """Collect the installed suite modules, like ``--pyargs pytest_budget.suites.test_x``.

    With no explicit paths on the command line only the suites run (not the project's
    own tests under the current directory); with explicit paths the suites are added.
    """
    folder = _suites_folder()
    from pytest_budget._core.registry import cell_module_paths

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
    from pytest_budget._core.registry import bundled_cells_folder

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
    from pytest_budget._run.rerun import map_suite_arg

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
    if not engaged(config) or not _options(config).suites:
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
    if not engaged(parent.config) or module_path.resolve().parent != _suites_folder():
        return None
    from pytest_budget._core.registry import kind_of_test_file
    from pytest_budget._run.rerun import suite_node_path

    if not kind_of_test_file(module_path.name):
        return None

    return pytest.Module.from_parent(
        parent, path=module_path, nodeid=suite_node_path(module_path.name)
    )


def _options(config: pytest.Config) -> BudgetOptions:
    from pytest_budget._plugin.state import budget_session

    return budget_session(config).options


def pytest_report_header(config: pytest.Config) -> str | None:
    shard = _options(config).shard if engaged(config) else None
    if shard is None:
        return None
    return f"budget shard: {shard} (each test's shard comes from a hash of its id)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--budget-shard=i/N``: keep this shard's tests (every test, cells or not), so the
    N shards together run each collected test exactly once.  A pure function of each
    test's id: every xdist worker deselects the same tests."""
    shard = _options(config).shard if engaged(config) else None
    if shard is None:
        return
    import pytest_budget.suites as suites_package
    from pytest_budget._run.shard import partition

    folder = Path(suites_package.__file__).resolve().parent
    kept, dropped = partition((_shard_identity(item, folder) for item in items), shard)
    if dropped:
        config.hook.pytest_deselected(items=[items[i] for i in dropped])
        items[:] = [items[i] for i in kept]


def _shard_identity(item: pytest.Item, suites_folder: Path) -> str:
    """The node id, with the install location of the bundled suite modules left out."""
    from pytest_budget._run.shard import suite_identity

    path = Path(item.path).resolve()
    return suite_identity(item.nodeid, path.name if path.parent == suites_folder else None)


AGENT_ERRORS_KEY = pytest.StashKey[list[Any]]()
_TRACEBACKS_SHOWN = 3


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A live run starts the work of the cells this process will run now (one concurrency
    limit spans cells); each test then waits for its own cell's result."""
    if not engaged(item.config):
        return
    from pytest_budget._plugin.state import budget_session

    state = budget_session(item.config)
    if state.model_runtime is not None:
        from pytest_budget.fixtures.cells import schedule_ahead

        schedule_ahead(item, state)


def pytest_keyboard_interrupt() -> None:
    """Ctrl-C: stop the work on the process's event loop too (cells started ahead)."""
    loop_module = sys.modules.get("pytest_budget.models._loop")
    if loop_module is not None:
        loop_module.cancel_worker_loop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Collect the errors of agents called during the test (for the failure report)."""
    if not engaged(item.config) and "pytest_budget._core.agent_log" not in sys.modules:
        return (yield)  # no agent can have been called: nothing of the package is loaded
    from pytest_budget._core.agent_log import collect_agent_errors

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
    if engaged(item.config):
        _add_cell_parts(item, call, report)
    elif report.failed and call.excinfo is not None:
        _explain_unreached_fixture(call.excinfo.value, report)
    errors = item.stash.get(AGENT_ERRORS_KEY, None)
    if errors and report.when == "call" and report.failed:
        # The user's own traceback, as pytest shows a test's: file and line in their code.
        report.sections.append(("agent error traceback", agent_error_section(errors)))
    return report


def _explain_unreached_fixture(error: BaseException, report: pytest.TestReport) -> None:
    """``request.getfixturevalue("budget_...")`` in a run the plugin was not engaged for:
    say why the fixture is missing and the one-line fix (pytest only says "not found")."""
    name = getattr(error, "argname", None)
    if not isinstance(error, pytest.FixtureLookupError) or name not in BUDGET_FIXTURES:
        return
    report.sections.append(
        (
            "budget: fixture not loaded",
            f"{name} is a pytest-budget fixture, but nothing in this run asked for the plugin "
            f"before the tests ran: request.getfixturevalue({name!r}) alone does not load it. "
            f'Add @pytest.mark.usefixtures("{name}") to the test, name it in the test\'s or a '
            "fixture's arguments, or run with a --budget-* option or a budget_* ini key.",
        )
    )


def _add_cell_parts(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """What an engaged run's report carries: a crashed cell, the re-run command, the cell's
    record, calls and per-unit gate changes."""
    from pytest_budget._core.registry import kind_of_test_file
    from pytest_budget._plugin.state import CELL_KEY, GATE_KEY

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


def _record_crashed_cell(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """A bundled suite's cell that failed before recording becomes an ``error`` cell with
    its traceback; a recorded cell whose test then crashed (not a gate failure or a
    ``pytest.fail``) becomes ``error`` and keeps its scores.  Never lost from the reports."""
    import pytest_budget.suites as suites_package
    from pytest_budget._core.record_json import cell_from_json, cell_to_json
    from pytest_budget._plugin.state import CELL_KEY
    from pytest_budget._run.crashed import error_cell, mark_crashed

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
            seed=_options(item.config).seed,
        )
    item.stash[CELL_KEY] = json.dumps(cell_to_json(data), allow_nan=False, default=str)


def _stop_if_endpoint_down(item: pytest.Item) -> None:
    """Most calls to a model endpoint fail: stop the run with one line naming it (pytest's
    ``-x`` mechanism, which xdist workers pass on to the controller)."""
    from pytest_budget._plugin.state import SESSION_KEY

    state = item.config.stash.get(SESSION_KEY, None)
    runtime = state.model_runtime if state is not None else None
    reason = runtime.endpoint_down() if runtime is not None else None
    if reason and not item.session.shouldstop:
        item.session.shouldstop = f"budget: {reason}"


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Workers write their last buffered model-call counters before they exit."""
    if not engaged(session.config):
        return
    from pytest_budget._plugin.state import SESSION_KEY

    state = session.config.stash.get(SESSION_KEY, None)
    runtime = state.model_runtime if state is not None else None
    scheduler = state.cell_scheduler if state is not None else None
    if scheduler is not None:
        scheduler.cancel_all()  # cells started ahead whose tests did not run (-x, Ctrl-C)
    if runtime is not None:
        runtime.flush()
    loop_module = sys.modules.get("pytest_budget.models._loop")
    if loop_module is not None:
        loop_module.close_worker_loop()


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """Readable failures for ``assert scores == expected`` on score objects (in every run:
    a test of your own may compare scores without any budget fixture).  A score object
    explains itself through its ``budget_difference(other)`` method."""
    explain = getattr(type(left), "budget_difference", None)
    if op != "==" or explain is None:
        return None
    lines: list[str] | None = explain(left, right)
    return lines
