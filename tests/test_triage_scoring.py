"""Triage scoring: execution regimes, oracle, random reference and derived rates.

Expected values are worked out by hand in the comments or computed by independent brute
force (all subsets, all orderings, all pairs), never by the code under test.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.triage import _scoring as scoring
from pytest_budget.triage._scoring import (
    Execution,
    OracleResult,
    detection_rate,
    efficiency,
    execute_advisory,
    execute_enforced,
    kendall_tau_b,
    oracle_value,
    random_reference,
    regret,
    waste_rate,
)

# --------------------------------------------------------------------------- brute force


def brute_execute_u(order: list[int], costs: list[int], earn: list[float], budget: int) -> float:
    """Regime U written as the paper states it, one item at a time."""
    remaining, total = budget, []
    for i in order:
        if costs[i] > remaining:
            break
        remaining -= costs[i]
        total.append(earn[i])
    return math.fsum(total)


def brute_knapsack(costs: list[int], earn: list[float], budget: int) -> float:
    best = 0.0
    for mask in itertools.product((False, True), repeat=len(costs)):
        if sum(c for c, keep in zip(costs, mask, strict=True) if keep) <= budget:
            best = max(best, math.fsum(e for e, keep in zip(earn, mask, strict=True) if keep))
    return best


def brute_random_mean(costs: list[int], earn: list[float], budget: int) -> float:
    outcomes = [
        brute_execute_u(list(p), costs, earn, budget)
        for p in itertools.permutations(range(len(costs)))
    ]
    return math.fsum(outcomes) / len(outcomes)


def brute_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    concordant = discordant = tied_x = tied_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx * dy > 0:
                concordant += 1
            elif dx * dy < 0:
                discordant += 1
    pairs = n * (n - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


def earned(solved: Sequence[object], values: Sequence[float] | None) -> list[float]:
    vals = values if values is not None else [1.0] * len(solved)
    return [v if y else 0.0 for v, y in zip(vals, solved, strict=True)]


# --------------------------------------------------------------------------- strategies

small_pools = st.integers(min_value=0, max_value=9).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 60), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.one_of(
            st.none(),
            st.lists(
                st.floats(0.01, 100.0, allow_nan=False, allow_infinity=False),
                min_size=n,
                max_size=n,
            ),
        ),
    )
)


def tiny_pools(max_items: int) -> st.SearchStrategy[tuple[list[int], list[bool], list[float]]]:
    return st.integers(min_value=0, max_value=max_items).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 30), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
        )
    )


# --------------------------------------------------------------------------- hand-worked pools

# Pool P4: costs c = [4, 3, 5, 2], solved y = [1, 0, 1, 1], v = 1, budget B = 7.
P4_COSTS = [4, 3, 5, 2]
P4_SOLVED = [True, False, True, True]
P4_BUDGET = 7


def test_hand_pool_advisory_in_index_order() -> None:
    # Plan (0, 1, 2, 3) under U: item 0 costs 4 (7 -> 3, solved, +1); item 1 costs 3
    # (3 -> 0, unsolved, +0); item 2 costs 5 > 0 left, so execution stops there.
    run = execute_advisory([0, 1, 2, 3], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=1.0, executed=(0, 1), scored=(0,), spent=7)


def test_hand_pool_advisory_good_order() -> None:
    # Plan (3, 0, 2): item 3 (2; 7 -> 5, +1), item 0 (4; 5 -> 1, +1), item 2 (5 > 1) stops.
    run = execute_advisory([3, 0, 2], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=2.0, executed=(3, 0), scored=(3, 0), spent=6)


def test_hand_pool_enforced() -> None:
    # Plan (3, 0, 2) with allocations (2, 3, 2) under E:
    #   item 3: a=2 <= 7, charge 2 (-> 5); c=2 <= a and solved: +1
    #   item 0: a=3 <= 5, charge 3 (-> 2); c=4 > a: scores 0 although solved
    #   item 2: a=2 <= 2, charge 2 (-> 0); c=5 > a: 0
    run = execute_enforced([3, 0, 2], [2, 3, 2], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=1.0, executed=(3, 0, 2), scored=(3,), spent=7)


def test_hand_pool_oracle() -> None:
    # Solved items cost 4, 5, 2.  Cheapest first: 2 + 4 = 6 <= 7, adding 5 makes 11 > 7.
    assert oracle_value(P4_COSTS, P4_SOLVED, None, P4_BUDGET) == OracleResult(2.0, (0, 3))


def test_hand_pool_random_reference() -> None:
    # Item i runs iff the items before it plus i fit in B.  In a random order of 4 items the
    # set before i is empty with probability 1/4 and a given single item with 1/12 (a given
    # pair: 1/12, the full triple: 1/4).
    #   item 0 (c=4) needs c(before) <= 3: {}, {1}, {3}       -> 1/4 + 2/12 = 5/12
    #   item 2 (c=5) needs c(before) <= 2: {}, {3}            -> 1/4 + 1/12 = 4/12
    #   item 3 (c=2) needs c(before) <= 5: {}, {0}, {1}, {2}  -> 1/4 + 3/12 = 6/12
    # Item 1 is unsolved.  E[V] = (5 + 4 + 6) / 12 = 1.25.
    ref = random_reference(P4_COSTS, P4_SOLVED, None, P4_BUDGET, seed=0)
    assert ref.exact and ref.stderr == 0.0 and ref.samples == 24
    assert ref.mean == 1.25


def test_hand_pool_efficiency_and_regret() -> None:
    # V_U(0,1,2,3) = 1, V_oracle = 2, V_random = 1.25:
    #   eta = (1 - 1.25) / (2 - 1.25) = -1/3, regret = (2 - 1) / 2 = 1/2.
    assert efficiency(1.0, 2.0, 1.25) == pytest.approx(-1 / 3)
    assert regret(1.0, 2.0) == 0.5
    # V_U(3,0,2) = 2 reaches the oracle: eta = 1, regret = 0.
    assert efficiency(2.0, 2.0, 1.25) == 1.0
    assert regret(2.0, 2.0) == 0.0


def test_three_item_random_reference_by_enumeration() -> None:
    # costs (2, 3, 4), solved (1, 1, 0), B = 5.  The six orderings:
    #   (0,1,2): 2 -> 3 left, 3 -> 0 left, 4 stops        value 2
    #   (0,2,1): 2 -> 3 left, 4 > 3 stops                 value 1
    #   (1,0,2): 3 -> 2 left, 2 -> 0 left, stops          value 2
    #   (1,2,0): 3 -> 2 left, 4 > 2 stops                 value 1
    #   (2,0,1): 4 -> 1 left (unsolved), 2 > 1 stops      value 0
    #   (2,1,0): 4 -> 1 left, 3 > 1 stops                 value 0
    # Mean 6 / 6 = 1.  The oracle takes {0, 1} (cost 5): 2.
    costs, solved, budget = [2, 3, 4], [True, True, False], 5
    ref = random_reference(costs, solved, None, budget, seed=0)
    assert (ref.mean, ref.stderr, ref.exact, ref.samples) == (1.0, 0.0, True, 6)
    best = oracle_value(costs, solved, None, budget)
    assert best == OracleResult(2.0, (0, 1))
    # Plan (0, 2, 1) earns 1 = V_random: eta 0, regret 1/2; plan (1, 0) reaches the oracle.
    v_bad = execute_advisory([0, 2, 1], costs, solved, None, budget).value
    v_good = execute_advisory([1, 0], costs, solved, None, budget).value
    assert v_bad == 1.0 and v_good == 2.0
    assert efficiency(v_bad, best.value, ref.mean) == 0.0
    assert regret(v_bad, best.value) == 0.5
    assert efficiency(v_good, best.value, ref.mean) == 1.0


def test_weighted_values_pick_value_over_count() -> None:
    # costs (5, 3, 3), values (10, 4, 4), all solved, B = 6.  Cheapest-first would take
    # items 1 and 2 (value 8); {0} alone is worth 10; {0, 1} costs 8 > 6.
    best = oracle_value([5, 3, 3], [True, True, True], [10.0, 4.0, 4.0], 6)
    assert best == OracleResult(10.0, (0,))


# --------------------------------------------------------------------------- regimes


def test_empty_plan_scores_zero() -> None:
    empty = Execution(value=0.0, executed=(), scored=(), spent=0)
    assert execute_advisory([], P4_COSTS, P4_SOLVED, None, P4_BUDGET) == empty
    assert execute_enforced([], [], P4_COSTS, P4_SOLVED, None, P4_BUDGET) == empty


def test_advisory_stops_rather_than_skips() -> None:
    # Item 2 (c=5) does not fit after item 0 (7 -> 3 left), so cheap item 3 never runs.
    run = execute_advisory([0, 2, 3], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run.executed == (0,) and run.value == 1.0 and run.spent == 4


def test_advisory_ignores_allocations_and_uses_values() -> None:
    # Only true costs count under U; values weight the solved items: 2.5 + 0.5 = 3.
    run = execute_advisory([3, 0], P4_COSTS, P4_SOLVED, [2.5, 9.0, 9.0, 0.5], P4_BUDGET)
    assert run.value == 3.0 and run.spent == 6


def test_enforced_under_allocation_scores_zero_and_still_charges() -> None:
    # Item 0 (c=4, solved) capped at 3 earns nothing, but 3 tokens are gone: 7 -> 4.
    # Item 3 (c=2) with a=2 then still fits and scores.
    run = execute_enforced([0, 3], [3, 2], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run.executed == (0, 3)
    assert run.scored == (3,)
    assert run.value == 1.0
    assert run.spent == 5


def test_enforced_generous_allocation_scores_but_costs_the_allocation() -> None:
    # a_0 = 6 >= c_0 = 4: item 0 scores; 6 is charged (7 -> 1), so item 3 with a=2 stops.
    run = execute_enforced([0, 3], [6, 2], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=1.0, executed=(0,), scored=(0,), spent=6)


def test_enforced_stops_at_first_allocation_over_remaining() -> None:
    # a = (5, 3, 1): 7 -> 2 left after item 3; item 0 asks 3 > 2 and stops execution,
    # so item 2 with a=1 never runs although 1 <= 2.
    run = execute_enforced([3, 0, 2], [5, 3, 1], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=1.0, executed=(3,), scored=(3,), spent=5)


def test_enforced_zero_allocations_are_not_in_the_plan() -> None:
    # Zero-token entries neither run nor stop anything.
    run = execute_enforced([1, 3, 2, 0], [0, 2, 0, 4], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run == Execution(value=2.0, executed=(3, 0), scored=(3, 0), spent=6)


def test_enforced_allocation_equal_to_cost_scores() -> None:
    run = execute_enforced([2], [5], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    assert run.scored == (2,) and run.value == 1.0


@pytest.mark.parametrize(
    ("order", "message"),
    [([0, 0], "more than once"), ([4], "outside"), ([-1], "outside")],
)
def test_bad_orders_are_rejected(order: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        execute_advisory(order, P4_COSTS, P4_SOLVED, None, P4_BUDGET)


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="aligned"):
        execute_enforced([0, 1], [3], P4_COSTS, P4_SOLVED, None, P4_BUDGET)
    with pytest.raises(ValueError, match="non-negative"):
        oracle_value([1, -2], [True, True], None, 3)
    with pytest.raises(ValueError, match="integer"):
        oracle_value([1.5, 2], [True, True], None, 3)
    with pytest.raises(ValueError, match="one flag per item"):
        oracle_value([1, 2], [True], None, 3)
    with pytest.raises(ValueError, match="budget"):
        oracle_value([1, 2], [True, True], None, -1)
    with pytest.raises(ValueError, match="samples"):
        random_reference([1, 2], [True, True], None, 1, seed=0, samples=0)


@given(small_pools, st.integers(0, 600), st.randoms(use_true_random=False))
def test_advisory_matches_step_by_step_execution(
    pool: tuple[list[int], list[bool], list[float] | None], budget: int, rnd: random.Random
) -> None:
    costs, solved, values = pool
    order = list(range(len(costs)))
    rnd.shuffle(order)
    order = order[: len(order) // 2 + 1]
    run = execute_advisory(order, costs, solved, values, budget)
    assert run.value == brute_execute_u(order, costs, earned(solved, values), budget)
    assert run.spent == sum(costs[i] for i in run.executed) <= budget
    assert list(run.executed) == order[: len(run.executed)]


# --------------------------------------------------------------------------- oracle


@given(small_pools, st.integers(0, 600))
def test_oracle_matches_brute_force(
    pool: tuple[list[int], list[bool], list[float] | None], budget: int
) -> None:
    costs, solved, values = pool
    earn = earned(solved, values)
    best = oracle_value(costs, solved, values, budget)
    assert best.value == pytest.approx(brute_knapsack(costs, earn, budget), rel=1e-9)
    assert sum(costs[i] for i in best.chosen) <= budget
    assert all(solved[i] for i in best.chosen)
    assert list(best.chosen) == sorted(set(best.chosen))
    assert best.value == math.fsum(earn[i] for i in best.chosen)


@pytest.mark.parametrize(
    "solver",
    [scoring._solve_mitm, scoring._solve_dp, scoring._solve_branch_and_bound],
    ids=["meet-in-the-middle", "capacity-dp", "branch-and-bound"],
)
@given(tiny_pools(10), st.integers(1, 200))
def test_each_knapsack_solver_is_exact(
    solver: Callable[[np.ndarray, np.ndarray, int], np.ndarray],
    pool: tuple[list[int], list[bool], list[float]],
    budget: int,
) -> None:
    # The dispatcher picks one solver by size; all of them must agree with brute force.
    costs, _, values = pool
    if not costs:
        return
    chosen = solver(np.asarray(costs, np.int64), np.asarray(values), budget)
    assert sum(costs[i] for i in chosen) <= budget
    expected = brute_knapsack(costs, values, budget)
    assert math.fsum(values[i] for i in chosen) == pytest.approx(expected, rel=1e-9)


@given(
    st.lists(st.integers(1, 50), min_size=0, max_size=10),
    st.data(),
    st.integers(0, 300),
    st.floats(0.5, 3.0),
)
def test_uniform_oracle_is_cheapest_first_and_matches_brute_force(
    costs: list[int], data: st.DataObject, budget: int, value: float
) -> None:
    solved = data.draw(st.lists(st.booleans(), min_size=len(costs), max_size=len(costs)))
    best = oracle_value(costs, solved, [value] * len(costs), budget)
    assert best.value == pytest.approx(
        brute_knapsack(costs, earned(solved, [value] * len(costs)), budget), rel=1e-12
    )
    # Eq. (3): the count is the longest cheapest-first prefix of solved items that fits.
    prefix, count = 0, 0
    for cost in sorted(c for c, y in zip(costs, solved, strict=True) if y):
        if prefix + cost > budget:
            break
        prefix, count = prefix + cost, count + 1
    assert len(best.chosen) == count


@given(small_pools, st.integers(0, 600), st.randoms(use_true_random=False))
def test_oracle_set_in_any_order_achieves_the_oracle_under_u(
    pool: tuple[list[int], list[bool], list[float] | None], budget: int, rnd: random.Random
) -> None:
    costs, solved, values = pool
    best = oracle_value(costs, solved, values, budget)
    order = list(best.chosen)
    rnd.shuffle(order)
    run = execute_advisory(order, costs, solved, values, budget)
    assert run.value == best.value
    assert run.executed == tuple(order)


def test_oracle_takes_free_items_and_ignores_unreachable_ones() -> None:
    # Item 1 costs 0 (free), item 2 costs more than B, item 3 is unsolved.
    best = oracle_value([3, 0, 50, 1], [True, True, True, False], [1.0, 2.0, 99.0, 5.0], 4)
    assert best == OracleResult(3.0, (0, 1))


def test_oracle_with_nothing_solved_is_zero() -> None:
    assert oracle_value([3, 4], [False, False], None, 10) == OracleResult(0.0, ())
    assert oracle_value([], [], None, 10) == OracleResult(0.0, ())


def test_oracle_large_instances_use_exact_solvers() -> None:
    # n = 30 with costs near B and costs summing to about 2B (meet-in-the-middle), and
    # n = 60 with a large budget (branch and bound): the optimum must dominate every plan
    # found by a simple greedy and fit the budget.
    rng = np.random.default_rng(7)
    for n, budget in ((30, 1_000_000), (60, 3_000_000)):
        costs = rng.integers(1, 2 * 2 * budget // n, size=n)
        values = rng.uniform(0.1, 10.0, size=n)
        solved = np.ones(n, dtype=bool)
        best = oracle_value(costs, solved, values, budget)
        assert int(costs[list(best.chosen)].sum()) <= budget
        greedy, room = 0.0, budget
        for i in np.argsort(-values / costs):
            if costs[i] <= room:
                greedy, room = greedy + values[i], room - int(costs[i])
        assert best.value >= greedy - 1e-9


def test_knapsack_solvers_agree_on_a_mid_sized_instance() -> None:
    # 24 items, capacity 2000: all three exact solvers must find the same optimum value.
    rng = np.random.default_rng(11)
    w = rng.integers(50, 300, size=24).astype(np.int64)
    v = rng.uniform(1.0, 20.0, size=24)
    found = [
        math.fsum(v[solver(w, v, 2000)].tolist())
        for solver in (scoring._solve_mitm, scoring._solve_dp, scoring._solve_branch_and_bound)
    ]
    assert found[0] == pytest.approx(found[1], rel=1e-12)
    assert found[0] == pytest.approx(found[2], rel=1e-12)


# --------------------------------------------------------------------------- random reference


@settings(max_examples=60)
@given(tiny_pools(6), st.integers(0, 120), st.booleans())
def test_exact_random_reference_matches_all_orderings(
    pool: tuple[list[int], list[bool], list[float]], budget: int, uniform: bool
) -> None:
    costs, solved, values = pool
    vals = None if uniform else values
    ref = random_reference(costs, solved, vals, budget, seed=0)
    assert ref.exact and ref.stderr == 0.0
    expected = brute_random_mean(costs, earned(solved, vals), budget)
    assert ref.mean == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_exact_random_reference_is_exact_in_rationals() -> None:
    # Uniform values: the exact mean is a ratio of integers; compare with Fraction.
    costs, solved, budget = [5, 1, 4, 2, 7, 3, 6], [1, 1, 0, 1, 1, 0, 1], 12
    total = Fraction(0)
    for perm in itertools.permutations(range(7)):
        total += Fraction(brute_execute_u(list(perm), costs, earned(solved, None), budget))
    expected = total / math.factorial(7)
    ref = random_reference(costs, solved, None, budget, seed=0)
    assert ref.samples == 5040
    assert ref.mean == float(expected)


MC_POOLS = [
    ([5, 1, 4, 2, 7, 3, 6], [1, 1, 0, 1, 1, 0, 1], None, 12),
    ([9, 9, 2, 2, 3, 8, 1], [1, 0, 1, 1, 1, 1, 0], [3.0, 1.0, 0.5, 2.0, 1.5, 4.0, 1.0], 15),
    ([100, 30, 45, 80, 10, 25, 60], [0, 1, 1, 1, 0, 1, 1], None, 120),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("pool", MC_POOLS, ids=["uniform", "weighted", "wide-costs"])
def test_monte_carlo_is_within_a_few_standard_errors_of_exact(
    pool: tuple[list[int], list[int], list[float] | None, int], seed: int
) -> None:
    costs, solved, values, budget = pool
    exact = random_reference(costs, solved, values, budget, seed=seed)
    estimate = random_reference(
        costs, solved, values, budget, seed=seed, samples=4000, exact_limit=0
    )
    assert exact.exact and not estimate.exact and estimate.samples == 4000
    assert estimate.stderr > 0
    # Fixed seeds make this deterministic; 5 standard errors leaves ample room.
    assert abs(estimate.mean - exact.mean) <= 5 * estimate.stderr


def test_monte_carlo_is_deterministic_per_seed() -> None:
    rng = np.random.default_rng(3)
    costs = rng.integers(1, 500, size=30)
    solved = rng.random(30) < 0.6
    budget = int(costs.sum() // 2)
    first = random_reference(costs, solved, None, budget, seed=42)
    again = random_reference(costs, solved, None, budget, seed=42)
    other = random_reference(costs, solved, None, budget, seed=43)
    assert first == again
    assert not first.exact and first.samples == 1000
    assert other.mean != first.mean


def test_monte_carlo_estimate_is_the_mean_over_its_seeded_orderings() -> None:
    # The documented draw: default_rng(seed), one row of uniform keys per ordering, each
    # row's argsort is the ordering.  Run each ordering step by step and average.
    costs, solved, values, budget = MC_POOLS[1]
    samples, seed = 200, 5
    keys = np.random.default_rng(seed).random((samples, len(costs)))
    outcomes = [
        brute_execute_u(
            list(np.argsort(row, kind="stable")),
            costs,
            earned([bool(y) for y in solved], values),
            budget,
        )
        for row in keys
    ]
    estimate = random_reference(
        costs, solved, values, budget, seed=seed, samples=samples, exact_limit=0
    )
    assert estimate.mean == pytest.approx(math.fsum(outcomes) / samples, rel=1e-12)
    assert estimate.stderr == pytest.approx(
        float(np.std(outcomes, ddof=1)) / math.sqrt(samples), rel=1e-9
    )


def test_single_sample_has_undefined_stderr() -> None:
    ref = random_reference([3, 4, 5], [1, 1, 1], None, 6, seed=1, samples=1, exact_limit=0)
    assert math.isnan(ref.stderr) and ref.samples == 1


def test_exact_limit_beyond_supported_size_is_rejected() -> None:
    costs = list(range(1, 23))
    with pytest.raises(ValueError, match="at most 20"):
        random_reference(costs, [True] * 22, None, 30, seed=0, exact_limit=30)


# --------------------------------------------------------------------------- Proposition D.1


@given(
    small_pools,
    st.integers(0, 10),
    st.integers(0, 10),
    st.randoms(use_true_random=False),
)
def test_full_budget_collapses_random_onto_oracle(
    pool: tuple[list[int], list[bool], list[float] | None],
    slack: int,
    exact_limit: int,
    rnd: random.Random,
) -> None:
    # Prop. D.1: with B = sum(c) every ordering runs to completion, so
    # V_random = sum(v y) = V_oracle with no Monte-Carlo variance.
    costs, solved, values = pool
    budget = sum(costs) + slack
    total = math.fsum(earned(solved, values))
    ref = random_reference(costs, solved, values, budget, seed=9, exact_limit=exact_limit)
    best = oracle_value(costs, solved, values, budget)
    assert ref.mean == total == best.value
    assert ref.stderr == 0.0 and ref.exact
    order = list(range(len(costs)))
    rnd.shuffle(order)
    full = execute_advisory(order, costs, solved, values, budget)
    assert full.executed == tuple(order)
    # App. D.2: with V_oracle == V_random, eta is 1 when the plan reaches the oracle ...
    assert efficiency(full.value, best.value, ref.mean) == 1.0
    # ... and 0 when it falls short (leaving out a solved item loses its value).
    missing = [i for i in order if not solved[i]]
    if missing != order:
        short = execute_advisory(missing, costs, solved, values, budget)
        assert efficiency(short.value, best.value, ref.mean) == 0.0


def test_full_budget_monte_carlo_path_has_zero_variance() -> None:
    # Even when sampling would apply (n > exact_limit), the full budget is exact.
    rng = np.random.default_rng(1)
    costs = rng.integers(1, 1000, size=30)
    solved = rng.random(30) < 0.5
    values = rng.uniform(0.5, 2.0, size=30)
    ref = random_reference(costs, solved, values, int(costs.sum()), seed=4)
    assert ref.exact and ref.stderr == 0.0
    assert ref.mean == math.fsum(values[solved].tolist())


# --------------------------------------------------------------------------- derived scores


def test_efficiency_regular_and_boundary_cases() -> None:
    assert efficiency(3.0, 5.0, 1.0) == 0.5
    assert efficiency(0.0, 5.0, 1.0) == -0.25  # worse than random is negative
    assert efficiency(1.0, 5.0, 1.0) == 0.0
    # D.2 convention when the denominator vanishes (including the all-unsolved pool).
    assert efficiency(4.0, 4.0, 4.0) == 1.0
    assert efficiency(3.0, 4.0, 4.0) == 0.0
    assert efficiency(0.0, 0.0, 0.0) == 1.0
    assert efficiency(4.0, 4.0, 4.0 - 1e-13) == 1.0  # within the tolerance


def test_regret_needs_an_oracle_of_at_least_one() -> None:
    assert regret(3.0, 4.0) == 0.25
    assert regret(0.0, 4.0) == 1.0
    assert regret(0.0, 0.0) is None
    assert regret(0.2, 0.5) is None
    assert regret(1.0, 1.0) == 0.0


def test_detection_rate() -> None:
    # U = {u1, u2, u3}; the plan includes u1, so U \ S = {u2, u3}: D = 2/3.
    assert detection_rate(["a", "u1", "b"], ["u1", "u2", "u3"]) == pytest.approx(2 / 3)
    assert detection_rate([], ["u1"]) == 1.0
    assert detection_rate(["u1"], ["u1"]) == 0.0
    assert detection_rate(["a"], []) is None


def test_waste_rate() -> None:
    # S = {a: 100, u1: 50, u2: 50}; zero-token u3 is not planned.  W = 100 / 200.
    allocations = {"a": 100, "u1": 50, "u2": 50, "u3": 0}
    assert waste_rate(allocations, ["u1", "u2", "u3"]) == 0.5
    assert waste_rate({"a": 10}, ["u1"]) == 0.0
    assert waste_rate({}, ["u1"]) == 0.0
    assert waste_rate({"u1": 0}, ["u1"]) == 0.0


# --------------------------------------------------------------------------- Kendall tau-b


def test_kendall_tau_b_paper_value_with_one_tie() -> None:
    # x = (1, 2, 2, 3), y = (1, 3, 2, 4): 6 pairs, pair (1, 2) is tied in x, the other five
    # are concordant.  tau_b = 5 / sqrt((6 - 1) * (6 - 0)) = 5 / sqrt(30) = 0.9129,
    # the 0.913 TRIAGE App. C.2 lists for n = 4.
    tau = kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 4])
    assert tau == pytest.approx(5 / math.sqrt(30))
    assert round(tau, 3) == 0.913


def test_kendall_tau_b_hand_example_with_ties_on_both_sides() -> None:
    # x = (1, 1, 2, 3, 4), y = (2, 1, 1, 4, 3); the 10 pairs:
    #   (0,1) tied in x; (0,2) discordant; (0,3) (0,4) concordant; (1,2) tied in y;
    #   (1,3) (1,4) (2,3) (2,4) concordant; (3,4) discordant.
    # P = 6, Q = 2, n1 = n2 = 1: tau_b = 4 / sqrt(9 * 9) = 4/9.
    assert kendall_tau_b([1, 1, 2, 3, 4], [2, 1, 1, 4, 3]) == pytest.approx(4 / 9)


def test_kendall_tau_b_extremes_and_undefined_cases() -> None:
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))  # one side all ties
    assert math.isnan(kendall_tau_b([1], [2]))
    assert math.isnan(kendall_tau_b([], []))
    assert math.isnan(kendall_tau_b([1, float("nan")], [1, 2]))
    assert kendall_tau_b([-math.inf, 0, math.inf], [1, 2, 3]) == 1.0
    with pytest.raises(ValueError, match="equal length"):
        kendall_tau_b([1, 2], [1])


def test_kendall_tau_b_n4_value_set() -> None:
    # n = 4, one side a strict ranking.  Without ties tau = (P - Q) / 6 with P + Q = 6:
    # {-1, -2/3, -1/3, 0, 1/3, 2/3, 1}.  With one tied pair on the other side P + Q = 5 and
    # the denominator is sqrt(5 * 6), so tau = {+-5, +-3, +-1} / sqrt(30):
    # +-0.913, +-0.548, +-0.183.  The paper's list contains 0.913; the others exist too.
    base = [1, 2, 3, 4]
    strict, one_tie = set(), set()
    for other in itertools.product([1, 2, 3, 4], repeat=4):
        distinct = len(set(other))
        tau = round(kendall_tau_b(base, list(other)), 3)
        if distinct == 4:
            strict.add(tau)
        elif distinct == 3:
            one_tie.add(tau)
    assert strict == {-1.0, -0.667, -0.333, 0.0, 0.333, 0.667, 1.0}
    assert one_tie == {-0.913, -0.548, -0.183, 0.183, 0.548, 0.913}


@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
        )
    )
)
def test_kendall_tau_b_matches_pairwise_reference(data: tuple[list[int], list[int]]) -> None:
    x, y = data
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert math.isnan(kendall_tau_b(x, y))
    else:
        assert kendall_tau_b(x, y) == pytest.approx(brute_tau_b(x, y), abs=1e-12)
