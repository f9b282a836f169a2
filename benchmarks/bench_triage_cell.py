"""Scoring a 1,000-plan x 30-item triage cell with the repair pass (issue 19 target: < 50 ms).

Run::

    python benchmarks/bench_triage_cell.py            # best of --repeat runs, per stage

One cell: a 30-item pool with Phase 0 ground truth, and 1,000 planner replies as raw model
text, each with prose around the JSON and roughly one entry in ten needing the repair pass
(a count written "1,200", a fraction, a negative count, 1e30, an unknown id, a repeated id).
Timed: :func:`~pytest_budget.triage.parse_plan` on every reply (the repair pass), then
:func:`~pytest_budget.triage._batch.score_plans` (oracle and 1,000-ordering random reference
once, both regimes for every plan).  The script checks its result against
:func:`~pytest_budget.triage.score_plan` on a sample, so a fast wrong answer fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

from pytest_budget.triage import Baseline, Item, budget_for, parse_plan, score_plan
from pytest_budget.triage._batch import score_plans

N_ITEMS = 30
N_PLANS = 1000
TARGET_MS = 50.0


def _cell(seed: int) -> tuple[list[Item], dict[str, Baseline], list[str]]:
    rng = random.Random(seed)
    items = [Item(id=f"p{i}", text=f"problem {i}") for i in range(N_ITEMS)]
    truth = {
        item.id: Baseline(solved=rng.random() < 0.7, tokens=rng.randint(50, 4000)) for item in items
    }
    messy: list[object] = ["1,200", 12.5, -5, 1e30, " 300 tokens"]
    replies = []
    for _ in range(N_PLANS):
        order = rng.sample([item.id for item in items], rng.randint(5, N_ITEMS))
        entries: list[dict[str, object]] = []
        for item_id in order:
            roll = rng.random()
            if roll < 0.06:
                entries.append({"id": item_id, "tokens": rng.choice(messy)})
            elif roll < 0.08:
                entries.append({"id": "not-in-pool", "tokens": 100})
            elif roll < 0.10 and entries:
                entries.append({"id": entries[0]["id"], "tokens": 100})  # repeated id
            else:
                entries.append({"id": item_id, "tokens": rng.randint(0, 3000)})
        replies.append(f"Here is my plan:\n{json.dumps({'plan': entries})}\nGood luck!")
    return items, truth, replies


def run_once(
    items: list[Item], truth: dict[str, Baseline], replies: list[str]
) -> tuple[float, float, float]:
    """Wall ms of the repair pass and of the scoring, and CPU ms of both."""
    budget = budget_for([b.tokens for b in truth.values()], 0.5)
    pool = frozenset(item.id for item in items)
    cpu = time.process_time()
    start = time.perf_counter()
    plans = [parse_plan(reply, pool) for reply in replies]
    parsed = time.perf_counter()
    scores = score_plans(plans, items, truth, budget, seed=7)
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    assert len(scores) == N_PLANS
    for k in range(0, N_PLANS, 97):  # the batch must agree with the one-by-one scorer
        assert scores[k] == score_plan(plans[k], items, truth, budget, seed=7)
    return (parsed - start) * 1000, (done - parsed) * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    items, truth, replies = _cell(seed=1)
    runs = [run_once(items, truth, replies) for _ in range(args.repeat)]
    best = min(runs, key=lambda run: run[0] + run[1])
    total = best[0] + best[1]
    print(
        f"{N_PLANS} plans x {N_ITEMS} items: repair pass {best[0]:.1f} ms + scoring "
        f"{best[1]:.1f} ms = {total:.1f} ms wall ({best[2]:.1f} ms CPU; best of "
        f"{args.repeat}; target < {TARGET_MS:.0f} ms; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
