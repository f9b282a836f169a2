"""Scoring of triage plans: execution regimes, references and derived rates.

Implements the measurement side of TRIAGE (§3.2, §4 "Metric", App. D) over plain arrays:

* :func:`execute_advisory` / :func:`execute_enforced` run a plan under regime U (true costs,
  only the global budget binds) and regime E (allocations are hard caps and are charged in
  full);
* :func:`oracle_value` is the exact 0-1 knapsack optimum with full knowledge of (y_i, c_i);
* :func:`random_reference` is the expected regime-U value of a uniformly random ordering of
  every item;
* :func:`efficiency`, :func:`regret`, :func:`detection_rate`, :func:`waste_rate` and
  :func:`kendall_tau_b` turn those numbers into the reported scores.

Pool data is passed index-aligned: ``costs`` (non-negative integer token counts c_i),
``solved`` (y_i; unsolvable items simply have y_i = 0) and ``values`` (v_i, ``None`` for all
ones).  Value sums use :func:`math.fsum`, so the same set of items scores the same value
whatever order it was executed in.  Nothing here imports pytest.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Execution",
    "OracleResult",
    "RandomReference",
    "clamp_allocations",
    "detection_rate",
    "efficiency",
    "efficiency_is_conventional",
    "execute_advisory",
    "execute_enforced",
    "kendall_tau_b",
    "oracle_value",
    "random_reference",
    "regret",
    "waste_rate",
]

_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]
_BoolArray = npt.NDArray[np.bool_]

#: Relative tolerance for deciding that two values are "equal" (App. D.2 convention).
_TOLERANCE = 1e-12
#: Exact random reference enumerates 2^n subsets per item; past this it costs too much memory.
_EXACT_MAX_ITEMS = 20
#: Meet-in-the-middle enumerates 2^(m/2) subsets per half.
_MITM_MAX_ITEMS = 40
#: Largest (items x capacity) table the capacity DP may allocate (one byte per cell).
_DP_MAX_CELLS = 30_000_000


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Execution:
    """Outcome of executing one plan.

    ``executed`` lists the item indices actually run, in plan order; ``scored`` the executed
    items that earned their value; ``spent`` the tokens charged against the budget (true
    costs under regime U, allocations under regime E).
    """

    value: float
    executed: tuple[int, ...]
    scored: tuple[int, ...]
    spent: int


@dataclass(frozen=True)
class OracleResult:
    """The knapsack optimum: its value and the chosen item indices in ascending order.

    Only solved items with a positive value are ever chosen; executing them in any order
    under regime U fits the budget and earns ``value``.
    """

    value: float
    chosen: tuple[int, ...]


@dataclass(frozen=True)
class RandomReference:
    """Expected regime-U value of a uniformly random ordering of the whole pool.

    ``exact`` is true when ``mean`` is the exact expectation (then ``stderr`` is 0 and
    ``samples`` is n!, the number of orderings it averages); otherwise ``mean`` is a
    Monte-Carlo estimate over ``samples`` seeded orderings with standard error ``stderr``
    (NaN for a single sample).
    """

    mean: float
    stderr: float
    exact: bool
    samples: int


# --------------------------------------------------------------------------- input checks


def _pool_arrays(
    costs: npt.ArrayLike, solved: npt.ArrayLike, values: npt.ArrayLike | None
) -> tuple[_IntArray, _BoolArray, _FloatArray]:
    c = _as_counts(costs, "costs")
    y = np.asarray(solved)
    if y.ndim != 1 or y.shape != c.shape:
        raise ValueError(f"solved must have one flag per item ({c.size}), got shape {y.shape}")
    y = y.astype(bool)
    if values is None:
        v = np.ones(c.size, dtype=np.float64)
    else:
        v = np.asarray(values, dtype=np.float64)
        if v.shape != c.shape:
            raise ValueError(f"values must have one entry per item ({c.size}), got {v.shape}")
        if not np.all(np.isfinite(v)):
            raise ValueError("values must be finite")
    return c, y, v


def _as_counts(data: npt.ArrayLike, name: str) -> _IntArray:
    """A 1-d array of non-negative integer token counts (integral floats are accepted)."""
    raw = np.asarray(data)
    if raw.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {raw.shape}")
    if raw.size == 0:
        return np.zeros(0, dtype=np.int64)
    if raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.number):
        raise ValueError(f"{name} must be integer token counts")
    if not np.issubdtype(raw.dtype, np.integer):
        as_float = raw.astype(np.float64)
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.floor(as_float)):
            raise ValueError(f"{name} must be integer token counts")
    counts = raw.astype(np.int64)
    if np.any(counts < 0):
        raise ValueError(f"{name} must be non-negative")
    return counts


def _as_budget(budget: float) -> int:
    if isinstance(budget, bool) or not math.isfinite(budget) or budget < 0:
        raise ValueError(f"budget must be a finite non-negative number, got {budget!r}")
    # Costs are integers, so a fractional budget behaves exactly like its floor.
    return math.floor(budget)


def _as_order(order: Sequence[int] | npt.ArrayLike, n: int) -> _IntArray:
    idx = np.asarray(order)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("order must be a sequence of integer item indices")
    idx = idx.astype(np.int64)
    if np.any((idx < 0) | (idx >= n)):
        raise ValueError(f"order holds an index outside 0..{n - 1}")
    # (np.unique imports numpy.ma, 20-30 ms of a process, for this one check.)
    if idx.size > 1 and int(np.bincount(idx, minlength=n).max()) > 1:
        raise ValueError("order names an item more than once")
    return idx


def _fsum(values: _FloatArray) -> float:
    return math.fsum(values.tolist())


# --------------------------------------------------------------------------- execution


def execute_advisory(
    order: Sequence[int] | npt.ArrayLike,
    costs: npt.ArrayLike,
    solved: npt.ArrayLike,
    values: npt.ArrayLike | None,
    budget: int,
) -> Execution:
    """Regime U: run items in ``order`` at their true cost c_i under the global budget.

    Execution stops at the first item whose cost exceeds the remaining budget; every item
    run before that earns v_i * y_i.  Allocations play no part here (they are advisory).
    """
    c, y, v = _pool_arrays(costs, solved, values)
    idx = _as_order(order, c.size)
    limit = _as_budget(budget)
    # An item fits iff the running total through it stays within B; costs are
    # non-negative, so the running total is monotone and the executed items are a prefix.
    spent_through = np.cumsum(c[idx])
    stop = int(np.searchsorted(spent_through, limit, side="right"))
    executed = idx[:stop]
    scored = executed[y[executed]]
    return Execution(
        value=_fsum(v[scored]),
        executed=tuple(executed.tolist()),
        scored=tuple(scored.tolist()),
        spent=int(spent_through[stop - 1]) if stop else 0,
    )


def execute_enforced(
    order: Sequence[int] | npt.ArrayLike,
    allocations: Sequence[int] | npt.ArrayLike,
    costs: npt.ArrayLike,
    solved: npt.ArrayLike,
    values: npt.ArrayLike | None,
    budget: int,
) -> Execution:
    """Regime E: each item runs under its allocation a_i as a hard cap.

    ``allocations`` is aligned with ``order``.  Execution stops at the first item whose
    a_i exceeds the remaining budget; otherwise a_i is deducted whether or not the item
    scores, and it scores v_i * y_i only when c_i <= a_i (at temperature 0 the capped run
    equals the baseline run when it fits).  Items with a_i == 0 are not in the plan.
    """
    c, y, v = _pool_arrays(costs, solved, values)
    limit = _as_budget(budget)
    alloc = _as_counts(clamp_allocations(allocations, limit), "allocations")
    raw_order = np.asarray(order)
    if raw_order.shape != alloc.shape:
        raise ValueError("allocations must be aligned with order (one per plan position)")
    keep = alloc > 0
    idx = _as_order(raw_order[keep], c.size)
    alloc = alloc[keep]
    # Same prefix argument as regime U, with allocations as the charge.  Every charge is
    # at most B + 1, so the running total first passes B before it could leave int64.
    charged_through = np.cumsum(alloc)
    stop = int(np.searchsorted(charged_through, limit, side="right"))
    executed = idx[:stop]
    within_cap = c[executed] <= alloc[:stop]
    scored = executed[y[executed] & within_cap]
    return Execution(
        value=_fsum(v[scored]),
        executed=tuple(executed.tolist()),
        scored=tuple(scored.tolist()),
        spent=int(charged_through[stop - 1]) if stop else 0,
    )


def clamp_allocations(allocations: Sequence[int] | npt.ArrayLike, budget: int) -> _IntArray:
    """Allocations with every a_i > B replaced by B + 1, as exact int64 counts.

    Regime E stops at the first allocation that exceeds the remaining budget, which any
    a_i > B does, and such an item never runs: so B + 1 scores exactly like any larger
    allocation, of any size (Python integers past int64, ``inf``).  Negative, NaN and
    fractional allocations are refused (the plan parser has already repaired them).
    """
    ceiling = _as_budget(budget) + 1
    if isinstance(allocations, np.ndarray) and np.issubdtype(allocations.dtype, np.integer):
        return np.minimum(allocations.astype(np.int64), ceiling)
    out: list[int] = []
    for a in np.asarray(allocations, dtype=object).ravel().tolist():
        if isinstance(a, bool) or not isinstance(a, int | float | np.number):
            raise ValueError("allocations must be integer token counts")
        if isinstance(a, float | np.floating) and not math.isinf(a):
            if math.isnan(a) or a != math.floor(a):
                raise ValueError("allocations must be integer token counts")
        if a < 0:
            raise ValueError("allocations must be non-negative")
        out.append(ceiling if a >= ceiling else int(a))
    return np.asarray(out, dtype=np.int64)


# --------------------------------------------------------------------------- oracle


def oracle_value(
    costs: npt.ArrayLike,
    solved: npt.ArrayLike,
    values: npt.ArrayLike | None,
    budget: int,
) -> OracleResult:
    """Exact max of sum v_i * y_i over item sets with sum c_i <= B (0-1 knapsack, eq. 1).

    Only solved items with v_i > 0 and c_i <= B can help, so only they are considered.
    With equal values the cheapest-first prefix is optimal (eq. 3).  Otherwise the solver
    is picked from the instance size alone, so the same input always takes the same path:
    meet-in-the-middle (up to 40 candidates) or a dynamic programme over capacity,
    whichever is cheaper, and branch and bound when neither is affordable.
    """
    c, y, v = _pool_arrays(costs, solved, values)
    limit = _as_budget(budget)
    candidates = np.flatnonzero(y & (v > 0) & (c <= limit))
    if candidates.size == 0:
        return OracleResult(value=0.0, chosen=())
    # Zero-cost items are free value: always take them, and keep them out of the search.
    free = candidates[c[candidates] == 0]
    paid = candidates[c[candidates] > 0]
    w, val = c[paid], v[paid]
    if int(w.sum()) <= limit:
        picked = paid
    elif np.all(val == val[0]):
        # Equal values: maximise the count, i.e. take the cheapest items first
        # (ties broken by index through the stable sort).
        by_cost = np.argsort(w, kind="stable")
        fits = int(np.searchsorted(np.cumsum(w[by_cost]), limit, side="right"))
        picked = paid[by_cost[:fits]]
    else:
        picked = paid[_solve_knapsack(w, val, limit)]
    chosen = np.sort(np.concatenate((free, picked)))
    return OracleResult(value=_fsum(v[chosen]), chosen=tuple(chosen.tolist()))


def _solve_knapsack(w: _IntArray, v: _FloatArray, capacity: int) -> _IntArray:
    """Indices (into ``w``) of an optimal subset; all w > 0, v > 0 and sum(w) > capacity."""
    # Dividing through by the common factor of the costs shrinks the DP table for free.
    g = int(np.gcd.reduce(w))
    w, capacity = w // g, capacity // g
    m = w.size
    dp_work = m * (capacity + 1)
    mitm_work = (1 << ((m + 1) // 2)) * (m // 2 + 2)
    if m <= _MITM_MAX_ITEMS and (mitm_work <= dp_work or dp_work > _DP_MAX_CELLS):
        return _solve_mitm(w, v, capacity)
    if dp_work <= _DP_MAX_CELLS:
        return _solve_dp(w, v, capacity)
    return _solve_branch_and_bound(w, v, capacity)


def _subset_sums(w: _IntArray, v: _FloatArray) -> tuple[_IntArray, _FloatArray]:
    """Cost and value of every subset; subset s holds item j iff bit j of s is set."""
    costs = np.zeros(1, dtype=np.int64)
    values = np.zeros(1, dtype=np.float64)
    for wj, vj in zip(w.tolist(), v.tolist(), strict=True):
        costs = np.concatenate((costs, costs + wj))
        values = np.concatenate((values, values + vj))
    return costs, values


def _bits(mask: int, offset: int) -> list[int]:
    return [offset + j for j in range(mask.bit_length()) if (mask >> j) & 1]


def _solve_mitm(w: _IntArray, v: _FloatArray, capacity: int) -> _IntArray:
    """Meet in the middle: pair each subset of one half with the best fitting one of the other."""
    half = w.size // 2
    cost_a, value_a = _subset_sums(w[:half], v[:half])
    cost_b, value_b = _subset_sums(w[half:], v[half:])
    by_cost = np.argsort(cost_b, kind="stable")
    cost_b, value_b = cost_b[by_cost], value_b[by_cost]
    best_b = np.maximum.accumulate(value_b)
    # Position of the subset that holds each running maximum: the latest "record" so far.
    positions = np.arange(value_b.size)
    record_at = np.maximum.accumulate(np.where(value_b == best_b, positions, 0))
    fits_a = cost_a <= capacity
    room = np.where(fits_a, capacity - cost_a, 0)
    # The empty subset (cost 0) is first in cost_b, so there is always a fitting partner.
    partner = np.searchsorted(cost_b, room, side="right") - 1
    totals = np.where(fits_a, value_a + best_b[partner], -np.inf)
    mask_a = int(np.argmax(totals))
    mask_b = int(by_cost[record_at[partner[mask_a]]])
    return np.asarray(_bits(mask_a, 0) + _bits(mask_b, half), dtype=np.int64)


def _solve_dp(w: _IntArray, v: _FloatArray, capacity: int) -> _IntArray:
    """Classic capacity DP, one vectorized pass per item, with a take-table to backtrack."""
    best = np.zeros(capacity + 1, dtype=np.float64)
    take = np.zeros((w.size, capacity + 1), dtype=np.bool_)
    for j, (wj, vj) in enumerate(zip(w.tolist(), v.tolist(), strict=True)):
        if wj > capacity:
            continue
        # Built from the values before item j, so item j is used at most once.
        with_j = best[: capacity + 1 - wj] + vj
        better = with_j > best[wj:]
        take[j, wj:] = better
        np.copyto(best[wj:], with_j, where=better)
    chosen: list[int] = []
    room = capacity
    for j in range(w.size - 1, -1, -1):
        if take[j, room]:
            chosen.append(j)
            room -= int(w[j])
    return np.asarray(sorted(chosen), dtype=np.int64)


def _solve_branch_and_bound(w: _IntArray, v: _FloatArray, capacity: int) -> _IntArray:
    """Depth-first branch and bound with the fractional (LP) bound; exact for any size."""
    order = sorted(range(w.size), key=lambda i: (-float(v[i]) / float(w[i]), i))
    ws = [int(w[i]) for i in order]
    vs = [float(v[i]) for i in order]
    m = len(ws)
    # Prefix sums let the LP bound be found by bisection instead of a scan.
    cum_w = [0]
    cum_v = [0.0]
    for wi, vi in zip(ws, vs, strict=True):
        cum_w.append(cum_w[-1] + wi)
        cum_v.append(cum_v[-1] + vi)

    def bound(k: int, room: int, value: float) -> float:
        stop = bisect.bisect_right(cum_w, cum_w[k] + room, lo=k) - 1
        extra = cum_v[stop] - cum_v[k]
        if stop < m:
            extra += (room - (cum_w[stop] - cum_w[k])) * vs[stop] / ws[stop]
        return value + extra

    best_value = -1.0
    best_path: tuple[int, ...] = ()
    # Each frame: next sorted position, room left, value so far, chosen sorted positions.
    stack: list[tuple[int, int, float, tuple[int, ...]]] = [(0, capacity, 0.0, ())]
    while stack:
        k, room, value, path = stack.pop()
        # Every node is itself a feasible selection (later items simply left out).
        if value > best_value:
            best_value, best_path = value, path
        if k == m or room == 0 or bound(k, room, value) <= best_value:
            continue
        stack.append((k + 1, room, value, path))  # skip item k (explored second)
        if ws[k] <= room:
            stack.append((k + 1, room - ws[k], value + vs[k], (*path, k)))
    return np.asarray(sorted(order[k] for k in best_path), dtype=np.int64)


# --------------------------------------------------------------------------- random reference


def random_reference(
    costs: npt.ArrayLike,
    solved: npt.ArrayLike,
    values: npt.ArrayLike | None,
    budget: int,
    *,
    samples: int = 1000,
    seed: int,
    exact_limit: int = 8,
) -> RandomReference:
    """Expected regime-U value of a uniformly random ordering of all the items.

    With n <= ``exact_limit`` (at most 20) the expectation is computed exactly; otherwise it
    is the mean over ``samples`` orderings drawn from ``numpy.random.default_rng(seed)``,
    reported with its standard error.  Two cases are exact at any size because every
    ordering scores the same: nothing has value, or the whole pool fits in the budget
    (Proposition D.1).
    """
    c, y, v = _pool_arrays(costs, solved, values)
    limit = _as_budget(budget)
    if samples < 1:
        raise ValueError("samples must be at least 1")
    n = c.size
    earn = np.where(y, v, 0.0)
    if not np.any(earn) or int(c.sum()) <= limit:
        # Every ordering runs to completion or earns nothing: the expectation is exact.
        return RandomReference(mean=_fsum(earn), stderr=0.0, exact=True, samples=math.factorial(n))
    if n <= exact_limit:
        if n > _EXACT_MAX_ITEMS:
            raise ValueError(
                f"exact random reference supports at most {_EXACT_MAX_ITEMS} items, got {n}"
            )
        return RandomReference(
            mean=_exact_random_mean(c, earn, limit),
            stderr=0.0,
            exact=True,
            samples=math.factorial(n),
        )
    # The planners of a cell share its pool and budget: each sampled reference is computed
    # once per process (the same draws from the same seed, so the same floats).
    # (An unseeded call draws afresh every time.)
    sample = _sampled_reference if isinstance(seed, int) else _sampled_reference.__wrapped__
    return sample(c.tobytes(), earn.astype(np.float64).tobytes(), limit, samples, seed)


@functools.lru_cache(maxsize=256)
def _sampled_reference(
    cost_bytes: bytes, earn_bytes: bytes, limit: int, samples: int, seed: int
) -> RandomReference:
    c = np.frombuffer(cost_bytes, dtype=np.int64)
    earn = np.frombuffer(earn_bytes, dtype=np.float64)
    rng = np.random.default_rng(seed)
    # Sorting i.i.d. uniform keys gives uniform permutations, all rows at once.
    perms = np.argsort(rng.random((samples, c.size)), axis=1, kind="stable")
    # Row-wise prefix rule as in execute_advisory: an item runs iff the running total fits.
    runs = np.cumsum(c[perms], axis=1) <= limit
    per_ordering = np.where(runs, earn[perms], 0.0).sum(axis=1)
    mean = float(per_ordering.mean())
    stderr = float(per_ordering.std(ddof=1)) / math.sqrt(samples) if samples > 1 else math.nan
    return RandomReference(mean=mean, stderr=stderr, exact=False, samples=samples)


def _exact_random_mean(c: _IntArray, earn: _FloatArray, limit: int) -> float:
    """E[value] over all n! orderings, without listing them.

    Item i runs iff the items placed before it plus i itself fit in B.  In a uniform random
    ordering the set T of items before i is a k-subset of the others with probability
    k! (n-1-k)! / n!, so P(i runs) = sum over T with c(T) + c_i <= B of that weight.
    Counting those subsets by size over all 2^n subsets is exact integer arithmetic, and
    the probability is a single correctly rounded division.
    """
    n = c.size
    subset_cost, _ = _subset_sums(c, np.zeros(n, dtype=np.float64))
    subset_size, _ = _subset_sums(np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.float64))
    masks = np.arange(subset_cost.size, dtype=np.int64)
    orderings = math.factorial(n)
    weight = [math.factorial(k) * math.factorial(n - 1 - k) for k in range(n)]
    terms: list[float] = []
    for i in range(n):
        if earn[i] == 0.0:
            continue
        before = (((masks >> i) & 1) == 0) & (subset_cost <= limit - int(c[i]))
        by_size = np.bincount(subset_size[before], minlength=n)
        favourable = sum(int(count) * weight[k] for k, count in enumerate(by_size.tolist()))
        terms.append(float(earn[i]) * (favourable / orderings))
    return math.fsum(terms)


# --------------------------------------------------------------------------- derived scores


def efficiency_is_conventional(v_oracle: float, v_random: float) -> bool:
    """True when eta's denominator vanishes and :func:`efficiency` uses App. D.2's rule."""
    scale = max(1.0, abs(v_oracle), abs(v_random))
    return abs(v_oracle - v_random) <= _TOLERANCE * scale


def efficiency(v: float, v_oracle: float, v_random: float) -> float:
    """Triage efficiency eta = (V - V_random) / (V_oracle - V_random) (eq. 2).

    When the oracle and the random reference coincide (within a relative 1e-12) the ratio
    is undefined; App. D.2's convention then gives 1.0 if V reaches the oracle, else 0.0.
    """
    scale = max(1.0, abs(v_oracle), abs(v_random))
    gap = v_oracle - v_random
    if abs(gap) <= _TOLERANCE * scale:
        return 1.0 if v >= v_oracle - _TOLERANCE * scale else 0.0
    return (v - v_random) / gap


def regret(v: float, v_oracle: float) -> float | None:
    """Normalised regret (V_oracle - V) / V_oracle (App. D.5); None unless V_oracle >= 1."""
    if v_oracle < 1:
        return None
    return (v_oracle - v) / v_oracle


def detection_rate(planned_ids: Iterable[str], unsolvable_ids: Iterable[str]) -> float | None:
    """D = |U \\ S| / |U|: share of unsolvable items left out of the plan; None when U is empty.

    ``planned_ids`` is the planned set S (ids with a positive allocation).
    """
    unsolvable = set(unsolvable_ids)
    if not unsolvable:
        return None
    return len(unsolvable - set(planned_ids)) / len(unsolvable)


def waste_rate(allocations: Mapping[str, int], unsolvable_ids: Iterable[str]) -> float:
    """W = sum of a_i over S & U / sum of a_i over S; 0.0 when nothing is planned.

    ``allocations`` maps planned ids to a_i; entries with a_i <= 0 are not in S.
    """
    unsolvable = set(unsolvable_ids)
    planned = {key: tokens for key, tokens in allocations.items() if tokens > 0}
    total = sum(planned.values())
    if total == 0:
        return 0.0
    return sum(tokens for key, tokens in planned.items() if key in unsolvable) / total


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two paired score lists, ties handled.

    tau_b = (P - Q) / sqrt((n0 - n1) (n0 - n2)) with P/Q the concordant/discordant pairs,
    n0 = n(n-1)/2, and n1/n2 the pairs tied in x/y.  Returns NaN when it is undefined:
    fewer than two pairs, either side entirely tied (zero denominator), or a NaN input.
    Uses all O(n^2) pairs, which suits the handful of agents it ranks.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError("x and y must be one-dimensional and of equal length")
    n = a.size
    if n < 2 or np.isnan(a).any() or np.isnan(b).any():
        return math.nan
    upper = np.triu_indices(n, k=1)
    # Comparisons rather than differences, so infinities order correctly.
    sx = (np.greater.outer(a, a).astype(np.int64) - np.less.outer(a, a))[upper]
    sy = (np.greater.outer(b, b).astype(np.int64) - np.less.outer(b, b))[upper]
    pairs = n * (n - 1) // 2
    tied_x = int(np.count_nonzero(sx == 0))
    tied_y = int(np.count_nonzero(sy == 0))
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    if denominator == 0:
        return math.nan
    return int(np.sum(sx * sy)) / denominator
