"""Cell scoring end to end (plan -> regimes U and E -> eta, regret, detection, waste).

Expected values are worked out by hand in comments or by an independent brute force
written here, never by calling the scorer's own helpers.
"""

from __future__ import annotations

import itertools
import math

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.triage import (
    Baseline,
    Item,
    OraclePlanner,
    Plan,
    PlanEntry,
    PlanStatus,
    Pool,
    budget_for,
    run_cell,
    score_plan,
)
from pytest_budget.triage._evaluate import (
    NOTE_CONVENTION,
    NOTE_NO_ORACLE,
    NOTE_NOTHING_SOLVED,
    NOTE_UNPARSEABLE,
)

# Hand-worked pool: costs 4, 3, 5, 2; b is not solvable; sum 14, alpha 0.5 -> B = 7.
ITEMS = tuple(Item(id=name, text=f"problem {name}") for name in "abcd")
TRUTH = {
    "a": Baseline(solved=True, tokens=4),
    "b": Baseline(solved=False, tokens=3),
    "c": Baseline(solved=True, tokens=5),
    "d": Baseline(solved=True, tokens=2),
}
B = 7


def brute_random_u(costs: list[int], solved: list[bool], budget: int) -> float:
    """Mean over all orderings of regime-U execution (stop at the first misfit)."""
    total = 0.0
    orders = list(itertools.permutations(range(len(costs))))
    for order in orders:
        left, value = budget, 0.0
        for i in order:
            if costs[i] > left:
                break
            left -= costs[i]
            value += solved[i]
        total += value
    return total / len(orders)


V_RANDOM = brute_random_u([4, 3, 5, 2], [True, False, True, True], B)


def plan(*entries: tuple[str, int]) -> Plan:
    return Plan(entries=tuple(PlanEntry(i, t) for i, t in entries))


def test_budget_is_floor_alpha_sum() -> None:
    assert budget_for([4, 3, 5, 2], 0.5) == 7
    assert budget_for([4, 3, 5, 2], 0.25) == 3  # floor(3.5)
    assert budget_for([10] * 3, 0.1) == 3  # 0.1 * 30 is 3.0000000000000004 or 2.999...: still 3


def test_good_plan_matches_oracle() -> None:
    # U: a (4, solved) leaves 3, d (2, solved) leaves 1 -> V_U = 2. E: same with allocations
    # 4 and 3 (both >= cost) -> V_E = 2. Oracle: {a, d} or {c, d} -> 2.
    scores = score_plan(plan(("a", 4), ("d", 3)), ITEMS, TRUTH, B, seed=0)
    assert (scores.v_u, scores.v_e, scores.v_oracle) == (2.0, 2.0, 2.0)
    assert scores.v_random == pytest.approx(V_RANDOM)
    assert scores.eta_u == 1.0 and scores.eta_e == 1.0
    assert scores.regret_u == 0.0 and scores.regret_e == 0.0
    assert scores.executed_u == ("a", "d")


def test_bad_plan_is_worse_than_random() -> None:
    # U: b (3, unsolved) leaves 4; c costs 5 > 4 -> stop. V_U = 0.
    # E: b deducts 3; c gets 4 < cost 5 -> scores 0 but 4 is deducted. V_E = 0.
    scores = score_plan(plan(("b", 3), ("c", 4)), ITEMS, TRUTH, B, seed=0)
    assert scores.v_u == 0.0 and scores.v_e == 0.0
    expected_eta = (0.0 - V_RANDOM) / (2.0 - V_RANDOM)
    assert scores.eta_u == pytest.approx(expected_eta)
    assert scores.eta_u < 0
    assert scores.regret_u == 1.0
    assert scores.executed_e == ("b", "c") and scores.scored_e == ()


def test_enforced_regime_under_allocation_scores_zero_and_still_deducts() -> None:
    # E: a gets 3 < cost 4 -> 0, deduct 3 (left 4); c gets 4 < 5 -> 0 (left 0); d needs 1 > 0: stop.
    # U ignores allocations: a (4) left 3, c (5) > 3 stop -> V_U = 1.
    scores = score_plan(plan(("a", 3), ("c", 4), ("d", 1)), ITEMS, TRUTH, B, seed=0)
    assert scores.v_e == 0.0
    assert scores.executed_e == ("a", "c")
    assert scores.v_u == 1.0


