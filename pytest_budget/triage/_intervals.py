"""Bootstrap of a triage cell's scores, with the pool item as the unit.

A triage cell is one plan for one pool at one budget level alpha.  Its scores depend on
which problems happen to be in the pool, so a resample draws the pool's (gradeable) items
with replacement, each copy keeping everything the planner decided about its item: its
position in the plan (copies of an item sit next to each other) and its allocation.  On
the resampled pool every score is recomputed as the cell computes it:

* B* = floor(alpha * sum of c_i over the resampled items), the cell's own budget rule;
* V_U and V_E execute the plan (with its copies) under the regime rules;
* V_oracle is the knapsack optimum of the resampled pool (with equal values the
  cheapest-first prefix, with whole values a dynamic programme over value, both for all
  resamples at once; otherwise solved per resample);
* V_random is the expected regime-U value of a random ordering of the resampled pool:
  exact where every ordering scores the same (all of it fits, or nothing has value) or for
  at most 8 items, else the mean over ``inner_samples`` orderings (fewer than the cell's
  1,000, to keep the bootstrap cheap; the extra Monte-Carlo noise widens the interval a
  little, never narrows it);
* eta, regret, detection and waste follow from those, with the cell's own conventions.

V_oracle and V_random do not depend on the plan, so all agents of a cell share them
through ``cache``.  Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_budget._stats.bootstrap import (
    CIMeta,
    ResampleMatrix,
    bootstrap_seed,
    resample_draws,
)
from pytest_budget._stats.repeats import CellSummary, Consistency, summarize_cell
from pytest_budget.triage._evaluate import CellOutcome
from pytest_budget.triage._random_orderings import random_values as _random_values
from pytest_budget.triage._scoring import clamp_allocations, oracle_value
from pytest_budget.triage._types import Baseline, Item, Plan, PlanStatus

__all__ = [
    "INNER_SAMPLES",
    "RESOLVE_SUCCESS",
    "SUCCESS",
    "UNIT",
    "cell_summary",
    "item_units",
    "resampled_resolve_scores",
    "resampled_scores",
    "resolve_cell_summary",
    "triage_success",
    "warm_shared",
]

#: The resampling unit named in a triage cell's ``ci_meta``.
UNIT = "item"
#: Random orderings per resample for V_random (the cell itself draws 1,000).
INNER_SAMPLES = 100
#: The whole-value oracle's limits: largest value, cost and table (resamples x total value).
_DP_VALUE_LIMIT = 2**20
_DP_COST_LIMIT = 2**40
_DP_CELLS = 20_000_000
#: Relative tolerance of the eta convention (as :func:`~pytest_budget.triage._scoring.efficiency`).
_TOLERANCE = 1e-12

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def item_units(items: Sequence[Item], baselines: Mapping[str, Baseline]) -> list[Item]:
    """The cell's units: the gradeable items (with a Phase 0 result), in pool order."""
    return [item for item in items if item.id in baselines]


def _prefix_values(
    counts: IntArray, charge: IntArray, earn: FloatArray, budget: IntArray
) -> FloatArray:
    """Value of executing positions in order, each position ``counts`` times, under the
    prefix rule: stop at the first copy whose charge no longer fits in the budget.

    ``counts`` is resamples x positions; ``charge`` (>= 0) and ``earn`` are per position.
    """
    rows = counts.shape[0]
    if counts.shape[1] == 0:
        return np.zeros(rows)
    spent = np.cumsum(counts * charge, axis=1)
    gained = np.cumsum(counts * earn, axis=1)
    # Charges are non-negative, so the fully executed positions form a prefix.
    full = (spent <= budget[:, None]).sum(axis=1)
    at = np.arange(rows)
    last = np.maximum(full - 1, 0)
    value = np.where(full > 0, gained[at, last], 0.0)
    spent_before = np.where(full > 0, spent[at, last], 0)
    nxt = np.minimum(full, counts.shape[1] - 1)
    price = charge[nxt]
    # Some copies of the first position that does not fit entirely may still fit.
    partial = np.where(
        (full < counts.shape[1]) & (price > 0), (budget - spent_before) // np.maximum(price, 1), 0
    )
    partial = np.minimum(partial, counts[at, nxt])
    out: FloatArray = value + np.where(full < counts.shape[1], partial * earn[nxt], 0.0)
    return out


