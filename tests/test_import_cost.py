"""Installing pytest-budget costs an unrelated pytest run nothing: the plugin loads, but
numpy, the HTTP stack and the suites' code are imported only when a budget suite or a
budget fixture is used.  (The timing figure is in benchmarks/bench_import_cost.py.)

An unrelated run imports exactly :data:`UNRELATED_RUN_MODULES`: the entry point, its hook
specifications and what registering the options needs (the run's flags, and each
registered suite's flags through the registry's suite declarations)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pytest_budget._plugin.models as plugin_models

HEAVY = ("numpy", "httpx", "httpcore", "httptools", "h11", "anyio", "sniffio", "tenacity",
         "filelock", "syrupy", "matplotlib", "asyncio", "ssl")  # fmt: skip
# The third-party plugins installed next to ours import some of those themselves (anyio's
# plugin imports anyio, syrupy's syrupy, pytest-asyncio's asyncio): they are switched off to
# see our own imports.
OTHERS_OFF = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:syrupy", "-p", "no:hypothesispytest",
              "-p", "no:benchmark", "-p", "no:xdist", "-p", "no:cacheprovider")  # fmt: skip

#: The package modules an unrelated run imports, by the end of the process's pytest run
#: (read in ``pytest_unconfigure``: what the plugin's session-finish work imports counts).
UNRELATED_RUN_MODULES = [
    "pytest_budget",
    "pytest_budget._core",
    "pytest_budget._core.lazy_exports",
    "pytest_budget._core.metric_spec",
    "pytest_budget._core.old_paths",
    "pytest_budget._core.registry",
    "pytest_budget._core.rewrite_mark",  # first: narrows pytest's rewrite marks
    "pytest_budget._core.sizes",
    "pytest_budget._plugin",
    "pytest_budget._plugin.hookspecs",
    "pytest_budget._plugin.markdown",  # registers --budget-markdown (imports os, pytest)
    "pytest_budget._plugin.options",
    "pytest_budget._plugin.suite_hooks",
    "pytest_budget._version",
    "pytest_budget.awareness",
    "pytest_budget.awareness._options",
    "pytest_budget.awareness._suite",
    "pytest_budget.awareness.online",
    "pytest_budget.awareness.online._options",
    "pytest_budget.planning",
    "pytest_budget.planning._options",
    "pytest_budget.planning._suite",
    "pytest_budget.plugin",
    "pytest_budget.triage",
    "pytest_budget.triage._options",
    "pytest_budget.triage._suite",
]

AT_EXIT = """
import json, sys

@__import__("pytest").hookimpl(trylast=True)
def pytest_unconfigure(config):
    ours = sorted(m for m in sys.modules if m.startswith("pytest_budget"))
    with open("ours.json", "w") as handle:
        json.dump(ours, handle)
"""

PROBE = """
import json, sys

def test_unrelated():
    assert 1 + 1 == 2

def test_zz_dump(pytestconfig):
    plugins = [name for name, _ in pytestconfig.pluginmanager.list_name_plugin()]
    with open("modules.json", "w") as handle:
        json.dump({"modules": sorted(sys.modules), "plugins": plugins}, handle)
"""


def run_pytest(folder: Path, *args: str, code: int = 0) -> str:
    """``pytest -q -p no:randomly ARGS`` in a fresh interpreter in ``folder``: its output."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout


def modules_of_run(folder: Path, *args: str) -> tuple[set[str], list[str]]:
    """The modules loaded by the end of a pytest run in a fresh interpreter, and its plugins."""
    run_pytest(folder, *args)
    data = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    return set(data["modules"]), list(data["plugins"])


def third_party(modules: set[str]) -> set[str]:
    tops = {name.partition(".")[0] for name in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and t != "pytest_budget"}


@pytest.fixture(scope="module")
def unrelated_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[tuple[str, ...]], tuple[set[str], list[str], list[str]]]:
    """One unrelated run per set of other plugins, shared by the tests that read it: the
    modules loaded by its last test, its plugins, and this package's modules at its exit."""
    runs: dict[tuple[str, ...], tuple[set[str], list[str], list[str]]] = {}

    def of(others: tuple[str, ...]) -> tuple[set[str], list[str], list[str]]:
        if others not in runs:
            folder = tmp_path_factory.mktemp("unrelated")
            (folder / "test_probe.py").write_text(PROBE, encoding="utf-8")
            at_exit = modules_at_exit(folder, *others)
            data = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            runs[others] = (set(data["modules"]), list(data["plugins"]), at_exit)
        return runs[others]

    return of


