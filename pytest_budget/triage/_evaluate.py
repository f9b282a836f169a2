"""Score one triage cell: a pool, a budget level and a planner.

:func:`score_plan` is pure (no agent calls): it executes a parsed plan under regime U and
regime E against the Phase 0 ground truth and normalises by the oracle and the random
reference.  :func:`run_cell` asks the planner, parses and repairs its answer, and scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import anyio

from pytest_budget._core.roles import AgentError, InvalidOutput, agent_name, call_role
from pytest_budget.triage._phase0 import is_truncated
from pytest_budget.triage._plan_parser import parse_plan
from pytest_budget.triage._planners import OraclePlanner, derive_seed
from pytest_budget.triage._prompts import render_plan_prompt
from pytest_budget.triage._scoring import (
    Execution,
    RandomReference,
    detection_rate,
    efficiency,
    efficiency_is_conventional,
    execute_advisory,
    execute_enforced,
    oracle_value,
    random_reference,
    regret,
    waste_rate,
)
from pytest_budget.triage._types import (
    Baseline,
    Item,
    Plan,
    PlanEntry,
    PlanRequest,
    PlanStatus,
    Pool,
)

__all__ = [
    "NOTE_CONVENTION",
    "NOTE_NOTHING_SOLVED",
    "NOTE_NO_ORACLE",
    "NOTE_UNPARSEABLE",
    "TRUNCATION_WARN_SHARE",
    "CellOutcome",
    "TriageScores",
    "TruncationWarning",
    "assemble_scores",
    "budget_for",
    "cell_notes",
    "plan_request",
    "run_cell",
    "score_plan",
    "truncation_counts",
    "truncation_warning",
]

_DOMAIN_WORDING = {
    "arith": "arithmetic problems",
    "sokoban": "Sokoban puzzles",
}


def budget_for(costs: Sequence[int], alpha: float) -> int:
    """B = floor(alpha * sum c_i) (TRIAGE §3.2)."""
    # The tiny epsilon keeps e.g. 0.3 * 10 from flooring to 2 through float error.
    return math.floor(alpha * sum(costs) + 1e-9)


#: Why eta is left out (TRIAGE §3.2, App. B) or given by convention (App. D.2).
NOTE_UNPARSEABLE = "excluded: the plan stayed unparseable after repair (App. B)"
NOTE_NOTHING_SOLVED = "excluded: the solver solved none of the pool's items, V_oracle = 0 (§3.2)"
NOTE_NO_ORACLE = "excluded: no solved item fits the budget, V_oracle = 0 (§3.2)"
NOTE_CONVENTION = (
    "by convention: V_oracle = V_random, eta = 1 if V >= V_oracle else 0 (App. D.2; "
    "at alpha = 1 every ordering fits, Prop. D.1)"
)


@dataclass(frozen=True)
class TriageScores:
    """Every score of one triage cell (None where the paper leaves a score undefined).

    A plan that stayed unparseable after repair is excluded (App. B): its V, eta, regret,
    detection and waste are None, and ``eta_u_as_empty`` / ``eta_e_as_empty`` give the
    alternative figure that scores it as the empty plan.  A pool with V_oracle = 0 is out
    of scope (§3.2): eta is None there too.  ``eta_note`` says which case applies, or that
    eta was set by the App. D.2 convention (V_oracle = V_random, e.g. alpha = 1).
    """

    v_u: float | None
    v_e: float | None
    v_oracle: float
    v_random: float
    v_random_stderr: float
    eta_u: float | None
    eta_e: float | None
    regret_u: float | None
    regret_e: float | None
    detection: float | None
    waste: float | None
    plan_status: str
    planned_ids: tuple[str, ...] = ()
    executed_u: tuple[str, ...] = ()
    executed_e: tuple[str, ...] = ()
    scored_e: tuple[str, ...] = ()
    eta_u_as_empty: float | None = None
    eta_e_as_empty: float | None = None
    eta_note: str | None = None
    detection_counts: tuple[int, int] | None = None
    waste_tokens: tuple[int, int] | None = None

    def budget_difference(self, other: object) -> list[str] | None:
        """The lines pytest shows for a failed ``scores == other`` (a mapping or scores):
        the scores that differ; None when ``other`` is neither."""
        theirs = other.as_dict() if isinstance(other, TriageScores) else other
        if not isinstance(theirs, dict):
            return None
        mine = self.as_dict()
        lines = ["TriageScores differ:"]
        for key in sorted(set(mine) | set(theirs)):
            a, b = mine.get(key), theirs.get(key)
            if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, abs_tol=1e-9):
                continue
            if a != b:
                lines.append(f"  {key}: {a!r} != {b!r}")
        return lines

    @property
    def excluded(self) -> bool:
        """True when this plan is left out of the eta averages (unparseable)."""
        return self.plan_status == "unparseable"

    def as_scores(self) -> dict[str, float | None]:
        """The numeric scores, as stored in snapshots and the report's ``scores`` object."""
        keys = (
            "v_u", "v_e", "v_oracle", "v_random", "eta_u", "eta_e",
            "regret_u", "regret_e", "detection", "waste", "eta_u_as_empty", "eta_e_as_empty",
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
    other ids are ignored; entries with 0 tokens are not in the planned set.  Allocations
    above B are charged as B + 1 (they stop regime E either way), so any plan scores.
    An unparseable plan is scored as the empty plan only for ``eta_*_as_empty``; its own
    scores are None (excluded).  A pool with V_oracle = 0 has no eta (§3.2).
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
    return assemble_scores(
        plan, gradeable, planned, any(solved), best.value, reference, run_u, run_e
    )


def assemble_scores(
    plan: Plan,
    gradeable: Sequence[Item],
    planned: Sequence[PlanEntry],
    anything_solved: bool,
    v_oracle: float,
    reference: RandomReference,
    run_u: Execution,
    run_e: Execution,
    *,
    ids: Sequence[str] | None = None,
    unsolvable: Sequence[str] | None = None,
) -> TriageScores:
    """:class:`TriageScores` from a plan's two executions and the pool's references (shared
    by :func:`score_plan` and the batch scorer, so both apply the same exclusions).
    ``ids`` and ``unsolvable`` may pass the gradeable items' ids and the unsolvable ones,
    computed once for many plans."""
    if ids is None:
        ids = [item.id for item in gradeable]
    if unsolvable is None:
        unsolvable = [item.id for item in gradeable if item.unsolvable]
    planned_ids = [entry.id for entry in planned]
    excluded = plan.status is PlanStatus.UNPARSEABLE
    detection = detection_counts = waste = waste_tokens = None
    if unsolvable and not excluded:
        detection = detection_rate(planned_ids, unsolvable)
        waste = waste_rate({entry.id: entry.tokens for entry in planned}, unsolvable)
        left_out = len(set(unsolvable) - set(planned_ids))
        detection_counts = (left_out, len(unsolvable))
        unsolvable_set = set(unsolvable)
        waste_tokens = (
            sum(e.tokens for e in planned if e.id in unsolvable_set),
            sum(e.tokens for e in planned),
        )
    no_oracle = v_oracle <= 0
    eta_u = None if no_oracle else efficiency(run_u.value, v_oracle, reference.mean)
    eta_e = None if no_oracle else efficiency(run_e.value, v_oracle, reference.mean)
    note: str | None = None
    if no_oracle:
        note = NOTE_NOTHING_SOLVED if not anything_solved else NOTE_NO_ORACLE
    elif excluded:
        note = NOTE_UNPARSEABLE
    elif efficiency_is_conventional(v_oracle, reference.mean):
        note = NOTE_CONVENTION
    return TriageScores(
        v_u=None if excluded else run_u.value,
        v_e=None if excluded else run_e.value,
        v_oracle=v_oracle,
        v_random=reference.mean,
        v_random_stderr=reference.stderr,
        eta_u=None if excluded else eta_u,
        eta_e=None if excluded else eta_e,
        regret_u=None if excluded else regret(run_u.value, v_oracle),
        regret_e=None if excluded else regret(run_e.value, v_oracle),
        detection=detection,
        waste=waste,
        eta_u_as_empty=eta_u,
        eta_e_as_empty=eta_e,
        eta_note=note,
        detection_counts=detection_counts,
        waste_tokens=waste_tokens,
        plan_status=plan.status.value,
        planned_ids=tuple(planned_ids),
        executed_u=tuple([ids[i] for i in run_u.executed]),
        executed_e=tuple([ids[i] for i in run_e.executed]),
        scored_e=tuple([ids[i] for i in run_e.scored]),
    )


@dataclass(frozen=True)
class CellOutcome:
    """What happened in one cell: the plan, its scores and any problem with the agent.

    ``outcome`` is ``ok``, ``invalid`` (the plan could not be parsed: excluded from eta,
    with the empty-plan figure in ``eta_*_as_empty``) or ``error`` (the planner raised;
    treated the same way).
    """

    budget: int
    plan: Plan
    scores: TriageScores
    outcome: str = "ok"
    reason: str | None = None
    agent: str = ""
    repairs: tuple[str, ...] = field(default=())
    #: The planner's reply was cut at its token cap (finish reason ``length`` or equivalent).
    truncated: bool = False
    #: The planner's reply as it came (for the report's samples), None if it raised.  Out
    #: of the repr: a hostile reply's own repr may raise or take exponential time (asyncio
    #: reprs a finished task's result).
    raw: object = field(default=None, repr=False)


def plan_request(
    pool: Pool, baselines: Mapping[str, Baseline], alpha: float, variant: str = "A"
) -> PlanRequest:
    """The planner's request for ``pool`` at budget level ``alpha`` (the items with a
    baseline; the cost forecast builds the same request before the run)."""
    gradeable = [item for item in pool.items if item.id in baselines]
    budget = budget_for([baselines[item.id].tokens for item in gradeable], alpha)
    # The planner sees texts and values (TRIAGE §4), and one domain label for the whole
    # pool: an item's own label (an injected item's source) would give it away.
    problems = tuple(replace(item.problem, domain=pool.domain or item.domain) for item in gradeable)
    prompt = render_plan_prompt(
        problems,
        budget,
        variant=variant,
        domain=_DOMAIN_WORDING.get(pool.domain, "problems"),
    )
    return PlanRequest(
        items=problems, budget=budget, prompt=prompt, variant=variant, pool=pool.name
    )


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
    request = plan_request(pool, baselines, alpha, variant)
    budget = request.budget
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
    truncated = False
    raw: object = None
    try:
        raw = await call_role(planner, "planner", request, limiter=limiter)
        truncated = is_truncated(raw)
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
        truncated=truncated,
        raw=raw,
    )


