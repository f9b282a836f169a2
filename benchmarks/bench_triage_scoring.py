"""Benchmarks for triage scoring (DESIGN §6 performance targets).

The file name does not match ``test_*.py``, so pass it explicitly::

    /tmp/venv/bin/pytest benchmarks/bench_triage_scoring.py -p no:cacheprovider --benchmark-only

Targets: the random reference over 1000 orderings x 30 items in milliseconds, and the exact
knapsack oracle with arbitrary values for n = 30 and B up to 10^6 in well under a second.
Each benchmark also checks its result, so a fast wrong answer does not pass.
"""

from __future__ import annotations

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from pytest_budget.triage._scoring import oracle_value, random_reference

BUDGET = 1_000_000


def _pool(n: int, cost_total: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n items with random costs summing to about ``cost_total`` and random values."""
    rng = np.random.default_rng(seed)
    costs = rng.integers(1, 2 * cost_total // n, size=n)
    solved = rng.random(n) < 0.7
    values = rng.uniform(0.1, 10.0, size=n)
    return costs, solved, values


def test_random_reference_1000_orderings_x_30_items(benchmark: BenchmarkFixture) -> None:
    costs, solved, values = _pool(30, 2 * 60_000, seed=1)
    budget = int(costs.sum()) // 2
    result = benchmark(random_reference, costs, solved, values, budget, samples=1000, seed=7)
    assert not result.exact and result.samples == 1000
    assert 0.0 < result.mean < float(values[solved].sum())


@pytest.mark.parametrize(
    "cost_total",
    [BUDGET * 5 // 4, 2 * BUDGET, 4 * BUDGET],
    ids=["costs-sum-1.25B", "costs-sum-2B", "costs-sum-4B"],
)
def test_oracle_arbitrary_values_n30_b1e6(benchmark: BenchmarkFixture, cost_total: int) -> None:
    costs, _, values = _pool(30, cost_total, seed=2)
    solved = np.ones(30, dtype=bool)  # every item a candidate: the hardest case
    assert costs.sum() > BUDGET  # otherwise "take everything" short-circuits the search
    result = benchmark(oracle_value, costs, solved, values, BUDGET)
    assert int(costs[list(result.chosen)].sum()) <= BUDGET


def test_oracle_arbitrary_values_n60_b1e6(benchmark: BenchmarkFixture) -> None:
    # Past meet-in-the-middle's size and the DP table's limit: branch and bound.
    costs, _, values = _pool(60, 2 * BUDGET, seed=3)
    solved = np.ones(60, dtype=bool)
    result = benchmark(oracle_value, costs, solved, values, BUDGET)
    assert int(costs[list(result.chosen)].sum()) <= BUDGET


def test_oracle_uniform_values_n30_b1e6(benchmark: BenchmarkFixture) -> None:
    costs, solved, _ = _pool(30, 2 * BUDGET, seed=4)
    result = benchmark(oracle_value, costs, solved, None, BUDGET)
    assert result.value == len(result.chosen)


def test_random_reference_exact_20_items(benchmark: BenchmarkFixture) -> None:
    # The exact expectation (no sampling) at its largest supported size.
    costs, solved, values = _pool(20, 2 * 40_000, seed=5)
    budget = int(costs.sum()) // 2
    result = benchmark(random_reference, costs, solved, values, budget, seed=0, exact_limit=20)
    assert result.exact and result.stderr == 0.0
