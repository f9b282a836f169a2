"""Score one triage cell: a pool, a budget level and a planner.

:func:`score_plan` is pure (no agent calls): it executes a parsed plan under regime U and
regime E against the Phase 0 ground truth and normalises by the oracle and the random
reference.  :func:`run_cell` asks the planner, parses and repairs its answer, and scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio

from pytest_budget.roles import AgentError, InvalidOutput, agent_name, call_role
from pytest_budget.triage.plan_parser import parse_plan
from pytest_budget.triage.planners import OraclePlanner, derive_seed
from pytest_budget.triage.prompts import render_plan_prompt
from pytest_budget.triage.scoring import (
    detection_rate,
    efficiency,
    execute_advisory,
    execute_enforced,
    oracle_value,
    random_reference,
    regret,
    waste_rate,
)
from pytest_budget.triage.types import Baseline, Item, Plan, PlanRequest, PlanStatus, Pool

__all__ = ["CellOutcome", "TriageScores", "budget_for", "run_cell", "score_plan"]

_DOMAIN_WORDING = {
    "arith": "arithmetic problems",
    "sokoban": "Sokoban puzzles",
}


def budget_for(costs: Sequence[int], alpha: float) -> int:
    """B = floor(alpha * sum c_i) (TRIAGE §3.2)."""
    # The tiny epsilon keeps e.g. 0.3 * 10 from flooring to 2 through float error.
    return math.floor(alpha * sum(costs) + 1e-9)


@dataclass(frozen=True)
class TriageScores:
    """Every score of one triage cell (None where the paper leaves a score undefined)."""

    v_u: float
    v_e: float
    v_oracle: float
    v_random: float
    v_random_stderr: float
    eta_u: float
    eta_e: float
    regret_u: float | None
    regret_e: float | None
    detection: float | None
    waste: float | None
    plan_status: str
    planned_ids: tuple[str, ...] = ()
    executed_u: tuple[str, ...] = ()
    executed_e: tuple[str, ...] = ()
    scored_e: tuple[str, ...] = ()

    def as_scores(self) -> dict[str, float | None]:
        """The numeric scores, as stored in snapshots and the report's ``scores`` object."""
        keys = (
            "v_u", "v_e", "v_oracle", "v_random", "eta_u", "eta_e",
            "regret_u", "regret_e", "detection", "waste",
        )  # fmt: skip
        return {key: _clean(getattr(self, key)) for key in keys}

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
            elif isinstance(value, float):
                data[key] = _clean(value)
        return data


def _clean(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 9)


def score_plan(
    plan: Plan,
    items: Sequence[Item],
    baselines: Mapping[str, Baseline],
    budget: int,
    *,
    seed: int,
    samples: int = 1000,
) -> TriageScores:
    """Execute ``plan`` under regimes U and E and normalise (TRIAGE §3.2, App. D).

    Only items with a baseline take part (the gradeable items).  Plan entries naming
    other ids are ignored; entries with 0 tokens are not in the planned set.
    """
    gradeable = [item for item in items if item.id in baselines]
    index = {item.id: i for i, item in enumerate(gradeable)}
    costs = [baselines[item.id].tokens for item in gradeable]
    solved = [baselines[item.id].solved and not item.unsolvable for item in gradeable]
    values = [item.value for item in gradeable]

    planned = [entry for entry in plan.planned if entry.id in index]
    order = [index[entry.id] for entry in planned]
    allocations = [entry.tokens for entry in planned]

    run_u = execute_advisory(order, costs, solved, values, budget)
    run_e = execute_enforced(order, allocations, costs, solved, values, budget)
    best = oracle_value(costs, solved, values, budget)
    reference = random_reference(costs, solved, values, budget, samples=samples, seed=seed)

    unsolvable = [item.id for item in gradeable if item.unsolvable]
    planned_ids = [entry.id for entry in planned]
    detection = detection_rate(planned_ids, unsolvable) if unsolvable else None
    waste = (
        waste_rate({entry.id: entry.tokens for entry in planned}, unsolvable)
        if unsolvable
        else None
    )
    return TriageScores(
        v_u=run_u.value,
        v_e=run_e.value,
        v_oracle=best.value,
        v_random=reference.mean,
        v_random_stderr=reference.stderr,
        eta_u=efficiency(run_u.value, best.value, reference.mean),
        eta_e=efficiency(run_e.value, best.value, reference.mean),
        regret_u=regret(run_u.value, best.value),
        regret_e=regret(run_e.value, best.value),
        detection=detection,
        waste=waste,
        plan_status=plan.status.value,
        planned_ids=tuple(planned_ids),
        executed_u=tuple(gradeable[i].id for i in run_u.executed),
        executed_e=tuple(gradeable[i].id for i in run_e.executed),
        scored_e=tuple(gradeable[i].id for i in run_e.scored),
    )


