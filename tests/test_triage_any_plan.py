"""Any plan scores and none crashes (issue 19 item 1): the repair pass and exact charges.

Hand-worked cases pin the overflow that made eta_E exceed 1; hypothesis drives arbitrary
planner output (huge, negative, NaN, infinite, fractional and string counts, unknown and
repeated ids) through parse_plan and score_plan and checks the proven bounds:
eta_U, eta_E <= 1 (App. D.4), regret in [0, 1] (App. D.5), V <= V_oracle, spend <= B.
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.triage._evaluate import budget_for, score_plan
from pytest_budget.triage._intervals import resampled_scores
from pytest_budget.triage._plan_parser import MAX_TOKENS, parse_plan
from pytest_budget.triage._scoring import clamp_allocations, execute_enforced
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry

ITEMS = tuple(Item(id=name, text=f"problem {name}") for name in "abc")
# Costs 4, 3, 5, all solved: sum 12, alpha 0.5 -> B = 6.  Oracle: b (3) alone fits,
# a + b = 7 does not, so V_oracle = 1.
TRUTH = {
    "a": Baseline(solved=True, tokens=4),
    "b": Baseline(solved=True, tokens=3),
    "c": Baseline(solved=True, tokens=5),
}
B = 6


def test_allocation_at_int64_limit_stops_execution_instead_of_wrapping() -> None:
    # a's allocation exceeds B, so regime E stops at once: V_E = 0.  Before the fix the
    # running total wrapped past int64 at the second entry and all three items were
    # "executed", giving V_E = 3 > V_oracle = 1 (regret_E = -2).
    plan = Plan(entries=(PlanEntry("a", 2**63 - 1), PlanEntry("b", 3), PlanEntry("c", 5)))
    scores = score_plan(plan, ITEMS, TRUTH, B, seed=0)
    assert scores.v_e == 0.0
    assert scores.v_oracle == 1.0
    # V_random by hand: whichever item runs first (4, 3 or 5 <= 6), the next one never
    # fits (7, 8 or 9 > 6): every ordering scores 1, so V_random = V_oracle = 1 and eta
    # takes the App. D.2 convention (0 for a plan below the oracle).
    assert scores.v_random == 1.0
    assert scores.eta_e == 0.0
    assert scores.regret_e == 1.0


def test_huge_allocation_is_charged_as_b_plus_one() -> None:
    assert clamp_allocations([10**400, 7, math.inf, 0], 6).tolist() == [7, 7, 7, 0]
    assert clamp_allocations(np.array([2**62, 3], dtype=np.int64), 6).tolist() == [7, 3]
    run = execute_enforced([1, 0], [3, 10**30], [4, 3, 5], [1, 1, 1], None, 6)
    # b runs under 3 (c_b = 3 fits, scores), then a's allocation exceeds the 3 left: stop.
    assert run.executed == (1,) and run.scored == (1,) and run.spent == 3


def test_plan_text_with_1e30_scores() -> None:
    text = '{"plan": [{"id": "b", "tokens": 3}, {"id": "a", "tokens": 1e30}]}'
    plan = parse_plan(text, list(TRUTH))
    assert plan.entries == (PlanEntry("b", 3), PlanEntry("a", MAX_TOKENS))
    scores = score_plan(plan, ITEMS, TRUTH, B, seed=0)
    assert (scores.v_u, scores.v_e) == (1.0, 1.0)


# --------------------------------------------------------------------------- properties

_token_values = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=0, max_value=50),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.inf, -math.inf, math.nan, 10**400, 2**63]),
    st.sampled_from(["12", "1,200", "1e30", "-5", "lots", "", "nan", "inf", " 30 tokens"]),
    st.none(),
    st.booleans(),
)
_ids = st.one_of(st.sampled_from(["i0", "i1", "i2", "i3", "i4", "i5"]), st.text(max_size=3))


@st.composite
def _pools(draw: st.DrawFn) -> tuple[list[Item], dict[str, Baseline]]:
    n = draw(st.integers(1, 6))
    items = [Item(id=f"i{k}", text=f"t{k}") for k in range(n)]
    unsolvable = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    items = [
        Item(id=item.id, text=item.text, unsolvable=flag)
        for item, flag in zip(items, unsolvable, strict=True)
    ]
    truth = {
        item.id: Baseline(solved=draw(st.booleans()), tokens=draw(st.integers(1, 60)))
        for item in items
    }
    return items, truth


_raw_plans = st.lists(
    st.fixed_dictionaries({"id": _ids}, optional={"tokens": _token_values}), max_size=12
)


def _as_text(entries: list[dict[str, object]]) -> str:
    # json.dumps writes NaN/Infinity and huge integers as a model might.
    return "Here you go:\n" + json.dumps({"plan": entries}) + "\nthanks"


@settings(max_examples=300, deadline=None)
@given(_pools(), _raw_plans, st.sampled_from([0.25, 0.5, 0.75, 1.0]), st.booleans())
def test_any_plan_scores_within_the_proven_bounds(
    pool: tuple[list[Item], dict[str, Baseline]],
    entries: list[dict[str, object]],
    alpha: float,
    as_text: bool,
) -> None:
    items, truth = pool
    raw: object = _as_text(entries) if as_text else {"plan": entries}
    plan = parse_plan(raw, [item.id for item in items])
    assert all(0 <= entry.tokens <= MAX_TOKENS for entry in plan.entries)
    budget = budget_for([truth[item.id].tokens for item in items], alpha)
    scores = score_plan(plan, items, truth, budget, seed=1, samples=50)
    for v in (scores.v_u, scores.v_e):
        assert 0.0 <= v <= scores.v_oracle
    for eta in (scores.eta_u, scores.eta_e):
        if eta is not None:
            assert eta <= 1.0 + 1e-9
    for regret in (scores.regret_u, scores.regret_e):
        if regret is not None:
            assert 0.0 <= regret <= 1.0
    charged = sum(entry.tokens for entry in plan.planned if entry.id in set(scores.executed_e))
    assert charged <= budget
    # The bootstrap recomputes the same plan on resamples: it must not overflow either.
    indices = np.array([list(range(len(items)))], dtype=np.int64)
    counts = np.ones((1, len(items)), dtype=np.int64)
    matrix = resampled_scores(plan, items, truth, alpha, indices, counts, seed=3)
    assert matrix["v_e"][0] == scores.v_e and matrix["v_u"][0] == scores.v_u
