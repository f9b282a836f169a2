"""Budget-aware re-solving: does the solver honour the allocation its planner chose?

Each planned item is solved again with its allocation a_i stated to the solver
(``Problem.stated_tokens``) but not enforced.  Compliance is the share of items whose
output stays within a_i; the four outcome counts compare correctness with Phase 0
(TRIAGE App. C.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import anyio

from pytest_budget._core.concurrency import for_each_bounded
from pytest_budget._core.roles import AgentError, call_role
from pytest_budget.triage._graders import grade
from pytest_budget.triage._phase0 import coerce_solution, is_truncated
from pytest_budget.triage._types import Baseline, Item, Plan

__all__ = [
    "ResolveRecord",
    "ResolveScores",
    "resolve_records",
    "run_resolve",
    "summarize_records",
    "summarize_resolve",
]


@dataclass(frozen=True)
class ResolveScores:
    n: int
    compliance: float | None
    kept: int
    lost: int
    newly_correct: int
    still_wrong: int
    acc_baseline: float | None
    acc_budget_aware: float | None
    errors: int = 0

    def as_scores(self) -> dict[str, float | int | None]:
        return dict(asdict(self))


def summarize_resolve(
    allocations: Sequence[int],
    tokens: Sequence[int],
    solved_before: Sequence[bool],
    solved_after: Sequence[bool],
    errors: int = 0,
) -> ResolveScores:
    """Compliance and the four outcome counts from per-item records."""
    n = len(allocations)
    pairs = list(zip(solved_before, solved_after, strict=True))
    complied = sum(1 for a, t in zip(allocations, tokens, strict=True) if t <= a)
    return ResolveScores(
        n=n,
        compliance=complied / n if n else None,
        kept=sum(1 for b, a in pairs if b and a),
        lost=sum(1 for b, a in pairs if b and not a),
        newly_correct=sum(1 for b, a in pairs if not b and a),
        still_wrong=sum(1 for b, a in pairs if not b and not a),
        acc_baseline=sum(solved_before) / n if n else None,
        acc_budget_aware=sum(solved_after) / n if n else None,
        errors=errors,
    )


#: One re-solved item: (allocation, output tokens, solved in Phase 0, solved now), or
#: ``None`` when the solver call failed.
ResolveRecord = tuple[int, int, bool, bool] | None


def summarize_records(records: Sequence[ResolveRecord]) -> ResolveScores:
    """:func:`summarize_resolve` over per-item records (failed calls count as ``errors``)."""
    done = [record for record in records if record is not None]
    return summarize_resolve(
        [r[0] for r in done],
        [r[1] for r in done],
        [r[2] for r in done],
        [r[3] for r in done],
        errors=len(records) - len(done),
    )


async def run_resolve(
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    plan: Plan,
    solver: Any,
    *,
    limiter: anyio.CapacityLimiter | None = None,
) -> ResolveScores:
    """Re-solve every planned item with its own allocation stated; no hard cap."""
    return summarize_records(await resolve_records(items, baselines, plan, solver, limiter=limiter))


async def resolve_records(
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    plan: Plan,
    solver: Any,
    *,
    limiter: anyio.CapacityLimiter | None = None,
    truncated: list[str] | None = None,
) -> list[ResolveRecord]:
    """The per-item records of :func:`run_resolve`, in plan order.

    ``truncated``, when given, gets the id of every reply cut at the solver's cap.
    """
    by_id = {item.id: item for item in items if item.id in baselines}
    entries = [entry for entry in plan.planned if entry.id in by_id]
    results: dict[int, tuple[int, bool] | None] = {}

    async def one(position: int, item: Item, allocation: int) -> None:
        problem = replace(item.problem, stated_tokens=allocation)
        try:
            raw = await call_role(solver, "solver", problem, None, limiter=limiter)
            solution = coerce_solution(raw)
        except (AgentError, TypeError):
            results[position] = None
            return
        results[position] = (solution.tokens, grade(item, solution.answer))
        if truncated is not None and is_truncated(solution):
            truncated.append(item.id)

    async def at(position: int) -> None:
        entry = entries[position]
        await one(position, by_id[entry.id], entry.tokens)

    await for_each_bounded(len(entries), at, limiter)

    out: list[ResolveRecord] = []
    for position, entry in enumerate(entries):
        record = results.get(position)
        if record is None:
            out.append(None)  # a failed call is reported, never counted as compliant
            continue
        solved_before = baselines[entry.id].solved and not by_id[entry.id].unsolvable
        out.append((entry.tokens, record[0], solved_before, record[1]))
    return out
