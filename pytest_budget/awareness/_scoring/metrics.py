"""BAGEN's budget-awareness metrics as pure, vectorised functions.

Input is a list of :class:`ProbeRecord` (one per probe: rollout ``rollout_id``, turn ``k`` of
``T``, cumulative usage ``used`` = C_k, rollout total ``total`` = C_T, ``budget``, the
rollout's ``success``, the ground truth ``feasible`` and the parsed ``estimate``). Build a
:class:`ProbeTable` once (``ProbeTable.from_records``) and pass it to every metric; all
metric functions also accept the record list directly.

Conventions (where the paper leaves room, the choice made here):

BAGEN's conventions (fact sheet ``bagen.md`` §2; where the paper's caption and its
numbers disagree, the numbers win and the metric's docstring says so):

* True remaining budget R_k = C_T - C_k.
* ``feasible`` (the label) = the rollout succeeded and C_T is within budget; ``success`` =
  the rollout succeeded, within budget or not.  "Failed rollouts" (early stop) are the
  unsuccessful ones, as in BAGEN's early-stop table.
* An :class:`~pytest_budget.awareness._replay.answers.Interval` predicts "feasible",
  :class:`~pytest_budget.awareness._replay.answers.Impossible` predicts "impossible", and an
  :class:`~pytest_budget.awareness._replay.answers.Invalid` answer predicts no class: it is a false
  negative for its true class and adds to no class's precision (false positives).
* F1 of an empty class (no true or no predicted members) is 0, with a ``note`` saying why.
* S_k (§2.3) is averaged over **every probe of a successful rollout**: on a feasible probe
  it is 1[lo <= R_k <= hi] * max(0, 1 - (hi - lo)/R_k), 0 for ``impossible``, an invalid
  answer or R_k = 0 (even for ``[0, 0]``); on a probe of a rollout that succeeded over
  budget it is 1 for ``impossible`` and 0 otherwise.
* ``hit_rate`` (§2.4): over every probe of a successful rollout, the share whose interval
  contains R_k (``impossible`` and invalid answers miss).
* Midpoint relative error |(lo+hi)/2 - R_k| / R_k over feasible probes answered with an
  interval and R_k > 0; percentiles use linear interpolation; ``None`` when there is none.
* "First turn" (§2.1) is the k = 1 probe of each rollout, with invalid answers dropped.
* Several budgets (Warehouse): :class:`MultiProbeRecord` holds usage per dimension;
  :func:`per_dimension_scores` scores coverage, tightness, misses and the linear baseline
  per dimension, and their mean where the metric is unit-free.
* A score that is 0 only because a class is empty says so in :func:`score_notes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_budget.awareness._replay.answers import (
    Estimate,
    Interval,
    IntervalMap,
    Invalid,
)
from pytest_budget.awareness._scoring.probe_metrics import (
    KIND_IMPOSSIBLE,
    KIND_INTERVAL,
    KIND_INVALID,
    MISS_BINS,
    ClassF1,
    FloatArray,
    IntArray,
    MissBins,
    ProbeRecord,
    Probes,
    ProbeTable,
    _table,
    class_f1,
    contains,
    fail_f1,
    hit_rate,
    interval_score,
    interval_scores,
    invalid_rate,
    macro_f1,
    midpoint_relative_error,
    miss_bin_count,
    miss_bins,
)
from pytest_budget.awareness._scoring.rollout_metrics import (
    EarlyStop,
    LateRecognition,
    LinearBaseline,
    _first_impossible,
    _per_rollout,
    early_stop,
    late_recognition,
    linear_baseline,
    linear_extrapolation,
    reward,
    reward_from_text,
    rewards,
)

__all__ = [
    "KIND_IMPOSSIBLE",
    "KIND_INTERVAL",
    "KIND_INVALID",
    "MISS_BINS",
    "ClassF1",
    "EarlyStop",
    "LateRecognition",
    "LinearBaseline",
    "MissBins",
    "MultiProbeRecord",
    "ProbeRecord",
    "ProbeTable",
    "class_f1",
    "contains",
    "early_stop",
    "fail_f1",
    "hit_rate",
    "interval_score",
    "interval_scores",
    "invalid_rate",
    "joint_hit_rate",
    "late_recognition",
    "late_recognition_curve",
    "linear_baseline",
    "linear_extrapolation",
    "macro_f1",
    "midpoint_relative_error",
    "miss_bin_count",
    "miss_bins",
    "per_dimension_scores",
    "progress_curves",
    "project_dimension",
    "reward",
    "reward_from_text",
    "rewards",
    "score_notes",
    "score_probes",
]

# --------------------------------------------------------------------------- all at once


def score_probes(
    probes: Probes, *, bins: int = MISS_BINS, all_failed_rollouts: int | None = None
) -> dict[str, float | int | None]:
    """Every scalar metric under the names used in the JSON report.

    ``all_failed_rollouts``: the unsuccessful rollouts of the whole set, those that gave no
    probe included (BAGEN's "stopped failed rollouts" divides by all of them, §2.8);
    default: the unsuccessful rollouts among the probed ones.
    """
    t = _table(probes)
    mre_p50, mre_p90 = midpoint_relative_error(t)
    fail = fail_f1(t)
    late = late_recognition(t)
    stop = early_stop(t)
    lin = linear_baseline(t)
    out: dict[str, float | int | None] = {
        "n_probes": len(t),
        "macro_f1_all": macro_f1(t),
        "macro_f1_first": macro_f1(t, first_turn=True),
        "fail_f1": fail.f1,
        "interval_score": interval_score(t),
        "hit_rate": hit_rate(t),
        "mre_p50": mre_p50,
        "mre_p90": mre_p90,
        "invalid_rate": invalid_rate(t),
        "first_impossible_budget_share": late.mean,
        "false_abort_rate": stop.false_abort_rate,
        "saved_token_share": stop.saved_token_share,
        "failed_rollouts_stopped": stop.failed_stopped,
        "failed_rollouts": stop.failed_rollouts,
        "failed_stopped_share": None,
        "linear_error_reduction": lin.mean_reduction,
        "linear_win_rate": lin.win_rate,
        "reward": reward(t),
    }
    failed = stop.failed_rollouts if all_failed_rollouts is None else all_failed_rollouts
    out["failed_rollouts"] = failed
    out["failed_stopped_share"] = stop.failed_stopped / failed if failed else None
    bins_ = miss_bins(t, bins)
    for i, (lo_share, hi_share) in enumerate(
        zip(bins_.optimistic, bins_.conservative, strict=True)
    ):
        out[f"optimistic_bin{i}"] = lo_share
        out[f"conservative_bin{i}"] = hi_share
    return out


def score_notes(probes: Probes) -> dict[str, str]:
    """Why a feasibility score is 0 by definition rather than by the estimator's answers.

    Keys are score names (``macro_f1_all``, ``macro_f1_first``, ``fail_f1``); a key is
    present only when one of its classes has no true or no predicted probe, and the value
    names the class and what is missing (e.g. ``"F1_impossible = 0: no probe is truly
    impossible"``).  Empty when every F1 is defined.
    """
    t = _table(probes)
    first = t.subset(t.first_turn_mask())
    out: dict[str, str] = {}
    for key, table, classes in (
        ("macro_f1_all", t, ("feasible", "impossible")),
        ("macro_f1_first", first, ("feasible", "impossible")),
        ("fail_f1", t, ("impossible",)),
    ):
        parts = [
            f"F1_{cls} = 0: {res.note}"
            for cls in classes
            if (res := class_f1(table, cls)).note is not None
        ]
        if parts:
            out[key] = "; ".join(parts)
    return out


# --------------------------------------------------------------------------- several budgets


@dataclass(frozen=True, slots=True)
class MultiProbeRecord:
    """A probe over several budget dimensions (Warehouse): usage, total and budget per name.

    ``feasible`` is the shared ground truth (target reached and every dimension in budget);
    ``estimate`` is an :class:`~pytest_budget.awareness._replay.answers.IntervalMap`,
    ``Impossible`` or ``Invalid``.
    """

    rollout_id: str
    k: int
    T: int
    used: Mapping[str, float]
    total: Mapping[str, float]
    budget: Mapping[str, float]
    success: bool
    feasible: bool
    estimate: Estimate
    #: The reply when it was text (single-dimension RL reward; see ``ProbeRecord.reply``).
    reply: str | None = None


def project_dimension(records: Sequence[MultiProbeRecord], dim: str) -> list[ProbeRecord]:
    """One dimension of multi-dimension probes as single-dimension records.

    An :class:`IntervalMap` contributes its interval for ``dim``; ``Impossible`` and
    ``Invalid`` pass through; a bare single interval is invalid (the dimension is unnamed).
    """
    out: list[ProbeRecord] = []
    for rec in records:
        est: Estimate = rec.estimate
        if isinstance(est, IntervalMap):
            est = est.as_dict().get(dim, Invalid("", f"no interval for {dim!r}"))
        elif isinstance(est, Interval):
            est = Invalid("", "single interval for a multi-dimension probe")
        out.append(
            ProbeRecord(
                rec.rollout_id,
                rec.k,
                rec.T,
                rec.used[dim],
                rec.total[dim],
                rec.budget[dim],
                rec.success,
                rec.feasible,
                est,
            )
        )
    return out


def joint_hit_rate(records: Sequence[MultiProbeRecord], dimensions: Sequence[str]) -> float | None:
    """Warehouse hit rate (§2.4): a hit needs all three intervals to contain their R_k.

    The denominator is the truly feasible (reachable) probes: BAGEN's reported Warehouse
    hit (Gemini 50.2% on a 50/50 set) rules out all probes, so this is inferred.
    """
    feasible = [r for r in records if r.feasible]
    if not feasible:
        return None
    hits = 0
    for rec in feasible:
        est = rec.estimate
        if isinstance(est, IntervalMap) and all(
            d in est.as_dict() and est[d].lo <= rec.total[d] - rec.used[d] <= est[d].hi
            for d in dimensions
        ):
            hits += 1
    return hits / len(feasible)


def _per_dimension_names(bins: int) -> tuple[str, ...]:
    """Scores that are unit-free, so their mean over dimensions means something."""
    names = ["interval_score", "hit_rate", "mre_p50", "mre_p90", "reward", "linear_win_rate"]
    for i in range(bins):
        names += [f"optimistic_bin{i}", f"conservative_bin{i}"]
    return tuple(names)


def per_dimension_scores(
    records: Sequence[MultiProbeRecord],
    dimensions: Sequence[str],
    *,
    bins: int = MISS_BINS,
    tables: Mapping[str, ProbeTable] | None = None,
) -> dict[str, float | None]:
    """Coverage, tightness, misses and the linear baseline scored per dimension.

    ``hit_rate`` is the joint hit (:func:`joint_hit_rate`), not a mean.
    Keys ``<metric>_<dim>`` for each of interval_score, hit_rate, mre_p50, mre_p90, reward,
    linear_error_reduction, linear_win_rate and the miss bins ``optimistic_bin<i>`` /
    ``conservative_bin<i>``, plus ``<metric>`` = mean over the dimensions that have a value
    (``None`` when none has) for every one of them except ``linear_error_reduction``, which
    is in each dimension's own units (weeks, item-weeks, USD) and has no meaningful mean.
    Feasibility metrics do not depend on the dimension: score any projection.
    ``tables``: the tables of ``records`` projected per dimension, when the caller has built
    them already (``ProbeTable.from_records(project_dimension(records, dim))``).
    """
    out: dict[str, float | None] = {}
    for dim in dimensions:
        if tables is not None:
            t = tables[dim]
        else:
            t = ProbeTable.from_records(project_dimension(records, dim))
        p50, p90 = midpoint_relative_error(t)
        lin = linear_baseline(t)
        out[f"interval_score_{dim}"] = interval_score(t)
        out[f"hit_rate_{dim}"] = hit_rate(t)
        out[f"mre_p50_{dim}"] = p50
        out[f"mre_p90_{dim}"] = p90
        out[f"reward_{dim}"] = reward(t)
        out[f"linear_error_reduction_{dim}"] = lin.mean_reduction
        out[f"linear_win_rate_{dim}"] = lin.win_rate
        misses = miss_bins(t, bins)
        for i, (low, high) in enumerate(zip(misses.optimistic, misses.conservative, strict=True)):
            out[f"optimistic_bin{i}_{dim}"] = low
            out[f"conservative_bin{i}_{dim}"] = high
    for name in _per_dimension_names(bins):
        values = [v for d in dimensions if (v := out[f"{name}_{d}"]) is not None]
        out[name] = sum(values) / len(values) if values else None
    out["hit_rate"] = joint_hit_rate(records, dimensions)
    return out


# --------------------------------------------------------------------------- progress curves


def _progress_bins(t: ProbeTable, bins: int) -> IntArray:
    """Bin of each probe by rollout progress k/T (same edges as :func:`miss_bins`)."""
    progress = t.k / np.maximum(t.T, 1)
    idx: IntArray = np.clip((progress * bins).astype(np.int64), 0, bins - 1)
    return idx


def _binned_mean(idx: IntArray, values: FloatArray, bins: int) -> list[float | None]:
    n = np.bincount(idx, minlength=bins)
    sums = np.bincount(idx, weights=values, minlength=bins)
    return [round(float(s / c), 6) if c else None for s, c in zip(sums, n, strict=True)]


def progress_curves(probes: Probes, bins: int = 5) -> dict[str, list[float | None] | list[int]]:
    """Per rollout-progress bin, in units of the probe's budget cap (BAGEN Fig. 3, Fig. 12).

    ``interval_answers``: probes answered with an interval; ``width``: their mean
    (hi - lo) / budget.  ``paired``: feasible probes answered with an interval;
    ``agent_error`` and ``linear_error``: mean |midpoint - R_k| / budget and
    |R_lin - R_k| / budget over those same probes (paired, so their difference is the
    error reduction over linear extrapolation).  Bins without probes hold ``None``.
    """
    t = _table(probes)
    idx = _progress_bins(t, bins)
    scale = np.where(t.budget > 0, t.budget, 1.0)
    answered = t.kind == KIND_INTERVAL
    paired = answered & t.feasible
    r = t.remaining
    midpoint = (t.lo + t.hi) / 2.0
    agent = np.abs(midpoint - r) / scale
    linear = np.abs(linear_extrapolation(t) - r) / scale
    return {
        "interval_answers": [int(v) for v in np.bincount(idx[answered], minlength=bins)],
        "width": _binned_mean(idx[answered], ((t.hi - t.lo) / scale)[answered], bins),
        "paired": [int(v) for v in np.bincount(idx[paired], minlength=bins)],
        "agent_error": _binned_mean(idx[paired], agent[paired], bins),
        "linear_error": _binned_mean(idx[paired], linear[paired], bins),
    }


def late_recognition_curve(probes: Probes, grid: Sequence[float]) -> tuple[list[float | None], int]:
    """Share of failed rollouts not yet answered ``impossible`` at each budget share in ``grid``.

    A failed rollout counts as still predicted feasible at share g while its first
    ``impossible`` answer (C_k / budget at that probe) is above g, or when it never gets
    one (BAGEN Fig. 7: how late failure is recognized).  Returns the shares (``None``
    everywhere when no rollout failed) and the number of failed rollouts.
    """
    t = _table(probes)
    first_k, used_at = _first_impossible(t)
    present = np.zeros(t.n_rollouts, dtype=np.bool_)
    present[t.rollout] = True
    feasible = _per_rollout(t, t.feasible.astype(np.float64)) == 1.0
    budget = _per_rollout(t, t.budget)
    failed = present & ~feasible
    n_failed = int(failed.sum())
    if n_failed == 0:
        return [None for _ in grid], 0
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(first_k >= 0, used_at / np.where(budget > 0, budget, 1.0), np.inf)
    flagged_at = share[failed]
    curve: list[float | None] = [round(float(np.mean(flagged_at > g)), 6) for g in grid]
    return curve, n_failed
