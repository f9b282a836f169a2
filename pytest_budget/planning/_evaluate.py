"""One planning cell: run the agent on every query of a task under one scenario, score.

Episodes run concurrently (bounded by the limiter).  An agent that raises ends only its
own episode (``EpisodeRecord.error``); the cell is an error only when every episode failed.
Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget._core.offline import offline
from pytest_budget._core.roles import agent_name
from pytest_budget.planning._code_metrics import greedy_sums, score_sums
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._episode_records import EpisodeRecord, Query
from pytest_budget.planning._metrics import greedy_scores, score_episodes

__all__ = ["PlanningOutcome", "planning_outcome", "run_planning_cell"]


@dataclass
class PlanningOutcome:
    """A scored cell: the agent's scores, greedy's beside them, and the episode counts."""

    agent: str
    scores: dict[str, float | int | None]
    greedy: dict[str, float | int | None]
    episodes: list[EpisodeRecord] = field(default_factory=list)
    # Sums that pool across cells into the paper's all-task row (code_metrics.POOL_FIELDS,
    # GREEDY_POOL_FIELDS).
    pool: dict[str, float] = field(default_factory=dict)
    greedy_pool: dict[str, float] = field(default_factory=dict)
    n_errors: int = 0
    first_error: str | None = None
    outcome: str = "ok"
    reason: str = ""
    # The bootstrap's per-episode columns of ``episodes`` (``_intervals.outcome_columns``),
    # built once for the intervals and the per-query snapshot.
    columns: Any = field(default=None, repr=False, compare=False)


async def run_planning_cell(
    queries: Sequence[Query],
    refinement_level: int,
    mode: str,
    block_count: int,
    agent: object,
    *,
    seed: int = 42,
    limiter: anyio.CapacityLimiter | None = None,
    ban_longest: bool = True,
    reading: str = "code",
    answer_feedback: bool = False,
    pool: Sequence[Query] | None = None,
) -> PlanningOutcome:
    """Run ``agent`` on each query (in order) and aggregate CostBench's metrics
    (``reading``: ``code`` or ``prose``; see :mod:`pytest_budget.planning._metrics`).
    ``pool``: the task's whole query set when ``queries`` is one batch of it (the
    sequential gate), so each episode is the one the whole cell would run."""
    name = agent_name(agent)
    records: list[EpisodeRecord | None] = [None] * len(queries)

    async def one(index: int, query: Query) -> None:
        records[index] = await run_episode(
            query,
            refinement_level,
            mode,
            block_count,
            agent,
            seed=seed,
            limiter=limiter,
            ban_longest=ban_longest,
            answer_feedback=answer_feedback,
            pool=queries if pool is None else pool,
        )

    async with anyio.create_task_group() as group:
        for index, query in enumerate(queries):
            group.start_soon(one, index, query)
    # Scored off the event loop: other cells' calls go on meanwhile.
    return await offline(planning_outcome, name, [r for r in records if r is not None], reading)


def planning_outcome(name: str, episodes: list[EpisodeRecord], reading: str) -> PlanningOutcome:
    """The scored cell of these episodes (one per query, in query order)."""
    errors = [e.error for e in episodes if e.error is not None]
    outcome = PlanningOutcome(
        name,
        score_episodes(episodes, reading=reading),
        greedy_scores(episodes, reading=reading),
        episodes,
        pool=score_sums(episodes),
        greedy_pool=greedy_sums(episodes),
        n_errors=len(errors),
        first_error=errors[0] if errors else None,
    )
    if episodes and len(errors) == len(episodes):
        outcome.outcome = "error"
        outcome.reason = f"tool agent {name!r} failed on all {len(episodes)} queries: {errors[0]}"
    elif not episodes:
        outcome.outcome = "error"
        outcome.reason = "no queries for this task"
    return outcome
