"""Plugging in agents: fixture override, hooks, raw text, broken agents, Phase 0 cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import inprocess

SMALL = ["--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A triage run, in-process (tests/inprocess.py)."""
    return inprocess.run(
        pytester,
        "--budget-suite=triage",
        "-p",
        "no:cacheprovider",
        "--budget-report=report.json",
        *args,
    )


def cells(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    result: list[dict[str, Any]] = report["cells"]
    return result


PLANNER = """
class FirstThree:
    name = "first-three"
    def plan(self, request):
        ids = [p.id for p in request.items][:3]
        return {"plan": [{"id": i, "tokens": request.budget // 3} for i in ids]}
"""


def test_fixture_override_replaces_the_reference_agents(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        PLANNER
        + """
import pytest

@pytest.fixture
def budget_planner():
    return FirstThree()
"""
    )
    result = run(pytester, *SMALL, "--budget-gate=off")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 passed*"])
    found = cells(pytester)
    assert [c["agent"] for c in found] == ["first-three", "first-three"]
    assert all(len(c["planned_ids"]) == 3 for c in found)


def test_hook_agent_and_explicit_reference_agents_side_by_side(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        PLANNER
        + """
def pytest_budget_planner(config):
    return FirstThree()
"""
    )
    run(pytester, *SMALL, "--budget-gate=off").assert_outcomes(passed=2)
    assert {c["agent"] for c in cells(pytester)} == {"first-three"}
    both = run(pytester, *SMALL, "--budget-gate=off", "--budget-agent=user,oracle")
    both.assert_outcomes(passed=4)
    assert sorted({c["agent"] for c in cells(pytester)}) == ["first-three", "oracle"]


def test_raw_llm_text_is_parsed_and_repaired(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def plan(request):
        first = request.items[0].id
        return (
            "<think>cheap ones first</think> Sure! Here is my plan:\\n```json\\n"
            '{"plan": [{"id": "%s", "tokens": "120.7"}, {"id": "nope", "tokens": 5}]}\\n```'
            % first
        )
    return plan
""")
    run(pytester, *SMALL, "--budget-gate=off").assert_outcomes(passed=2)
    for cell in cells(pytester):
        assert cell["plan_status"] == "repaired"
        assert cell["outcome"] == "ok"
        assert len(cell["planned_ids"]) == 1
        assert cell["repairs"]


@pytest.mark.parametrize(
    ("body", "status"),
    [("return None", "unparseable"), ("return 'I would rather not plan.'", "unparseable")],
)
def test_unusable_plans_are_invalid_not_crashes(
    pytester: pytest.Pytester, body: str, status: str
) -> None:
    pytester.makeconftest(f"""
def pytest_budget_planner(config):
    def plan(request):
        {body}
    return plan
""")
    run(pytester, *SMALL, "--budget-gate=off").assert_outcomes(passed=2)
    for cell in cells(pytester):
        assert cell["outcome"] == "invalid"
        assert cell["plan_status"] == status
        assert cell["reason"]
        # Excluded from eta (TRIAGE App. B), with the empty-plan figure beside it.
        assert cell["scores"]["v_u"] is None and cell["scores"]["eta_u"] is None
        assert cell["scores"]["eta_u_as_empty"] is not None
        assert cell["excluded"] == {"unparseable": 1, "plans": 1}


def test_raising_agent_fails_its_cell_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def plan(request):
        if request.pool == "arith":
            raise ConnectionError("endpoint unreachable")
        return {"plan": []}
    return plan
""")
    result = run(pytester, *SMALL, "--budget-gate=off")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*planner 'plan' raised ConnectionError: endpoint unreachable*"])
    by_pool = {c["pool"]: c for c in cells(pytester)}
    assert by_pool["arith"]["outcome"] == "error"
    assert by_pool["arith"]["test_outcome"] == "failed"
    assert by_pool["sokoban"]["outcome"] == "ok"


def test_phase0_is_cached_on_disk(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import os
from pytest_budget.triage._domains import ReferenceSolver

class CountingSolver:
    name = "counting"
    def __init__(self):
        self.inner = ReferenceSolver()
    def solve(self, problem, max_tokens=None):
        with open("calls.log", "a") as handle:
            handle.write(problem.id + "\\n")
        return self.inner.solve(problem, max_tokens)

def pytest_budget_solver(config):
    return CountingSolver()
""")
    pytester.makeini("[pytest]\nbudget_cache_dir = .phase0\n")
    args = (*SMALL, "--budget-gate=off", "--budget-agent=oracle")
    run(pytester, *args).assert_outcomes(passed=2)
    first = (pytester.path / "calls.log").read_text().split()
    assert sorted(first) == sorted(set(first)) and len(first) == 12
    run(pytester, *args).assert_outcomes(passed=2)
    assert (pytester.path / "calls.log").read_text().split() == first  # no new calls
    assert all(c["solver"] == "counting" for c in cells(pytester))


def test_pool_line_baseline_skips_the_solver(pytester: pytest.Pytester) -> None:
    lines = [
        {
            "id": f"q{i}",
            "text": f"Question {i}",
            "baseline": {"solved": i % 2 == 0, "tokens": 100 + i},
        }
        for i in range(6)
    ]
    pytester.path.joinpath("mine.jsonl").write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8"
    )
    pytester.makeconftest("""
def pytest_budget_solver(config):
    def solve(problem, max_tokens=None):
        raise AssertionError("the solver must not be called")
    return solve
""")
    run(pytester, "--budget-pool=mine.jsonl", "--budget-alpha=0.5", "--budget-agent=oracle",
        "--budget-gate=off").assert_outcomes(passed=1)  # fmt: skip
    (cell,) = cells(pytester)
    assert cell["pool"] == "mine"
    assert cell["budget"] == (100 + 101 + 102 + 103 + 104 + 105) // 2
    # Solved: q0, q2, q4 (costs 100, 102, 104, total 306); B = floor(615 / 2) = 307 fits all.
    assert cell["scores"]["v_oracle"] == 3.0
    assert cell["scores"]["eta_u"] == 1.0


def test_marker_sets_the_cap(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
import pytest
from pytest_budget import BudgetExceeded, Usage

@pytest.mark.budget(tokens=100, tool_calls=2)
def test_capped(budget_cap, budget_meter):
    assert budget_cap.caps == {"tokens": 100.0, "tool_calls": 2.0}
    budget_meter.charge(Usage(tokens=60))
    with pytest.raises(BudgetExceeded) as info:
        budget_meter.charge(Usage(tokens=50))
    assert info.value.dimension == "tokens"

def test_uncapped(budget_cap):
    assert budget_cap is None
""")
    inprocess.run(pytester, "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_allocations_over_budget_are_scored_and_counted(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def plan(request):
        return {"plan": [{"id": p.id, "tokens": request.budget} for p in request.items[:2]]}
    return plan
""")
    result = run(pytester, *SMALL, "--budget-gate=off")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["plans: 2 ok, 0 repaired, 0 unparseable; 2 with allocations over B"]
    )
    for cell in cells(pytester):
        assert cell["over_budget"] is True
        # Regime E: the first item takes the whole budget, the second no longer fits.
        assert len(cell["executed_ids"]["e"]) == 1


def test_solver_failures_exclude_items_or_fail_the_cell(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
from pytest_budget.triage._domains import ReferenceSolver

def pytest_budget_solver(config):
    inner = ReferenceSolver()
    def solve(problem, max_tokens=None):
        if problem.id.startswith("sokoban"):
            return None                      # every sokoban item: no usable answer
        if problem.id == "arith-001":
            raise RuntimeError("flaky")      # one arith item: excluded, reported
        return inner.solve(problem, max_tokens)
    return solve
""")
    result = run(pytester, *SMALL, "--budget-gate=off", "--budget-agent=oracle")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*Phase 0: solver 'solve' failed on all 6 items of pool 'sokoban' (first: returned "
        "NoneType; expected a Solution, a mapping with 'text' (and 'tokens'/'answer') or text)*"
    ])  # fmt: skip
    arith, sokoban = cells(pytester)
    assert sokoban["outcome"] == "error" and sokoban["test_outcome"] == "failed"
    assert sokoban["reason"].startswith("Phase 0: solver 'solve' failed on all 6 items")
    assert arith["phase0"]["gradeable"] == 5
    assert arith["phase0"]["errors"] == {"arith-001": "raised RuntimeError: flaky"}
    assert "arith-001" not in arith["planned_ids"]


