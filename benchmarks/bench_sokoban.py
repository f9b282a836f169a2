"""Benchmarks for Sokoban generation and solving (pytest_budget._environments.sokoban).

Run with::

    pytest benchmarks/bench_sokoban.py -p no:cacheprovider --benchmark-only

Each benchmark generates a batch of levels with the spec defaults (reverse-play DFS with
``max_states=300_000``) and solves every one with the reference BFS, the same work the
triage suite does when it builds its Sokoban pool.  Solution-length ranges are stored in
``extra_info`` so they show up in ``--benchmark-json`` output.
"""

from __future__ import annotations

from typing import Any

from pytest_budget._environments.sokoban import generate_level, generate_unsolvable_level, solve


def _generate_and_solve(
    count: int, width: int, height: int, num_boxes: int, search_depth: int = 30
) -> list[int]:
    lengths = []
    for seed in range(count):
        level = generate_level(
            seed=seed, width=width, height=height, num_boxes=num_boxes, search_depth=search_depth
        )
        moves = solve(level).moves
        assert moves is not None
        lengths.append(len(moves))
    return lengths


def test_bench_20_levels_8x8_two_boxes(benchmark: Any) -> None:
    lengths: list[int] = benchmark(_generate_and_solve, 20, 8, 8, 2, 30)
    benchmark.extra_info["solution_lengths"] = [min(lengths), max(lengths)]
    assert len(lengths) == 20


def test_bench_20_levels_6x6_one_box(benchmark: Any) -> None:
    lengths: list[int] = benchmark(_generate_and_solve, 20, 6, 6, 1, 30)
    benchmark.extra_info["solution_lengths"] = [min(lengths), max(lengths)]
    assert len(lengths) == 20


def test_bench_10_unsolvable_levels_7x7(benchmark: Any) -> None:
    def run() -> int:
        levels = [generate_unsolvable_level(seed=seed) for seed in range(10)]
        return sum(solve(level).expanded for level in levels)

    expanded: int = benchmark(run)
    benchmark.extra_info["expanded_total"] = expanded
    assert expanded > 0
