"""A crashed or incomplete cell is never lost and never silently different (issue 20 item
2), and per-item lists in a cell are bounded (item 6).

Runs that patch a plugin module in their conftest stay subprocesses (the patch would outlive
an in-process run); the others run in-process (tests/inprocess.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_budget._run.crashed import LIST_LIMIT, bound_cell
from tests import inprocess
from tests.chat_logs import write_chat_file
from tests.model_server import Fault, ModelServer

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/reference/report.schema.json").read_text()
)
SMALL_TRIAGE = (
    "-p", "no:cacheprovider", "--budget-gate=off", "--budget-suite=triage",
    "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-report=r.json",
    "--budget-html=page.html",
)  # fmt: skip


def report(pytester: pytest.Pytester) -> dict:
    document = json.loads((pytester.path / "r.json").read_text())
    jsonschema.validate(document, SCHEMA)
    return document


def test_a_crash_in_setup_keeps_every_cell_as_an_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest_budget._plugin.role_agents as role_agents

        def boom(*args, **kwargs):
            raise RuntimeError("boom inside pytest-budget")

        role_agents.resolve_agent = boom
        """
    )
    result = pytester.runpytest_subprocess(*SMALL_TRIAGE)
    result.assert_outcomes(errors=16)
    cells = report(pytester)["cells"]
    assert len(cells) == 16
    assert {c["outcome"] for c in cells} == {"error"}
    assert {c["phase"] for c in cells} == {"setup"}
    assert {c["pool"] for c in cells} == {"arith", "sokoban"}
    assert {c["agent"] for c in cells} == {"oracle", "random", "cheapest-first", "attempt-all"}
    first = cells[0]
    assert first["reason"] == "RuntimeError: boom inside pytest-budget"
    assert "raise RuntimeError" in first["traceback"]
    assert first["scores"] == {} and first["scored"].startswith("nothing")
    assert first["cell"] == f"{first['pool']}-u{first['unsolvable_ratio']:g}-a0.5-A"
    page = (pytester.path / "page.html").read_text()
    assert "Cells that did not finish" in page
    assert page.count('data-outcome="error"') == 16
    assert "RuntimeError: boom inside pytest-budget" in page


