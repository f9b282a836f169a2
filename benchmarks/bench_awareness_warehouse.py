"""Benchmark: Warehouse reference rollouts and challenge-conditioned budgets.

Run with::

    python benchmarks/bench_awareness_warehouse.py [--n 128] [--seed 42]

Prints, for the reference actor and its noisy variant, the time to roll ``n`` episodes out
(``concurrency=8``; the first run pays imports and the panel load, then the best of three),
the final-cash spread, bankruptcies, and the time and outcome of
``condition_challenges(preset="half_reachable", seed=42)``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio

from pytest_budget.awareness._replay.rollouts import Rollout
from pytest_budget.awareness.warehouse import (
    condition_challenges,
    generate_rollouts,
    load_demand_panel,
)
from pytest_budget.awareness.warehouse._policy import NoisyReorderPointPolicy, ReorderPointPolicy


def _timed(actor: object, n: int, seed: int) -> tuple[list[Rollout], float, float]:
    panel = load_demand_panel()
    times = []
    rollouts: list[Rollout] = []
    for _ in range(4):
        start = time.perf_counter()
        rollouts = anyio.run(lambda: generate_rollouts(n, seed, actor, panel=panel))
        times.append(time.perf_counter() - start)
    return rollouts, times[0], min(times[1:])


def _report(label: str, actor: object, n: int, seed: int) -> None:
    rollouts, first, best = _timed(actor, n, seed)
    turns = sum(r.T for r in rollouts)
    print(
        f"{label}: {n} rollouts ({turns} turns) in {first:.3f}s (first), {best:.3f}s "
        f"(best of 3), {1000 * best / turns:.2f} ms/turn"
    )
    cash = sorted(float(r.meta["final_cash_usd"]) for r in rollouts)
    print(
        f"  final cash: min ${cash[0]:,.0f}, median ${statistics.median(cash):,.0f}, "
        f"max ${cash[-1]:,.0f}; bankrupt {sum(bool(r.meta['bankrupt']) for r in rollouts)}"
    )
    start = time.perf_counter()
    conditioned = condition_challenges(rollouts, seed=42)
    elapsed = time.perf_counter() - start
    feasible = sum(r.feasible for r in conditioned)
    print(
        f"  condition_challenges: {elapsed * 1000:.1f} ms; feasible {feasible}/{n}, "
        f"probes (T-1 per rollout) {sum(max(r.T - 1, 0) for r in conditioned)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    _report("reference", ReorderPointPolicy(), args.n, args.seed)
    _report("noisy (0.3)", NoisyReorderPointPolicy(), args.n, args.seed)


if __name__ == "__main__":
    main()
