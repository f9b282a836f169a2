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
* An :class:`~pytest_budget.awareness.answers.Interval` predicts "feasible",
  :class:`~pytest_budget.awareness.answers.Impossible` predicts "impossible", and an
  :class:`~pytest_budget.awareness.answers.Invalid` answer predicts no class: it is a false
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
import numpy.typing as npt

from pytest_budget.awareness.answers import (
    Estimate,
    Impossible,
    Interval,
    IntervalMap,
    Invalid,
    RLInterval,
    parse_rl,
)

__all__ = [
    "KIND_IMPOSSIBLE",
    "KIND_INTERVAL",
    "KIND_INVALID",
    "ClassF1",
    "EarlyStop",
    "LateRecognition",
    "LinearBaseline",
    "MissBins",
    "MultiProbeRecord",
    "ProbeRecord",
    "ProbeTable",
    "class_f1",
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

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

KIND_INTERVAL = 0
KIND_IMPOSSIBLE = 1
KIND_INVALID = 2

REWARD_COVERED = 1.8
REWARD_IMPOSSIBLE = 0.2


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """One probe of a replayed rollout (single budget dimension)."""

    rollout_id: str
    k: int
    T: int
    used: float
    total: float
    budget: float
    success: bool
    feasible: bool
    estimate: Estimate


@dataclass(frozen=True, slots=True)
class ProbeTable:
    """Column form of a probe list; ``rollout`` holds dense rollout codes 0..n_rollouts-1."""

    rollout: IntArray
    k: IntArray
    T: IntArray
    used: FloatArray
    total: FloatArray
    budget: FloatArray
    success: BoolArray
    feasible: BoolArray
    kind: IntArray
    lo: FloatArray
    hi: FloatArray
    rollout_ids: tuple[str, ...]

    @classmethod
    def from_records(cls, records: Sequence[ProbeRecord]) -> ProbeTable:
        kinds: list[int] = []
        los: list[float] = []
        his: list[float] = []
        for rec in records:
            est = rec.estimate
            if isinstance(est, Interval):
                kinds.append(KIND_INTERVAL)
                los.append(est.lo)
                his.append(est.hi)
            elif isinstance(est, Impossible):
                kinds.append(KIND_IMPOSSIBLE)
                los.append(np.nan)
                his.append(np.nan)
            elif isinstance(est, IntervalMap):
                raise TypeError("multi-dimension estimates need one ProbeRecord per dimension")
            else:
                kinds.append(KIND_INVALID)
                los.append(np.nan)
                his.append(np.nan)
        ids, codes = np.unique(
            np.array([r.rollout_id for r in records], dtype=object).astype(str),
            return_inverse=True,
        )
        return cls(
            rollout=codes.astype(np.int64).reshape(-1),
            k=np.fromiter((r.k for r in records), np.int64, len(records)),
            T=np.fromiter((r.T for r in records), np.int64, len(records)),
            used=np.fromiter((r.used for r in records), np.float64, len(records)),
            total=np.fromiter((r.total for r in records), np.float64, len(records)),
            budget=np.fromiter((r.budget for r in records), np.float64, len(records)),
            success=np.fromiter((r.success for r in records), np.bool_, len(records)),
            feasible=np.fromiter((r.feasible for r in records), np.bool_, len(records)),
            kind=np.array(kinds, dtype=np.int64),
            lo=np.array(los, dtype=np.float64),
            hi=np.array(his, dtype=np.float64),
            rollout_ids=tuple(str(i) for i in ids),
        )

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    @property
    def remaining(self) -> FloatArray:
        """R_k = C_T - C_k."""
        return self.total - self.used

    @property
    def n_rollouts(self) -> int:
        return len(self.rollout_ids)

    def subset(self, mask: BoolArray) -> ProbeTable:
        return ProbeTable(
            rollout=self.rollout[mask],
            k=self.k[mask],
            T=self.T[mask],
            used=self.used[mask],
            total=self.total[mask],
            budget=self.budget[mask],
            success=self.success[mask],
            feasible=self.feasible[mask],
            kind=self.kind[mask],
            lo=self.lo[mask],
            hi=self.hi[mask],
            rollout_ids=self.rollout_ids,
        )

    def first_turn_mask(self) -> BoolArray:
        """True on the k = 1 probes whose answer is valid (BAGEN's first-turn metric keeps
        the probe after the first completed turn and drops invalid answers; §2.1)."""
        mask: BoolArray = (self.k == 1) & (self.kind != KIND_INVALID)
        return mask


Probes = ProbeTable | Sequence[ProbeRecord]


def _table(probes: Probes) -> ProbeTable:
    return probes if isinstance(probes, ProbeTable) else ProbeTable.from_records(probes)


def _mean(values: FloatArray) -> float | None:
    return float(values.mean()) if values.size else None


# --------------------------------------------------------------------------- feasibility


@dataclass(frozen=True, slots=True)
class ClassF1:
    precision: float
    recall: float
    f1: float
    support: int
    note: str | None = None


def class_f1(probes: Probes, positive: str) -> ClassF1:
    """F1 of one class, ``positive`` = ``"feasible"`` or ``"impossible"``.

    An invalid answer is a false negative for its true class and no class's false positive.
    Undefined precision or recall (empty denominators) counts as 0 and is named in ``note``.
    """
    t = _table(probes)
    if positive == "feasible":
        truth, pred = t.feasible, t.kind == KIND_INTERVAL
    elif positive == "impossible":
        truth, pred = ~t.feasible, t.kind == KIND_IMPOSSIBLE
    else:
        raise ValueError(f"positive must be 'feasible' or 'impossible', not {positive!r}")
    tp = int(np.count_nonzero(truth & pred))
    n_pred = int(np.count_nonzero(pred))
    n_true = int(np.count_nonzero(truth))
    notes = []
    if n_true == 0:
        notes.append(f"no probe is truly {positive}")
    if n_pred == 0:
        notes.append(f"no probe is predicted {positive}")
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_true if n_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return ClassF1(precision, recall, f1, n_true, "; ".join(notes) or None)


def macro_f1(probes: Probes, *, first_turn: bool = False) -> float:
    """(F1_feasible + F1_impossible) / 2, over all probes or first-turn probes only."""
    t = _table(probes)
    if first_turn:
        t = t.subset(t.first_turn_mask())
    return (class_f1(t, "feasible").f1 + class_f1(t, "impossible").f1) / 2.0


def fail_f1(probes: Probes) -> ClassF1:
    """F1 on the impossible class (BAGEN's Fail-F1), with precision and recall."""
    return class_f1(probes, "impossible")


def invalid_rate(probes: Probes) -> float | None:
    t = _table(probes)
    return _mean((t.kind == KIND_INVALID).astype(np.float64))


# --------------------------------------------------------------------------- intervals


def _coverage_and_tightness(
    lo: FloatArray, hi: FloatArray, r: FloatArray, is_interval: BoolArray
) -> tuple[BoolArray, FloatArray]:
    width = hi - lo
    zero = r == 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        covered = is_interval & np.where(zero, (lo == 0) & (hi == 0), (lo <= r) & (r <= hi))
        tight = np.where(zero, 1.0, np.maximum(0.0, 1.0 - width / np.where(zero, 1.0, r)))
    return covered, np.where(covered, tight, 0.0)


def contains(t: ProbeTable) -> BoolArray:
    """The answer is an interval with lo <= R_k <= hi (plain containment, any R_k)."""
    r = t.remaining
    with np.errstate(invalid="ignore"):
        inside: BoolArray = (t.kind == KIND_INTERVAL) & (t.lo <= r) & (r <= t.hi)
    return inside


def interval_scores(probes: Probes) -> FloatArray:
    """BAGEN's S_k for every probe (§2.3, as the code behind Table 1 computes it).

    Feasible probe: 1[lo <= R_k <= hi] * max(0, 1 - (hi - lo)/R_k); 0 for ``impossible``,
    an invalid answer, or R_k <= 0 (the paper's formula is undefined there; BAGEN's
    evaluation code gives 0, even for ``[0, 0]``).  Probe of a rollout that succeeded over
    budget: 1 for ``impossible``, else 0 (the paper does not mention this case; its numbers
    include it).  Probe of an unsuccessful rollout: 0 (not in :func:`interval_score`).
    """
    t = _table(probes)
    r = t.remaining
    positive = r > 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        tight = np.maximum(0.0, 1.0 - (t.hi - t.lo) / np.where(positive, r, 1.0))
    feasible_part = np.where(contains(t) & positive, tight, 0.0)
    over_budget = np.where(t.kind == KIND_IMPOSSIBLE, 1.0, 0.0)
    out: FloatArray = np.where(t.feasible, feasible_part, np.where(t.success, over_budget, 0.0))
    return out


def interval_score(probes: Probes) -> float | None:
    """Mean S_k over every probe of a successful rollout, over budget or not (§2.3: the
    caption says "trajectories that ultimately succeed"; the reported numbers also score
    the over-budget ones).  ``None`` when no rollout succeeded."""
    t = _table(probes)
    return _mean(interval_scores(t)[t.success])


def hit_rate(probes: Probes) -> float | None:
    """Share of the probes of successful rollouts whose interval contains R_k (§2.4;
    ``impossible`` and invalid answers miss; containment is tested against R_k even on
    over-budget probes).  Warehouse: see :func:`joint_hit_rate`."""
    t = _table(probes)
    return _mean(contains(t)[t.success].astype(np.float64))


def midpoint_relative_error(
    probes: Probes, percentiles: Sequence[float] = (50.0, 90.0)
) -> tuple[float | None, ...]:
    """Percentiles of |midpoint - R_k| / R_k (feasible probes, interval answers, R_k > 0)."""
    t = _table(probes)
    r = t.remaining
    mask = t.feasible & (t.kind == KIND_INTERVAL) & (r > 0)
    if not mask.any():
        return tuple(None for _ in percentiles)
    # a tiny R_k gives an infinite relative error: allowed, without a warning
    with np.errstate(over="ignore", invalid="ignore"):
        mre = np.abs((t.lo[mask] + t.hi[mask]) / 2.0 - r[mask]) / r[mask]
        values = np.percentile(mre, list(percentiles))
        # Interpolating between two infinite errors gives NaN (inf - inf); the percentile
        # is infinite then, as the nearest-rank value says.
        values = np.where(
            np.isnan(values), np.percentile(mre, list(percentiles), method="higher"), values
        )
    return tuple(float(v) for v in values)


@dataclass(frozen=True, slots=True)
class MissBins:
    """Per progress bin (k/T in [i/n, (i+1)/n), last bin closed): interval probe counts and
    the shares of them that miss low (optimistic, hi < R_k) or high (conservative, lo > R_k).
    """

    edges: tuple[float, ...]
    n: tuple[int, ...]
    optimistic: tuple[float | None, ...]
    conservative: tuple[float | None, ...]


def miss_bins(probes: Probes, bins: int = 5) -> MissBins:
    """Optimistic vs conservative misses by rollout progress (§2.6): the population is the
    probes of successful rollouts answered with an interval; optimistic = hi < R_k,
    conservative = lo > R_k."""
    t = _table(probes)
    r = t.remaining
    mask = t.success & (t.kind == KIND_INTERVAL)
    progress = t.k[mask] / np.maximum(t.T[mask], 1)
    idx = np.clip((progress * bins).astype(np.int64), 0, bins - 1)
    with np.errstate(invalid="ignore"):
        low = (t.hi < r)[mask]
        high = (t.lo > r)[mask]
    n = np.bincount(idx, minlength=bins)
    n_low = np.bincount(idx, weights=low.astype(np.float64), minlength=bins)
    n_high = np.bincount(idx, weights=high.astype(np.float64), minlength=bins)
    return MissBins(
        edges=tuple(float(e) for e in np.linspace(0.0, 1.0, bins + 1)),
        n=tuple(int(v) for v in n),
        optimistic=tuple(float(a / c) if c else None for a, c in zip(n_low, n, strict=True)),
        conservative=tuple(float(a / c) if c else None for a, c in zip(n_high, n, strict=True)),
    )


# --------------------------------------------------------------------------- early failure


def _first_impossible(t: ProbeTable) -> tuple[IntArray, FloatArray]:
    """Per rollout code: smallest k answered impossible (-1 if none) and C_k at that k."""
    big = np.iinfo(np.int64).max
    first_k = np.full(t.n_rollouts, big, dtype=np.int64)
    imp = t.kind == KIND_IMPOSSIBLE
    np.minimum.at(first_k, t.rollout[imp], t.k[imp])
    used_at = np.full(t.n_rollouts, np.nan)
    hit = imp & (t.k == first_k[t.rollout])
    used_at[t.rollout[hit]] = t.used[hit]
    return np.where(first_k == big, -1, first_k), used_at


def _per_rollout(t: ProbeTable, values: FloatArray) -> FloatArray:
    out = np.full(t.n_rollouts, np.nan)
    out[t.rollout] = values
    return out


@dataclass(frozen=True, slots=True)
class LateRecognition:
    """On failed rollouts: C_k / budget at the first ``impossible`` answer."""

    shares: tuple[float, ...]
    n_failed: int
    n_flagged: int
    mean: float | None
    median: float | None


def late_recognition(probes: Probes) -> LateRecognition:
    """Share of budget consumed when the estimator first says impossible, per failed rollout.

    Rollouts never flagged are counted in ``n_failed`` but have no share.
    """
    t = _table(probes)
    first_k, used_at = _first_impossible(t)
    feasible = _per_rollout(t, t.feasible.astype(np.float64)) == 1.0
    present = np.zeros(t.n_rollouts, dtype=np.bool_)
    present[t.rollout] = True
    budget = _per_rollout(t, t.budget)
    failed = present & ~feasible
    flagged = failed & (first_k >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        shares = used_at[flagged] / budget[flagged]
    return LateRecognition(
        shares=tuple(float(s) for s in shares),
        n_failed=int(failed.sum()),
        n_flagged=int(flagged.sum()),
        mean=float(shares.mean()) if shares.size else None,
        median=float(np.median(shares)) if shares.size else None,
    )


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """The stop-at-first-impossible policy (§2.8; worked back from BAGEN's table).

    ``false_abort_rate``: ``impossible`` answers on truly feasible probes divided by **all**
    probes (the caption says "of successful rollouts"; the reported numbers, e.g. Sokoban
    GPT 7/661, divide by every probe; the numerator is inferred).  Failed rollouts are the
    unsuccessful ones.  ``failed_stopped``: failed rollouts with at least one ``impossible``
    answer; ``failed_rollouts``: failed rollouts among the probed ones (pass the whole set's
    count to :func:`score_probes` for the rate over all failed rollouts, those without a
    probe included).  ``saved_token_share``: over failed rollouts, sum of (C_T - C_k at the
    first ``impossible``) over sum of C_T.
    """

    false_abort_rate: float | None
    false_abort_count: int
    feasible_probes: int
    saved_token_share: float | None
    failed_stopped: int
    failed_rollouts: int
    succeeded_stopped: int


def early_stop(probes: Probes) -> EarlyStop:
    t = _table(probes)
    imp = t.kind == KIND_IMPOSSIBLE
    n_feas = int(t.feasible.sum())
    n_false = int((imp & t.feasible).sum())
    first_k, used_at = _first_impossible(t)
    present = np.zeros(t.n_rollouts, dtype=np.bool_)
    present[t.rollout] = True
    feasible = _per_rollout(t, t.feasible.astype(np.float64)) == 1.0
    succeeded = _per_rollout(t, t.success.astype(np.float64)) == 1.0
    total = _per_rollout(t, t.total)
    failed = present & ~succeeded
    stopped = first_k >= 0
    # clamped at 0 in case a rollout's probes disagree on C_T (they should not)
    saved = np.where(failed & stopped, np.maximum(total - np.nan_to_num(used_at), 0.0), 0.0)
    denom = float(total[failed].sum())
    return EarlyStop(
        false_abort_rate=n_false / len(t) if len(t) else None,
        false_abort_count=n_false,
        feasible_probes=n_feas,
        saved_token_share=float(saved[failed].sum()) / denom if denom > 0 else None,
        failed_stopped=int((failed & stopped).sum()),
        failed_rollouts=int(failed.sum()),
        succeeded_stopped=int((present & feasible & stopped).sum()),
    )


# --------------------------------------------------------------------------- linear baseline


def linear_extrapolation(probes: Probes) -> FloatArray:
    """R_lin = (C_k / k) * T - C_k per probe (k >= 1)."""
    t = _table(probes)
    k = np.maximum(t.k, 1).astype(np.float64)
    result: FloatArray = (t.used / k) * t.T - t.used
    return result


@dataclass(frozen=True, slots=True)
class LinearBaseline:
    """Agent midpoint vs R_lin on feasible interval probes, absolute errors against R_k.

    ``mean_reduction`` = mean(|R_lin - R_k| - |midpoint - R_k|): positive when the agent
    is closer. ``win_rate``: share of probes where the agent is strictly closer.
    """

    n: int
    mae_agent: float | None
    mae_linear: float | None
    mean_reduction: float | None
    win_rate: float | None


def linear_baseline(probes: Probes) -> LinearBaseline:
    t = _table(probes)
    mask = t.feasible & (t.kind == KIND_INTERVAL)
    r = t.remaining[mask]
    agent = np.abs((t.lo[mask] + t.hi[mask]) / 2.0 - r)
    lin = np.abs(linear_extrapolation(t)[mask] - r)
    return LinearBaseline(
        n=int(mask.sum()),
        mae_agent=_mean(agent),
        mae_linear=_mean(lin),
        mean_reduction=_mean(lin - agent),
        win_rate=_mean((agent < lin).astype(np.float64)),
    )


# --------------------------------------------------------------------------- RL reward


def rewards(probes: Probes) -> FloatArray:
    """BAGEN's RL reward per probe.

    Feasible probe: 1.8 * max(0, 1 - (H - L)/r) when the interval covers r (r = 0: only
    [0, 0], reward 1.8), else 0. Infeasible probe: 0.2 for ``impossible``, else 0. Invalid
    answers score 0; to score a reversed interval as malformed, as the RL reward does,
    parse with ``reversed_policy="invalid"`` (or use :func:`reward_from_text`).
    """
    t = _table(probes)
    _, tight = _coverage_and_tightness(t.lo, t.hi, t.remaining, t.kind == KIND_INTERVAL)
    feasible_part = REWARD_COVERED * tight
    return np.where(
        t.feasible,
        feasible_part,
        np.where(t.kind == KIND_IMPOSSIBLE, REWARD_IMPOSSIBLE, 0.0),
    )


def reward(probes: Probes) -> float | None:
    """Mean RL reward over all probes."""
    return _mean(rewards(probes))


def reward_from_text(text: str, remaining: float, feasible: bool) -> float:
    """BAGEN's RL reward of one raw reply (§2.9), read with the RL parser (§1c,
    :func:`~pytest_budget.awareness.answers.parse_rl`).

    Invalid -> 0.  Truly impossible: 0.2 for ``impossible``, else 0.  Truly possible:
    ``impossible``, a scalar or a reversed interval -> 0; r = 0 -> 1.8 only for [0, 0];
    lo <= r <= hi -> 1.8 * max(0, 1 - (hi - lo)/r); not covered -> 0.
    """
    est = parse_rl(text)
    if not feasible:
        return REWARD_IMPOSSIBLE if isinstance(est, Impossible) else 0.0
    if not isinstance(est, RLInterval) or est.lo > est.hi:
        return 0.0
    r = np.array([remaining], dtype=np.float64)
    lo, hi = np.array([float(est.lo)]), np.array([float(est.hi)])
    _, score = _coverage_and_tightness(lo, hi, r, np.array([True]))
    return float(REWARD_COVERED * score[0])


# --------------------------------------------------------------------------- all at once


def score_probes(
    probes: Probes, *, bins: int = 5, all_failed_rollouts: int | None = None
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
    ``estimate`` is an :class:`~pytest_budget.awareness.answers.IntervalMap`,
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
    records: Sequence[MultiProbeRecord], dimensions: Sequence[str], *, bins: int = 5
) -> dict[str, float | None]:
    """Coverage, tightness, misses and the linear baseline scored per dimension.

    ``hit_rate`` is the joint hit (:func:`joint_hit_rate`), not a mean.
    Keys ``<metric>_<dim>`` for each of interval_score, hit_rate, mre_p50, mre_p90, reward,
    linear_error_reduction, linear_win_rate and the miss bins ``optimistic_bin<i>`` /
    ``conservative_bin<i>``, plus ``<metric>`` = mean over the dimensions that have a value
    (``None`` when none has) for every one of them except ``linear_error_reduction``, which
    is in each dimension's own units (weeks, item-weeks, USD) and has no meaningful mean.
    Feasibility metrics do not depend on the dimension: score any projection.
    """
    out: dict[str, float | None] = {}
    for dim in dimensions:
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
