"""Configuration of pytest-budget's own test suite (not of the installed plugin).

pytester is enabled in pyproject.toml (``-p pytester``), not here: with an editable install
this file sits above the suite modules, and ``pytest_plugins`` outside a rootdir conftest
is an error for runs started elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The plugin imports numpy lazily, on first use.  pytester's in-process runs remove the
# modules they imported when they end, and numpy cannot be imported twice in one process:
# import it once here, before any in-process run, so every run finds it loaded.
import numpy  # noqa: F401
import pytest

_TESTS = Path(__file__).resolve().parent / "tests"


def pytest_configure(config: pytest.Config) -> None:
    """Warnings are errors in this project's own test runs only.

    pyproject.toml's pytest section is also the configuration of a user's run started
    inside a clone (the README's main job at its root), which must not fail on a warning
    from their agent's libraries; so ``error`` is added here, for runs of ``tests/``.
    """
    here = config.invocation_params.dir
    paths = [(here / arg.partition("::")[0]).resolve() for arg in config.args]
    if paths and all(path.is_relative_to(_TESTS) for path in paths):
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
    and no project pytester makes uses hypothesis: leave it out, unless the test is marked
    ``hypothesis_plugin`` (its runs name ``-p`` options that a re-run command must repeat,
    and an option in PYTEST_ADDOPTS is not repeated)."""
    if "pytester" not in request.fixturenames:
        return
    options = []
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--budget-live"):
        return
    skip = pytest.mark.skip(reason="talks to a real model endpoint; run with --budget-live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium under Playwright, one per browser test module (skips with the
    reason when Playwright or chromium is missing)."""
    from tests.test_html_browser import CHROMIUM, _playwright

    sync_playwright = _playwright()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