@pytest.mark.parametrize("others", [OTHERS_OFF, ()], ids=["plugin-alone", "all-plugins"])
def test_an_unrelated_run_imports_nothing_heavy(
    tmp_path: Path, others: tuple[str, ...], unrelated_runs: Any
) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(AT_EXIT, encoding="utf-8")  # as in the shared run
    loaded, plugins, _ = unrelated_runs(others)
    assert "budget" in plugins and "pytest_budget.plugin" in loaded  # the plugin is active
    without, _ = modules_of_run(tmp_path, *others, "-p", "no:budget")
    # Nothing third-party that the same run without pytest-budget does not load ...
    assert third_party(loaded) == third_party(without)
    if others:
        assert [m for m in HEAVY if m in loaded] == []
    # ... and none of the suites' code: only the plugin, its options and each suite's
    # declaration and options (the registry reads them; their packages resolve the rest
    # lazily).  No session, no fixture module: nothing asked for them.
    ours = {m for m in loaded if m.startswith("pytest_budget.")}
    heavy_parts = ("triage.", "awareness.", "planning.", "models", "report", "_stats",
                   "_environments", "_run")  # fmt: skip
    declarations = ("._suite", "._options")
    suite_code = [
        m
        for m in ours
        if m.removeprefix("pytest_budget.").startswith(heavy_parts)
        and not m.endswith(declarations)
        and m != "pytest_budget.awareness.online"  # the package, resolved lazily
    ]
    assert suite_code == []
    assert "pytest_budget._stats.bootstrap" not in ours and "pytest_budget._run.session" not in ours


