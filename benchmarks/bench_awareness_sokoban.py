"""Benchmark: Sokoban puzzles and reference rollouts for the awareness suite.

Run with::

    python benchmarks/bench_awareness_sokoban.py [--n 128] [--seed 42]

Prints, per preset, the time to generate ``n`` puzzles (first run in this process, then the
best of three) and to roll the reference actor out on them (``concurrency=8``), plus the
outcome mix the actor is tuned for: feasible = solved and total tokens <= the cap.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import anyio

from pytest_budget.awareness.sokoban._env import (
    SOKOBAN_PRESETS,
    SokobanPreset,
    SokobanReferenceActor,
    generate_puzzles,
    generate_rollouts,
)


def _timed_puzzles(preset: SokobanPreset, n: int, seed: int) -> tuple[float, float]:
    start = time.perf_counter()
    generate_puzzles(preset, n, seed)
    first = time.perf_counter() - start
    best = first
    for _ in range(3):
        start = time.perf_counter()
        generate_puzzles(preset, n, seed)
        best = min(best, time.perf_counter() - start)
    return first, best


def _report(preset: SokobanPreset, n: int, seed: int) -> None:
    first, best = _timed_puzzles(preset, n, seed)
    print(f"{preset.name}: {n} puzzles in {first:.3f}s (first), {best:.3f}s (best of 3)")

    # Seeded like the suite's reference actor, so the outcome mix is the default run's.
    actor = SokobanReferenceActor(seed=seed)
    start = time.perf_counter()
    rollouts = anyio.run(generate_rollouts, preset, n, seed, actor)
    elapsed = time.perf_counter() - start
    print(f"  {n} reference rollouts (concurrency 8) in {elapsed:.3f}s")

    feasible = sum(r.feasible for r in rollouts)
    unsolved = sum(not r.success for r in rollouts)
    over = sum(r.success and not r.feasible for r in rollouts)
    print(
        f"  feasible {feasible}/{n} ({100 * feasible / n:.1f}%), solved but over budget "
        f"{over} ({100 * over / n:.1f}%), unsolved {unsolved} ({100 * unsolved / n:.1f}%)"
    )
    ends = Counter(str(r.meta["end_reason"]) for r in rollouts)
    print("  end reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(ends.items())))
    turns = [r.T for r in rollouts]
    totals = sorted(r.total()["tokens"] for r in rollouts)
    per_turn = sorted(t.usage["tokens"] for r in rollouts for t in r.turns)
    invalid = sum("error" in t.info for r in rollouts for t in r.turns)
    print(
        f"  turns mean {statistics.mean(turns):.2f} (max {max(turns)}); total tokens median "
        f"{statistics.median(totals):.0f}, P10 {totals[len(totals) // 10]:.0f}, "
        f"P90 {totals[9 * len(totals) // 10]:.0f} (cap {preset.token_cap})"
    )
    print(
        f"  tokens per turn min {per_turn[0]:.0f}, median {statistics.median(per_turn):.0f}, "
        f"max {per_turn[-1]:.0f}; no-op turns {invalid}/{len(per_turn)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    for preset in SOKOBAN_PRESETS.values():
        _report(preset, args.n, args.seed)


if __name__ == "__main__":
    main()