def cell_notes(outcomes: Sequence[CellOutcome]) -> dict[str, Any]:
    """The report fields that explain a cell's eta, over its K plans (repeats).

    * ``excluded``: how many of the K plans were left out of the eta averages because they
      stayed unparseable after repair (App. B), out of how many;
    * ``eta_note``: why eta is missing (V_oracle = 0, or every plan excluded) or set by the
      App. D.2 convention (V_oracle = V_random, e.g. alpha = 1), else None;
    * ``detection_counts`` = [unsolvable items left out, unsolvable items] and
      ``waste_tokens`` = [tokens allocated to unsolvable items, tokens allocated], summed
      over the counted plans (None when the pool has no injected item or none counted).
    """
    scores = [outcome.scores for outcome in outcomes]
    excluded = sum(score.excluded for score in scores)
    first = scores[0]
    note: str | None = None
    pool_notes = [s.eta_note for s in scores if s.eta_note in (NOTE_NOTHING_SOLVED, NOTE_NO_ORACLE)]
    if pool_notes:
        note = pool_notes[0]
    elif scores and excluded == len(scores):
        note = f"all {len(scores)} plan(s) {NOTE_UNPARSEABLE}"
    elif efficiency_is_conventional(first.v_oracle, first.v_random):
        note = NOTE_CONVENTION
    pairs = [
        (s.detection_counts, s.waste_tokens)
        for s in scores
        if s.detection_counts is not None and s.waste_tokens is not None
    ]
    detection_counts: list[int] | None = None
    waste_tokens: list[int] | None = None
    if pairs:
        detection_counts = [sum(d[i] for d, _ in pairs) for i in (0, 1)]
        waste_tokens = [sum(w[i] for _, w in pairs) for i in (0, 1)]
    return {
        "excluded": {"unparseable": excluded, "plans": len(scores)},
        "eta_note": note,
        "detection_counts": detection_counts,
        "waste_tokens": waste_tokens,
    }