def _pool_digest(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(part.tobytes())
        else:
            digest.update(repr(part).encode("utf-8"))
        digest.update(b"|")
    return digest.hexdigest()


def _oracle_values(
    indices: IntArray,
    counts: IntArray,
    costs: IntArray,
    solved: npt.NDArray[np.bool_],
    values: FloatArray,
    budget: IntArray,
) -> FloatArray:
    candidates = solved & (values > 0)
    if not candidates.any():
        return np.zeros(counts.shape[0])
    chosen_values = values[candidates]
    if np.all(chosen_values == chosen_values[0]):
        # Equal values: the optimum takes solved items cheapest first (TRIAGE eq. 3).
        order = np.flatnonzero(candidates)
        order = order[np.argsort(costs[order], kind="stable")]
        return _prefix_values(counts[:, order], costs[order], values[order], budget)
    exact = _integer_oracle_values(counts, costs, candidates, values, budget)
    if exact is not None:
        return exact
    return np.array(
        [
            oracle_value(costs[row], solved[row], values[row], int(limit)).value
            for row, limit in zip(indices, budget, strict=True)
        ]
    )


def _integer_oracle_values(
    counts: IntArray,
    costs: IntArray,
    candidates: npt.NDArray[np.bool_],
    values: FloatArray,
    budget: IntArray,
) -> FloatArray | None:
    """The knapsack optimum of every resample at once when the candidates' values are
    whole numbers: a dynamic programme over value (least cost of each total value), all
    resamples in one array.  With whole values every exact solver finds the one optimal
    total and the sum of its values is that whole number, so this equals
    :func:`~pytest_budget.triage._scoring.oracle_value` row by row.  ``None`` (solve per
    resample) for fractional values, or when the table or the costs would be too large."""
    units = np.flatnonzero(candidates)
    worth = values[units]
    if not np.all(worth == np.floor(worth)) or float(worth.max()) > _DP_VALUE_LIMIT:
        return None
    weight = costs[units]
    if int(weight.max(initial=0)) >= _DP_COST_LIMIT:
        return None
    copies = counts[:, units]
    top = int((copies @ worth.astype(np.int64)).max(initial=0))
    rows = counts.shape[0]
    if rows * (top + 1) > _DP_CELLS:
        return None
    never = np.int64(_DP_COST_LIMIT) * (counts.shape[1] + 1)  # above any reachable cost
    least = np.full((rows, top + 1), never, dtype=np.int64)
    least[:, 0] = 0
    for j, (w, v) in enumerate(zip(weight.tolist(), worth.astype(np.int64).tolist(), strict=True)):
        # Each copy of unit j is one more 0-1 item for the resamples that drew it.
        for copy in range(1, int(copies[:, j].max(initial=0)) + 1):
            rows_with = np.flatnonzero(copies[:, j] >= copy)
            block = least[rows_with]
            block[:, v:] = np.minimum(block[:, v:], block[:, : top + 1 - v] + w)
            least[rows_with] = block
    fits = least <= budget[:, None]
    best = np.where(fits, np.arange(top + 1), 0).max(axis=1)
    out: FloatArray = best.astype(np.float64)
    return out


def _efficiency(v: FloatArray, v_oracle: FloatArray, v_random: FloatArray) -> FloatArray:
    scale = np.maximum(1.0, np.maximum(np.abs(v_oracle), np.abs(v_random)))
    gap = v_oracle - v_random
    tied = np.abs(gap) <= _TOLERANCE * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (v - v_random) / np.where(tied, 1.0, gap)
    out: FloatArray = np.where(tied, np.where(v >= v_oracle - _TOLERANCE * scale, 1.0, 0.0), ratio)
    return out


def _regret(v: FloatArray, v_oracle: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        defined = v_oracle >= 1
        out: FloatArray = np.where(
            defined, (v_oracle - v) / np.where(defined, v_oracle, 1.0), np.nan
        )
    return out


def _shared_values(
    key: str, cache: MutableMapping[str, Any] | None, indices: IntArray, counts: IntArray,
    costs: IntArray, solved: npt.NDArray[np.bool_], values: FloatArray, earn: FloatArray,
    budget: IntArray, inner_samples: int, seed: int,
) -> tuple[FloatArray, FloatArray]:  # fmt: skip
    """V_oracle and V_random per resample: from ``cache`` (waiting for one computed ahead
    by :func:`warm_shared`), else computed here and stored there."""
    shared = cache.get(key) if cache is not None else None
    if isinstance(shared, concurrent.futures.Future):  # being computed ahead (warm_shared)
        try:
            shared = shared.result()
        except Exception:  # computed here instead
            shared = None
    if shared is None:
        shared = (
            _oracle_values(indices, counts, costs, solved, values, budget),
            _random_values(
                indices, counts, costs, earn, budget, inner_samples=inner_samples, seed=seed
            ),
        )
        if cache is not None:
            cache[key] = shared
    return shared


def _detection_and_waste(
    counts: IntArray, unsolvable: FloatArray, planned_alloc: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Per resample: the share of unsolvable copies left out of the plan (detection), and
    the share of the planned tokens allocated to them (waste); NaN without unsolvable."""
    n_unsolvable = counts @ unsolvable
    planned_mask = (planned_alloc > 0).astype(np.float64)
    total_alloc = counts @ planned_alloc
    with np.errstate(invalid="ignore", divide="ignore"):
        detection = np.where(
            n_unsolvable > 0,
            (counts @ (unsolvable * (1.0 - planned_mask))) / np.maximum(n_unsolvable, 1),
            np.nan,
        )
        waste = np.where(
            n_unsolvable > 0,
            np.where(
                total_alloc > 0,
                (counts @ (planned_alloc * unsolvable)) / np.maximum(total_alloc, 1),
                0.0,
            ),
            np.nan,
        )
    return detection, waste


def resampled_scores(
    plan: Plan,
    units: Sequence[Item],
    baselines: Mapping[str, Baseline],
    alpha: float,
    indices: IntArray,
    counts: IntArray,
    *,
    seed: int,
    inner_samples: int = INNER_SAMPLES,
    cache: MutableMapping[str, Any] | None = None,
) -> ResampleMatrix:
    """Every triage score (the keys of ``TriageScores.as_scores``) per resample.

    ``units`` from :func:`item_units`; ``indices`` (resamples x n, drawn unit indices)
    and ``counts`` (resamples x n, how often each unit was drawn) describe the same
    resamples.  ``seed`` seeds the inner random orderings.
    """
    n = len(units)
    if counts.shape[1] != n or indices.shape != counts.shape:
        raise ValueError(f"indices and counts must be resamples x {n} items")
    index = {item.id: i for i, item in enumerate(units)}
    costs = np.array([baselines[item.id].tokens for item in units], dtype=np.int64)
    solved = np.array(
        [baselines[item.id].solved and not item.unsolvable for item in units], dtype=np.bool_
    )
    values = np.array([item.value for item in units], dtype=np.float64)
    earn = np.where(solved, values, 0.0)
    unsolvable = np.array([item.unsolvable for item in units], dtype=np.float64)
    budget = np.floor(alpha * (counts @ costs).astype(np.float64) + 1e-9).astype(np.int64)

    key = _pool_digest(costs, solved, values, alpha, indices, inner_samples, seed)
    v_oracle, v_random = _shared_values(
        key, cache, indices, counts, costs, solved, values, earn, budget, inner_samples, seed
    )

    planned = [entry for entry in plan.planned if entry.id in index]
    order = np.array([index[entry.id] for entry in planned], dtype=np.int64)
    # An allocation above every resample's budget scores like budget + 1 (and keeps the
    # running totals far from int64's limit).
    ceiling = int(budget.max(initial=0))
    allocation = clamp_allocations([entry.tokens for entry in planned], ceiling)
    in_order = counts[:, order]
    v_u = _prefix_values(in_order, costs[order], earn[order], budget)
    v_e = _prefix_values(
        in_order, allocation, np.where(costs[order] <= allocation, earn[order], 0.0), budget
    )
    planned_alloc = np.zeros(n)
    planned_alloc[order] = allocation
    detection, waste = _detection_and_waste(counts, unsolvable, planned_alloc)
    # Resamples with V_oracle = 0 have no eta (TRIAGE §3.2), as the cell itself.
    in_scope = v_oracle > 0
    eta_u = np.where(in_scope, _efficiency(v_u, v_oracle, v_random), np.nan)
    eta_e = np.where(in_scope, _efficiency(v_e, v_oracle, v_random), np.nan)
    if plan.status is PlanStatus.UNPARSEABLE:
        # Excluded from every plan score; only the "counted as empty" figure remains.
        blank = np.full(counts.shape[0], np.nan)
        return {
            "v_u": blank, "v_e": blank, "v_oracle": v_oracle, "v_random": v_random,
            "eta_u": blank, "eta_e": blank, "regret_u": blank, "regret_e": blank,
            "detection": blank, "waste": blank, "eta_u_as_empty": eta_u,
            "eta_e_as_empty": eta_e,
        }  # fmt: skip
    return {
        "v_u": v_u,
        "v_e": v_e,
        "v_oracle": v_oracle,
        "v_random": v_random,
        "eta_u": eta_u,
        "eta_e": eta_e,
        "regret_u": _regret(v_u, v_oracle),
        "regret_e": _regret(v_e, v_oracle),
        "detection": detection,
        "waste": waste,
        "eta_u_as_empty": eta_u,
        "eta_e_as_empty": eta_e,
    }


def resampled_resolve_scores(
    records: Sequence[tuple[int, int, bool, bool] | None], counts: IntArray
) -> ResampleMatrix:
    """Every re-solve score per resample, with the re-solved item as the unit.

    ``records`` has one entry per re-solved item: ``(allocation, tokens, solved_before,
    solved_after)``, or ``None`` for an item whose re-solve call failed (counted in
    ``errors``, out of every other score).  Mirrors
    :func:`~pytest_budget.triage._resolve.summarize_resolve`.
    """
    if counts.shape[1] != len(records):
        raise ValueError(f"counts has {counts.shape[1]} columns for {len(records)} items")
    ok = np.array([r is not None for r in records], dtype=np.float64)
    cols = {
        "complied": [float(r is not None and r[1] <= r[0]) for r in records],
        "before": [float(r is not None and r[2]) for r in records],
        "after": [float(r is not None and r[3]) for r in records],
    }
    arr = {k: np.asarray(v) for k, v in cols.items()}
    both = arr["before"] * arr["after"]
    w = counts.astype(np.float64)
    n = w @ ok
    with np.errstate(invalid="ignore", divide="ignore"):

        def share(x: FloatArray) -> FloatArray:
            out: FloatArray = np.where(n > 0, (w @ x) / np.maximum(n, 1), np.nan)
            return out

        return {
            "n": n,
            "compliance": share(arr["complied"]),
            "kept": w @ both,
            "lost": w @ (arr["before"] * (1 - arr["after"])),
            "newly_correct": w @ ((1 - arr["before"]) * arr["after"] * ok),
            "still_wrong": w @ ((1 - arr["before"]) * (1 - arr["after"]) * ok),
            "acc_baseline": share(arr["before"]),
            "acc_budget_aware": share(arr["after"]),
            "errors": w @ (1 - ok),
        }


def triage_success(outcome: str, scores: Mapping[str, object]) -> bool:
    """One triage trial succeeded: the plan was read (``ok``) and it beat the random
    reference in the advisory regime (eta_U > 0; at alpha = 1, where V_random = V_oracle,
    eta_U is 1 only when the plan reaches the oracle's value)."""
    eta = scores.get("eta_u")
    return outcome == "ok" and isinstance(eta, int | float) and math.isfinite(eta) and eta > 0


#: What one trial's success means in the triage suite's pass^k consistency.
SUCCESS = "the plan was read (outcome ok) and beats the random reference: eta_u > 0"
#: ... and in the re-solve cells'.
RESOLVE_SUCCESS = (
    "the re-solve ran (outcome ok) and kept its accuracy with the allocation stated: "
    "acc_budget_aware >= acc_baseline"
)


def _resolve_success(outcome: str, scores: Mapping[str, object]) -> bool:
    after, before = scores.get("acc_budget_aware"), scores.get("acc_baseline")
    if outcome != "ok" or not isinstance(after, int | float) or not isinstance(before, int | float):
        return False
    return after >= before


def _cell_resamples(
    n: int, *, seed: int, suite: str, cell_id: str, resamples: int
) -> tuple[IntArray, IntArray, int]:
    """A cell's resamples (indices, counts) and the seed of its inner random orderings."""
    indices, counts = resample_draws(n, resamples, bootstrap_seed(seed, suite, cell_id))
    return indices, counts, bootstrap_seed(seed, suite, cell_id, "random-reference")


def warm_shared(
    units: Sequence[Item],
    baselines: Mapping[str, Baseline],
    alpha: float,
    *,
    seed: int,
    cell_id: str,
    resamples: int,
    cache: MutableMapping[str, Any],
    suite: str = "triage",
) -> None:
    """Compute the cell's V_oracle and V_random per resample into ``cache`` ahead of
    :func:`cell_summary` (same arguments, same entry), e.g. in a thread while the cell's
    planner call is in flight: they depend on the pool, its Phase 0 and alpha, not on the
    plan.  A summary that comes while this runs waits for it."""
    if resamples <= 0 or not units:
        return
    indices, counts, inner = _cell_resamples(
        len(units), seed=seed, suite=suite, cell_id=cell_id, resamples=resamples
    )
    costs = np.array([baselines[item.id].tokens for item in units], dtype=np.int64)
    solved = np.array(
        [baselines[item.id].solved and not item.unsolvable for item in units], dtype=np.bool_
    )
    values = np.array([item.value for item in units], dtype=np.float64)
    key = _pool_digest(costs, solved, values, alpha, indices, INNER_SAMPLES, inner)
    pending: concurrent.futures.Future[tuple[FloatArray, FloatArray]] = concurrent.futures.Future()
    if cache.setdefault(key, pending) is not pending:
        return  # known, or being computed
    try:
        earn = np.where(solved, values, 0.0)
        budget = np.floor(alpha * (counts @ costs).astype(np.float64) + 1e-9).astype(np.int64)
        shared = (
            _oracle_values(indices, counts, costs, solved, values, budget),
            _random_values(
                indices, counts, costs, earn, budget, inner_samples=INNER_SAMPLES, seed=inner
            ),
        )
    except BaseException as exc:
        cache.pop(key, None)
        pending.set_exception(exc)
        raise
    cache[key] = shared
    pending.set_result(shared)


def cell_summary(
    outcomes: Sequence[CellOutcome],
    units: Sequence[Item],
    baselines: Mapping[str, Baseline],
    alpha: float,
    *,
    seed: int,
    cell_id: str,
    level: float,
    resamples: int,
    seeds: Sequence[int] = (),
    suite: str = "triage",
    cache: MutableMapping[str, Any] | None = None,
) -> CellSummary:
    """Scores, intervals and (K > 1) repeat spread of a triage cell planned K times.

    Resamples are seeded from the run's seed, the suite and the cell id, so every planner
    of a cell is measured on the same resamples (and shares V_oracle and V_random through
    ``cache``).
    """
    matrices: list[ResampleMatrix] | None = None
    meta: CIMeta | None = None
    if resamples > 0 and units:
        indices, counts, inner = _cell_resamples(
            len(units), seed=seed, suite=suite, cell_id=cell_id, resamples=resamples
        )
        matrices = [
            resampled_scores(
                outcome.plan, units, baselines, alpha, indices, counts, seed=inner, cache=cache
            )
            for outcome in outcomes
        ]
        meta = CIMeta(
            level, resamples, UNIT, len(units), repeats=len(outcomes), inner_samples=INNER_SAMPLES
        )
    consistency = None
    if len(outcomes) > 1:
        trials = [triage_success(o.outcome, o.scores.as_scores()) for o in outcomes]
        consistency = Consistency("cell", SUCCESS, [trials])
    return summarize_cell(
        [outcome.scores.as_scores() for outcome in outcomes],
        matrices=matrices,
        meta=meta,
        consistency=consistency,
        seeds=seeds,
        outcomes=[outcome.outcome for outcome in outcomes],
        repeat_draws=bootstrap_seed(seed, suite, cell_id, "repeats"),
    )


def resolve_cell_summary(
    runs: Sequence[tuple[str, Mapping[str, object], Sequence[tuple[int, int, bool, bool] | None]]],
    *,
    seed: int,
    cell_id: str,
    level: float,
    resamples: int,
    seeds: Sequence[int] = (),
) -> CellSummary:
    """The same for re-solve cells: ``runs`` holds (outcome, scores, per-item records) per
    repeat.  The unit is the re-solved item; repeats may plan different items, so each
    repeat is resampled over its own items (same seed)."""
    matrices: list[ResampleMatrix] | None = None
    meta: CIMeta | None = None
    sizes = [len(records) for _, _, records in runs]
    if resamples > 0 and sizes[0] > 0:
        matrices = []
        for _, _, records in runs:
            if not records:
                matrices.append({})
                continue
            n = len(records)
            drawn_seed = bootstrap_seed(seed, "triage-resolve", cell_id)
            _, counts = resample_draws(n, resamples, drawn_seed)
            matrices.append(resampled_resolve_scores(records, counts))
        meta = CIMeta(level, resamples, "planned item", sizes[0], repeats=len(runs))
    consistency = None
    if len(runs) > 1:
        trials = [_resolve_success(outcome, scores) for outcome, scores, _ in runs]
        consistency = Consistency("cell", RESOLVE_SUCCESS, [trials])
    return summarize_cell(
        [scores for _, scores, _ in runs],
        matrices=matrices,
        meta=meta,
        consistency=consistency,
        seeds=seeds,
        outcomes=[outcome for outcome, _, _ in runs],
        repeat_draws=bootstrap_seed(seed, "triage-resolve", cell_id, "repeats"),
    )
