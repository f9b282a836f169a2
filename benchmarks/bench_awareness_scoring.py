"""Benchmarks for awareness scoring (DESIGN §6: scoring 100k probes well under a second).

    pytest benchmarks/bench_awareness_scoring.py -p no:cacheprovider --benchmark-only

Two workloads: every metric over 100k pre-built probe records (``score_probes``, the
vectorised core), and the whole replay path for 100k probes answered by an async estimator
(probe building, the estimator call, parsing, scoring) to show the harness overhead.
Each benchmark also checks its result.
"""

from __future__ import annotations

import anyio
import numpy as np
from pytest_benchmark.fixture import BenchmarkFixture

from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._replay.answers import Impossible, Interval
from pytest_budget.awareness._replay.rollouts import Rollout, Turn
from pytest_budget.awareness._scoring.metrics import ProbeRecord, ProbeTable, score_probes

N_ROLLOUTS = 10_000
TURNS = 11  # 10 probes per rollout: 100k probes


def _records() -> list[ProbeRecord]:
    rng = np.random.default_rng(0)
    records = []
    for r in range(N_ROLLOUTS):
        usage = rng.integers(50, 400, size=TURNS).astype(float)
        cumulative = np.cumsum(usage)
        success = bool(rng.random() < 0.7)
        feasible = success and cumulative[-1] <= 2500
        for k in range(1, TURNS):
            remaining = cumulative[-1] - cumulative[k - 1]
            if rng.random() < 0.3:
                estimate: Interval | Impossible = Impossible()
            else:
                lo = remaining * rng.uniform(0.5, 1.0)
                estimate = Interval(lo, lo + rng.uniform(0, remaining))
            records.append(
                ProbeRecord(
                    f"r{r}",
                    k,
                    TURNS,
                    float(cumulative[k - 1]),
                    float(cumulative[-1]),
                    2500.0,
                    success,
                    feasible,
                    estimate,
                )
            )
    return records


def test_score_100k_probes(benchmark: BenchmarkFixture) -> None:
    records = _records()
    table = ProbeTable.from_records(records)
    scores = benchmark(score_probes, table)
    assert scores["n_probes"] == 100_000
    assert 0.0 < float(scores["macro_f1_all"] or 0) < 1.0


def test_build_table_and_score_100k_probes(benchmark: BenchmarkFixture) -> None:
    records = _records()
    scores = benchmark(score_probes, records)
    assert scores["n_probes"] == 100_000


class _Async:
    name = "async-fixed"

    async def estimate(self, probe: object) -> str:
        return "<answer>[100, 900]</answer>"


def test_replay_100k_probes_end_to_end(benchmark: BenchmarkFixture) -> None:
    rng = np.random.default_rng(1)
    rollouts = [
        Rollout(f"r{i}", "bench", {"tokens": 2500.0}, bool(rng.random() < 0.7),
                tuple(Turn({"tokens": float(u)}) for u in rng.integers(50, 400, size=TURNS)))
        for i in range(N_ROLLOUTS)
    ]  # fmt: skip

    def run() -> object:
        return anyio.run(lambda: run_awareness_cell(rollouts, _Async()))

    outcome = benchmark.pedantic(run, rounds=1, iterations=1)
    assert outcome.n_probes == 100_000 and outcome.n_errors == 0  # type: ignore[attr-defined]
