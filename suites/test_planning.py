"""The planning suite (CostBench): cost-optimal tool use, static and under blocking.

One test per cell: task x scenario (blocking mode, block count, refinement level) x agent.
Every query of the task is one multi-turn tool-calling episode.  Run with
``pytest --budget-suite=planning``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_budget.fixtures.cells import cell_result
from pytest_budget.fixtures.core import agent_axis, repeat_seeds, run_repeats
from pytest_budget.fixtures.planning import PlanningCell, PlanningQueries, planning_cells
from pytest_budget.models.loop import shared_limiter
from pytest_budget.options import BudgetOptions
from pytest_budget.planning.evaluate import run_planning_cell
from pytest_budget.planning.intervals import cell_summary
from pytest_budget.planning.options import PlanningOptions
from pytest_budget.planning.per_query import per_query_snapshot
from pytest_budget.planning.records import Query
from pytest_budget.plugin_state import budget_session
from pytest_budget.roles import agent_name


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = budget_session(metafunc.config)
    cells = planning_cells(session)
    metafunc.parametrize("planning_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "planning", "tool_agent")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def _protocol(options: BudgetOptions) -> dict[str, Any]:
    """The planning protocol options of a cell (CostBench as coded by default)."""
    return {
        "ban_longest": options.of(PlanningOptions).planning_ban_longest,
        "reading": options.of(PlanningOptions).planning_reading,
        "answer_feedback": options.of(PlanningOptions).planning_answer_feedback,
    }


def _query_digest(queries: Sequence[Query]) -> str:
    """Identifies the query set a baseline was measured on."""
    summary = [
        [q.query_id, q.preferences, q.time_info, q.location_preference, q.text] for q in queries
    ]
    return hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()[:16]


def _samples(outcome: Any, queries: Sequence[Query], options: BudgetOptions) -> list[Any]:
    """Every episode of the cell (first repeat): calls, segments, paths, answers."""
    from pytest_budget.planning.samples import episode_samples
    from pytest_budget.samples import options_secrets, scrubber

    if not (options.report_path or options.html_path):
        return []  # only the JSON report and the HTML page show them: not built for nothing
    return episode_samples(
        outcome.episodes,
        queries,
        scrubber(options_secrets(options)),
        options.of(PlanningOptions).planning_reading,
    )


async def _run(
    queries: Sequence[Query], cell: PlanningCell, agent: Any, options: BudgetOptions
) -> Any:
    scenario = cell.scenario
    return await run_planning_cell(
        queries,
        scenario.level,
        scenario.mode,
        scenario.blocks,
        agent,
        seed=options.seed,
        limiter=shared_limiter(options.concurrency),
        **_protocol(options),
    )


def prefetch_cell(item: pytest.Item, state: Any) -> tuple[Any, tuple[str, ...]] | None:
    """The cell's episodes, started ahead of its test (:mod:`~pytest_budget.fixtures.
    cells`): what the test computes for repeat 0, with the same agent."""
    from pytest_budget.fixtures.core import role_agent_for
    from pytest_budget.fixtures.planning import PlanningQueries

    params = item.callspec.params  # type: ignore[attr-defined]
    cell, name, options = params["planning_cell"], params["budget_agent"], state.options
    agent = role_agent_for(item.config, options, name, "tool_agent", options.seed)
    queries = PlanningQueries(state).for_task(cell.task)
    return (lambda: _run(queries, cell, agent, options)), (agent_name(agent),)


def test_planning(
    planning_cell: PlanningCell,
    budget_agent: str,
    budget_tool_agent: Any,
    budget_options: BudgetOptions,
    planning_queries: PlanningQueries,
    budget_record: Any,
    budget_snapshot: Any,
    request: pytest.FixtureRequest,
) -> None:
    scenario = planning_cell.scenario
    queries = planning_queries.for_task(planning_cell.task)
    outcome = cell_result(
        request,
        (agent_name(budget_tool_agent),),
        lambda: _run(queries, planning_cell, budget_tool_agent, budget_options),
    )
    # --budget-repeat: the agent runs every query again (a reference agent with another seed).
    outcomes = [
        outcome,
        *run_repeats(
            request,
            "tool_agent",
            budget_tool_agent,
            lambda tool_agent: _run(queries, planning_cell, tool_agent, budget_options),
        ),
    ]
    summary = cell_summary(
        outcomes,
        seed=budget_options.seed,
        cell_id=planning_cell.id,
        level=budget_options.ci_level,
        resamples=budget_options.ci_resamples,
        seeds=repeat_seeds(budget_options),
        reading=budget_options.of(PlanningOptions).planning_reading,
    )
    agent = budget_agent if budget_agent != "user" else outcome.agent
    budget_record(
        {
            "suite": "planning",
            "cell": planning_cell.id,
            "task": planning_cell.task,
            "scenario": scenario.id,
            "mode": scenario.mode,
            "block_count": scenario.blocks,
            "refinement_level": scenario.level,
            "agent": agent,
            "seed": budget_options.seed,
            "queries": len(queries),
            "outcome": outcome.outcome,
            "reason": outcome.reason,
            **summary.report_fields(),
            "greedy": outcome.greedy,
            # Sums the all-task row pools (the paper's rows pool every task).
            "planning_pool": outcome.pool,
            "planning_greedy_pool": outcome.greedy_pool,
            "reading": budget_options.of(PlanningOptions).planning_reading,
            "ban_longest": budget_options.of(PlanningOptions).planning_ban_longest,
            "first_error": outcome.first_error,
            # The episodes behind the scores, for the HTML report's drill-down (issue 23).
            "samples": _samples(outcome, queries, budget_options),
            "sort_key": [planning_cell.task, scenario.level, scenario.mode, scenario.blocks, agent],
        }
    )
    for index, each in enumerate(outcomes):
        if each.outcome == "error":
            where = f"repeat {index}: " if len(outcomes) > 1 else ""
            pytest.fail(f"{where}{each.reason}", pytrace=False)
    payload = {
        **summary.snapshot_fields(),
        # Each query's values, for the paired gate (--budget-gate=paired, planning's default).
        "per_query": per_query_snapshot(
            outcomes, budget_options.of(PlanningOptions).planning_reading
        ),
        "context": {
            "seed": budget_options.seed,
            "queries": len(queries),
            "query_set": _query_digest(queries),
            "ban_longest": budget_options.of(PlanningOptions).planning_ban_longest,
            "reading": budget_options.of(PlanningOptions).planning_reading,
        },
    }
    assert budget_snapshot("planning") == payload
