"""Token caps that fit reasoning models; truncated outputs counted and warned about
(issue 19 item 5).  The re-solve cap itself is pinned in test_model_agents.py."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from model_server import ModelServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget._run.model_agents import DEFAULT_MAX_TOKENS
from pytest_budget.models._client import OpenAIChatClient
from pytest_budget.triage._evaluate import run_cell, truncation_counts, truncation_warning
from pytest_budget.triage._llm import LLMPlanner, ModelSolution, PlanText
from pytest_budget.triage._phase0 import Phase0Cache, measure_baselines
from pytest_budget.triage._types import Baseline, Item, Pool, Problem

ITEMS = tuple(Item(id=f"q{i}", text=f"Compute {i} + 1.", answer=str(i + 1)) for i in range(4))
TRUTH = {item.id: Baseline(solved=True, tokens=10) for item in ITEMS}


def test_default_caps_leave_room_for_reasoning() -> None:
    assert DEFAULT_MAX_TOKENS["planner"] >= 16_384
    assert DEFAULT_MAX_TOKENS["solver"] >= 16_384


def test_a_planner_reply_cut_at_its_cap_is_counted() -> None:
    pool = Pool(name="p", items=ITEMS)

    def cut(request: object) -> PlanText:
        return PlanText('{"plan": [{"id": "q0", "tokens": 10}', finish_reason="length")

    outcome = anyio.run(lambda: run_cell(pool, TRUTH, 0.5, cut, seed=1))
    assert outcome.truncated
    whole = anyio.run(lambda: run_cell(pool, TRUTH, 0.5, lambda r: '{"plan": []}', seed=1))
    assert not whole.truncated


def test_llm_planner_carries_the_finish_reason_over_http() -> None:
    with ModelServer(lambda body: '{"plan": []}') as server:

        async def go() -> PlanText:
            async with LLMPlanner(OpenAIChatClient("m", server.url)) as planner:
                from pytest_budget.triage._types import PlanRequest

                return await planner.plan(PlanRequest(items=(), budget=10, prompt="plan"))

        reply = anyio.run(go)
    assert reply == '{"plan": []}' and reply.finish_reason == "stop" and not reply.truncated


def test_phase0_counts_truncated_solutions_fresh_and_from_cache(tmp_path: Path) -> None:
    def solver(problem: Problem, max_tokens: int | None = None) -> ModelSolution:
        cut = problem.id == "q1"
        return ModelSolution(
            text="thinking..." if cut else "Answer: 1",
            tokens=16_384 if cut else 5,
            answer=None if cut else "1",
            finish_reason="length" if cut else "stop",
        )

    cache = Phase0Cache(tmp_path)
    fresh = anyio.run(lambda: measure_baselines(ITEMS, solver, cache=cache))
    assert fresh.truncated == {"q1"} and fresh.solver_calls == 4
    again = anyio.run(lambda: measure_baselines(ITEMS, solver, cache=cache))
    assert again.truncated == {"q1"} and again.cache_hits == 4


def test_warning_above_five_percent_of_a_cells_calls() -> None:
    # 1 of 20 calls = 5%: not above the threshold.  2 of 20 = 10%: warns, naming the counts.
    class Outcome:
        def __init__(self, truncated: bool) -> None:
            self.truncated = truncated

    counts = truncation_counts([Outcome(False)], phase0_calls=19, phase0_truncated=1)  # type: ignore[list-item]
    assert counts == {"planner": 0, "planner_calls": 1, "phase0": 1, "phase0_calls": 19}
    assert truncation_warning("c", counts) is None
    counts = truncation_counts([Outcome(True)], phase0_calls=19, phase0_truncated=1)  # type: ignore[list-item]
    message = truncation_warning("arith-u0-a0.5-A", counts)
    assert message == (
        "arith-u0-a0.5-A: 2 of 20 model calls (10%) were cut at their token cap "
        "(planner 1/1, Phase 0 solver 1/19); raise max_tokens for this model"
    )


@pytest.mark.parametrize("calls", [0])
def test_no_calls_no_warning(calls: int) -> None:
    counts = {"planner": 0, "planner_calls": calls, "phase0": 0, "phase0_calls": calls}
    assert truncation_warning("c", counts) is None


def test_resolve_collects_replies_cut_at_the_cap() -> None:
    from pytest_budget.triage._resolve import resolve_records
    from pytest_budget.triage._types import Plan, PlanEntry

    def solver(problem: Problem, max_tokens: int | None = None) -> ModelSolution:
        cut = problem.id == "q2"
        return ModelSolution(
            text="..." if cut else "Answer: 3",
            tokens=16_384 if cut else 4,
            answer=None if cut else str(int(problem.id[1:]) + 1),
            finish_reason="length" if cut else "stop",
        )

    plan = Plan(entries=(PlanEntry("q2", 50), PlanEntry("q0", 50), PlanEntry("q1", 0)))
    cut: list[str] = []
    records = anyio.run(lambda: resolve_records(ITEMS, TRUTH, plan, solver, truncated=cut))
    assert cut == ["q2"]
    # q2 overran its stated 50 (not compliant, not solved); q0 complied and was solved.
    assert records == [(50, 16_384, True, False), (50, 4, True, True)]
