"""End-to-end runs of the installed triage suite through pytester.

Each test runs ``pytest --budget-suite=triage`` in a fresh directory (no conftest unless the
test writes one), the way a user would, and reads the terminal and the JSON report.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests import inprocess
from tests.schemas import validate_report

# A small, fast grid for behaviour tests; the full default grid is exercised separately.
SMALL = ["--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0", "-p", "no:randomly"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A triage run in this process (tests/inprocess.py; usage errors too: pytester captures
    the stderr they are written to)."""
    return inprocess.run(pytester, "--budget-suite=triage", "-p", "no:cacheprovider", *args)


def report_of(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return data


def table_block(lines: list[str]) -> list[str]:
    """The triage table lines from a run's output (header to plan counts)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("pool "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("plans:"))
    return lines[start : end + 1]


def test_default_run_gates_against_shipped_baselines(pytester: pytest.Pytester) -> None:
    """The out-of-the-box run: every reference cell passes against the packaged baselines;
    plain, with ``-n 0`` and under ``-n 2``.  The three share one cache folder, as a user's
    reruns do: the plain run computes Phase 0 and the bootstrap's tables, the others read
    them.  (A cold ``-n 2`` run of every default suite against the shipped baselines is
    tests/test_newcomer_runs.py's first run.)"""
    for name, xdist in (("plain", []), ("n0", ["-n", "0"]), ("n2", ["-n", "2"])):
        report_name = f"{name}.json"
        result = run(pytester, f"--budget-report={report_name}", "--budget-cache-dir=cache", *xdist)
        result.assert_outcomes(passed=64)
        result.stdout.fnmatch_lines(["*triage: triage efficiency*", "pool *unsolv*alpha*eta_u*"])
        report = report_of(pytester, report_name)
        assert report["summary"]["cells"] == 64
        assert {cell["agent"] for cell in report["cells"]} == {
            "oracle", "random", "cheapest-first", "attempt-all"
        }  # fmt: skip
        oracle = [cell for cell in report["cells"] if cell["agent"] == "oracle"]
        assert all(c["scores"]["eta_u"] == 1.0 and c["scores"]["eta_e"] == 1.0 for c in oracle)
        # No snapshot is written next to the installed suite or into the project by a plain run.
        assert not (pytester.path / "__budget_snapshots__").exists()


def test_xdist_and_plain_runs_print_the_same_table(pytester: pytest.Pytester) -> None:
    plain = run(pytester, *SMALL, "--budget-gate=off", "--budget-report=a.json")
    spread = run(pytester, *SMALL, "--budget-gate=off", "--budget-report=b.json", "-n", "2")
    assert table_block(plain.outlines) == table_block(spread.outlines)
    cells_a = [
        {k: v for k, v in c.items() if k != "duration_s"}
        for c in report_of(pytester, "a.json")["cells"]
    ]
    cells_b = [
        {k: v for k, v in c.items() if k != "duration_s"}
        for c in report_of(pytester, "b.json")["cells"]
    ]
    assert cells_a == cells_b


def test_seed_changes_the_pools(pytester: pytest.Pytester) -> None:
    run(pytester, *SMALL, "--budget-gate=off", "--budget-report=a.json", "--budget-seed=1")
    run(pytester, *SMALL, "--budget-gate=off", "--budget-report=b.json", "--budget-seed=2")
    budgets_a = [c["budget"] for c in report_of(pytester, "a.json")["cells"]]
    budgets_b = [c["budget"] for c in report_of(pytester, "b.json")["cells"]]
    assert budgets_a != budgets_b


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--budget-suite=triage,nope"],
            "*--budget-suite: unknown suite 'nope'; valid: triage, awareness, planning, all*",
        ),
        (["--budget-agent=gpt"], "*--budget-agent=gpt: unknown agent; valid forms: *"),
        (["--budget-alpha=0.5,2"], "*--budget-alpha: 2 is outside (0, 1]*"),
        (
            ["--budget-variant=D"],
            "*--budget-variant: unknown prompt variant 'D'; choose from A, B, C*",
        ),
        (["--budget-pool=missing.jsonl"], "*--budget-pool: no such file*missing.jsonl*"),
        (["--budget-gate=maybe"], "*--budget-gate: unknown mode 'maybe'*"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    result = inprocess.run(pytester, "--budget-suite=triage", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbudget_tolerances =\n    eta = 0.1\n")
    result = inprocess.run(pytester, "--budget-suite=triage")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: budget_tolerances: unknown metric 'eta'; gated metrics: *"]
    )


def test_bad_pool_file_names_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("pool.jsonl").write_text(
        '{"id": "a", "text": "1 + 1"}\n{"id": "a", "text": "2 + 2"}\n', encoding="utf-8"
    )
    result = inprocess.run(pytester, "--budget-suite=triage", "--budget-pool=pool.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *pool.jsonl:2: duplicate id 'a'*"])


def test_fixtures_are_listed_with_docstrings(pytester: pytest.Pytester) -> None:
    result = inprocess.run(pytester, "--fixtures")
    for name in (
        "budget_planner", "budget_solver", "budget_estimator", "budget_actor",
        "budget_tool_agent", "budget_cap", "budget_meter", "budget_snapshot",
        "budget_record", "budget_options", "budget_seed", "triage_ground_truth", "triage_pools",
    ):  # fmt: skip
        result.stdout.fnmatch_lines([f"{name}*"])


def test_suite_runs_from_any_directory_without_collecting_project_tests(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    assert False\n")
    result = run(pytester, *SMALL, "--budget-gate=off")
    result.assert_outcomes(passed=8)
    explicit = run(pytester, *SMALL, "--budget-gate=off", "test_mine.py")
    explicit.assert_outcomes(passed=8, failed=1)


def test_junit_properties_carry_scores(pytester: pytest.Pytester) -> None:
    run(pytester, *SMALL, "--budget-gate=off", "--junitxml=junit.xml", "-n", "2")
    xml = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert xml.count('name="budget.eta_u"') == 8
    assert re.search(r'name="budget.agent" value="cheapest-first"', xml)


def test_report_matches_published_schema(pytester: pytest.Pytester) -> None:
    run(pytester, "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0,0.5",
        "--budget-gate=off", "--budget-report=report.json")  # fmt: skip
    report = report_of(pytester)
    validate_report(report)
    cell = next(c for c in report["cells"] if c["unsolvable_ratio"] == 0.5)
    assert set(cell["scores"]) == {
        "v_u", "v_e", "v_oracle", "v_random", "eta_u", "eta_e",
        "regret_u", "regret_e", "detection", "waste", "eta_u_as_empty", "eta_e_as_empty",
    }  # fmt: skip
    assert cell["scores"]["detection"] is not None
    # The counts behind D and W, and the injected items' own domain label.
    left_out, unsolvable = cell["detection_counts"]
    assert cell["scores"]["detection"] == left_out / unsolvable
    assert cell["unsolvable_domains"] == {"arith": unsolvable} or cell["pool"] != "arith"
    for key in ("suite", "pool", "alpha", "budget", "agent", "seed", "plan_status"):
        assert key in cell


def test_resolve_cells_and_variants(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--budget-pool-size=6", "--budget-alpha=1.0", "--budget-unsolvable=0",
                 "--budget-gate=off", "--budget-resolve", "--budget-variant=A,C",
                 "--budget-agent=oracle,attempt-all", "--budget-report=report.json")  # fmt: skip
    # 2 pools x 2 variants x 2 agents, for the plan cells and for the re-solve cells.
    result.assert_outcomes(passed=16)
    result.stdout.fnmatch_lines(
        [
            "*ranking agreement eta_u alpha=1 A vs C: Kendall tau-b = *",
            "*ranking agreement eta_e alpha=1 A vs C: Kendall tau-b = *",
            "*budget-aware re-solve*",
        ]
    )
    resolve = [c for c in report_of(pytester)["cells"] if c["suite"] == "triage-resolve"]
    assert len(resolve) == 8
    for cell in resolve:
        scores = cell["scores"]
        assert (
            scores["kept"] + scores["lost"] + scores["newly_correct"] + scores["still_wrong"]
            == scores["n"]
        )
        if (
            cell["agent"] == "oracle"
        ):  # oracle allocates exactly c_i: the deterministic solver complies
            assert scores["compliance"] == 1.0


def test_user_pool_is_chunked_and_named_by_stem(pytester: pytest.Pytester) -> None:
    lines = [
        json.dumps({"id": f"q{i}", "text": f"Compute {i} * 3 + {i}.", "answer": str(4 * i)})
        for i in range(7)
    ]
    pytester.path.joinpath("sums.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["--budget-pool=sums.jsonl", "--budget-chunk-size=3", "--budget-alpha=0.5"]
    result = run(
        pytester, *args, "--budget-agent=oracle", "--budget-gate=off", "--budget-report=r.json"
    )
    result.assert_outcomes(passed=3)
    cells = report_of(pytester, "r.json")["cells"]
    assert [c["pool"] for c in cells] == ["sums#0", "sums#1", "sums#2"]
    # Balanced chunks (3, 2, 2), not 3, 3 and a one-item leftover whose budget (half its
    # only cost) fits nothing, a V_oracle = 0 cell with no eta.
    assert [c["phase0"]["items"] for c in cells] == [3, 2, 2]
    assert [c["scores"]["v_oracle"] for c in cells] == [1.0, 1.0, 1.0]
    # Costs are alike, so exactly one item fits B and every ordering scores 1: V_random =
    # V_oracle, and eta 1.0 is the D.2 convention, said so in the JSON and the table.
    assert all("by convention" in c["eta_note"] for c in cells), [c["eta_note"] for c in cells]
    result.stdout.fnmatch_lines(["sums#0 *1.000*eta by convention (V_oracle=V_random, D.2)"])
    assert all(c["excluded"] == {"unparseable": 0, "plans": 1} for c in cells)


def test_score_objects_compare_readably(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
from pytest_budget.triage import Item, Baseline, Plan, PlanEntry, score_plan

def test_scores():
    items = (Item(id="a", text="a"), Item(id="b", text="b"))
    truth = {"a": Baseline(True, 5), "b": Baseline(True, 5)}
    scores = score_plan(Plan(entries=(PlanEntry("a", 5),)), items, truth, 5, seed=0)
    assert scores == {**scores.as_dict(), "eta_u": 0.5}
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TriageScores differ:*", "*eta_u: 1.0 != 0.5*"])


def test_a_cell_with_infinite_or_nan_values_is_recorded_with_nulls_and_notes(
    pytester: pytest.Pytester,
) -> None:
    # An awareness cell whose remaining budget is ~0 has an infinite relative error; JSON
    # has no infinity, and the cell must still reach the table and the report.
    pytester.makepyfile(
        test_mine="""
        def test_cell(budget_record):
            budget_record({
                "suite": "mine", "cell": "c", "agent": "a",
                "scores": {"mre_p50": float("inf"), "spread": float("nan"), "hit": 0.5},
                "ci": {"mre_p50": [1.0, float("inf")], "hit": [0.25, 0.75]},
            })
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--budget-report=r.json")
    result.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    assert cell["scores"] == {"mre_p50": None, "spread": None, "hit": 0.5}
    assert cell["ci"] == {"mre_p50": [1.0, None], "hit": [0.25, 0.75]}
    assert "was inf" in cell["notes"]["mre_p50"] and "was nan" in cell["notes"]["spread"]
    assert "hit" not in cell["notes"]


def test_truncated_planner_replies_are_counted_and_warned(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import pytest
from pytest_budget.triage._llm import PlanText


class CutPlanner:
    name = "cut"

    def plan(self, request):
        return PlanText('{"plan": [', finish_reason="length")


@pytest.fixture
def budget_planner():
    return CutPlanner()
""")
    # A real process: in this one the outer run's warning filters (error) would reach the cell.
    result = pytester.runpytest_subprocess(
        "--budget-suite=triage", "-p", "no:cacheprovider", *SMALL, "--budget-agent=user",
        "--budget-gate=off", "--budget-report=r.json",
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*TruncationWarning*were cut at their token cap*"])
    cells = report_of(pytester, "r.json")["cells"]
    assert cells and all(c["truncated"]["planner"] == 1 for c in cells)
    assert all(c["excluded"] == {"unparseable": 1, "plans": 1} for c in cells)
    assert all(c["scores"]["eta_u"] is None for c in cells)
