"""Benchmarks for the planning suite's environment and agent loop (pytest_budget.planning).

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_planning.py            # full
    .venv/bin/python benchmarks/bench_planning.py --quick    # fewer repetitions
    .venv/bin/python benchmarks/bench_planning.py --suite    # also time the default suite

Workloads (all at refinement level 5, the largest tool set: 8 atomics + 28 composites):

* building one query's ``TravelEnv`` (tools, costs) and its Dijkstra optimal path - the
  per-query setup every planning cell pays (target: well under 10 ms);
* a query's blocking set-up (``Blocker``: CostBench's precomputed plan, trigger steps and the
  initial optimal and greedy paths) under three blocks;
* a full oracle episode through ``run_episode`` (messages, tool specs, the reference channel
  with a Dijkstra per step; the reference agent runs inline), static and with 3 blocks;
* 120 oracle episodes run sequentially and concurrently (capacity 8) in one event loop;
* with ``--suite``: the wall time of the default ``pytest --budget-suite=planning`` (six tasks
  x five scenarios x four reference agents, gated against the shipped baselines) run in a
  subprocess from an empty temporary directory (target: well under 60 s).

Each figure is the median over repetitions, with the 95th percentile beside it.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import anyio

from pytest_budget.planning._blocking import Blocker
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import OracleToolAgent
from pytest_budget.planning._tools import TASKS

LEVEL = 5


# The built-in generator's first 20 queries of each task: 120 queries.
QUERIES = [query for task in TASKS for query in generate_queries(task, 20)]


def _timings(fn: Callable[[Query], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        for query in QUERIES:
            start = time.perf_counter()
            fn(query)
            out.append(time.perf_counter() - start)
    return out


def _report(label: str, seconds: list[float]) -> None:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    print(f"{label:<58} median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   n={len(ms)}")


def _env_and_path(query: Query) -> object:
    env = TravelEnv(query.task, LEVEL, query.query_id)
    return env.optimal_path()


def _blocker(query: Query, mode: str) -> object:
    return Blocker(TravelEnv(query.task, LEVEL, query.query_id), query, mode, 3)


def _episode(mode: str, count: int) -> Callable[[Query], object]:
    oracle = OracleToolAgent()

    def one(query: Query) -> object:
        async def main() -> object:
            return await run_episode(query, LEVEL, mode, count, oracle)

        return anyio.run(main)

    return one


def _batch(concurrent: bool) -> float:
    oracle = OracleToolAgent()

    async def main() -> None:
        if not concurrent:
            for query in QUERIES:
                await run_episode(query, LEVEL, "ban_tool", 3, oracle)
            return
        limiter = anyio.CapacityLimiter(8)
        async with anyio.create_task_group() as tg:
            for query in QUERIES:
                tg.start_soon(_one, query, limiter)

    async def _one(query: Query, limiter: anyio.CapacityLimiter) -> None:
        await run_episode(query, LEVEL, "ban_tool", 3, oracle, limiter=limiter)

    start = time.perf_counter()
    anyio.run(main)
    return time.perf_counter() - start


def _suite_seconds() -> tuple[float, str]:
    """Wall time of the default planning suite, and its last output line."""
    command = [sys.executable, "-m", "pytest", "--budget-suite=planning", "-p", "no:cacheprovider"]
    with tempfile.TemporaryDirectory() as empty:
        start = time.perf_counter()
        done = subprocess.run(command, cwd=empty, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0:
        raise SystemExit(f"the planning suite failed ({done.returncode}):\n{done.stdout}")
    return seconds, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition instead of five")
    parser.add_argument(
        "--suite", action="store_true", help="also time the default planning suite (pytest)"
    )
    args = parser.parse_args()
    repeat = 1 if args.quick else 5

    _env_and_path(QUERIES[0])  # warm imports and caches
    _report(
        "TravelEnv(L=5) build only",
        _timings(lambda q: TravelEnv(q.task, LEVEL, q.query_id), repeat),
    )
    _report("TravelEnv(L=5) build + optimal path (Dijkstra)", _timings(_env_and_path, repeat))
    _report(
        "TravelEnv(L=5) build + all tied optimal paths + greedy",
        _timings(
            lambda q: (lambda e: (e.optimal_paths(), e.greedy_path()))(
                TravelEnv(q.task, LEVEL, q.query_id)
            ),
            repeat,
        ),
    )
    for mode in ("cost_change", "ban_tool", "preference_change"):
        _report(
            f"TravelEnv + Blocker set-up (L=5, {mode}, 3 blocks)",
            _timings(functools.partial(_blocker, mode=mode), repeat),
        )
    _report("oracle episode (L=5, static)", _timings(_episode("static", 0), repeat))
    _report("oracle episode (L=5, ban_tool, 3 blocks)", _timings(_episode("ban_tool", 3), repeat))
    _report(
        "oracle episode (L=5, preference_change, 3 blocks)",
        _timings(_episode("preference_change", 3), repeat),
    )
    sequential = _batch(concurrent=False)
    concurrent = _batch(concurrent=True)
    print(
        f"{len(QUERIES)} oracle episodes (ban_tool x3): sequential {sequential:.2f} s, "
        f"concurrent (capacity 8) {concurrent:.2f} s, ratio {sequential / concurrent:.2f}x"
    )
    if args.suite:
        seconds, last = _suite_seconds()
        print(f"default planning suite (pytest --budget-suite=planning): {seconds:.2f} s  [{last}]")


if __name__ == "__main__":
    main()
