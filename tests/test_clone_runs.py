"""The README's main job run inside a clone of this repository, as a new user runs it.

pyproject.toml's pytest section is the configuration of any run started in the clone (at its
root, or in a folder made below it, as the first-run tutorial does).  It must not break a
run that has only what ``pip install .`` installs (no pytest-asyncio: its ini key would be an
unknown option), must not turn a warning of the user's own code into an error, and a
``conftest.py`` in the folder the user runs from must reach the bundled suites.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ("--budget-suite=triage", "--budget-alpha=0.5", "-k", "arith", "-q")

PLANNER_CONFTEST = """
import warnings

import pytest

from pytest_budget.triage import Plan, PlanEntry


class WarningPlanner:
    name = "warning-planner"

    def plan(self, request):
        warnings.warn(DeprecationWarning("a library of the user's agent is deprecated"))
        share = request.budget // len(request.items)
        return Plan(entries=tuple(PlanEntry(p.id, share) for p in request.items[:5]))


@pytest.fixture
def budget_planner():
    return WarningPlanner()
"""


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -p no:asyncio: the run has only what `pip install .` installs (no pytest-asyncio).
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    command = [sys.executable, "-m", "pytest", *SMALL, "-p", "no:asyncio"]
    return subprocess.run(
        [*command, "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def folder_in_clone() -> Iterator[Path]:
    """A folder made inside the clone, like the tutorial's ``budget-tour``."""
    folder = ROOT / f".clone-run-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_main_job_at_the_clone_root_passes_without_pytest_asyncio() -> None:
    result = _run(ROOT)
    output = result.stdout + result.stderr
    assert "Unknown config option" not in output
    assert result.returncode == 0, output[-3000:]
    assert "8 passed" in result.stdout.splitlines()[-1]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_a_conftest_in_a_folder_inside_the_clone_reaches_the_suites(
    folder_in_clone: Path, xdist: list[str]
) -> None:
    """The override is evaluated (its rows, not the reference ones), and its library's
    DeprecationWarning is a warning, not an error of the user's run."""
    (folder_in_clone / "conftest.py").write_text(PLANNER_CONFTEST, encoding="utf-8")
    result = _run(folder_in_clone, "--budget-gate=off", *xdist)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("arith ")]
    assert [row.split()[4] for row in rows] == ["warning-planner", "warning-planner"]
    # The tutorial's hand-worked first row: 4 solved where random solves 12.08 on average
    # and the oracle 20, so eta_u = (4 - 12.08) / (20 - 12.08) = -1.020.
    assert rows[0].split()[6] == "-1.020"
    assert "2 passed" in result.stdout.splitlines()[-1]
