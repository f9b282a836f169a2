"""Awareness metrics per probe: the probe records and their column table, feasibility F1
and the interval scores (coverage, tightness, hit rate, midpoint error, miss bins).
Re-exported by :mod:`pytest_budget.awareness._scoring.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_budget.awareness._replay.answers import (
    Estimate,
    Impossible,
    Interval,
    IntervalMap,
    RLInterval,
    parse_rl,
)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

KIND_INTERVAL = 0
KIND_IMPOSSIBLE = 1
KIND_INVALID = 2

REWARD_COVERED = 1.8
REWARD_IMPOSSIBLE = 0.2

#: Progress bins of the optimistic/conservative miss shares as BAGEN's code draws them
#: (bagen.md §2.6): 10 left-closed bins of k/T, 5 for Search-R1.
MISS_BINS = 10
MISS_BINS_SEARCH = 5


def miss_bin_count(env: str) -> int:
    """BAGEN's miss-bin count for an environment label: 5 for search (Search-R1), else 10."""
    return MISS_BINS_SEARCH if env.startswith("search") else MISS_BINS


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
    #: The estimator's reply when it was text: the RL reward reads it with BAGEN's RL
    #: parser (§1c); None for estimate objects (their reward comes from ``estimate``).
    reply: str | None = None


def rl_reward_of_text(text: str, remaining: float, feasible: bool) -> float:
    """BAGEN's RL reward of one raw reply (bagen.md §2.9), read with the RL parser (§1c).

    Invalid -> 0.  Truly impossible: 0.2 for ``impossible``, else 0.  Truly possible:
    ``impossible``, a scalar or a reversed interval -> 0; r = 0 -> 1.8 only for [0, 0];
    lo <= r <= hi -> 1.8 * max(0, 1 - (hi - lo)/r); not covered -> 0.
    """
    est = parse_rl(text)
    if not feasible:
        return REWARD_IMPOSSIBLE if isinstance(est, Impossible) else 0.0
    if not isinstance(est, RLInterval) or est.lo > est.hi:
        return 0.0
    if remaining == 0:
        return REWARD_COVERED if est.lo == 0 and est.hi == 0 else 0.0
    if not est.lo <= remaining <= est.hi:
        return 0.0
    return REWARD_COVERED * max(0.0, 1.0 - (est.hi - est.lo) / remaining)


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
    #: RL reward of text replies (NaN for estimate objects): see :func:`rl_reward_of_text`.
    rl_reward: FloatArray

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
            rl_reward=np.array(
                [
                    np.nan
                    if r.reply is None
                    else rl_reward_of_text(r.reply, r.total - r.used, r.feasible)
                    for r in records
                ],
                dtype=np.float64,
            ).reshape(-1),
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
            rl_reward=self.rl_reward[mask],
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


def miss_bins(probes: Probes, bins: int = MISS_BINS) -> MissBins:
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
