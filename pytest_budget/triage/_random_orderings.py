"""V_random of a triage cell's resamples: the expected regime-U value of a random ordering
of each resampled pool (see :mod:`pytest_budget.triage._intervals`).

Exact where every ordering scores the same (all of it fits, or nothing has value) or for
at most 8 items, else the mean over ``inner_samples`` orderings shared by every resample.
Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pytest_budget.triage._scoring import random_reference

__all__ = ["random_values"]

#: Largest (resamples x orderings x items) block drawn at once.
_BLOCK = 4_000_000
#: Pools up to this size get the exact random reference per resample (as the cell does).
_EXACT_LIMIT = 8
_INT32_MAX = 2**31 - 1

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def random_values(
    indices: IntArray,
    counts: IntArray,
    costs: IntArray,
    earn: FloatArray,
    budget: IntArray,
    *,
    inner_samples: int,
    seed: int,
) -> FloatArray:
    """V_random per resample (``indices`` and ``counts`` as in ``resampled_scores``), the
    orderings drawn from ``seed``."""
    n = indices.shape[1]
    out = counts @ earn  # exact where the whole resampled pool fits or nothing earns
    fits = (counts @ costs) <= budget
    needs = ~fits & ((counts @ earn) > 0)
    if n <= _EXACT_LIMIT:
        for b in np.flatnonzero(needs):
            row = indices[b]
            out[b] = random_reference(
                costs[row], earn[row] > 0, earn[row], int(budget[b]), seed=seed,
                exact_limit=_EXACT_LIMIT,
            ).mean  # fmt: skip
        return out
    todo = np.flatnonzero(needs)
    if todo.size == 0:
        return out
    rng = np.random.default_rng(seed)
    # One set of orderings of the n positions serves every resample: applied to a
    # resample's items it is a uniform random ordering of that resample.
    perms = np.argsort(rng.random((inner_samples, n)), axis=1, kind="stable")
    if _whole(earn, n):
        out[todo] = _whole_random_values(
            costs[indices[todo]], earn[indices[todo]], budget[todo], perms
        )
        return out
    # Narrow integers halve the memory traffic when the running totals cannot overflow.
    narrow = int(costs.max(initial=0)) * n < 2**31 - 1
    cost_rows = costs[indices[todo]].astype(np.int32 if narrow else np.int64)
    earn_rows = earn[indices[todo]]
    limits = budget[todo].astype(cost_rows.dtype)
    step = max(1, _BLOCK // (inner_samples * n))
    for start in range(0, todo.size, step):
        part = slice(start, start + step)
        runs = np.cumsum(cost_rows[part][:, perms], axis=2, dtype=cost_rows.dtype)
        fits = runs <= limits[part][:, None, None]
        out[todo[part]] = (fits * earn_rows[part][:, perms]).sum(axis=2).mean(axis=1)
    return out


def _whole(earn: FloatArray, n: int) -> bool:
    """Every value a whole number, and any sum of n of them exact in a float: then the
    order of summation cannot change a total."""
    finite = earn[np.isfinite(earn)]
    return (
        finite.size == earn.size
        and bool(np.all(earn == np.floor(earn)))
        and float(np.abs(earn).max(initial=0.0)) * n < 2.0**53
    )


def _whole_random_values(
    cost_rows: IntArray, earn_rows: FloatArray, limits: IntArray, perms: IntArray
) -> FloatArray:
    """:func:`random_values` of whole-number values: each ordering of each resample run
    position by position (the running cost, and the value earned while it fits), one
    orderings x resamples array at a time instead of a cumulative sum over all three axes.
    The per-ordering values are exact whole numbers, as the blockwise sum gives them.

    Items lie along the first axis (a position's items for every ordering are whole rows,
    gathered by copying) and the totals are integers, 32-bit where no running total can
    leave that range: the same whole numbers, about 7x less work than float64 gathers
    element by element.  The mean over the orderings is taken from the same float64
    (resamples x orderings) array as before, so it is the same float."""
    n = cost_rows.shape[1]
    narrow = int(np.abs(cost_rows).max(initial=0)) * n < _INT32_MAX
    spent_type = np.int32 if narrow else np.int64
    earn_type = np.int32 if float(np.abs(earn_rows).max(initial=0.0)) * n < _INT32_MAX else np.int64
    cost_t = np.ascontiguousarray(cost_rows.T, dtype=spent_type)
    earn_t = np.ascontiguousarray(earn_rows.T).astype(earn_type)  # whole numbers: exact
    # Every running total lies within the narrow range, so clipping keeps each comparison.
    bound = np.clip(limits, -_INT32_MAX - 1, _INT32_MAX).astype(spent_type) if narrow else limits
    spent = np.zeros((perms.shape[0], cost_rows.shape[0]), dtype=spent_type)
    earned = np.zeros(spent.shape, dtype=earn_type)
    fits = np.empty(spent.shape, dtype=np.bool_)
    for position in range(n):
        column = perms[:, position]
        np.add(spent, cost_t[column], out=spent)
        np.less_equal(spent, bound, out=fits)
        np.add(earned, earn_t[column], out=earned, where=fits)
    out: FloatArray = np.ascontiguousarray(earned.T, dtype=np.float64).mean(axis=1)
    return out
