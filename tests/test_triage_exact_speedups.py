"""The triage run's faster computations give the very floats of the plain ones: V_random's
whole-number orderings (integer arrays, items along rows), the sampled random reference
kept per process, and the arithmetic estimates kept per problem text."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_budget.triage import _arithmetic as arithmetic
from pytest_budget.triage._random_orderings import _whole_random_values
from pytest_budget.triage._scoring import _sampled_reference, random_reference
from pytest_budget.triage._types import Problem


def _float_positions(cost_rows: np.ndarray, earn_rows: np.ndarray, limits: np.ndarray, perms):
    """The former computation: float64 totals on (resamples x orderings) arrays."""
    spent = np.zeros((cost_rows.shape[0], perms.shape[0]), dtype=np.int64)
    earned = np.zeros(spent.shape)
    for position in range(perms.shape[1]):
        column = perms[:, position]
        spent += cost_rows[:, column]
        earned += np.where(spent <= limits[:, None], earn_rows[:, column], 0.0)
    return earned.mean(axis=1)


@pytest.mark.parametrize(
    ("top_cost", "top_value", "budget_scale"),
    [
        (900, 1, 0.5),  # the default pools' shape: 32-bit totals, 0/1 values
        (2**40, 3, 0.5),  # costs whose running totals need 64 bits
        (50, 2**40, 0.3),  # values whose totals need 64 bits
        (900, 5, 1e9),  # budgets beyond 32 bits (everything fits)
        (900, 5, -1.0),  # negative budgets (nothing fits)
    ],
)
def test_whole_random_values_equal_the_float_positions(
    top_cost: int, top_value: int, budget_scale: float
) -> None:
    rng = np.random.default_rng(top_cost % 97 + top_value % 89)
    n, rows, orderings = 30, 200, 64
    costs = rng.integers(0, top_cost, size=n, dtype=np.int64)
    earn = rng.integers(-top_value, top_value + 1, size=n).astype(np.float64)
    indices = rng.integers(0, n, size=(rows, n))
    limits = np.floor(budget_scale * costs[indices].sum(axis=1).astype(np.float64)).astype(np.int64)
    perms = np.argsort(rng.random((orderings, n)), axis=1, kind="stable")
    got = _whole_random_values(costs[indices], earn[indices], limits, perms)
    expected = _float_positions(costs[indices], earn[indices], limits, perms)
    assert got.dtype == np.float64
    assert got.tobytes() == expected.tobytes()  # bit for bit, -0.0 and all
    assert len(np.unique(got)) > 1 or budget_scale in (1e9, -1.0)  # not a constant


def test_sampled_reference_is_kept_per_process_and_equals_a_fresh_one() -> None:
    rng = np.random.default_rng(3)
    costs, solved = rng.integers(1, 100, size=25), rng.random(25) < 0.7
    values = rng.integers(1, 4, size=25).astype(np.float64)
    budget = int(costs.sum() // 2)
    first = random_reference(costs, solved, values, budget, samples=500, seed=11)
    again = random_reference(costs, solved, values, budget, samples=500, seed=11)
    assert again is first  # the same object: looked up, not drawn again
    fresh = _sampled_reference.__wrapped__(
        costs.astype(np.int64).tobytes(), np.where(solved, values, 0.0).tobytes(), budget, 500, 11
    )
    assert (fresh.mean, fresh.stderr) == (first.mean, first.stderr)
    # By hand: the mean over the same 500 seeded orderings of the value earned while it fits.
    perms = np.argsort(np.random.default_rng(11).random((500, 25)), axis=1, kind="stable")
    earn = np.where(solved, values, 0.0)
    per = [sum(earn[p][np.cumsum(costs[p]) <= budget]) for p in perms]
    assert first.mean == pytest.approx(float(np.mean(per)), rel=1e-12)
    other_seed = random_reference(costs, solved, values, budget, samples=500, seed=12)
    assert other_seed.mean != first.mean


def test_unseeded_random_reference_is_drawn_afresh() -> None:
    rng = np.random.default_rng(4)
    costs, solved = rng.integers(1, 100, size=40), np.ones(40, dtype=bool)
    values = rng.random(40) * 10
    budget = int(costs.sum() // 3)
    means = {
        random_reference(costs, solved, values, budget, samples=20, seed=None).mean  # type: ignore[arg-type]
        for _ in range(5)
    }
    # Five draws of 20 orderings of 40 items with real-valued values: all the same only if
    # they were kept (a coincidence far below one in a million).
    assert len(means) > 1


def test_arithmetic_estimates_kept_by_text_equal_fresh_ones() -> None:
    texts = [
        "Compute: Expression: 12 * 34 + 5",
        "What is (123456 * 789) / 3 - 17 + 4?",
        "Expression: a * 3 + 2",
        "no arithmetic here at all",
        "Expression: " + " + ".join(["9"] * 1500),  # longer than the kept texts
    ]
    for text in texts:
        problem = Problem(id="x", text=text)
        first, again = arithmetic.estimate(problem), arithmetic.estimate(problem)
        assert first == again == arithmetic._estimate_text(text)
    assert arithmetic.estimate(Problem(id="x", text=texts[0])).tokens == 25 + 10 * 2 + 4 * 4


@pytest.mark.parametrize("domain", ["arith", "sokoban"])
def test_a_shorter_unsolvable_supply_is_a_prefix_of_the_full_one(domain: str) -> None:
    # fixtures/triage.py generates only the unsolvable items an injection takes.
    from pytest_budget.fixtures.triage import _PER_INDEX_SUPPLY
    from pytest_budget.triage._pools import unsolvable_supply

    assert domain in _PER_INDEX_SUPPLY
    full = unsolvable_supply(domain, 12, seed=5)
    assert unsolvable_supply(domain, 5, seed=5) == full[:5]
    assert len({item.text for item in full}) == 12
