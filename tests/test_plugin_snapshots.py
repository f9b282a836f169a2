"""Score gating through the syrupy extension: record, pass, regress, improve, corrupt."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests import inprocess

PLANNER = """
def pytest_budget_planner(config):
    def plan(request):
        ids = [p.id for p in request.items][:4]
        return {"plan": [{"id": i, "tokens": request.budget // 4} for i in ids]}
    return plan
"""
ARGS = ("--budget-suite=triage", "-p", "no:cacheprovider", "--budget-pool-size=6",
        "--budget-alpha=0.5", "--budget-unsolvable=0")  # fmt: skip
ARITH = Path("__budget_snapshots__/triage/arith-u0-a0.5-A-user.json")


def record(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    pytester.makeconftest(PLANNER)
    return inprocess.run(pytester, *ARGS, "--snapshot-update", *extra)


def edit_scores(pytester: pytest.Pytester, **changes: float) -> dict[str, float]:
    path = pytester.path / ARITH
    data = json.loads(path.read_text(encoding="utf-8"))
    data["scores"].update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")
    scores: dict[str, float] = data["scores"]
    return scores


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_a_run_without_baselines_says_so_once_and_fails_once(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # Issue 31: every cell used to fail with the same "no stored baseline" message.
    pytester.makeconftest(PLANNER)
    # A real process: the printed commands are the process's own arguments.
    result = pytester.runpytest_subprocess(*ARGS, *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # CI stays red, for one reason
    assert result.outlines[-1].strip("= ").startswith("2 no baseline in ")
    text = "\n".join(result.outlines)
    assert "FAILURES" not in text and "no stored baseline for this cell" not in text
    said = [line for line in result.outlines if "no stored baseline" in line]
    assert len(said) == 2, said  # one as the first cell finishes, one summing up
    assert said[0].startswith("budget: no stored baseline for ") and "--budget-gate=off" in said[0]
    head, commands = said[1].split("; record them: ")
    assert head == (
        f"budget: 2 cells have no stored baseline in {pytester.path}/__budget_snapshots__ "
        "(scored, not gated), so the run fails"
    )
    record_command, score_command = commands.split("  |  or score only: ")

    def words(command: str) -> list[str]:  # the run's own words (pytester adds --basetemp)
        return [w for w in shlex.split(command)[1:] if not w.startswith("--basetemp=")]

    assert words(record_command) == [*ARGS, *xdist, "--snapshot-update"]
    assert words(score_command) == [*ARGS, *xdist, "--budget-gate=off"]
    # Both commands work as printed: scoring only passes, recording makes the run pass.
    inprocess.run(pytester, *words(score_command)).assert_outcomes(passed=2)
    assert not (pytester.path / ARITH).exists()
    inprocess.run(pytester, *words(record_command)).assert_outcomes(passed=2)
    _check_recorded(pytester)
    gated = inprocess.run(pytester, *ARGS, *xdist)
    gated.assert_outcomes(passed=2)
    assert gated.ret == pytest.ExitCode.OK
    assert not [line for line in gated.outlines if "no stored baseline" in line]


def _check_recorded(pytester: pytest.Pytester) -> None:
    """What recording wrote.  (Recording then passing, plain and under ``-n 2``, is the test
    above: its record command is ``record()``'s, so it no longer has a test of its own.)"""
    files = sorted((pytester.path / "__budget_snapshots__" / "triage").glob("*.json"))
    assert [f.name for f in files] == ["arith-u0-a0.5-A-user.json", "sokoban-u0-a0.5-A-user.json"]
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))  # complete, valid JSON
        # Each value with its interval, and each pool item's values (the paired gate).
        assert set(data) == {"ci", "context", "per_query", "scores"}
        assert set(data["ci"]) == set(data["scores"])
        assert data["context"]["seed"] == 42


def test_regression_past_tolerance_fails_and_names_the_metric(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    before = json.loads((pytester.path / ARITH).read_text(encoding="utf-8"))["scores"]["eta_u"]
    edit_scores(pytester, eta_u=before + 0.3)
    # The default paired gate compares the items' values, which did not move: it passes.
    inprocess.run(pytester, *ARGS).assert_outcomes(passed=2)
    result = inprocess.run(pytester, *ARGS, "--budget-gate=tolerance")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        f"*eta_u regressed: stored {before + 0.3:.6g}, new {before:.6g}, tolerance 0.05 "
        "(higher is better)*"
    ])  # fmt: skip


def test_small_regression_within_tolerance_and_improvements_pass(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    scores = json.loads((pytester.path / ARITH).read_text(encoding="utf-8"))["scores"]
    edit_scores(pytester, eta_u=scores["eta_u"] + 0.04, eta_e=scores["eta_e"] - 0.5)
    inprocess.run(pytester, *ARGS).assert_outcomes(passed=2)


def test_ini_tolerance_per_metric(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    scores = json.loads((pytester.path / ARITH).read_text(encoding="utf-8"))["scores"]
    edit_scores(pytester, eta_u=scores["eta_u"] + 0.3)
    pytester.makeini("[pytest]\nbudget_tolerances =\n    eta_u = 0.5\n")
    inprocess.run(pytester, *ARGS, "--budget-gate=tolerance").assert_outcomes(passed=2)


def test_update_records_improvements_too(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    scores = json.loads((pytester.path / ARITH).read_text(encoding="utf-8"))["scores"]
    edit_scores(pytester, eta_u=scores["eta_u"] - 0.4)
    record(pytester).assert_outcomes(passed=2)
    again = json.loads((pytester.path / ARITH).read_text(encoding="utf-8"))["scores"]
    assert again["eta_u"] == scores["eta_u"]


def test_corrupt_snapshot_gives_one_line_fix(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    (pytester.path / ARITH).write_text('{"scores": {"eta_u": 0.5,', encoding="utf-8")
    result = inprocess.run(pytester, *ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*snapshot *arith-u0-a0.5-A-user.json is not valid JSON (line 1: *); delete it and "
        "re-record with: pytest --budget-suite=triage --budget-alpha=0.5 --budget-unsolvable=0 "
        "--budget-pool-size=6 -p no:cacheprovider --snapshot-update 'pytest_budget/*"
    ])  # fmt: skip


def test_snapshot_without_scores_object(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    (pytester.path / ARITH).write_text('["not", "a", "snapshot"]', encoding="utf-8")
    result = inprocess.run(pytester, *ARGS)
    result.stdout.fnmatch_lines(["*has no 'scores' object; delete it and re-record with*"])


def test_baseline_from_another_seed_is_explained(pytester: pytest.Pytester) -> None:
    record(pytester).assert_outcomes(passed=2)
    result = inprocess.run(pytester, *ARGS, "--budget-seed=7")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*was recorded with seed=42 (now 7); re-record with*"])


def test_snapshot_dir_is_configurable(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbudget_snapshot_dir = ci/baselines\n")
    record(pytester).assert_outcomes(passed=2)
    assert (pytester.path / "ci/baselines/triage/arith-u0-a0.5-A-user.json").is_file()


def test_plain_asserts_still_explain_a_failed_gate(pytester: pytest.Pytester) -> None:
    # A real process: an in-process run imports the suites this process already rewrote.
    record(pytester).assert_outcomes(passed=2)
    result = pytester.runpytest_subprocess(*ARGS, "--budget-seed=7", "--assert=plain")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "E *AssertionError: [[]- snapshot] == [[]+ received]",  # [[] is fnmatch's literal [
        "E * was recorded with seed=42 (now 7); re-record with: pytest --budget-suite=triage *",
    ])  # fmt: skip


def test_optimized_python_with_plain_asserts_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # python -O drops assert statements that pytest does not rewrite: every cell would pass.
    record(pytester).assert_outcomes(passed=2)
    edit_scores(pytester, eta_u=2.0)
    monkeypatch.setenv("PYTHONOPTIMIZE", "1")
    refused = pytester.runpytest_subprocess(*ARGS, "--assert=plain", "--budget-gate=tolerance")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --assert=plain with python -O * drop -O, or *"])
    # Rewritten asserts survive -O: the same run without --assert=plain gates and fails.
    gated = pytester.runpytest_subprocess(*ARGS, "--budget-gate=tolerance")
    gated.assert_outcomes(passed=1, failed=1)
    gated.stdout.fnmatch_lines(["*eta_u regressed: stored 2, new *"])
