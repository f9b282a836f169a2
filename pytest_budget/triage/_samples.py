"""A triage cell's samples: one record per pool item (see :mod:`pytest_budget._core.samples`).

Each item shows its value v_i, Phase 0 cost c_i and whether the solver solved it, the
plan's position and allocation a_i, what happened to it under regime U (executed at c_i,
or where the budget ran out) and regime E (executed under the cap a_i; *cut* when
c_i > a_i, the truncation the enforced regime applies), and whether the knapsack oracle
takes it.  The item's ``score`` is the value it earned under regime U (v_i when executed
and solved, else 0; ``null`` when the plan left it out).  Plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_budget._core.samples import Scrubber, clip, scrubber, shown
from pytest_budget.triage._scoring import oracle_value
from pytest_budget.triage._types import Baseline, Item, Plan

if TYPE_CHECKING:
    from pytest_budget.triage._evaluate import CellOutcome

__all__ = ["cell_samples", "item_samples", "plan_text"]


def cell_samples(
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    truncated: set[str] | frozenset[str],
    outcome: CellOutcome,
    secrets: Sequence[str] = (),
) -> dict[str, Any]:
    """The cell record's ``plan_raw`` (the planner's reply) and ``samples`` (its pool
    items under the first plan)."""
    scrub = scrubber(secrets)
    scores = outcome.scores
    return {
        "plan_raw": plan_text(outcome.raw, scrub),
        "samples": item_samples(
            items, baselines, truncated, outcome.plan,
            scores.executed_u, scores.executed_e, scores.scored_e, outcome.budget, scrub,
        ),
    }  # fmt: skip


def plan_text(raw: object, scrub: Scrubber) -> str | None:
    """The planner's reply as text for the report (clipped, credentials masked); any
    value, however hostile (a 5,000-digit integer, nesting 100,000 deep), reads safely."""
    if raw is None:
        return None
    return scrub(shown(raw))


def _regime_u(
    order: Sequence[str], executed: set[str], costs: Mapping[str, int], budget: int
) -> dict[str, tuple[str, int | None]]:
    """Per planned id: (state, remaining budget before it) under regime U."""
    remaining = budget
    stopped = False
    out: dict[str, tuple[str, int | None]] = {}
    for item_id in order:
        if stopped:
            out[item_id] = ("not reached", None)
        elif item_id in executed:
            out[item_id] = ("executed", remaining)
            remaining -= costs.get(item_id, 0)
        else:
            out[item_id] = ("budget ran out", remaining)
            stopped = True
    return out


def _regime_e(
    plan: Sequence[tuple[str, int]], executed: set[str], budget: int
) -> dict[str, tuple[str, int | None]]:
    remaining = budget
    stopped = False
    out: dict[str, tuple[str, int | None]] = {}
    for item_id, tokens in plan:
        if stopped:
            out[item_id] = ("not reached", None)
        elif item_id in executed:
            out[item_id] = ("executed", remaining)
            remaining -= min(tokens, budget + 1)
        else:
            out[item_id] = ("budget ran out", remaining)
            stopped = True
    return out


def _tags(
    item: Item, u: str, e: str, planned: bool, in_oracle: bool, solved: bool, cut: bool
) -> list[str]:
    """What went wrong with a gradeable item (empty when nothing did)."""
    tags = []
    if not planned:
        tags.append("not planned")
    if u == "budget ran out" or e == "budget ran out":
        tags.append("over budget")
    if e == "cut at a_i":
        tags.append("truncated")
    if in_oracle and u != "executed":
        tags.append("miss")
    if item.unsolvable:
        tags.append("unsolvable planned" if planned else "unsolvable left out")
    elif not solved:
        tags.append("wrong answer")
    if cut:
        tags.append("phase 0 cut")
    return tags


def item_samples(
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    truncated: set[str] | frozenset[str],
    plan: Plan,
    executed_u: Sequence[str],
    executed_e: Sequence[str],
    scored_e: Sequence[str],
    budget: int,
    scrub: Scrubber,
) -> list[dict[str, Any]]:
    """One record per gradeable item, in pool order (items without a Phase 0 result too,
    tagged ``no baseline``).  The solver's Phase 0 text is not kept: a result read back
    from the Phase 0 cache has none, and a cell must record the same with or without it."""
    gradeable = [item for item in items if item.id in baselines]
    costs = {item.id: baselines[item.id].tokens for item in gradeable}
    solved = {item.id: baselines[item.id].solved and not item.unsolvable for item in gradeable}
    best = oracle_value(
        [costs[i.id] for i in gradeable],
        [solved[i.id] for i in gradeable],
        [i.value for i in gradeable],
        budget,
    )
    oracle = {gradeable[index].id for index in best.chosen}
    planned = [(e.id, e.tokens) for e in plan.planned if e.id in costs]
    position = {item_id: n for n, (item_id, _) in enumerate(planned, start=1)}
    allocation = dict(planned)
    u_state = _regime_u([i for i, _ in planned], set(executed_u), costs, budget)
    e_state = _regime_e(planned, set(executed_e), budget)
    scored = set(scored_e)
    out = []
    for item in items:
        record: dict[str, Any] = {
            "id": item.id,
            "text": scrub(item.text),
            "value": item.value,
            "domain": item.domain,
            "unsolvable": item.unsolvable,
            # any JSON value a pool gives (a huge integer, deep nesting) reads safely
            "expected": None if item.answer is None else clip(shown(item.answer, 400), 400),
        }
        if item.id not in costs:
            record.update(score=None, tags=["no baseline"])
            out.append(record)
            continue
        cost, ok = costs[item.id], solved[item.id]
        u, u_left = u_state.get(item.id, ("not planned", None))
        e, e_left = e_state.get(item.id, ("not planned", None))
        a = allocation.get(item.id)
        if e == "executed":
            e = "scored" if item.id in scored else ("cut at a_i" if cost > (a or 0) else "executed")
        planned_here, in_oracle = item.id in position, item.id in oracle
        tags = _tags(item, u, e, planned_here, in_oracle, ok, item.id in truncated)
        earned = item.value if (u == "executed" and ok) else 0.0
        if not tags:
            tags.append("earned" if earned else "ok")
        record.update(
            cost=cost,
            solved=ok,
            oracle=item.id in oracle,
            position=position.get(item.id),
            allocation=a,
            u=u,
            u_remaining=u_left,
            e=e,
            e_remaining=e_left,
            score=earned if item.id in position else None,
            tags=tags,
        )
        out.append(record)
    return out
