"""Your own assertions in ``async def`` tests, on ``async def`` agents.

The scoring functions (``run_cell``, ``run_awareness_cell``, ``run_planning_cell``) are
coroutines: await them in the test's own event loop.  The fixtures' helpers have awaitable
forms (``abaselines``, ``afor_cell``); their plain forms work in async tests too.  Agents
may be ``async def`` in every role.

Runs under pytest-asyncio (the marker below; in ``asyncio_mode = auto`` it is not needed)
or under anyio's pytest plugin (replace the marker with ``pytest.mark.anyio``)::

    pip install pytest-asyncio
    pytest test_own_agents_async_example.py --snapshot-update   # first time: the baselines
    pytest test_own_agents_async_example.py
"""

import anyio
import pytest

from pytest_budget.awareness import AwarenessCell, run_awareness_cell
from pytest_budget.planning import run_planning_cell
from pytest_budget.triage import Plan, PlanEntry, run_cell

pytestmark = pytest.mark.asyncio  # with anyio: pytestmark = pytest.mark.anyio


class ShortestFirstPlanner:
    """Attempts the shortest problems first, four tokens per word plus half again."""

    name = "shortest-first"

    async def plan(self, request):
        await anyio.sleep(0)  # e.g. await your model client here
        guesses = {p.id: 4 * len(p.text.split()) for p in request.items}
        entries, left = [], request.budget
        for problem in sorted(request.items, key=lambda p: guesses[p.id]):
            tokens = round(guesses[problem.id] * 1.5)
            if tokens > left:
                break
            entries.append(PlanEntry(problem.id, tokens))
            left -= tokens
        return Plan(entries=tuple(entries))


class DoublingEstimator:
    """Expects the agent to need about as much again as it has used so far."""

    name = "doubling"

    async def estimate(self, probe):
        await anyio.sleep(0)
        used = probe.used["tokens"]
        return f"<think>As much again.</think><answer>[{0.5 * used:.0f}, {1.5 * used:.0f}]</answer>"


async def test_async_planner_on_a_bundled_pool(
    triage_ground_truth, budget_solver, budget_seed, budget_record, budget_snapshot
):
    pool = triage_ground_truth.pool("arith", 0.5)
    phase0 = await triage_ground_truth.abaselines(pool, budget_solver)
    outcome = await run_cell(pool, phase0.baselines, 0.5, ShortestFirstPlanner(), seed=budget_seed)
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.scores.v_u <= outcome.scores.v_oracle
    budget_record(
        {
            "suite": "triage",
            "cell": "arith-async",
            "agent": outcome.agent,
            "seed": budget_seed,
            "outcome": outcome.outcome,
            "budget": outcome.budget,
            "plan_status": outcome.scores.plan_status,
            "scores": outcome.scores.as_scores(),
        }
    )
    # The default snapshot name is the test's name, under anyio's backends too.
    payload = {"scores": outcome.scores.as_scores(), "context": {"seed": budget_seed}}
    assert budget_snapshot("triage") == payload


async def test_plain_helpers_work_in_async_tests(triage_ground_truth, budget_solver):
    pool = triage_ground_truth.pool("sokoban")
    phase0 = triage_ground_truth.baselines(pool, budget_solver)  # no "already running" error
    assert phase0.errors == {}
    assert set(phase0.baselines) == {item.id for item in pool.items}


async def test_async_estimator_answers_every_probe(awareness_rollouts, budget_actor):
    rollouts = await awareness_rollouts.afor_cell(AwarenessCell("sokoban-6x6"), budget_actor)
    outcome = await run_awareness_cell(rollouts, DoublingEstimator())
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.n_errors == 0
    assert outcome.scores["invalid_rate"] == 0.0


async def test_tool_agent_in_an_async_test(planning_queries, budget_tool_agent, budget_seed):
    queries = planning_queries.for_task("shopping")
    outcome = await run_planning_cell(queries, 2, "static", 0, budget_tool_agent, seed=budget_seed)
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.scores["uihr"] == 1.0  # every final answer is the candidate asked for
