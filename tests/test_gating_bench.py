"""The planning gate's measurement (benchmarks/bench_planning_gate.py) measures the suite's gate.

The benchmark gates thousands of runs per cell with array code; these tests hold it to the
suite's own scoring and gating functions on a small cell, and pin its binomial bounds.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from pytest_budget._stats.gated_metrics import metric_specs
from pytest_budget.planning._options import parse_scenarios

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_planning_gate.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_planning_gate", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scenario", ["static@2", "ban_tool:1@5"])
def test_array_gate_agrees_with_the_suite(bench: ModuleType, scenario: str) -> None:
    # Every checked run is also scored by cell_summary / per_query_parts and gated by
    # compare, compare_ci, compare_overlap and compare_paired: no decision, score or
    # p-value may differ (mismatches), nor any screened p-value at any level.
    (parsed,) = parse_scenarios(scenario)
    out = bench.measure_cell(("dining", parsed), n=30, p=0.8, baselines=3, reruns=8,
                             alphas=[0.01, 0.001], checks=8, power_reruns=3)  # fmt: skip
    assert out["mismatches"] == 0
    assert out["screen"][1] == 0
    assert len(out["rates"]["alarm"]["paired@0.001"]) == 3  # one rate per baseline
    assert out["leaves"] > 30  # the agent's flips matter: more episodes than queries


def test_leaf_probabilities_sum_to_one_per_query(bench: ModuleType) -> None:
    (parsed,) = parse_scenarios("ban_tool:1@5")
    bench._patch()
    cell = bench.build_cell("dining", parsed, 12)
    for p in (0.0, 0.3, 0.8, 1.0):
        totals = np.add.reduceat(cell.probabilities(p), cell.starts[:-1])
        assert totals == pytest.approx(np.ones(12))
    # p = 1 is the oracle: it follows the ground truth, so its expected EMR is 1.
    assert cell.expected(cell.probabilities(1.0), "emr") == pytest.approx(1.0)


def test_array_gate_by_hand(bench: ModuleType) -> None:
    # One metric moved per case, 20 queries, values 0/1 over denominators 1.
    specs = metric_specs("planning")
    n = 20

    def runs(em: list[float], cost: float = 0.0) -> object:
        num = np.zeros((5, 1, n))
        den = np.ones((5, 1, n))
        num[0, 0] = em  # emr
        num[2, 0] = cost  # cost_gap, per query
        scores = num.sum(-1) / den.sum(-1)
        ci = np.stack([scores - 0.01, scores + 0.01], axis=-1)
        return bench.Runs(num, den, scores, ci)

    base = runs([1.0] * n)
    # 12 of 20 exact matches lost, none gained: p = 2**-12 < 0.001 and 60 points down.
    lost = runs([0.0] * 12 + [1.0] * 8)
    fails, _, p = bench.decide(base, lost, specs, [0.001])
    assert p[0, 0] == 2.0**-12 and bool(fails["paired@0.001"][0])
    # 9 lost: too few changed queries for the test at 0.001 (2**-9 > 0.001), so the
    # interval-overlap rule decides (here: the new interval is far below the stored one).
    nine = runs([0.0] * 9 + [1.0] * 11)
    fails, _, p = bench.decide(base, nine, specs, [0.001])
    assert bool(fails["paired@0.001"][0]) and bool(fails["overlap"][0])
    # 1 of 20 lost: 5 points down, exactly the tolerance: not tested, never a failure.
    one = runs([0.0] + [1.0] * 19)
    fails, _, p = bench.decide(base, one, specs, [0.001])
    assert not bool(fails["paired@0.001"][0]) and p[0, 0] == 1.0


def test_clopper_pearson_bounds(bench: ModuleType) -> None:
    # 0 of N: the upper bound solves (1 - q)**N = 0.025.
    assert bench.clopper_pearson(0, 1000, "upper") == pytest.approx(1 - 0.025 ** (1 / 1000))
    # N of N: the lower bound solves q**N = 0.025.
    assert bench.clopper_pearson(200, 200, "lower") == pytest.approx(0.025 ** (1 / 200))
    # 5 of 100: the upper bound q has P(X <= 5) = 0.025 (about 0.113).
    q = bench.clopper_pearson(5, 100, "upper")
    cdf = sum(math.comb(100, i) * q**i * (1 - q) ** (100 - i) for i in range(6))
    assert cdf == pytest.approx(0.025, abs=1e-6) and 0.11 < q < 0.12
