"""Benchmark: what an over-long agent output costs a cell, refused vs. parsed.

Run with::

    .venv/bin/python benchmarks/bench_oversized_outputs.py [--mb 10] [--probes 8]

An estimator answers every probe of ``--probes`` probes with ``--mb`` megabytes of text
(an ``<answer>`` tag buried at the end, as a model stuck in a loop would write).  Prints the
wall time of :func:`~pytest_budget.awareness._evaluate.run_awareness_cell`:

* with the default ``--budget-max-output-chars`` (1,000,000): each reply is refused by its
  size before any parser reads it, and scored ``invalid`` with the size in the reason;
* with the limit raised above the reply's size: each reply goes through the parser.

The same check guards every role (:func:`pytest_budget._core.replies.reply_problem`); the figure
for a planner or a tool agent is the same order.  No timed test relies on it.
"""

from __future__ import annotations

import argparse
import time

import anyio

from pytest_budget._core.replies import output_limit
from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._replay.rollouts import Rollout, Turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--probes", type=int, default=8)
    args = parser.parse_args()
    size = int(args.mb * 1024 * 1024)
    reply = "thinking about it " * (size // 18) + "<answer>[10, 20]</answer>"
    rollouts = [
        Rollout(
            id=f"r{i}",
            env="bench",
            budget={"tokens": 1000.0},
            success=True,
            turns=(Turn({"tokens": 100.0}), Turn({"tokens": 100.0})),
        )
        for i in range(args.probes)
    ]

    class Verbose:
        name = "verbose"
        run_inline = True

        def estimate(self, probe: object) -> str:
            return reply

    for label, limit in (("refused (default limit)", 1_000_000), ("parsed", len(reply) + 1)):
        with output_limit(limit):
            start = time.perf_counter()
            outcome = anyio.run(run_awareness_cell, rollouts, Verbose())
            elapsed = time.perf_counter() - start
        reasons = sorted(outcome.invalid_reasons)
        print(
            f"{label:24s} {args.probes} probes x {len(reply):,} chars: {elapsed:8.3f} s "
            f"(invalid_rate {outcome.scores.get('invalid_rate')}, reasons {reasons[:1]})"
        )


if __name__ == "__main__":
    main()
