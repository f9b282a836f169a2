"""Score many plans for one pool at once: the references once, the executions vectorized.

:func:`score_plans` gives exactly what :func:`~pytest_budget.triage._evaluate.score_plan`
gives for each plan (a test checks it plan by plan), but computes the oracle and the
random reference once for the pool and executes every plan under both regimes in a few
numpy passes over a plans x items matrix.  It serves a cell scored many times (repeats,
bootstraps, the benchmark's 1,000 plans).  Nothing here imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from pytest_budget.triage._evaluate import TriageScores, assemble_scores, score_plan
from pytest_budget.triage._scoring import Execution, oracle_value, random_reference
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry

__all__ = ["score_plans"]


def _item_arrays(
    gradeable: Sequence[Item], baselines: Mapping[str, Baseline]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Costs, solved flags (an unsolvable item never counts as solved) and values."""
    costs = np.array([baselines[item.id].tokens for item in gradeable], dtype=np.int64)
    solved = np.array(
        [baselines[item.id].solved and not item.unsolvable for item in gradeable], dtype=bool
    )
    values = np.array([item.value for item in gradeable], dtype=np.float64)
    return costs, solved, values


def _plan_rows(
    plans: Sequence[Plan], index: Mapping[str, int], n: int, ceiling: int
) -> tuple[list[list[PlanEntry] | None], np.ndarray, np.ndarray]:
    """Per plan: its gradeable entries (None when an id repeats), and the matrices of item
    positions (-1 past the end) and allocations (``n`` gradeable items)."""
    rows: list[list[PlanEntry] | None] = []
    order = np.full((len(plans), n), -1, dtype=np.int64)
    alloc = np.zeros((len(plans), n), dtype=np.int64)
    for row, plan in enumerate(plans):
        kept = [entry for entry in plan.planned if entry.id in index]
        positions = [index[entry.id] for entry in kept]
        if len(set(positions)) != len(positions):
            rows.append(None)  # a repeated id (only an unparsed Plan has one): scored alone
            continue
        rows.append(kept)
        k = len(positions)
        order[row, :k] = positions
        # A_i > B charges as B + 1: it stops regime E either way (see clamp_allocations).
        alloc[row, :k] = [min(entry.tokens, ceiling) for entry in kept]
    return rows, order, alloc


def score_plans(
    plans: Sequence[Plan],
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    budget: int,
    *,
    seed: int,
    samples: int = 1000,
) -> list[TriageScores]:
    """:func:`~pytest_budget.triage._evaluate.score_plan` for every plan (same pool, same
    budget, same seed), in order."""
    gradeable = [item for item in items if item.id in baselines]
    index = {item.id: i for i, item in enumerate(gradeable)}
    costs, solved, values = _item_arrays(gradeable, baselines)
    best = oracle_value(costs, solved, values, budget)
    reference = random_reference(costs, solved, values, budget, samples=samples, seed=seed)
    limit = math.floor(budget)
    # Integral values sum exactly in float64 whatever the order; otherwise use fsum per plan.
    exact_sums = bool(np.all(values == np.floor(values))) and float(np.abs(values).sum()) < 2**52
    rows, order, alloc = _plan_rows(plans, index, len(gradeable), limit + 1)
    real = order >= 0
    safe = np.where(real, order, 0)
    cost_m = np.where(real, costs[safe], 0)
    earn = np.where(solved, values, 0.0)
    earn_m = np.where(real, earn[safe], 0.0)
    solved_m = real & solved[safe]
    # Charges are non-negative, so what runs is a prefix (as in execute_advisory/enforced).
    runs_u = real & (np.cumsum(cost_m, axis=1) <= limit)
    runs_e = real & (alloc > 0) & (np.cumsum(alloc, axis=1) <= limit)
    scores_e = runs_e & (cost_m <= alloc) & solved_m
    scores_u = runs_u & solved_m
    v_u = (earn_m * runs_u).sum(axis=1)
    v_e = (earn_m * scores_e).sum(axis=1)
    # What ran is a prefix of each row: its length and the tokens it was charged.
    at = np.arange(len(plans))
    n_u, n_e = runs_u.sum(axis=1), runs_e.sum(axis=1)
    spent_u_all = np.where(n_u > 0, np.cumsum(cost_m, axis=1)[at, np.maximum(n_u - 1, 0)], 0)
    spent_e_all = np.where(n_e > 0, np.cumsum(alloc, axis=1)[at, np.maximum(n_e - 1, 0)], 0)
    anything_solved = bool(solved.any())
    ids = [item.id for item in gradeable]
    # Row-wise work on Python lists: cheaper than numpy indexing for rows of <= 30 items.
    order_rows = order.tolist()
    n_u_rows, n_e_rows = n_u.tolist(), n_e.tolist()
    spent_u_rows, spent_e_rows = spent_u_all.tolist(), spent_e_all.tolist()
    score_u_rows, score_e_rows = scores_u.tolist(), scores_e.tolist()
    v_u_rows, v_e_rows = v_u.tolist(), v_e.tolist()
    unsolvable = [item.id for item in gradeable if item.unsolvable]
    value_list = values.tolist()
    out: list[TriageScores] = []
    for row, planned in enumerate(rows):
        if planned is None:
            out.append(score_plan(plans[row], items, baselines, budget, seed=seed, samples=samples))
            continue
        positions = order_rows[row]
        executed_u = positions[: n_u_rows[row]]
        executed_e = positions[: n_e_rows[row]]
        scored_u = [p for p, r in zip(executed_u, score_u_rows[row], strict=False) if r]
        scored_e = [p for p, r in zip(executed_e, score_e_rows[row], strict=False) if r]
        if exact_sums:
            value_u, value_e = v_u_rows[row], v_e_rows[row]
        else:
            value_u = math.fsum(value_list[i] for i in scored_u)
            value_e = math.fsum(value_list[i] for i in scored_e)
        spent_u, spent_e = spent_u_rows[row], spent_e_rows[row]
        out.append(
            assemble_scores(
                plans[row],
                gradeable,
                planned,
                anything_solved,
                best.value,
                reference,
                Execution(value_u, tuple(executed_u), tuple(scored_u), spent_u),
                Execution(value_e, tuple(executed_e), tuple(scored_e), spent_e),
                ids=ids,
                unsolvable=unsolvable,
            )
        )
    return out
