"""The paper's exclusions and honest display of degenerate cells (issue 19 items 2, 3).

Hand-worked pool (costs 4, 3, 5, 2; b unsolved; alpha 0.5 -> B = 7): V_oracle = 2 (solved
items cheapest first: d 2 + a 4 = 6 <= 7, + c would be 11), and the random reference
V_RANDOM is enumerated over all 24 orderings below.
"""

from __future__ import annotations

import itertools
import re

import anyio
import pytest

from pytest_budget._core.record_json import cell_from_json
from pytest_budget._core.records import CellRecord
from pytest_budget.report._html.columns import columns_for
from pytest_budget.triage._evaluate import (
    NOTE_CONVENTION,
    NOTE_NOTHING_SOLVED,
    CellOutcome,
    cell_notes,
    run_cell,
    score_plan,
)
from pytest_budget.triage._intervals import cell_summary, item_units
from pytest_budget.triage._summary import UNDEFINED, triage_table
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry, PlanStatus, Pool

ITEMS = tuple(Item(id=name, text=f"problem {name}") for name in "abcd")
TRUTH = {
    "a": Baseline(solved=True, tokens=4),
    "b": Baseline(solved=False, tokens=3),
    "c": Baseline(solved=True, tokens=5),
    "d": Baseline(solved=True, tokens=2),
}
B = 7


def _random_by_enumeration() -> float:
    costs = {k: v.tokens for k, v in TRUTH.items()}
    total = 0
    orders = list(itertools.permutations("abcd"))
    for order in orders:
        left = B
        for key in order:
            if costs[key] > left:
                break
            left -= costs[key]
            total += TRUTH[key].solved
    return total / len(orders)


V_RANDOM = _random_by_enumeration()


def _record(**fields: object) -> CellRecord:
    """A triage cell record of the hand-worked pool (at alpha 0.5 unless told)."""
    coordinates = {"pool": "hand", "unsolvable_ratio": 0.0, "alpha": 0.5, "variant": "A"}
    header = {"suite": "triage", "cell": "hand-u0-a0.5-A", "agent": "x", "seed": 1}
    return cell_from_json({**header, **coordinates, "outcome": "ok", **fields})


def _column(lines: list[str], header: str) -> str:
    """One column of a one-row table (columns are two or more spaces apart)."""
    names = re.split(" {2,}", lines[0].strip())
    return dict(zip(names, re.split(" {2,}", lines[2].strip()), strict=True))[header]


UNPARSEABLE = Plan(status=PlanStatus.UNPARSEABLE, repairs=("no JSON object",))
GOOD = Plan(entries=(PlanEntry("d", 2), PlanEntry("a", 4)))  # V = 2 = oracle: eta 1
HALF = Plan(entries=(PlanEntry("a", 4), PlanEntry("c", 5)))  # a runs, c (9 > 7) stops: V = 1


def _outcome(plan: Plan, truth: dict[str, Baseline] = TRUTH, budget: int = B) -> CellOutcome:
    scores = score_plan(plan, ITEMS, truth, budget, seed=0)
    outcome = "invalid" if plan.status is PlanStatus.UNPARSEABLE else "ok"
    return CellOutcome(budget=budget, plan=plan, scores=scores, outcome=outcome)


def _summary(outcomes: list[CellOutcome], alpha: float = 0.5) -> dict[str, object]:
    summary = cell_summary(
        outcomes,
        item_units(ITEMS, TRUTH),
        TRUTH,
        alpha,
        seed=1,
        cell_id="hand",
        level=0.95,
        resamples=200,
    )
    return summary.report_fields()


def test_unparseable_plans_are_left_out_of_the_eta_mean_and_counted() -> None:
    outcomes = [_outcome(GOOD), _outcome(UNPARSEABLE), _outcome(HALF)]
    fields = _summary(outcomes)
    scores = fields["scores"]
    eta_half = (1 - V_RANDOM) / (2 - V_RANDOM)
    # Mean over the two parseable plans only (not (1 + eta_empty + eta_half) / 3).
    assert scores["eta_u"] == pytest.approx((1.0 + eta_half) / 2)
    eta_empty = (0 - V_RANDOM) / (2 - V_RANDOM)
    assert scores["eta_u_as_empty"] == pytest.approx((1.0 + eta_empty + eta_half) / 3)
    notes = cell_notes(outcomes)
    assert notes["excluded"] == {"unparseable": 1, "plans": 3}
    assert notes["eta_note"] is None
    # The bootstrap leaves the excluded plan out too: the interval holds the mean.
    lo, hi = fields["ci"]["eta_u"]
    assert lo <= scores["eta_u"] <= hi


