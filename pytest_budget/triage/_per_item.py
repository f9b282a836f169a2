"""Each pool item's share of a triage cell's gated scores, for the paired gate.

A triage cell's pool, its Phase 0 results and so V_oracle and V_random are the same in the
baseline and a new run; only the plan moves.  Every gated score is then a ratio of sums over
the pool's gradeable items (:data:`pytest_budget._stats.paired.PerUnit`):

* ``eta_u`` / ``eta_e``: the value each item earned in the regime over ``(V_oracle -
  V_random) / n`` (eta is that ratio minus a constant of the pool);
* ``regret_u`` / ``regret_e``: minus the earned value over ``V_oracle / n`` (regret is one
  plus it);
* ``detection``: an unsolvable item left out, over the unsolvable items;
* ``waste``: tokens allocated to an unsolvable item, over all allocated tokens.

A score the cell leaves undefined (V_oracle = 0, the D.2 tie, regret below V_oracle = 1, no
unsolvable item) has no per-item values and is gated without pairing.  With
``--budget-repeat=K`` an item's values are the means over the K plans.  Plain Python: nothing
here imports pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget._stats.paired import PerUnit, per_unit_fields
from pytest_budget.triage._evaluate import CellOutcome
from pytest_budget.triage._intervals import item_units
from pytest_budget.triage._types import Baseline, Item

__all__ = ["UNIT", "per_item_parts", "per_item_snapshot"]

UNIT = "item"


def _one(outcome: CellOutcome, units: Sequence[Item], baselines: Mapping[str, Baseline]) -> PerUnit:
    s = outcome.scores
    n = len(units)
    solved = [baselines[i.id].solved and not i.unsolvable for i in units]
    executed_u = set(s.executed_u)
    earned_u = [
        i.value if ok and i.id in executed_u else 0.0 for i, ok in zip(units, solved, strict=True)
    ]
    scored_e = set(s.scored_e)
    earned_e = [i.value if i.id in scored_e else 0.0 for i in units]
    parts: PerUnit = {}
    if s.plan_status == "unparseable" or n == 0:
        return parts
    gap = s.v_oracle - s.v_random
    if s.v_oracle > 0 and abs(gap) > 1e-12 * max(1.0, abs(s.v_oracle), abs(s.v_random)):
        parts["eta_u"] = (earned_u, [gap / n] * n)
        parts["eta_e"] = (earned_e, [gap / n] * n)
    if s.v_oracle >= 1:
        parts["regret_u"] = ([-v for v in earned_u], [s.v_oracle / n] * n)
        parts["regret_e"] = ([-v for v in earned_e], [s.v_oracle / n] * n)
    unsolvable = [1.0 if i.unsolvable else 0.0 for i in units]
    if any(unsolvable):
        planned = {e.id: float(e.tokens) for e in outcome.plan.planned if e.tokens > 0}
        left_out = [
            u * (0.0 if i.id in planned else 1.0) for i, u in zip(units, unsolvable, strict=True)
        ]
        parts["detection"] = (left_out, unsolvable)
        alloc = [planned.get(i.id, 0.0) for i in units]
        parts["waste"] = ([a * u for a, u in zip(alloc, unsolvable, strict=True)], alloc)
    return parts


def per_item_parts(
    outcomes: Sequence[CellOutcome], items: Sequence[Item], baselines: Mapping[str, Baseline]
) -> PerUnit:
    """Per gated metric, each gradeable item's (numerator, denominator), averaged over the
    plans; a metric undefined in any plan is left out."""
    if not outcomes:
        raise ValueError("per_item_parts needs at least one plan")
    units = item_units(items, baselines)
    each = [_one(outcome, units, baselines) for outcome in outcomes]
    names = set(each[0]).intersection(*each[1:]) if len(each) > 1 else set(each[0])
    out: PerUnit = {}
    for name in sorted(names):
        k = len(each)
        num = [sum(p[name][0][j] for p in each) / k for j in range(len(units))]
        den = [sum(p[name][1][j] for p in each) / k for j in range(len(units))]
        out[name] = (num, den)
    return out


def per_item_snapshot(
    outcomes: Sequence[CellOutcome], items: Sequence[Item], baselines: Mapping[str, Baseline]
) -> dict[str, Any]:
    """The snapshot's ``per_query`` object for a triage cell (unit: the pool item)."""
    return per_unit_fields(per_item_parts(outcomes, items, baselines), UNIT)
