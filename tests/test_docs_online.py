"""The online awareness tutorial runs as written: its example actor through the hook, the
table and the run record it shows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples"
TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial"


def test_online_tutorial_actor_runs_as_shown(pytester: pytest.Pytester) -> None:
    shutil.copy(EXAMPLE / "conftest_online_actor_example.py", pytester.path / "conftest.py")
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", "--budget-awareness-mode=online", "--budget-env=sokoban-8x8",
        "--budget-gate=off", "--budget-report=report.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    page = (TUTORIAL / "online-awareness-run.md").read_text(encoding="utf-8")
    rows = [line for line in result.stdout.lines if line.startswith("sokoban-8x8  ")]
    assert len(rows) == 3
    for row in rows:  # the table in online-awareness-run.md is this run's
        assert row.rstrip() in page, row
    cells = json.loads((pytester.path / "report.json").read_text())["cells"]
    one = next(c for c in cells if c["cap_multiplier"] == 1.0)
    assert one["agent"] == "stop-when-impossible" and one["protocol"] == "single-call"
    assert one["budget"] == {"tokens": 2500.0} and one["charge"] == "acting"
    shown = next(r for r in one["runs"] if r["id"] == "sokoban-8x8-s42-0002")
    assert json.dumps(shown, indent=1) in page