def test_a_crash_while_scoring_is_an_error_cell(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest_budget.awareness._evaluate as evaluate

        def boom(*args, **kwargs):
            raise ZeroDivisionError("scoring broke")

        evaluate.score_probes = boom
        """
    )
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", write_chat_file(pytester.path), "--budget-agent=linear-knows-T",
        "--budget-gate=off", "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    (cell,) = report(pytester)["cells"]
    assert cell["suite"] == "awareness" and cell["env"] == cell["cell"]
    assert (
        cell["agent"] == "linear-knows-T" and cell["outcome"] == "error" and cell["phase"] == "call"
    )
    assert cell["reason"] == "ZeroDivisionError: scoring broke"
    assert "evaluate" in cell["traceback"] and cell["test_outcome"] == "failed"


def test_a_recorded_cell_that_then_crashes_keeps_its_scores(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_mine(budget_record):
            budget_record({"suite": "mine", "cell": "c", "agent": "a", "seed": 1,
                           "outcome": "ok", "scores": {"x": 0.5}})
            raise KeyError("after the record")

        def test_gate(budget_record):
            budget_record({"suite": "mine", "cell": "d", "agent": "a", "seed": 1,
                           "outcome": "ok", "scores": {"x": 0.7}})
            assert False, "a regression, not a crash"
        """
    )
    result = pytester.runpytest("--budget-report=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    cells = {c["cell"]: c for c in report(pytester)["cells"]}
    crashed, gated = cells["c"], cells["d"]
    assert crashed["outcome"] == "error" and crashed["scores"] == {"x": 0.5}
    assert crashed["reason"] == "KeyError: 'after the record'"
    assert crashed["scored"].startswith("the scores recorded before the error")
    assert gated["outcome"] == "ok" and "traceback" not in gated


def _estimator(body: dict) -> str:
    return "<answer>[0, 900]</answer>"


@pytest.mark.parametrize("allow", [False, True], ids=["default", "allow-partial"])
def test_calls_failing_after_retries_make_the_cell_incomplete(
    pytester: pytest.Pytester, allow: bool
) -> None:
    with ModelServer(answer=_estimator) as server:
        server.fail(Fault.http(500), Fault.http(500))  # two probes lost (no retries)
        args = ["--budget-allow-partial"] if allow else []
        result = inprocess.run(
            pytester,
            "--budget-suite=awareness", write_chat_file(pytester.path), "--budget-agent=openai:m",
            f"--budget-base-url={server.url}", "--budget-retries=0", "--budget-gate=off",
            "--budget-report=r.json", "--budget-concurrency=1", "-p", "no:cacheprovider",
            *args,
        )  # fmt: skip
    (cell,) = report(pytester)["cells"]
    assert cell["outcome"] == "incomplete"
    assert cell["incomplete"]["failed_calls"] == 2
    if allow:
        result.assert_outcomes(passed=1)
        assert cell["partial"] is True
    else:
        result.assert_outcomes(failed=1)
        assert "partial" not in cell
        result.stdout.fnmatch_lines(
            ["*incomplete: 2 model call(s) failed after the retries*--budget-allow-partial*"]
        )


def test_bound_cell_caps_per_item_lists_by_hand() -> None:
    record = {
        "repairs": [f"entry {i} " + "x" * 5000 for i in range(LIST_LIMIT + 7)],
        "phase0": {"errors": {f"i{i}": "e" for i in range(LIST_LIMIT + 1)}, "items": 3},
        "scores": {"errors": 4},
        "curves": {"tokens": list(range(500))},
    }
    out = bound_cell(record)
    assert len(out["repairs"]) == LIST_LIMIT and out["repairs_omitted"] == 7
    assert out["repairs"][0].startswith("entry 0 ") and len(out["repairs"][0]) == 1000
    assert len(out["phase0"]["errors"]) == LIST_LIMIT and out["phase0"]["errors_omitted"] == 1
    assert out["scores"] == {"errors": 4}  # a number, not a list
    assert out["curves"] == {"tokens": list(range(500))}  # not a per-item list: kept whole
    assert bound_cell({"repairs": ["a"]}) == {"repairs": ["a"]}


def _run_a_plan_of(pytester: pytest.Pytester, entries: int) -> pytest.RunResult:
    """A triage run whose planner names ``entries`` unknown ids (each one a repair)."""
    pytester.makeconftest(
        f"""
        def pytest_budget_planner(config):
            def plan(request):
                return {{"plan": [{{"id": f"nope{{i}}", "tokens": 1}} for i in range({entries})]}}
            return plan
        """
    )
    result = inprocess.run(
        pytester,
        "-p", "no:cacheprovider", "--budget-gate=off", "--budget-suite=triage",
        "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0",
        "--budget-report=r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    assert (pytester.path / "r.json").stat().st_size < 200_000
    return result


def test_a_huge_plan_makes_a_small_report(pytester: pytest.Pytester) -> None:
    # 4,000 unknown ids (about 130,000 characters written out: under the reply size limit),
    # each one a repair: the report lists the first LIST_LIMIT and counts the rest.
    _run_a_plan_of(pytester, 4_000)
    for cell in report(pytester)["cells"]:
        assert len(cell["repairs"]) == LIST_LIMIT
        assert cell["repairs_omitted"] == 4_000 - LIST_LIMIT


def test_a_plan_too_large_to_read_is_invalid(pytester: pytest.Pytester) -> None:
    # 100,000 entries are over the 200,000 characters a list/dict reply may take written out:
    # the reply is refused as invalid (with the reason) before any entry is read.
    result = _run_a_plan_of(pytester, 100_000)
    result.stdout.fnmatch_lines(["plans: 0 ok, 0 repaired, 2 unparseable*"])
    for cell in report(pytester)["cells"]:
        [reason] = cell["repairs"]
        assert reason.startswith("planner returned a dict of more than 200,000 characters")