@dataclass(frozen=True)
class CellOutcome:
    """What happened in one cell: the plan, its scores and any problem with the agent.

    ``outcome`` is ``ok``, ``invalid`` (the plan could not be parsed; scored as the empty
    plan) or ``error`` (the planner raised; also scored as the empty plan).
    """

    budget: int
    plan: Plan
    scores: TriageScores
    outcome: str = "ok"
    reason: str | None = None
    agent: str = ""
    repairs: tuple[str, ...] = field(default=())


async def run_cell(
    pool: Pool,
    baselines: Mapping[str, Baseline],
    alpha: float,
    planner: Any,
    *,
    seed: int,
    variant: str = "A",
    limiter: anyio.CapacityLimiter | None = None,
    samples: int = 1000,
) -> CellOutcome:
    """Ask ``planner`` for a plan over ``pool`` at budget level ``alpha`` and score it."""
    gradeable = [item for item in pool.items if item.id in baselines]
    budget = budget_for([baselines[item.id].tokens for item in gradeable], alpha)
    problems = tuple(item.problem for item in gradeable)
    prompt = render_plan_prompt(
        problems,
        budget,
        variant=variant,
        domain=_DOMAIN_WORDING.get(pool.domain, "problems"),
    )
    request = PlanRequest(
        items=problems, budget=budget, prompt=prompt, variant=variant, pool=pool.name
    )
    if isinstance(planner, OraclePlanner):
        # The oracle sees the same ground truth the scorer uses: unsolvable items never pay.
        planner = planner.with_truth(
            {
                item.id: Baseline(
                    solved=baselines[item.id].solved and not item.unsolvable,
                    tokens=baselines[item.id].tokens,
                )
                for item in gradeable
            }
        )
    name = agent_name(planner)
    outcome, reason = "ok", None
    try:
        raw = await call_role(planner, "planner", request, limiter=limiter)
        plan = _read_plan(raw, [item.id for item in gradeable])
    except InvalidOutput as exc:  # nothing a plan could be read from: invalid, not error
        plan = Plan(status=PlanStatus.UNPARSEABLE, repairs=(f"planner {exc.reason}",))
    except AgentError as exc:
        plan = Plan(status=PlanStatus.UNPARSEABLE, repairs=(exc.reason,))
        outcome, reason = "error", str(exc)
    if outcome == "ok" and plan.status is PlanStatus.UNPARSEABLE:
        outcome = "invalid"
        reason = "; ".join(plan.repairs) or "plan could not be parsed"
    scores = score_plan(
        plan,
        gradeable,
        baselines,
        budget,
        seed=derive_seed(seed, "random-reference", pool.name, alpha),
        samples=samples,
    )
    return CellOutcome(
        budget=budget,
        plan=plan,
        scores=scores,
        outcome=outcome,
        reason=reason,
        agent=name,
        repairs=plan.repairs,
    )


def _read_plan(raw: object, pool_ids: list[str]) -> Plan:
    """:func:`parse_plan`, with anything it raises on a hostile object read as unparseable."""
    try:
        return parse_plan(raw, pool_ids)
    except Exception as exc:
        reason = f"reading the plan ({type(raw).__name__}) raised {type(exc).__name__}"
        return Plan(status=PlanStatus.UNPARSEABLE, repairs=(reason,))
