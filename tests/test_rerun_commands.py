"""Printed node ids run as shown, and every printed command re-runs or re-records exactly the
cell it names under the run's options (checked by running what the output says).  The runs
that print commands are real processes (a command holds the process's own arguments); the
printed commands run in this process."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pytest_budget._run.rerun import map_suite_arg, rerun_command, suite_of_module
from tests import inprocess

DOCS = Path(__file__).resolve().parents[1] / "docs"
SMALL = ("--budget-suite=triage", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--budget-alpha=0.5", "--budget-unsolvable=0")  # fmt: skip
CELL = "pytest_budget/suites/test_triage.py::test_triage[arith-u0-a0.5-A-oracle]"


def run_printed(pytester: pytest.Pytester, command: str) -> pytest.RunResult:
    """Run a command exactly as the output printed it (``pytest ...``)."""
    words = shlex.split(command)
    assert words[0] == "pytest"
    return inprocess.run(pytester, *words[1:])


def failed_ids(result: pytest.RunResult) -> list[str]:
    return [line.split()[1] for line in result.outlines if line.startswith("FAILED ")]


def section(result: pytest.RunResult, title: str) -> list[str]:
    """The first line under each ``--- title ---`` section of the failure report."""
    lines = result.outlines
    return [lines[i + 1] for i, line in enumerate(lines) if re.match(rf"^-+ {title} -+$", line)]


def test_failed_suite_cell_ids_carry_a_path_and_run_as_printed(pytester: pytest.Pytester) -> None:
    """Another seed breaks every cell's context; each printed id runs that one cell."""
    result = pytester.runpytest_subprocess(*SMALL, "--budget-seed=7")
    result.assert_outcomes(failed=8)
    ids = failed_ids(result)
    assert CELL in ids
    assert all(i.startswith("pytest_budget/suites/test_triage.py::test_triage[") for i in ids)
    # As printed, with no option at all: the default grid holds this cell and its shipped
    # baseline (seed 42) passes.
    again = inprocess.run(pytester, CELL, "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)
    # The same id with --budget-suite runs that cell only, not the whole suite next to it.
    inprocess.run(pytester, *SMALL, CELL).assert_outcomes(passed=1)


def test_failure_report_prints_the_command_that_reruns_the_cell(pytester: pytest.Pytester) -> None:
    pool = (DOCS / "examples" / "pool_example.jsonl").read_text(encoding="utf-8")
    (pytester.path / "mine.jsonl").write_text(pool, encoding="utf-8")
    args = (*SMALL, "--budget-pool=mine.jsonl", "--budget-seed=7", "--budget-agent=oracle")
    # The user pool's cell recorded, then its baseline made to disagree (a context change).
    inprocess.run(pytester, *args, "--snapshot-update").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "__budget_snapshots__" / "triage").glob("*.json")
    data = json.loads(stored.read_text(encoding="utf-8"))
    data["context"]["seed"] = 8
    stored.write_text(json.dumps(data), encoding="utf-8")
    result = pytester.runpytest_subprocess(*args, "--budget-report=r.json")
    result.assert_outcomes(failed=1)
    (command,) = section(result, "budget: re-run this cell")
    for option in ("--budget-pool=mine.jsonl", "--budget-seed=7", "--budget-alpha=0.5",
                   "--budget-agent=oracle", "-p no:cacheprovider"):  # fmt: skip
        assert option in command
    assert "--budget-report" not in command  # a re-run does not overwrite the run's report
    (cell_id,) = failed_ids(result)
    assert command.endswith(shlex.quote(cell_id))
    # The bare id does not exist without the options that made it; the command does.
    missing = inprocess.run(pytester, cell_id, "-p", "no:cacheprovider")
    assert missing.ret != pytest.ExitCode.OK
    rerun = run_printed(pytester, command)
    rerun.assert_outcomes(failed=1)
    assert failed_ids(rerun) == [cell_id]


def test_snapshot_hint_rerecords_with_every_option_of_the_run(pytester: pytest.Pytester) -> None:
    """Re-recording as the hint says makes the same run pass (the old hint re-recorded the
    default grid with seed 42 and the cell kept failing)."""
    args = (*SMALL, "--budget-seed=7", "--budget-pool-size=6")
    first = pytester.runpytest_subprocess(*args)
    first.assert_outcomes(failed=8)
    # Under CI (env CI set) pytest's short summary repeats each message untruncated: count
    # distinct commands.
    hints = sorted(set(re.findall(r"re-record with: (pytest .*)$", first.stdout.str(), flags=re.M)))
    assert len(hints) == 8
    hint = next(h for h in hints if h.endswith(shlex.quote(CELL)))
    for option in ("--budget-seed=7", "--budget-pool-size=6", "--budget-alpha=0.5",
                   "--budget-unsolvable=0", "--snapshot-update"):  # fmt: skip
        assert option in hint
    recorded = run_printed(pytester, hint)
    recorded.assert_outcomes(passed=1)
    stored = pytester.path / "__budget_snapshots__" / "triage" / "arith-u0-a0.5-A-oracle.json"
    assert '"seed": 7' in stored.read_text(encoding="utf-8")
    again = inprocess.run(pytester, *args)
    again.assert_outcomes(passed=1, failed=7)
    assert CELL not in failed_ids(again)


def test_map_suite_arg() -> None:
    folder = Path("/site/pytest_budget/suites")
    here = Path("/nonexistent-project")
    assert map_suite_arg(CELL, folder, here) == (
        "/site/pytest_budget/suites/test_triage.py::test_triage[arith-u0-a0.5-A-oracle]"
    )
    assert map_suite_arg("./pytest_budget/suites", folder, here) == "/site/pytest_budget/suites"
    assert map_suite_arg("tests/test_x.py::t", folder, here) == "tests/test_x.py::t"
    # A real file of the user's at that path wins.
    project = Path(__file__).resolve().parents[1]
    assert (
        map_suite_arg("pytest_budget/_run/rerun.py", folder, project)
        == "pytest_budget/_run/rerun.py"
    )


def test_suite_of_module_and_quoting() -> None:
    suites = ("triage", "awareness", "planning")
    assert suite_of_module("test_triage_resolve.py", suites) == "triage"
    assert suite_of_module("test_awareness.py", suites) == "awareness"
    assert suite_of_module("test_mine.py", suites) is None
    command = rerun_command(
        "tests/test_a.py::test_b[x y]",
        suite=None,
        budget_options=[
            ("--budget-pool", ["a b.jsonl", "c.jsonl"]),
            ("--budget-resolve", True),
            ("--budget-report", "r.json"),
        ],
        pytest_options=[("-o", ["budget_parse=strict"])],
        extra=("--snapshot-update",),
    )
    assert command == (
        "pytest '--budget-pool=a b.jsonl' --budget-pool=c.jsonl --budget-resolve "
        "-o budget_parse=strict --snapshot-update 'tests/test_a.py::test_b[x y]'"
    )
