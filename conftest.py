"""Configuration of pytest-budget's own test suite (not of the installed plugin).

pytester is enabled in pyproject.toml (``-p pytester``), not here: with an editable install
this file sits above the suite modules, and ``pytest_plugins`` outside a rootdir conftest
is an error for runs started elsewhere.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The plugin imports numpy lazily, on first use.  pytester's in-process runs remove the
# modules they imported when they end, and numpy cannot be imported twice in one process:
# import it once here, before any in-process run, so every run finds it loaded.
import numpy  # noqa: F401
import pytest

_TESTS = Path(__file__).resolve().parent / "tests"
#: Whether this run is of this project's own tests (not a user's run inside a clone).
_OWN_TESTS = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    """Warnings are errors in this project's own test runs only.

    pyproject.toml's pytest section is also the configuration of a user's run started
    inside a clone (the README's main job at its root), which must not fail on a warning
    from their agent's libraries; so ``error`` is added here, for runs of ``tests/``.
    """
    here = config.invocation_params.dir
    paths = [(here / arg.partition("::")[0]).resolve() for arg in config.args]
    config.stash[_OWN_TESTS] = bool(paths) and all(path.is_relative_to(_TESTS) for path in paths)
    if config.stash[_OWN_TESTS]:
        config.addinivalue_line("filterwarnings", "error")
    config.addinivalue_line(
        "markers",
        "hypothesis_plugin: pytester runs keep hypothesis's plugin unless they disable it",
    )
    if paths and all(path.is_relative_to(_TESTS) for path in paths):
        # CI shares its 2 cores: generating inputs slowly is the machine's load, not a
        # property under test (the examples drawn and the assertions stay the same).
        from hypothesis import HealthCheck, settings

        settings.register_profile(
            "shared-machine",
            settings.get_profile("default"),
            suppress_health_check=[HealthCheck.too_slow],
        )
        settings.load_profile("shared-machine")
        _share_compiled_modules(config)


#: Set in the processes this suite starts: the folder their compiled modules are shared in.
_SHARED_BYTECODE = "BUDGET_OWN_TESTS_BYTECODE"


def _share_compiled_modules(config: pytest.Config) -> None:
    """One bytecode cache for every Python process this suite starts.

    The suite starts hundreds of ``python -m pytest`` processes (pytester's subprocess runs,
    the docs' commands, the saved-report runs).  Where ``PYTHONDONTWRITEBYTECODE`` is set (as
    on the CI machine), each compiled pytest, numpy and all of pytest_budget again: ~2 s of
    CPU of a small run's ~4.5 s.  Here the first process writes them to a folder of this test
    session (``PYTHONPYCACHEPREFIX``: never into the checkout or a test's folder) and the
    rest read them, as on any machine that caches bytecode.  pytest checks its rewritten
    modules (conftest and test files) by source hash, so a file a test rewrites is never
    stale.  The test processes themselves still write nothing (they import what tests write
    and rewrite within a second, which a timestamp-checked cache could miss).
    """
    if os.environ.get(_SHARED_BYTECODE):  # an xdist worker: the controller made the folder
        sys.dont_write_bytecode = True
        return
    if os.environ.get("PYTHONPYCACHEPREFIX"):  # the machine already shares one
        return
    folder = tempfile.mkdtemp(prefix="pytest-budget-bytecode-")
    _link_compiled_modules(folder)
    os.environ |= {"PYTHONPYCACHEPREFIX": folder, _SHARED_BYTECODE: folder}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def _link_compiled_modules(folder: str) -> None:
    """Link the compiled files of the modules this process imported (the standard library's
    and site-packages', which pip compiled) into ``folder``: with a prefix, Python looks for
    compiled files there only, and would compile them all again once."""
    import importlib.util

    before = sys.pycache_prefix
    sys.pycache_prefix = folder
    try:
        for module in list(sys.modules.values()):
            source, cached = getattr(module, "__file__", None), getattr(module, "__cached__", None)
            if not source or not cached or not os.path.isfile(cached):
                continue
            target = Path(importlib.util.cache_from_source(source))
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(cached)  # a process that recompiles replaces the link only
    finally:
        sys.pycache_prefix = before


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if not pluginmanager.has_plugin("asyncio"):
        # pyproject.toml sets this pytest-asyncio key; without the plugin (`pip install .`,
        # no dev extra) pytest would warn that it does not know it.  Declared, it is inert.
        parser.addini(
            "asyncio_default_fixture_loop_scope",
            help="pytest-asyncio's key (declared here when pytest-asyncio is not installed)",
        )
    parser.addoption(
        "--budget-live",
        action="store_true",
        default=False,
        help="also run tests marked 'live' that call a real model endpoint",
    )


@pytest.fixture(autouse=True)
def _quiet_async_plugin_in_pytester_runs(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Options every pytester run of this suite gets through PYTEST_ADDOPTS (a test may
    set its own PYTEST_ADDOPTS after this).

    pytest-asyncio (a dev dependency) warns in every project without its ini key; the
    projects that pytester makes have none: set it for them.  hypothesis's plugin imports
    all of hypothesis at the end of every run (~2 s of CPU, most of a small run's start),
    and no project pytester makes uses hypothesis: leave it out (and the dev extra's other
    plugins, DEV_ONLY_PLUGINS_OFF), unless the test is marked
    ``hypothesis_plugin`` (its runs name ``-p`` options that a re-run command must repeat,
    and an option in PYTEST_ADDOPTS is not repeated)."""
    if "pytester" not in request.fixturenames:
        return
    options = list(DEV_ONLY_PLUGINS_OFF)
    if request.node.get_closest_marker("hypothesis_plugin") is None:
        options.append("-p no:hypothesispytest")
    try:
        import pytest_asyncio  # noqa: F401
    except ImportError:
        pass
    else:
        options.append("-o asyncio_default_fixture_loop_scope=function")
    request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join(options))


#: pytest plugins that come with this project's dev extra only (pytest-benchmark, and
#: platformdirs's through inspect_ai), not with ``pip install pytest-budget``: the runs this
#: suite starts stand for a user's, and each would pay ~0.2 s of CPU to load them.
DEV_ONLY_PLUGINS_OFF = ("-p no:benchmark", "-p no:platformdirs")


def _balanced(config: pytest.Config) -> bool:
    """Own tests under ``-n`` with xdist's default ``--dist``: tests/schedule.py orders them
    (an xdist worker is told by the controller, pytest_configure_node)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return bool(workerinput.get("budget_balanced"))
    args = [str(arg) for arg in config.invocation_params.args]
    return (
        config.stash.get(_OWN_TESTS, False)
        and bool(config.getoption("numprocesses", None))
        and config.getoption("dist", None) == "load"
        and not any(arg in ("--dist", "-d") or arg.startswith("--dist=") for arg in args)
    )


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """xdist workers write the test modules they rewrite while they collect, to the shared
    bytecode folder, and split the rewriting between them (tests/rewrite_ahead.py)."""
    if not os.environ.get(_SHARED_BYTECODE) or not hasattr(session.config, "workerinput"):
        return (yield)
    from tests.rewrite_ahead import rewrite_backwards

    sys.dont_write_bytecode = False
    try:
        rewrite_backwards(session.config, _TESTS)
        return (yield)
    finally:
        sys.dont_write_bytecode = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _balanced(config):
        from tests.schedule import balanced_order

        items[:] = balanced_order(items)
    if config.getoption("--budget-live"):
        return
    skip = pytest.mark.skip(reason="talks to a real model endpoint; run with --budget-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["budget_balanced"] = _balanced(node.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if not _balanced(config):
        return None
    from tests.schedule import make_scheduler

    return make_scheduler(config, log)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium under Playwright, one per browser test module (skips with the
    reason when Playwright or chromium is missing)."""
    from tests.test_html_browser import CHROMIUM, _playwright, wait_for_chromium

    sync_playwright = _playwright()
    wait_for_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt here and in the processes this test starts, as in a
    terminal.  A shell that starts a job in the background (``cmd &`` without job control)
    sets SIGINT to ignored, every child inherits that, and Python then installs no handler:
    a Ctrl-C test would see its signal vanish.  Python handlers fall back to the default
    disposition across ``exec``, so children start with SIGINT as a terminal gives it."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
