"""False-alarm rate and power of the planning gate for an agent that samples (issue 17, item 8).

The reference agents are deterministic, so the default run never moves; the risk is a
sampling agent.  This script plays one: at each turn it takes the ground truth's next call
with probability ``p`` and the greedy's choice otherwise, from an RNG seeded by
``sha256(sampling seed, query id, turn)``.  For every default cell (six tasks x the five
default scenarios) it

1. records a baseline with sampling seed 0 (scores and bootstrap intervals, exactly as the
   suite computes them), then
2. reruns the same agent with sampling seeds 1..R on the same queries and counts how often the
   gate fails the cell (**false alarms**), and
3. reruns a *regressed* agent (``p`` lowered so EMR drops by about 20 points) with seeds
   1..R and counts how often the gate catches it (**power**).

Both gate rules are measured: ``tolerance`` (the default: new point vs stored point, per-metric
tolerances of ``pytest_budget.metrics``) and ``ci`` (the new interval must lie wholly on the
worse side of the stored point).  Run::

    python benchmarks/bench_planning_gate.py --reruns 20 --queries 10

and, to see what more queries per task buy, ``--queries 50`` (slower).  Prints one line per
(rule, queries): the mean and worst per-cell false-alarm rate, and the mean and worst power.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import anyio

from pytest_budget.gating import compare, compare_ci
from pytest_budget.metrics import metric_specs
from pytest_budget.options import DEFAULT_SCENARIOS, parse_scenarios
from pytest_budget.planning.agents import _ReferenceToolAgent
from pytest_budget.planning.costs import derive_seed
from pytest_budget.planning.env import greedy_pick
from pytest_budget.planning.episode import ReferenceView, ToolAgentObservation
from pytest_budget.planning.evaluate import run_planning_cell
from pytest_budget.planning.intervals import cell_summary
from pytest_budget.planning.queries import generate_queries
from pytest_budget.planning.tools import TASKS, Tool


class SamplingToolAgent(_ReferenceToolAgent):
    """Ground truth's next call with probability ``p``, else the greedy's choice."""

    name: ClassVar[str] = "sampling"
    wants_optimal_next: ClassVar[bool] = True

    def __init__(self, seed: int, p: float) -> None:
        self.seed, self.p = seed, p

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool | None:
        rng = random.Random(derive_seed(f"{self.seed}:{observation.query_id}:{observation.step}"))
        if view.optimal_next is not None and rng.random() < self.p:
            return next(t for t in view.tools if t.name == view.optimal_next)
        tools = [t for t in view.tools if t.name not in view.banned]
        return greedy_pick(tools, view.costs, view.held, view.previous_output)


def _cell(queries: Sequence[Any], scenario: Any, agent: object, cell_id: str) -> dict[str, Any]:
    outcome = anyio.run(
        lambda: run_planning_cell(queries, scenario.level, scenario.mode, scenario.blocks, agent)
    )
    summary = cell_summary([outcome], seed=42, cell_id=cell_id, level=0.95, resamples=1000)
    return summary.snapshot_fields()


def measure(reruns: int, n_queries: int, p: float, p_regressed: float) -> dict[str, Any]:
    specs = metric_specs("planning")
    scenarios = parse_scenarios(DEFAULT_SCENARIOS)
    alarms: dict[str, list[float]] = {"tolerance": [], "ci": []}
    power: dict[str, list[float]] = {"tolerance": [], "ci": []}
    emr_drop: list[float] = []
    for task in TASKS:
        queries = generate_queries(task, n_queries)
        for scenario in scenarios:
            cell_id = f"{task}-{scenario.id}"
            base = _cell(queries, scenario, SamplingToolAgent(0, p), cell_id)
            for rule in ("tolerance", "ci"):
                alarms[rule].append(0.0)
                power[rule].append(0.0)
            for seed in range(1, reruns + 1):
                for regressed, table in ((False, alarms), (True, power)):
                    agent = SamplingToolAgent(seed, p_regressed if regressed else p)
                    new = _cell(queries, scenario, agent, cell_id)
                    tol = compare(base["scores"], new["scores"], specs)
                    ci = compare_ci(base["scores"], new["scores"], new.get("ci", {}), specs)
                    table["tolerance"][-1] += bool(tol) / reruns
                    table["ci"][-1] += bool(ci) / reruns
                    if regressed and base["scores"]["emr"] is not None:
                        if new["scores"]["emr"] is not None:
                            emr_drop.append(base["scores"]["emr"] - new["scores"]["emr"])
    return {"alarms": alarms, "power": power, "emr_drop": sum(emr_drop) / max(1, len(emr_drop))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10, help="queries per task")
    parser.add_argument("--p", type=float, default=0.8, help="the agent's P(ground truth)")
    parser.add_argument("--p-regressed", type=float, default=0.5)
    args = parser.parse_args()
    start = time.perf_counter()
    out = measure(args.reruns, args.queries, args.p, args.p_regressed)
    took = time.perf_counter() - start
    print(
        f"queries/task={args.queries} reruns={args.reruns} p={args.p} "
        f"p_regressed={args.p_regressed} mean EMR drop of the regression="
        f"{out['emr_drop']:.3f} ({took:.0f} s)"
    )
    for rule in ("tolerance", "ci"):
        fa, pw = out["alarms"][rule], out["power"][rule]
        print(
            f"  gate={rule:9s} false alarms per cell: mean {sum(fa) / len(fa):.3f}, "
            f"worst {max(fa):.3f}; power per cell: mean {sum(pw) / len(pw):.3f}, "
            f"worst {min(pw):.3f}"
        )


if __name__ == "__main__":
    main()