def test_empty_plan_scores_zero() -> None:
    scores = score_plan(Plan(), ITEMS, TRUTH, B, seed=0)
    assert scores.v_u == 0.0 and scores.v_e == 0.0
    assert scores.eta_u == pytest.approx((0 - V_RANDOM) / (2 - V_RANDOM))


def test_zero_token_entries_are_not_planned() -> None:
    scores = score_plan(plan(("b", 0), ("a", 4)), ITEMS, TRUTH, B, seed=0)
    assert scores.planned_ids == ("a",)
    assert scores.v_u == 1.0


def test_full_budget_uses_the_d2_convention() -> None:
    # Proposition D.1: at alpha = 1 every ordering completes, V_random = V_oracle = 3.
    full = budget_for([4, 3, 5, 2], 1.0)
    everything = score_plan(
        plan(("a", 4), ("b", 3), ("c", 5), ("d", 2)), ITEMS, TRUTH, full, seed=0
    )
    assert everything.v_random == everything.v_oracle == 3.0
    assert everything.eta_u == 1.0
    skipped = score_plan(plan(("a", 4), ("d", 2)), ITEMS, TRUTH, full, seed=0)
    assert skipped.v_u == 2.0 and skipped.eta_u == 0.0  # 1[V >= V_oracle]
    assert skipped.regret_u == pytest.approx(1 / 3)


def test_detection_and_waste_with_unsolvable_items() -> None:
    items = (*ITEMS[:3], Item(id="d", text="problem d", unsolvable=True))
    truth = dict(TRUTH)
    # Plan a (4 tokens), d (6 tokens): U = {d}; S = {a, d}; detection |U \ S|/|U| = 0,
    # waste = 6 / (4 + 6) = 0.6.
    scores = score_plan(plan(("a", 4), ("d", 6)), items, truth, 100, seed=0)
    assert scores.detection == 0.0
    assert scores.waste == pytest.approx(0.6)
    # d never counts as solved even though its baseline said so.
    assert scores.v_u == 1.0
    left_out = score_plan(plan(("a", 4)), items, truth, 100, seed=0)
    assert left_out.detection == 1.0 and left_out.waste == 0.0


def test_regret_undefined_when_nothing_is_solvable() -> None:
    truth = {key: Baseline(solved=False, tokens=value.tokens) for key, value in TRUTH.items()}
    scores = score_plan(plan(("a", 4)), ITEMS, truth, B, seed=0)
    assert scores.v_oracle == 0.0
    assert scores.regret_u is None
    # §3.2: pools with V_oracle = 0 are out of scope and excluded (not D.2's 1.0).
    assert scores.eta_u is None and scores.eta_e is None
    assert scores.eta_u_as_empty is None
    assert scores.eta_note == NOTE_NOTHING_SOLVED


def test_no_solved_item_fits_is_excluded_with_its_own_note() -> None:
    # b is solved but costs 3 > B = 2: V_oracle = 0 although the solver solved something.
    truth = {
        "a": Baseline(solved=False, tokens=4),
        "b": Baseline(solved=True, tokens=3),
        "c": Baseline(solved=False, tokens=5),
        "d": Baseline(solved=False, tokens=2),
    }
    scores = score_plan(plan(("b", 3)), ITEMS, truth, 2, seed=0)
    assert scores.v_oracle == 0.0 and scores.eta_u is None
    assert scores.eta_note == NOTE_NO_ORACLE


def test_full_budget_eta_is_marked_as_convention() -> None:
    full = budget_for([4, 3, 5, 2], 1.0)
    scores = score_plan(plan(("a", 4), ("d", 2)), ITEMS, TRUTH, full, seed=0)
    assert scores.eta_u == 0.0 and scores.eta_note == NOTE_CONVENTION
    half = score_plan(plan(("a", 4)), ITEMS, TRUTH, B, seed=0)
    assert half.eta_note is None