#: Share of a cell's model calls cut at their cap above which the cell warns (issue 19).
TRUNCATION_WARN_SHARE = 0.05


class TruncationWarning(UserWarning):
    """More than 5% of a cell's model calls were cut at their token cap."""


def truncation_counts(
    outcomes: Sequence[CellOutcome], phase0_calls: int, phase0_truncated: int
) -> dict[str, int]:
    """A cell's truncated model outputs: the planner's (one call per repeat) and the
    Phase 0 solver's over the pool's items (results from pool files are not calls)."""
    return {
        "planner": sum(outcome.truncated for outcome in outcomes),
        "planner_calls": len(outcomes),
        "phase0": phase0_truncated,
        "phase0_calls": phase0_calls,
    }


def truncation_warning(cell_id: str, counts: Mapping[str, int]) -> str | None:
    """The warning text when more than 5% of the cell's calls were truncated, else None."""
    cut = counts["planner"] + counts["phase0"]
    calls = counts["planner_calls"] + counts["phase0_calls"]
    if calls == 0 or cut / calls <= TRUNCATION_WARN_SHARE:
        return None
    return (
        f"{cell_id}: {cut} of {calls} model calls ({cut / calls:.0%}) were cut at their "
        f"token cap (planner {counts['planner']}/{counts['planner_calls']}, Phase 0 solver "
        f"{counts['phase0']}/{counts['phase0_calls']}); raise max_tokens for this model"
    )


def _read_plan(raw: object, pool_ids: list[str]) -> Plan:
    """:func:`parse_plan`, with anything it raises on a hostile object read as unparseable."""
    try:
        return parse_plan(raw, pool_ids)
    except Exception as exc:
        reason = f"reading the plan ({type(raw).__name__}) raised {type(exc).__name__}"
        return Plan(status=PlanStatus.UNPARSEABLE, repairs=(reason,))
