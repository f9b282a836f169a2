"""Inner pytest runs in the test's own process (issue 33: the project's tests took ~22 min).

A ``runpytest_subprocess`` pays 1-3.6 s of interpreter start-up and imports before any work;
an in-process run pays none of it once the plugin is imported here.  Two switches keep the
inner run cheap: plain asserts (the inner tests' rewriting re-imports modules each run) and
no hypothesis plugin (re-imported per run otherwise).

Module-level state of the plugin checked for leaks between inner runs: the agent timeout
(agent_log) and the output limit (replies) are set at every start-up; the suite registry only
holds the built-in suites (the same in every run); the remaining ``functools`` caches memoise
pure functions of their arguments.  Tests whose claim needs a real process (signals, crashes,
``pytest.exit`` codes, stderr, environment read at import) keep ``runpytest_subprocess``.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import pytest_budget

INPROCESS = ("--assert=plain", "-p", "no:hypothesispytest")


def import_the_plugin() -> None:
    """Import every module of the plugin here once: pytester drops the modules an in-process
    run imported, so each run would import them again (~4 s a run); imported here, every run
    runs the same code in about a second."""
    for module in pkgutil.walk_packages(pytest_budget.__path__, "pytest_budget."):
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed: the run needs it not
            continue


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytester.runpytest_inprocess(*args)`` with the plugin imported and the cheap switches."""
    import_the_plugin()
    return pytester.runpytest_inprocess(*args, *INPROCESS)


def draw_a_figure() -> None:
    """Draw one small figure the way the HTML report does, if matplotlib is installed: the
    modules matplotlib imports lazily while drawing (its C extensions among them) then load
    here, not inside an in-process run that draws (``--budget-html``), where pytester would
    drop them afterwards and this process's later figures would mix two copies of their
    classes (every later figure of a worker failed so in session 14)."""
    try:
        from pytest_budget.report._html.figures import encode, finish, new_figure
    except ImportError:  # no matplotlib (the report extra): no run here draws a figure
        return
    fig, axes = new_figure(1, 2, 2.0, 1.5)
    axes[0].plot([0, 1], [0, 1], label="line")
    axes[1].bar([0, 1], [1, 2], hatch="//", label="bar")
    axes[1].set_yscale("log")
    encode(finish(fig, *axes[0].get_legend_handles_labels()))


# Imported at collection, before any pytester snapshots sys.modules: the modules then stay for
# every test of this process (imported inside a test, pytester drops them at its teardown).
import_the_plugin()
draw_a_figure()