def test_unparseable_plan_is_excluded_with_the_empty_plan_figure_beside_it() -> None:
    bad = Plan(status=PlanStatus.UNPARSEABLE, repairs=("no JSON",))
    scores = score_plan(bad, ITEMS, TRUTH, B, seed=0)
    assert scores.excluded and scores.eta_note == NOTE_UNPARSEABLE
    for key in ("v_u", "v_e", "eta_u", "eta_e", "regret_u", "regret_e"):
        assert scores.as_scores()[key] is None, key
    # Counted as the empty plan: V = 0, eta = (0 - V_random) / (2 - V_random).
    expected = (0 - V_RANDOM) / (2 - V_RANDOM)
    assert scores.eta_u_as_empty == pytest.approx(expected)
    assert scores.eta_e_as_empty == pytest.approx(expected)
    ok = score_plan(plan(("d", 2), ("a", 4)), ITEMS, TRUTH, B, seed=0)
    assert ok.eta_u_as_empty == ok.eta_u == 1.0


def run(planner: object, alpha: float = 0.5) -> object:
    pool = Pool(name="hand", items=ITEMS)
    return anyio.run(lambda: run_cell(pool, TRUTH, alpha, planner, seed=1))


def test_run_cell_with_raw_text_and_garbage() -> None:
    repaired = run(lambda request: 'Plan below.\n{"plan": [{"id": "a", "tokens": "4"}]} thanks')
    assert repaired.outcome == "ok" and repaired.plan.status is PlanStatus.REPAIRED
    assert repaired.scores.v_u == 1.0
    invalid = run(lambda request: "no idea")
    assert invalid.outcome == "invalid" and invalid.reason
    assert invalid.scores.v_u is None and invalid.scores.plan_status == "unparseable"
    assert invalid.scores.eta_u is None and invalid.scores.eta_u_as_empty is not None
    nothing = run(lambda request: None)
    assert nothing.outcome == "invalid"


def test_run_cell_agent_error_is_recorded() -> None:
    def broken(request: object) -> None:
        raise TimeoutError("model took too long")

    outcome = run(broken)
    assert outcome.outcome == "error"
    assert outcome.reason == "planner 'broken' raised TimeoutError: model took too long"


def test_request_carries_budget_items_and_prompt() -> None:
    seen = []

    def planner(request: object) -> dict[str, list[object]]:
        seen.append(request)
        return {"plan": []}

    run(planner)
    (request,) = seen
    assert request.budget == B
    assert [p.id for p in request.items] == ["a", "b", "c", "d"]
    assert "7 output tokens" in request.prompt and "[id: c] (points: 1)" in request.prompt
    assert all(not hasattr(p, "answer") for p in request.items)


@settings(max_examples=60, deadline=None)
@given(
    costs=st.lists(st.integers(1, 50), min_size=1, max_size=9),
    data=st.data(),
    alpha=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
)
def test_oracle_planner_scores_one_in_both_regimes(
    costs: list[int], data: st.DataObject, alpha: float
) -> None:
    solved = data.draw(st.lists(st.booleans(), min_size=len(costs), max_size=len(costs)))
    items = tuple(Item(id=f"i{k}", text="x") for k in range(len(costs)))
    truth = {
        f"i{k}": Baseline(solved=s, tokens=c)
        for k, (s, c) in enumerate(zip(solved, costs, strict=True))
    }
    pool = Pool(name="p", items=items)
    outcome = anyio.run(lambda: run_cell(pool, truth, alpha, OraclePlanner(), seed=3))
    if outcome.scores.v_oracle == 0:  # out of scope (§3.2): no eta
        assert outcome.scores.eta_u is None and outcome.scores.eta_e is None
    else:
        assert outcome.scores.eta_u == 1.0
        assert outcome.scores.eta_e == 1.0
    assert outcome.scores.v_u == outcome.scores.v_oracle
    assert math.isfinite(outcome.scores.v_random)


def test_oracle_never_plans_an_unsolvable_item_even_if_its_baseline_says_solved() -> None:
    items = (*ITEMS[:3], Item(id="d", text="problem d", unsolvable=True))
    pool = Pool(name="hand", items=items)
    outcome = anyio.run(lambda: run_cell(pool, TRUTH, 0.5, OraclePlanner(), seed=1))
    assert "d" not in outcome.scores.planned_ids
    assert outcome.scores.eta_u == 1.0 and outcome.scores.detection == 1.0
