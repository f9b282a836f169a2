"""Bootstrap of an awareness cell's scores, with the rollout as the unit.

A resample draws whole rollouts with replacement, each with all of its probes and answers,
and every score of the cell is recomputed on it.  Scoring 1,000 resampled probe tables one
by one would cost seconds per cell, so the scores are written here as weighted sums over
the original probes: a probe counts as often as its rollout was drawn (a count matrix,
resamples x rollouts), and per-rollout quantities (first ``impossible`` answer, failed,
saved tokens) are weighted the same way.  The percentiles of the midpoint error are
weighted percentiles.  The result equals
:func:`~pytest_budget.awareness._evaluate.score_results` on the expanded probe list, where
every drawn copy of a rollout is a rollout of its own; the test suite checks exactly that.
Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_budget._stats.bootstrap import (
    CIMeta,
    ResampleMatrix,
    bootstrap_seed,
    resample_draws,
    unit_weighted_percentiles,
    weighted_percentiles,
)
from pytest_budget._stats.repeats import CellSummary, Consistency, summarize_cell
from pytest_budget.awareness._evaluate import (
    AwarenessOutcome,
    ProbeResult,
    _tables,
    cell_miss_bins,
)
from pytest_budget.awareness._replay.answers import Interval, IntervalMap, Invalid
from pytest_budget.awareness._scoring.metrics import (
    KIND_IMPOSSIBLE,
    KIND_INTERVAL,
    KIND_INVALID,
    ProbeTable,
    contains,
    interval_scores,
    linear_extrapolation,
    rewards,
)

__all__ = ["UNIT", "cell_summary", "probe_correct", "resampled_scores", "rollout_units"]

#: The resampling unit named in an awareness cell's ``ci_meta``.
UNIT = "rollout"


def _meaned(bins: int) -> tuple[str, ...]:
    """Unit-free per-dimension scores whose mean over dimensions is reported (as
    :func:`~pytest_budget.awareness._scoring.metrics.per_dimension_scores`)."""
    return (
        "interval_score", "hit_rate", "mre_p50", "mre_p90", "reward", "linear_win_rate",
        *(f"{side}_bin{i}" for i in range(bins) for side in ("optimistic", "conservative")),
    )  # fmt: skip


#: Largest (resamples x probes) block held at once by the weighted percentiles, and
#: largest (probes x rollouts) table of the per-rollout search.
_BLOCK = 4_000_000

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def rollout_units(results: Sequence[ProbeResult]) -> list[str]:
    """The cell's units: ids of the rollouts with at least one probe, sorted."""
    return sorted({r.probe.rollout_id for r in results})