def test_concurrency_bounds_agent_calls_in_flight(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import threading, time
from pytest_budget.triage._domains import ReferenceSolver

class SlowSolver:
    name = "slow"
    def __init__(self):
        self.inner, self.lock, self.active, self.peak = ReferenceSolver(), threading.Lock(), 0, 0
    def solve(self, problem, max_tokens=None):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        with open("peak.txt", "w") as handle:
            handle.write(str(self.peak))
        return self.inner.solve(problem, max_tokens)

SOLVER = SlowSolver()

def pytest_budget_solver(config):
    return SOLVER
""")
    run(pytester, *SMALL, "--budget-gate=off", "--budget-agent=oracle", "--budget-concurrency=3")
    assert (pytester.path / "peak.txt").read_text() == "3"


def test_phase0_cache_defaults_to_pytest_cache_dir(pytester: pytest.Pytester) -> None:
    args = ("--budget-suite=triage", *SMALL, "--budget-gate=off", "--budget-agent=oracle")
    inprocess.run(pytester, *args).assert_outcomes(passed=2)
    cached = list(
        (pytester.path / ".pytest_cache" / "d" / "pytest_budget" / "phase0").rglob("*.json")
    )
    assert len(cached) == 12  # 6 arith + 6 sokoban items, one file each


def test_same_ids_in_two_pool_files_do_not_share_baselines(pytester: pytest.Pytester) -> None:
    for name, base in (("a", 3), ("b", 40)):
        lines = [
            json.dumps({"id": f"q{i}", "text": f"Compute {base + i} * {base} + 7.", "answer": "0"})
            for i in range(4)
        ]
        pytester.path.joinpath(f"{name}.jsonl").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )
    both = ["--budget-pool=a.jsonl", "--budget-pool=b.jsonl", "--budget-alpha=1.0"]
    run(pytester, *both, "--budget-agent=oracle", "--budget-gate=off").assert_outcomes(passed=2)
    together = {c["pool"]: c["budget"] for c in cells(pytester)}
    run(pytester, "--budget-pool=b.jsonl", "--budget-alpha=1.0", "--budget-agent=oracle",
        "--budget-gate=off").assert_outcomes(passed=1)  # fmt: skip
    (alone,) = cells(pytester)
    assert together["b"] == alone["budget"] != together["a"]


def test_injected_items_reuse_the_ids_they_replace(pytester: pytest.Pytester) -> None:
    args = ("--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0,0.5")
    run(pytester, *args, "--budget-agent=attempt-all", "--budget-gate=off").assert_outcomes(
        passed=4
    )
    by_cell = {(c["pool"], c["unsolvable_ratio"]): c for c in cells(pytester)}
    for pool in ("arith", "sokoban"):
        assert by_cell[(pool, 0.5)]["planned_ids"] == by_cell[(pool, 0.0)]["planned_ids"]
        assert by_cell[(pool, 0.5)]["scores"]["detection"] == 0.0  # attempt-all plans everything