def test_every_plan_excluded_shows_a_dash_with_the_reason() -> None:
    outcomes = [_outcome(UNPARSEABLE), _outcome(UNPARSEABLE)]
    fields = _summary(outcomes)
    assert fields["scores"]["eta_u"] is None and fields["scores"]["eta_e"] is None
    notes = cell_notes(outcomes)
    assert notes["eta_note"].startswith("all 2 plan(s) excluded")
    cell = _record(outcome="invalid", **fields, **notes)
    row = triage_table([cell])[2]
    assert row.count(UNDEFINED) == 2
    assert "every plan unparseable" in row and "2/2 unparseable excluded" in row
    assert "as empty: eta_u=" in row


def test_solver_that_solved_nothing_shows_a_dash_not_one() -> None:
    unsolved = {key: Baseline(solved=False, tokens=b.tokens) for key, b in TRUTH.items()}
    outcome = _outcome(GOOD, unsolved)
    notes = cell_notes([outcome])
    assert notes["eta_note"] == NOTE_NOTHING_SOLVED
    cell = _record(scores=outcome.scores.as_scores(), **notes)
    lines = triage_table([cell])
    row = lines[2]
    assert "1.000" not in row and row.count(UNDEFINED) == 2
    assert _column(lines, "eta_u") == _column(lines, "eta_e") == UNDEFINED
    assert "V_oracle=0: solver solved 0 items" in row


def test_full_budget_eta_is_labelled_as_convention_in_table_and_html() -> None:
    full = 14  # alpha = 1: Prop. D.1, V_random = V_oracle = 3
    outcome = _outcome(HALF, budget=full)
    notes = cell_notes([outcome])
    assert notes["eta_note"] == NOTE_CONVENTION
    cell = _record(alpha=1.0, scores=outcome.scores.as_scores(), **notes)
    assert outcome.scores.eta_u == 0.0  # 1[V >= V_oracle] with V = 2 < 3
    lines = triage_table([cell])
    row = lines[2]
    assert _column(lines, "eta_u") == "0.000"
    assert "0.000" in row and "eta by convention (V_oracle=V_random, D.2)" in row
    note_column = [c for c in columns_for("triage", [cell]) if c.header == "note"]
    assert note_column[0].text(cell) == "eta by convention (V_oracle=V_random, D.2)"


def test_detection_and_waste_counts_are_reported_per_cell() -> None:
    items = (*ITEMS[:3], Item(id="d", text="problem d", unsolvable=True))
    plan_a = Plan(entries=(PlanEntry("a", 4), PlanEntry("d", 6)))
    plan_b = Plan(entries=(PlanEntry("a", 4),))
    outcomes = [
        CellOutcome(budget=100, plan=p, scores=score_plan(p, items, TRUTH, 100, seed=0))
        for p in (plan_a, plan_b)
    ]
    notes = cell_notes(outcomes)
    # Plan A leaves 0 of 1 unsolvable out, plan B 1 of 1: summed 1 of 2.
    assert notes["detection_counts"] == [1, 2]
    # Tokens on unsolvable items: 6 of 10, then 0 of 4: summed 6 of 14.
    assert notes["waste_tokens"] == [6, 14]


def test_run_cell_counts_an_unparseable_reply() -> None:
    pool = Pool(name="hand", items=ITEMS)
    outcome = anyio.run(lambda: run_cell(pool, TRUTH, 0.5, lambda request: "no idea", seed=1))
    assert outcome.outcome == "invalid" and outcome.scores.eta_u is None
    assert cell_notes([outcome])["excluded"] == {"unparseable": 1, "plans": 1}


def test_injected_items_keep_their_label_but_the_planner_sees_the_pools() -> None:
    from pytest_budget.triage._pools import inject_unsolvable, unsolvable_supply

    mine = Pool(
        name="mine",
        items=tuple(Item(id=f"q{i}", text=f"Compute {i} + 1.", domain="mine") for i in range(4)),
        domain="mine",
    )
    injected = inject_unsolvable(mine, 0.5, unsolvable_supply("arith", 2, 7), seed=7)
    assert sorted((i.domain, i.unsolvable) for i in injected.items) == [
        ("arith", True), ("arith", True), ("mine", False), ("mine", False)
    ]  # fmt: skip
    truth = {item.id: Baseline(solved=not item.unsolvable, tokens=10) for item in injected.items}
    seen: list[object] = []

    def planner(request: object) -> dict[str, list[object]]:
        seen.append(request)
        return {"plan": []}

    anyio.run(lambda: run_cell(injected, truth, 0.5, planner, seed=1))
    (request,) = seen
    assert {problem.domain for problem in request.items} == {"mine"}  # type: ignore[attr-defined]