@dataclass
class _Weighted:
    """A probe table whose probes carry the count of their rollout in each resample."""

    t: ProbeTable
    unit: IntArray  # unit index of each probe
    counts: FloatArray  # resamples x units
    n_units: int
    drawn: IntArray  # ``counts`` as the integers they are

    def total(self, values: npt.ArrayLike) -> FloatArray:
        """Per resample, the sum of ``values`` over the resampled probes."""
        x = np.asarray(values, dtype=np.float64)
        per_unit = np.bincount(self.unit, weights=x, minlength=self.n_units)
        out: FloatArray = self.counts @ per_unit
        return out

    def per_unit_total(self, per_unit: npt.ArrayLike) -> FloatArray:
        out: FloatArray = self.counts @ np.asarray(per_unit, dtype=np.float64)
        return out

    def percentiles(
        self, values: FloatArray, mask: BoolArray, qs: Sequence[float]
    ) -> list[FloatArray]:
        """Per resample, the ``qs`` percentiles of the masked values."""
        units, x = self.unit[mask], values[mask]
        if x.size * self.n_units <= _BLOCK:
            return unit_weighted_percentiles(x, units, self.drawn, qs)
        # Too many probes x rollouts for the per-unit search's table: the weights of
        # each probe, a block of resamples at a time.
        rows = self.counts.shape[0]
        step = max(1, _BLOCK // x.size)
        parts = [
            weighted_percentiles(x, self.drawn[start : start + step][:, units], qs)
            for start in range(0, rows, step)
        ]
        return [np.concatenate([part[i] for part in parts]) for i in range(len(qs))]


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


def _f1(w: _Weighted, truth: BoolArray, pred: BoolArray) -> FloatArray:
    tp = w.total(truth & pred)
    n_pred = w.total(pred)
    n_true = w.total(truth)
    precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
    recall = np.where(n_true > 0, tp / np.maximum(n_true, 1), 0.0)
    both = precision + recall
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * precision * recall / np.where(both > 0, both, 1.0)
    out: FloatArray = np.where(both > 0, f1, 0.0)
    return out


def _interval_family(w: _Weighted, bins: int) -> ResampleMatrix:
    """Scores that depend on the interval answers (per dimension in Warehouse)."""
    t = w.t
    r = t.remaining
    feasible = t.feasible
    succeeded = t.success
    answered = t.kind == KIND_INTERVAL
    covered = contains(t)
    n_succeeded = w.total(succeeded)
    out: ResampleMatrix = {
        "interval_score": _ratio(
            w.total(np.where(succeeded, interval_scores(t), 0.0)), n_succeeded
        ),
        "hit_rate": _ratio(w.total(covered & succeeded), n_succeeded),
    }
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mre = np.abs((t.lo + t.hi) / 2.0 - r) / np.where(r > 0, r, 1.0)
    mre_mask = feasible & answered & (r > 0)
    out["mre_p50"], out["mre_p90"] = w.percentiles(mre, mre_mask, (50.0, 90.0))
    out["reward"] = _ratio(w.total(rewards(t)), w.total(np.ones(len(t))))
    paired = feasible & answered
    with np.errstate(invalid="ignore"):
        agent = np.abs((t.lo + t.hi) / 2.0 - r)
        linear = np.abs(linear_extrapolation(t) - r)
        wins = paired & (agent < linear)
    n_paired = w.total(paired)
    out["linear_error_reduction"] = _ratio(w.total(np.where(paired, linear - agent, 0.0)), n_paired)
    out["linear_win_rate"] = _ratio(w.total(wins), n_paired)
    progress = t.k / np.maximum(t.T, 1)
    idx = np.clip((progress * bins).astype(np.int64), 0, bins - 1)
    with np.errstate(invalid="ignore"):
        low = t.hi < r
        high = t.lo > r
    miss_population = succeeded & answered
    for i in range(bins):
        in_bin = miss_population & (idx == i)
        n_bin = w.total(in_bin)
        out[f"optimistic_bin{i}"] = _ratio(w.total(in_bin & low), n_bin)
        out[f"conservative_bin{i}"] = _ratio(w.total(in_bin & high), n_bin)
    return out


def _per_unit(w: _Weighted) -> dict[str, FloatArray]:
    """Per rollout: present, failed, stopped (answered impossible), share and saved tokens."""
    t = w.t
    n = w.n_units
    present = np.zeros(n, dtype=np.bool_)
    present[w.unit] = True
    succeeded = np.zeros(n, dtype=np.bool_)
    succeeded[w.unit] = t.success
    feasible = np.zeros(n, dtype=np.bool_)
    feasible[w.unit] = t.feasible
    total = np.zeros(n)
    total[w.unit] = t.total
    budget = np.zeros(n)
    budget[w.unit] = t.budget
    big = np.iinfo(np.int64).max
    first_k = np.full(n, big, dtype=np.int64)
    impossible = t.kind == KIND_IMPOSSIBLE
    np.minimum.at(first_k, w.unit[impossible], t.k[impossible])
    used_at = np.full(n, np.nan)
    at_first = impossible & (t.k == first_k[w.unit])
    used_at[w.unit[at_first]] = t.used[at_first]
    stopped = first_k != big
    # early stop: failed = unsuccessful (BAGEN's table); late recognition: infeasible
    failed = present & ~succeeded
    infeasible = present & ~feasible
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        share = used_at / budget
    flagged = failed & stopped
    late = infeasible & stopped
    return {
        "late": late.astype(np.float64),
        "failed": failed.astype(np.float64),
        "failed_stopped": flagged.astype(np.float64),
        "share": np.where(late, share, 0.0),
        "saved": np.where(flagged, np.maximum(total - np.nan_to_num(used_at), 0.0), 0.0),
        "failed_total": np.where(failed, total, 0.0),
    }


def _all_scores(w: _Weighted, bins: int) -> ResampleMatrix:
    """Every key of :func:`~pytest_budget.awareness._scoring.metrics.score_probes`."""
    t = w.t
    feasible = t.feasible
    interval = t.kind == KIND_INTERVAL
    impossible = t.kind == KIND_IMPOSSIBLE
    first = t.first_turn_mask()
    n_probes = w.total(np.ones(len(t)))
    f1_impossible = _f1(w, ~feasible, impossible)
    units = _per_unit(w)
    failed = w.per_unit_total(units["failed"])
    stopped = w.per_unit_total(units["failed_stopped"])
    late = w.per_unit_total(units["late"])
    failed_tokens = w.per_unit_total(units["failed_total"])
    out: ResampleMatrix = {
        "n_probes": n_probes,
        "macro_f1_all": (_f1(w, feasible, interval) + f1_impossible) / 2.0,
        "macro_f1_first": (
            _f1(w, feasible & first, interval & first)
            + _f1(w, ~feasible & first, impossible & first)
        )
        / 2.0,
        "fail_f1": f1_impossible,
        "invalid_rate": _ratio(w.total(t.kind == KIND_INVALID), n_probes),
        "first_impossible_budget_share": _ratio(w.per_unit_total(units["share"]), late),
        "false_abort_rate": _ratio(w.total(impossible & feasible), n_probes),
        "saved_token_share": _ratio(w.per_unit_total(units["saved"]), failed_tokens),
        "failed_rollouts_stopped": stopped,
        "failed_rollouts": failed,
        "failed_stopped_share": _ratio(stopped, failed),
    }
    out.update(_interval_family(w, bins))
    return out


def resampled_scores(
    results: Sequence[ProbeResult],
    dimensions: Sequence[str],
    counts: npt.NDArray[np.int64],
    units: Sequence[str],
    *,
    tables: Any = None,
) -> ResampleMatrix:
    """Every score of the cell (as ``score_results`` plus ``n_errors``) per resample.

    ``counts`` is resamples x units, with ``units`` from :func:`rollout_units`.  A probe
    whose estimator raised is out of every score but counts in ``n_errors``.  ``tables``:
    the scoring tables of ``results`` already built for the point scores (``_tables``,
    kept on the outcome), reused rather than built again.
    """
    if counts.shape[1] != len(units):
        raise ValueError(f"counts has {counts.shape[1]} columns for {len(units)} rollouts")
    index = {rollout_id: i for i, rollout_id in enumerate(units)}
    weights = counts.astype(np.float64)
    errors = np.zeros(len(units))
    for result in results:
        if result.estimate is None:
            errors[index[result.probe.rollout_id]] += 1
    if not _fits(tables, results, dimensions):
        tables = _tables(results, dimensions)
    bins = cell_miss_bins(results)
    by_dim = {}
    for dim, t in tables[1].items():
        code_unit = np.array([index[i] for i in t.rollout_ids], dtype=np.int64)
        unit = code_unit[t.rollout] if len(t) else np.zeros(0, dtype=np.int64)
        by_dim[dim] = _Weighted(t, unit, weights, len(units), counts)
    out = _all_scores(by_dim[dimensions[0]], bins)
    if len(dimensions) > 1:
        _add_dimensions(out, [by_dim[dim] for dim in dimensions], dimensions, bins)
    out["n_errors"] = weights @ errors
    return out


def _fits(tables: Any, results: Sequence[ProbeResult], dimensions: Sequence[str]) -> bool:
    """``tables`` were built from these results (as the outcome keeps them)."""
    if tables is None:
        return False
    answered = sum(r.estimate is not None for r in results)
    return len(tables[0]) == answered and list(tables[1]) == list(dimensions)


def _add_dimensions(
    out: ResampleMatrix, tables: list[_Weighted], dimensions: Sequence[str], bins: int
) -> None:
    """Warehouse: the interval scores per dimension, their mean in place of the plain key."""
    for name in _meaned(bins):
        out.pop(name, None)
    per_dim: dict[str, ResampleMatrix] = {}
    for dim, w in zip(dimensions, tables, strict=True):
        scores = _interval_family(w, bins)
        per_dim[dim] = scores
        for name, values in scores.items():
            out[f"{name}_{dim}"] = values
    for name in _meaned(bins):
        stack = np.stack([per_dim[dim][name] for dim in dimensions])
        defined = np.isfinite(stack)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(
                defined.any(axis=0),
                np.where(defined, stack, 0.0).sum(axis=0) / np.maximum(defined.sum(axis=0), 1),
                np.nan,
            )
    out["linear_error_reduction"] = np.full(tables[0].counts.shape[0], np.nan)
    # Warehouse hit: every dimension's interval contains its R_k, over feasible probes
    joint = np.logical_and.reduce([contains(w.t) for w in tables])
    first = tables[0]
    out["hit_rate"] = _ratio(first.total(joint & first.t.feasible), first.total(first.t.feasible))


def probe_correct(result: ProbeResult) -> bool:
    """One probe answered right: a feasible probe's interval covers the true remaining
    budget in every dimension; an infeasible probe is answered ``impossible``.  An invalid
    answer or an estimator error is wrong.  The success of one trial in the awareness
    suite's pass^k consistency."""
    estimate, truth, probe = result.estimate, result.truth, result.probe
    if estimate is None or isinstance(estimate, Invalid):
        return False
    if not truth.feasible:
        return not isinstance(estimate, Interval | IntervalMap)
    if isinstance(estimate, Interval):
        intervals = {dim: estimate for dim in probe.budget}
    elif isinstance(estimate, IntervalMap):
        intervals = estimate.as_dict()
    else:
        return False
    for dim in probe.budget:
        found = intervals.get(dim)
        if found is None:
            return False
        remaining = truth.total[dim] - probe.used[dim]
        if remaining == 0:
            if not (found.lo == 0 and found.hi == 0):
                return False
        elif not (found.lo <= remaining <= found.hi):
            return False
    return True


#: What one trial's success means in the awareness suite's pass^k consistency.
SUCCESS = (
    "the probe is answered right: a feasible probe's interval covers the true remaining "
    "budget (every dimension), an infeasible probe is answered impossible"
)


def cell_summary(
    outcomes: Sequence[AwarenessOutcome],
    *,
    seed: int,
    cell_id: str,
    level: float,
    resamples: int,
    seeds: Sequence[int] = (),
) -> CellSummary:
    """Scores, intervals and (K > 1) repeat spread of an awareness cell run K times.

    Every outcome must come from the same probes (the same rollouts), in the same order.
    Resamples are seeded from the run's seed and the cell id, so every estimator of a
    cell is measured on the same resamples.
    """
    per_run = [outcome.results for outcome in outcomes]
    first = per_run[0]
    units = rollout_units(first)
    matrices: list[ResampleMatrix] | None = None
    meta: CIMeta | None = None
    if resamples > 0 and units:
        drawn_seed = bootstrap_seed(seed, "awareness", cell_id)
        _, counts = resample_draws(len(units), resamples, drawn_seed)
        dimensions = tuple(first[0].probe.budget)
        matrices = [
            resampled_scores(outcome.results, dimensions, counts, units, tables=outcome.tables)
            if any(r.estimate is not None for r in outcome.results)
            else {}
            for outcome in outcomes
        ]
        meta = CIMeta(level, resamples, UNIT, len(units), repeats=len(outcomes))
    consistency = None
    if len(outcomes) > 1:
        table = [[probe_correct(results[i]) for results in per_run] for i in range(len(first))]
        consistency = Consistency("probe", SUCCESS, table)
    return summarize_cell(
        [outcome.scores for outcome in outcomes],
        matrices=matrices,
        meta=meta,
        consistency=consistency,
        seeds=seeds,
        outcomes=[outcome.outcome for outcome in outcomes],
        repeat_draws=bootstrap_seed(seed, "awareness", cell_id, "repeats"),
    )
