"""Reference triage planners: the baselines every agent is compared with.

- ``oracle`` knows the ground truth (y_i, c_i) and plays the knapsack optimum; it must
  score eta = 1 in both regimes, which makes it a check of the scorer itself.
- ``random`` shuffles the pool (seeded) and splits the budget evenly.
- ``cheapest-first`` reads only the problem texts: it estimates cost and solvability with
  cheap features, skips what looks unsolvable and fills the budget cheapest first.
- ``attempt-all`` lists every item in pool order with an equal split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from pytest_budget.triage._domains import estimate_any
from pytest_budget.triage._scoring import oracle_value
from pytest_budget.triage._types import Baseline, Plan, PlanEntry, PlanRequest

__all__ = [
    "REFERENCE_PLANNERS",
    "AttemptAllPlanner",
    "CheapestFirstPlanner",
    "OraclePlanner",
    "RandomPlanner",
    "derive_seed",
]


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes (sha256, never ``hash()``)."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _even_split(ids: list[str], budget: int) -> Plan:
    if not ids:
        return Plan()
    share = budget // len(ids)
    return Plan(entries=tuple(PlanEntry(item_id, share) for item_id in ids))


@dataclass
class OraclePlanner:
    """Plays the knapsack optimum from ground truth; bind the truth with :meth:`with_truth`."""

    truth: Mapping[str, Baseline] = field(default_factory=dict)
    name: str = "oracle"
    run_inline: ClassVar[bool] = True  # quick, pure computation: no worker thread per call

    def with_truth(self, truth: Mapping[str, Baseline]) -> OraclePlanner:
        return OraclePlanner(truth=dict(truth), name=self.name)

    def plan(self, request: PlanRequest) -> Plan:
        items = [problem for problem in request.items if problem.id in self.truth]
        if not items:
            return Plan()
        costs = [self.truth[p.id].tokens for p in items]
        solved = [self.truth[p.id].solved for p in items]
        values = [p.value for p in items]
        best = oracle_value(costs, solved, values, request.budget)
        chosen = sorted(best.chosen, key=lambda i: (costs[i], items[i].id))
        return Plan(entries=tuple(PlanEntry(items[i].id, costs[i]) for i in chosen))


@dataclass
class RandomPlanner:
    """Every item in a seeded random order, budget split evenly."""

    seed: int = 0
    name: str = "random"
    run_inline: ClassVar[bool] = True  # quick, pure computation: no worker thread per call

    def plan(self, request: PlanRequest) -> Plan:
        ids = [problem.id for problem in request.items]
        rng = np.random.default_rng(derive_seed(self.seed, request.pool, request.budget))
        order = [ids[i] for i in rng.permutation(len(ids))]
        return _even_split(order, request.budget)


@dataclass
class AttemptAllPlanner:
    """Every item in pool order, budget split evenly."""

    name: str = "attempt-all"
    run_inline: ClassVar[bool] = True  # quick, pure computation: no worker thread per call

    def plan(self, request: PlanRequest) -> Plan:
        return _even_split([problem.id for problem in request.items], request.budget)


@dataclass
class CheapestFirstPlanner:
    """Skip what looks unsolvable, then take items by estimated cost per expected point.

    Allocations are the estimate times ``margin`` so that a modest underestimate still
    fits under the enforced regime; whatever budget is left is spread over the chosen
    items in proportion to their estimates.
    """

    margin: float = 1.25
    min_p_solve: float = 0.5
    name: str = "cheapest-first"
    run_inline: ClassVar[bool] = True  # quick, pure computation: no worker thread per call

    def plan(self, request: PlanRequest) -> Plan:
        scored = []
        for problem in request.items:
            estimate = estimate_any(problem)
            if estimate.p_solve < self.min_p_solve:
                continue
            tokens = max(1, round(estimate.tokens * self.margin))
            worth = problem.value * estimate.p_solve
            scored.append((tokens / worth, tokens, problem.id))
        scored.sort()
        chosen: list[tuple[str, int]] = []
        spent = 0
        for _, tokens, item_id in scored:
            if spent + tokens <= request.budget:
                chosen.append((item_id, tokens))
                spent += tokens
        if chosen and spent < request.budget:
            # Spread the slack proportionally: extra headroom helps under enforcement.
            scale = request.budget / spent
            chosen = [(item_id, int(tokens * scale)) for item_id, tokens in chosen]
        return Plan(entries=tuple(PlanEntry(item_id, tokens) for item_id, tokens in chosen))


#: Factories of the built-in planners, by ``--budget-agent`` name, given the run's seed.
REFERENCE_PLANNERS: dict[str, type] = {
    "oracle": OraclePlanner,
    "random": RandomPlanner,
    "cheapest-first": CheapestFirstPlanner,
    "attempt-all": AttemptAllPlanner,
}
