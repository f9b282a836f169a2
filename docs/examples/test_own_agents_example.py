"""Your own assertions on the agents the run evaluates: one test per role.

Each test asks for the role's fixture (``budget_planner``, ``budget_estimator``,
``budget_tool_agent``), so it checks whatever agent the run names: the reference agent of
the role by default, ``--budget-agent=openai/gpt-4o-mini`` for a model, your own through a
``pytest_budget_<role>`` hook or a fixture override in ``conftest.py``.  Copy this file into
your tests and run it, with or without a suite::

    pytest test_own_agents_example.py
    pytest test_own_agents_example.py --budget-agent=oracle
    pytest test_own_agents_example.py --budget-suite=triage

The bundled pools, rollouts and queries follow ``--budget-pool-size``,
``--budget-rollout-count`` and ``--budget-query-count``.
"""

import functools

import anyio

from pytest_budget.awareness import AwarenessCell, run_awareness_cell
from pytest_budget.planning import run_planning_cell
from pytest_budget.triage import run_cell


def test_planner_scores_on_a_bundled_pool(
    triage_ground_truth, budget_planner, budget_solver, budget_seed
):
    pool = triage_ground_truth.pool("arith", 0.5)  # half of it replaced by unsolvable items
    phase0 = triage_ground_truth.baselines(pool, budget_solver)  # Phase 0, cached on disk
    cell = functools.partial(run_cell, pool, phase0.baselines, 0.5, budget_planner)
    outcome = anyio.run(functools.partial(cell, seed=budget_seed))
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.scores.v_u <= outcome.scores.v_oracle  # no plan beats the oracle
    assert outcome.scores.eta_u >= 0.5  # at least half of what the budget allows


def test_estimator_answers_every_probe(awareness_rollouts, budget_estimator, budget_actor):
    rollouts = awareness_rollouts.for_cell(AwarenessCell("sokoban-6x6"), budget_actor)
    outcome = anyio.run(functools.partial(run_awareness_cell, rollouts, budget_estimator))
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.n_errors == 0  # the estimator never raised
    assert outcome.scores["invalid_rate"] == 0.0  # and every answer could be read


def test_tool_agent_reaches_the_goal(planning_queries, budget_tool_agent, budget_seed):
    queries = planning_queries.for_task("dining")
    cell = functools.partial(run_planning_cell, queries, 2, "static", 0, budget_tool_agent)
    outcome = anyio.run(functools.partial(cell, seed=budget_seed))
    assert outcome.outcome == "ok", outcome.reason
    assert outcome.scores["uihr"] == 1.0  # every final answer is the candidate asked for
    assert outcome.scores["invalid_calls"] == 0  # no call the environment refused
