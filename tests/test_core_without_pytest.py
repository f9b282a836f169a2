"""The core never imports pytest (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE_MODULES = [
    "pytest_budget",
    "pytest_budget.triage",
    "pytest_budget.budget",
    "pytest_budget.gating",
    "pytest_budget.options",
    "pytest_budget.session",
    "pytest_budget.report",
    "pytest_budget.shard",
    "pytest_budget.merge",
    "pytest_budget.agents",
    "pytest_budget.sokoban",
    "pytest_budget.planning",
    "pytest_budget.awareness",
    "pytest_budget.awareness.sokoban_env",
    "pytest_budget.awareness.warehouse",
    "pytest_budget.awareness.warehouse_policy",
    "pytest_budget.awareness.search_corpus",
    "pytest_budget.awareness.search_env",
    "pytest_budget.awareness.retrieval",
    "pytest_budget.awareness.trajectories",
    "pytest_budget.awareness.subsample",
    "pytest_budget.models",
    "pytest_budget.bootstrap",
    "pytest_budget.repeats",
    "pytest_budget.triage.intervals",
    "pytest_budget.awareness.intervals",
    "pytest_budget.planning.intervals",
    "pytest_budget.forecast",
    "pytest_budget.progress",
]


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_does_not_import_pytest(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_version_matches_pyproject() -> None:
    import tomllib
    from pathlib import Path

    import pytest_budget

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert data["project"]["version"] == pytest_budget.__version__