def modules_at_exit(folder: Path, *args: str) -> list[str]:
    (folder / "conftest.py").write_text(AT_EXIT, encoding="utf-8")
    run_pytest(folder, *args)
    found: list[str] = json.loads((folder / "ours.json").read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize("others", [OTHERS_OFF, ()], ids=["plugin-alone", "all-plugins"])
def test_an_unrelated_run_imports_only_the_entry_point_and_option_registration(
    tmp_path: Path, others: tuple[str, ...], unrelated_runs: Any
) -> None:
    assert unrelated_runs(others)[2] == UNRELATED_RUN_MODULES
    # A failing unrelated test loads nothing more either (the re-run section is the cells').
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "test_fails.py").write_text("def test_no():\n    assert 0\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(AT_EXIT, encoding="utf-8")
    run_pytest(tmp_path, *others, code=1)
    found = json.loads((tmp_path / "ours.json").read_text(encoding="utf-8"))
    assert found == UNRELATED_RUN_MODULES


@pytest.mark.parametrize(
    "args",
    [("--budget-seed=7",), ("-o", "budget_repeat=1"), ("--fixtures",)],
    ids=["option", "ini-key", "fixture-list"],
)
def test_a_budget_option_or_ini_key_engages_the_plugin(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    found = modules_at_exit(tmp_path, *OTHERS_OFF, *args)
    engaged = (
        "pytest_budget._run.session",
        "pytest_budget._plugin.reporter",
        "pytest_budget.fixtures.core",
    )
    assert set(engaged) <= set(found)


def test_a_budget_fixture_engages_the_plugin_and_resolves(tmp_path: Path) -> None:
    """Found while collecting: through a user fixture of a conftest, too."""
    (tmp_path / "test_probe.py").write_text(
        PROBE.replace("def test_unrelated():", "def test_unrelated(seed_twice):"),
        encoding="utf-8",
    )
    (tmp_path / "test_probe.py").write_text(
        (tmp_path / "test_probe.py").read_text(encoding="utf-8")
        + "\nimport pytest\n\n@pytest.fixture\ndef seed_twice(budget_seed):\n"
        "    return 2 * budget_seed\n\ndef test_seed(seed_twice):\n    assert seed_twice == 84\n",
        encoding="utf-8",
    )
    found = modules_at_exit(tmp_path, *OTHERS_OFF)
    assert "pytest_budget._run.session" in found and "pytest_budget.fixtures.core" in found


def test_the_engaging_fixture_names_are_the_fixture_modules_own(tmp_path: Path) -> None:
    """:data:`pytest_budget.plugin.BUDGET_FIXTURES` lists every fixture the plugin's fixture
    modules define (``pytest --fixtures -v`` engages the plugin and lists them)."""
    from pytest_budget.plugin import BUDGET_FIXTURES

    output = run_pytest(tmp_path, "--fixtures", "-vv")  # -vv: -q taken back, privates shown
    listed: set[str] = set()
    section = ""
    for line in output.splitlines():
        if line.startswith("-") and "fixtures defined from" in line:
            section = line.split("fixtures defined from")[1].strip(" -")
        elif section.startswith("pytest_budget.fixtures.") and " -- " in line:
            listed.add(line.split()[0])
    assert len(listed) > 20
    assert listed == set(BUDGET_FIXTURES)


def test_a_budget_fixture_in_a_user_test_needs_no_suite_code(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(
        PROBE.replace("def test_unrelated():", "def test_unrelated(budget_options, budget_seed):"),
        encoding="utf-8",
    )
    loaded, _ = modules_of_run(tmp_path, *OTHERS_OFF)
    assert [m for m in HEAVY if m in loaded] == []


def test_a_suite_run_still_loads_what_it_needs(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--budget-suite=triage", "--budget-pool-size=6", "--budget-alpha=0.5",
        "--budget-unsolvable=0", "--budget-gate=off", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*triage: triage efficiency*"])


def test_lazy_provider_names_match_the_model_layer() -> None:
    from pytest_budget.models._provider import PROVIDERS

    assert plugin_models._MODEL_PROVIDERS == PROVIDERS


def test_package_exports_resolve_on_first_use() -> None:
    import pytest_budget

    for name in pytest_budget.__all__:
        assert getattr(pytest_budget, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = pytest_budget.nothing  # type: ignore[attr-defined]
    assert set(pytest_budget.__all__) <= set(dir(pytest_budget))


CONTROLLER_CELLS = """
import json

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    from pytest_budget._plugin.state import SESSION_KEY

    state = config.stash.get(SESSION_KEY, None)
    with open("controller.json", "w") as handle:
        json.dump(None if state is None else sorted(state.cells), handle)
"""


def test_an_xdist_controller_engages_on_a_workers_cell(tmp_path: Path) -> None:
    """The controller collects nothing: the first worker report carrying a cell engages it,
    and that cell reaches its session (tables, report)."""
    (tmp_path / "conftest.py").write_text(CONTROLLER_CELLS, encoding="utf-8")
    (tmp_path / "test_mine.py").write_text(
        "def test_cell(budget_record):\n"
        '    budget_record({"suite": "mine", "cell": "c", "agent": "a", "scores": {"hit": 0.5}})\n'
        "\n\ndef test_plain():\n    assert True\n",
        encoding="utf-8",
    )
    run_pytest(tmp_path, "-n", "2")
    cells = json.loads((tmp_path / "controller.json").read_text(encoding="utf-8"))
    assert cells == ["test_mine.py::test_cell"]


CONTROLLER_REPORTER = """
import json

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    reporter = config.pluginmanager.get_plugin("budget-run")
    with open("controller.json", "w") as handle:
        json.dump(None if reporter is None else [reporter.tests_total, reporter.tests_done,
                  reporter.no_baseline], handle)
"""


def test_a_late_engaged_xdist_controller_counts_every_test_and_fails_a_missing_baseline(
    tmp_path: Path,
) -> None:
    """The controller engages on the first report carrying budget data: the tests the
    workers collected before that still count, and a cell without a stored baseline fails
    the run with the end line, as in a run engaged from its start."""
    (tmp_path / "conftest.py").write_text(CONTROLLER_REPORTER, encoding="utf-8")
    plain = "".join(f"def test_plain_{i}():\n    assert True\n\n" for i in range(5))
    (tmp_path / "test_mine.py").write_text(
        plain + "def test_scores(budget_snapshot):\n"
        '    assert budget_snapshot("triage", "mine") == {"scores": {"eta": 0.5}, "context": {}}\n',
        encoding="utf-8",
    )
    output = run_pytest(tmp_path, "-n", "2", code=1)
    assert "budget: 1 cell has no stored baseline in " in output
    total, done, missing = json.loads((tmp_path / "controller.json").read_text(encoding="utf-8"))
    assert total == 6 and 1 <= done <= 6
    assert missing == [str(tmp_path / "__budget_snapshots__" / "triage" / "mine.json")]


def test_pyargs_naming_the_bundled_suites_engages_the_plugin_from_the_start(
    tmp_path: Path,
) -> None:
    """Engaged before collection, the bundled module gets its re-runnable node id."""
    output = run_pytest(
        tmp_path, "--pyargs", "pytest_budget.suites.test_triage", "--collect-only",
        "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    ids = [line for line in output.splitlines() if "::" in line]
    assert ids and all(i.startswith("pytest_budget/suites/test_triage.py::") for i in ids), ids


LATE = """
def test_asks_late(request):
    assert request.getfixturevalue("budget_seed") == 42
"""
MARKED = """
import pytest

@pytest.mark.usefixtures("budget_seed")
def test_asks_late_marked(request):
    assert request.getfixturevalue("budget_seed") == 42
"""


def test_a_budget_fixture_asked_for_only_at_run_time_says_how_to_load_it(tmp_path: Path) -> None:
    (tmp_path / "test_late.py").write_text(LATE, encoding="utf-8")
    alone = run_pytest(tmp_path, "test_late.py", code=1)
    assert "budget: fixture not loaded" in alone
    assert "budget_seed is a pytest-budget fixture" in alone
    assert '@pytest.mark.usefixtures("budget_seed")' in alone
    # The fix as said: the marked test engages the plugin, and then both tests pass.
    (tmp_path / "test_marked.py").write_text(MARKED, encoding="utf-8")
    assert "2 passed" in run_pytest(tmp_path)
