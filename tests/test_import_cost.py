"""Installing pytest-budget costs an unrelated pytest run nothing: the plugin loads, but
numpy, the HTTP stack and the suites' code are imported only when a budget suite or a
budget fixture is used.  (The timing figure is in benchmarks/bench_import_cost.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_budget.plugin_models as plugin_models

HEAVY = ("numpy", "httpx", "httpcore", "httptools", "h11", "anyio", "sniffio", "tenacity",
         "filelock", "syrupy", "matplotlib", "asyncio", "ssl")  # fmt: skip
# The third-party plugins installed next to ours import some of those themselves (anyio's
# plugin imports anyio, syrupy's syrupy, pytest-asyncio's asyncio): they are switched off to
# see our own imports.
OTHERS_OFF = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:syrupy", "-p", "no:hypothesispytest",
              "-p", "no:benchmark", "-p", "no:xdist", "-p", "no:cacheprovider")  # fmt: skip

PROBE = """
import json, sys

def test_unrelated():
    assert 1 + 1 == 2

def test_zz_dump(pytestconfig):
    plugins = [name for name, _ in pytestconfig.pluginmanager.list_name_plugin()]
    with open("modules.json", "w") as handle:
        json.dump({"modules": sorted(sys.modules), "plugins": plugins}, handle)
"""


def modules_of_run(folder: Path, *args: str) -> tuple[set[str], list[str]]:
    """The modules loaded by the end of a pytest run in a fresh interpreter, and its plugins."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    return set(data["modules"]), list(data["plugins"])


def third_party(modules: set[str]) -> set[str]:
    tops = {name.partition(".")[0] for name in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and t != "pytest_budget"}


@pytest.mark.parametrize("others", [OTHERS_OFF, ()], ids=["plugin-alone", "all-plugins"])
def test_an_unrelated_run_imports_nothing_heavy(tmp_path: Path, others: tuple[str, ...]) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    loaded, plugins = modules_of_run(tmp_path, *others)
    assert "budget" in plugins and "pytest_budget.plugin" in loaded  # the plugin is active
    without, _ = modules_of_run(tmp_path, *others, "-p", "no:budget")
    # Nothing third-party that the same run without pytest-budget does not load ...
    assert third_party(loaded) == third_party(without)
    if others:
        assert [m for m in HEAVY if m in loaded] == []
    # ... and none of the suites' code: only the plugin, its options, the fixture modules
    # (which import their packages on first use) and each suite's declaration and options
    # (the registry reads them; their packages resolve the rest lazily).
    ours = {m for m in loaded if m.startswith("pytest_budget.")}
    heavy_parts = ("triage.", "awareness.", "planning.", "models.", "html")
    declarations = (".suite", ".options")
    suite_code = [
        m
        for m in ours
        if m.removeprefix("pytest_budget.").startswith(heavy_parts)
        and not m.endswith(declarations)
        and m != "pytest_budget.awareness.online"  # the package, resolved lazily
    ]
    assert suite_code == []
    assert "pytest_budget.bootstrap" not in ours and "pytest_budget.session" in ours


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
    from pytest_budget.models.provider import PROVIDERS

    assert plugin_models._MODEL_PROVIDERS == PROVIDERS


def test_package_exports_resolve_on_first_use() -> None:
    import pytest_budget

    for name in pytest_budget.__all__:
        assert getattr(pytest_budget, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = pytest_budget.nothing  # type: ignore[attr-defined]
    assert set(pytest_budget.__all__) <= set(dir(pytest_budget))
