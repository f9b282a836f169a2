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

from pytest_budget._core.roles import agent_name
from pytest_budget._plugin.state import budget_session
from pytest_budget._run.options import BudgetOptions
from pytest_budget.fixtures.cells import cell_result
from pytest_budget.fixtures.core import agent_axis, fail_on_error, repeat_seeds, run_repeats
from pytest_budget.fixtures.planning import PlanningCell, PlanningQueries, planning_cells
from pytest_budget.fixtures.sequential import sequential_record
from pytest_budget.models._loop import shared_limiter
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._evaluate import PlanningOutcome, planning_outcome, run_planning_cell
from pytest_budget.planning._intervals import cell_summary
from pytest_budget.planning._options import PlanningOptions
from pytest_budget.planning._per_query import per_query_parts, per_query_snapshot


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
    from pytest_budget._core.samples import options_secrets, scrubber
    from pytest_budget.planning._samples import episode_samples

    if not (options.report_path or options.html_path):
        return []  # only the JSON report and the HTML page show them: not built for nothing
    return episode_samples(
        outcome.episodes,
        queries,
        scrubber(options_secrets(options)),
        options.of(PlanningOptions).planning_reading,
    )


def _context(options: BudgetOptions, queries: Sequence[Query]) -> dict[str, Any]:
    """What a baseline must have been recorded with to be compared (else re-record)."""
    return {
        "seed": options.seed,
        "queries": len(queries),
        "query_set": _query_digest(queries),
        "ban_longest": options.of(PlanningOptions).planning_ban_longest,
        "reading": options.of(PlanningOptions).planning_reading,
    }


def _sequential(item: pytest.Item, options: BudgetOptions, agent: Any, queries: Any) -> Any:
    """The cell's sequential plan, why it runs whole, or None (:mod:`~pytest_budget.
    fixtures.sequential`)."""
    from pytest_budget.fixtures.sequential import sequential_cell

    metered = getattr(agent, "metered", False) is True
    return sequential_cell(
        item, options, "planning", len(queries), metered, _context(options, queries)
    )


def _run_sequential(
    request: pytest.FixtureRequest, plan: Any, queries: Sequence[Query], cell: PlanningCell,
    agent: Any, options: BudgetOptions,
) -> PlanningOutcome:  # fmt: skip
    """The cell's queries batch by batch, deciding after each (the first batch may have
    been started ahead); the outcome of the queries run."""
    from pytest_budget.models._loop import run_on_worker_loop

    reading = options.of(PlanningOptions).planning_reading
    episodes: list[Any] = []
    for index, (lo, hi) in enumerate(plan.batches()):
        batch = queries[lo:hi]

        def work(batch: Sequence[Query] = batch) -> Any:
            return _run(batch, cell, agent, options, pool=queries)

        if index == 0:
            part = cell_result(request, (agent_name(agent), "sequential batch 1"), work)
        else:
            part = run_on_worker_loop(work)
        episodes += part.episodes
        outcome = planning_outcome(part.agent, episodes, reading)
        if plan.look(per_query_parts([outcome], reading)).decision != "continue":
            break
    return outcome


async def _run(
    queries: Sequence[Query], cell: PlanningCell, agent: Any, options: BudgetOptions,
    pool: Sequence[Query] | None = None,
) -> Any:  # fmt: skip
    scenario = cell.scenario
    return await run_planning_cell(
        queries,
        scenario.level,
        scenario.mode,
        scenario.blocks,
        agent,
        seed=options.seed,
        limiter=shared_limiter(options.concurrency),
        pool=pool,
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
    plan = _sequential(item, options, agent, queries)
    if plan is not None and not isinstance(plan, str):  # only its first batch ahead
        lo, hi = plan.batches()[0]
        first = queries[lo:hi]
        work = lambda: _run(first, cell, agent, options, pool=queries)  # noqa: E731
        return work, (agent_name(agent), "sequential batch 1")
    return (lambda: _run(queries, cell, agent, options)), (agent_name(agent),)


def _first_run(
    request: pytest.FixtureRequest, plan: Any, queries: Sequence[Query], cell: PlanningCell,
    agent: Any, options: BudgetOptions,
) -> PlanningOutcome:  # fmt: skip
    """The cell's run (perhaps started ahead); with ``--budget-sequential``, batch by
    batch, stopping once the gate decides."""
    if plan is None or isinstance(plan, str):
        outcome: PlanningOutcome = cell_result(
            request, (agent_name(agent),), lambda: _run(queries, cell, agent, options)
        )
        return outcome
    return _run_sequential(request, plan, queries, cell, agent, options)


def _cell_fields(cell: PlanningCell, agent: str, options: BudgetOptions) -> dict[str, Any]:
    """The cell record's coordinates and protocol options."""
    scenario = cell.scenario
    planning = options.of(PlanningOptions)
    return {
        "suite": "planning",
        "cell": cell.id,
        "task": cell.task,
        "scenario": scenario.id,
        "mode": scenario.mode,
        "block_count": scenario.blocks,
        "refinement_level": scenario.level,
        "agent": agent,
        "seed": options.seed,
        "reading": planning.planning_reading,
        "ban_longest": planning.planning_ban_longest,
        "sort_key": [cell.task, scenario.level, scenario.mode, scenario.blocks, agent],
    }


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
    all_queries = planning_queries.for_task(planning_cell.task)
    plan = _sequential(request.node, budget_options, budget_tool_agent, all_queries)
    outcome = _first_run(
        request, plan, all_queries, planning_cell, budget_tool_agent, budget_options
    )
    queries = (
        all_queries[: len(outcome.episodes)] if plan and not isinstance(plan, str) else all_queries
    )
    # --budget-repeat: the agent runs every query again (a reference agent with another seed).
    again = run_repeats(
        request,
        "tool_agent",
        budget_tool_agent,
        lambda tool_agent: _run(queries, planning_cell, tool_agent, budget_options),
    )
    outcomes = [outcome, *again]
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
            **_cell_fields(planning_cell, agent, budget_options),
            "queries": len(queries),
            "outcome": outcome.outcome,
            "reason": outcome.reason,
            **summary.report_fields(),
            "greedy": outcome.greedy,
            # Sums the all-task row pools (the paper's rows pool every task).
            "planning_pool": outcome.pool,
            "planning_greedy_pool": outcome.greedy_pool,
            "first_error": outcome.first_error,
            # The episodes behind the scores, for the HTML report's drill-down (issue 23).
            "samples": _samples(outcome, queries, budget_options),
            "sequential": sequential_record(plan),
        }
    )
    fail_on_error(outcomes)
    payload = {
        **summary.snapshot_fields(),
        # Each query's values, for the paired gate (--budget-gate=paired, planning's default).
        "per_query": per_query_snapshot(
            outcomes, budget_options.of(PlanningOptions).planning_reading
        ),
        "context": _context(budget_options, all_queries),
    }
    if plan is not None and not isinstance(plan, str):
        payload["sequential"] = plan.payload()
    assert budget_snapshot("planning") == payload
