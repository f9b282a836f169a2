"""Seeded percentile bootstrap: confidence intervals for every score of a cell.

A cell's scores are statistics over *units* (awareness: rollouts, planning: queries,
triage: pool items).  The bootstrap draws ``resamples`` new unit sets of the same size with
replacement, recomputes every score on each, and reports the percentile interval: the
``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the recomputed scores (numpy's
linear interpolation).  The suites recompute their scores from a *count matrix* (one row
per resample, one column per unit: how often the unit was drawn), which lets most scores
be computed for all resamples at once as weighted sums.

Conventions:

* Seeds come from sha256 of stable strings (the run seed, the suite and the cell id), never
  from Python's salted ``hash()``, so a cell gets the same resamples in every process, with
  or without xdist, and every agent of a cell is measured on the same resamples.
* A resample on which a score is undefined (``NaN``, e.g. ``detection`` when the resample
  drew no unsolvable item) is left out of that score's quantiles.  The interval is ``None``
  when the score itself is undefined, or no resample defines it.
* Endpoints are rounded to 9 decimals (they are estimates; this keeps reports and snapshots
  stable across platforms).

Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

# Resamples per cell and coverage unless --budget-ci-resamples/--budget-ci-level say
# otherwise (a module of their own: the options must not import numpy).
from pytest_budget._stats.ci_defaults import DEFAULT_LEVEL, DEFAULT_RESAMPLES

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "CIMeta",
    "IntervalMap",
    "ResampleMatrix",
    "bootstrap_seed",
    "counts_from_indices",
    "mean_over_repeats",
    "percentile_interval",
    "percentile_intervals",
    "recompute_by_expansion",
    "resample_draws",
    "resample_indices",
    "unit_weighted_percentiles",
    "validate_level",
    "weighted_percentile",
    "weighted_percentiles",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: score name -> ``[lo, hi]`` or ``None``, as stored in a cell's ``ci`` object.
IntervalMap = dict[str, list[float] | None]
#: score name -> one recomputed value per resample (``NaN`` where undefined).
ResampleMatrix = dict[str, FloatArray]

_DIGITS = 9


def bootstrap_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed from the run seed and stable parts (sha256, never ``hash()``)."""
    text = ":".join(["bootstrap", str(int(seed)), *(str(part) for part in parts)])
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % (2**63 - 1)


def validate_level(level: float) -> float:
    """``level`` as a float strictly between 0 and 1 (one-line ``ValueError`` otherwise)."""
    if isinstance(level, bool) or not isinstance(level, int | float):
        raise ValueError(f"confidence level must be a number in (0, 1), got {level!r}")
    value = float(level)
    if not (0.0 < value < 1.0):
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    return value


def resample_indices(n_units: int, resamples: int, seed: int) -> IntArray:
    """``resamples`` rows of ``n_units`` unit indices drawn uniformly with replacement.

    Row b is the b-th bootstrap sample.  Draws come from ``numpy.random.default_rng(seed)``.
    """
    if n_units < 1:
        raise ValueError(f"a bootstrap needs at least one unit, got {n_units}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    rng = np.random.default_rng(seed)
    drawn: IntArray = rng.integers(0, n_units, size=(resamples, n_units), dtype=np.int64)
    return drawn


def counts_from_indices(indices: IntArray, n_units: int) -> IntArray:
    """How often each unit was drawn, per row: shape ``(resamples, n_units)``."""
    rows = indices.shape[0]
    flat = (indices + n_units * np.arange(rows, dtype=np.int64)[:, None]).ravel()
    counts: IntArray = np.bincount(flat, minlength=rows * n_units).reshape(rows, n_units)
    return counts


@lru_cache(maxsize=4)
def resample_draws(n_units: int, resamples: int, seed: int) -> tuple[IntArray, IntArray]:
    """:func:`resample_indices` and their :func:`counts_from_indices`, read-only.

    Every agent of a cell draws the same resamples (the seed comes from the cell id) and
    the agents of a cell run one after another, so the last few draws are remembered.
    """
    indices = resample_indices(n_units, resamples, seed)
    counts = counts_from_indices(indices, n_units)
    indices.setflags(write=False)
    counts.setflags(write=False)
    return indices, counts


def percentile_interval(samples: npt.ArrayLike, level: float) -> list[float] | None:
    """The percentile interval of the defined (finite) values of ``samples``, or ``None``."""
    values = np.asarray(samples, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    tail = (1.0 - validate_level(level)) / 2.0
    lo, hi = np.quantile(values, [tail, 1.0 - tail])
    return [round(float(lo), _DIGITS), round(float(hi), _DIGITS)]


def _defined(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(float(value))


def percentile_intervals(
    point: Mapping[str, object], samples: Mapping[str, FloatArray], level: float
) -> IntervalMap:
    """One interval per numeric score of ``point`` (keys and order as in ``point``).

    ``None`` for a score that is undefined (``None``/NaN), not numeric, or has no
    recomputed values (or none that is defined).  Same values as
    :func:`percentile_interval` per score, computed for all scores at once.
    """
    tail = (1.0 - validate_level(level)) / 2.0
    names = [name for name, value in point.items() if _defined(value) and name in samples]
    out: IntervalMap = dict.fromkeys(point)
    if not names:
        return out
    table = np.stack([np.asarray(samples[name], dtype=np.float64).ravel() for name in names])
    table = np.where(np.isfinite(table), table, np.nan)
    ordered = np.sort(table, axis=1)  # NaN sorts last
    defined = np.isfinite(ordered).sum(axis=1)
    bounds = [_sorted_quantile(ordered, defined, q) for q in (tail, 1.0 - tail)]
    for row, name in enumerate(names):
        if defined[row] == 0:
            continue
        out[name] = [round(float(bounds[0][row]), _DIGITS), round(float(bounds[1][row]), _DIGITS)]
    return out


def _sorted_quantile(ordered: FloatArray, defined: IntArray, q: float) -> FloatArray:
    """Row-wise ``numpy.quantile(row[:defined], q)`` of rows sorted ascending (linear)."""
    rows = np.arange(ordered.shape[0])
    h = (np.maximum(defined, 1) - 1).astype(np.float64) * q
    below = np.floor(h).astype(np.int64)
    frac = h - below
    above = np.minimum(below + 1, np.maximum(defined - 1, 0))
    lower = ordered[rows, below]
    upper = ordered[rows, above]
    with np.errstate(invalid="ignore"):
        # numpy's own lerp form, so the result equals numpy.quantile's.
        mixed = np.where(
            frac >= 0.5, upper - (upper - lower) * (1 - frac), lower + (upper - lower) * frac
        )
    out: FloatArray = np.where(lower == upper, lower, mixed)
    return out


def mean_over_repeats(
    matrices: Sequence[ResampleMatrix], *, seed: int | None = None
) -> ResampleMatrix:
    """Per score and resample, the mean over repeats of the recomputed values.

    Every repeat must come from the same resamples (same count matrix).  Without ``seed``
    each resample averages all K repeats.  With ``seed`` (the suites pass one) each
    resample also draws K repeats with replacement, one draw per resample shared by all
    scores, so the distribution holds the agent's run-to-run variation as well as the
    sampling of the units (a two-level bootstrap: units, then runs); identical repeats give
    the same result either way.  Repeats in which a score is undefined on a resample are
    left out of that mean (``NaN`` when none defines it).
    """
    if not matrices:
        return {}
    if len(matrices) == 1:
        return dict(matrices[0])
    names: list[str] = []
    for matrix in matrices:
        names.extend(name for name in matrix if name not in names)
    if not names:
        return {}
    rows = next(len(m[name]) for m in matrices for name in m)
    k = len(matrices)
    if seed is None:
        weights = np.ones((k, rows))
    else:
        picks = np.random.default_rng(seed).integers(0, k, size=(rows, k))
        weights = counts_from_indices(picks, k).T.astype(np.float64)
    out: ResampleMatrix = {}
    for name in names:
        stack = np.stack([m.get(name, np.full(rows, np.nan)) for m in matrices])
        defined = np.isfinite(stack)
        total = np.where(defined, stack * weights, 0.0).sum(axis=0)
        count = np.where(defined, weights, 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(count > 0, total / np.maximum(count, 1e-300), np.nan)
    return out


def weighted_percentile(values: npt.ArrayLike, weights: npt.ArrayLike, q: float) -> FloatArray:
    """``numpy.percentile(np.repeat(values, w), q)`` for every row ``w`` of ``weights``.

    ``values`` has shape ``(m,)``, ``weights`` (non-negative integers) shape ``(rows, m)``.
    Linear interpolation between order statistics, as numpy's default; ``NaN`` for a row
    whose weights are all 0.  Cost is O(rows * m) after one sort of ``values``.
    """
    return weighted_percentiles(values, weights, (q,))[0]


def weighted_percentiles(
    values: npt.ArrayLike, weights: npt.ArrayLike, qs: Sequence[float]
) -> list[FloatArray]:
    """:func:`weighted_percentile` at each of ``qs``, sharing the sort and the cumulative
    weights."""
    x = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] != x.size:
        raise ValueError("weights must have shape (rows, len(values))")
    rows = w.shape[0]
    if x.size == 0:
        return [np.full(rows, np.nan) for _ in qs]
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[:, order]
    cum = np.cumsum(w, axis=1)
    total = cum[:, -1]
    # The j-th order statistic is the first sorted value whose cumulative weight exceeds j:
    # its index is the count of cumulative weights <= j, found per row by binary search
    # (rows shifted apart so one search over the flattened rows serves them all).
    shift = np.arange(rows, dtype=np.int64) * (int(total.max()) + 1)
    flat = (cum + shift[:, None]).ravel()
    start = np.arange(rows, dtype=np.int64) * x.size

    def index(j: IntArray) -> IntArray:
        found: IntArray = np.searchsorted(flat, j + shift, side="right") - start
        return found

    return [_interpolated(x, total, q, index) for q in qs]


def unit_weighted_percentiles(
    values: npt.ArrayLike, unit: npt.ArrayLike, counts: npt.ArrayLike, qs: Sequence[float]
) -> list[FloatArray]:
    """:func:`weighted_percentiles` of ``values`` weighted ``counts[:, unit]``: each value
    belongs to one unit (``unit``, shape ``(m,)``) and counts as often as its unit was
    drawn (``counts``, rows x units), without building the rows x m weights.

    The order statistics are found by a binary search per row over the sorted values, the
    cumulative weight at a position being the row's counts times the number of values of
    each unit up to it: O(rows * units * log m) instead of O(rows * m).
    """
    x = np.asarray(values, dtype=np.float64)
    u = np.asarray(unit, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    rows = c.shape[0]
    if x.size == 0:
        return [np.full(rows, np.nan) for _ in qs]
    order = np.argsort(x, kind="stable")
    x, u = x[order], u[order]
    # prefix[k, v]: how many of the first k + 1 sorted values belong to unit v.
    prefix = np.zeros((x.size, c.shape[1]), dtype=np.int64)
    prefix[np.arange(x.size), u] = 1
    np.cumsum(prefix, axis=0, out=prefix)
    total = c @ prefix[-1]
    steps = int(x.size).bit_length()

    def index(j: IntArray) -> IntArray:
        # The first position whose cumulative weight exceeds j (x.size when none does).
        lo = np.zeros(rows, dtype=np.int64)
        hi = np.full(rows, x.size, dtype=np.int64)
        for _ in range(steps):
            mid = (lo + hi) // 2
            at = np.minimum(mid, x.size - 1)
            above = np.einsum("ij,ij->i", c, prefix[at]) > j
            open_ = lo < hi
            hi = np.where(open_ & above, mid, hi)
            lo = np.where(open_ & ~above, mid + 1, lo)
        return lo

    return [_interpolated(x, total, q, index) for q in qs]


def _interpolated(
    x: FloatArray, total: IntArray, q: float, index: Callable[[IntArray], IntArray]
) -> FloatArray:
    """The q-th percentile per row of ``total`` weighted sorted values ``x``, ``index(j)``
    giving per row the position of the j-th order statistic (0-based)."""
    # Position h of the q-th percentile among total values (0-based), as numpy computes it.
    h = (np.maximum(total, 1) - 1).astype(np.float64) * (q / 100.0)
    below = np.floor(h).astype(np.int64)
    frac = h - below
    above = np.minimum(below + 1, np.maximum(total - 1, 0))
    last = x.size - 1
    lower = x[np.minimum(index(below), last)]
    upper = x[np.minimum(index(above), last)]
    with np.errstate(invalid="ignore"):
        # numpy's own lerp form: exact at both ends, monotone in between.
        result = np.where(
            frac >= 0.5, upper - (upper - lower) * (1 - frac), lower + (upper - lower) * frac
        )
    result = np.where(lower == upper, lower, result)
    out: FloatArray = np.where(total > 0, result, np.nan)
    return out


def recompute_by_expansion(
    units: Sequence[Any],
    statistic: Callable[[list[Any]], Mapping[str, object]],
    indices: IntArray,
) -> ResampleMatrix:
    """The slow, obviously right bootstrap: call ``statistic`` on each resampled unit list.

    Used as the reference the vectorised suite implementations are tested against, and for
    statistics that have no vectorised form.  ``None`` and non-numeric values become NaN.
    """
    rows: list[Mapping[str, object]] = [
        statistic([units[i] for i in row.tolist()]) for row in indices
    ]
    names = list(rows[0]) if rows else []
    out: ResampleMatrix = {}
    for name in names:
        out[name] = np.array(
            [float(r[name]) if _defined(r.get(name)) else np.nan for r in rows],  # type: ignore[arg-type]
            dtype=np.float64,
        )
    return out


@dataclass(frozen=True)
class CIMeta:
    """What a reader needs to interpret a cell's ``ci`` object (its ``ci_meta``)."""

    level: float
    resamples: int
    unit: str
    n_units: int
    repeats: int = 1
    inner_samples: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "level": self.level,
            "resamples": self.resamples,
            "method": "percentile",
            "unit": self.unit,
            "n_units": self.n_units,
        }
        if self.repeats > 1:
            data["repeats"] = self.repeats
        if self.inner_samples is not None:
            data["inner_samples"] = self.inner_samples
        return data
