"""The batch scorer equals score_plan plan by plan (issue 19 benchmark path)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.triage._batch import score_plans
from pytest_budget.triage._evaluate import budget_for, score_plan
from pytest_budget.triage._plan_parser import parse_plan
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry, PlanStatus


@st.composite
def _cells(draw: st.DrawFn) -> tuple[list[Item], dict[str, Baseline], list[Plan], float]:
    n = draw(st.integers(1, 9))
    items = [
        Item(
            id=f"i{k}",
            text="t",
            value=draw(st.sampled_from([1.0, 1.0, 2.5, 0.3])),
            unsolvable=draw(st.booleans()),
        )
        for k in range(n)
    ]
    truth = {
        item.id: Baseline(solved=draw(st.booleans()), tokens=draw(st.integers(1, 80)))
        for item in items
    }
    ids = st.sampled_from([item.id for item in items] + ["nope"])
    raw_plans = draw(
        st.lists(
            st.lists(
                st.fixed_dictionaries(
                    {"id": ids, "tokens": st.one_of(st.integers(-5, 200), st.just(10**30))}
                ),
                max_size=12,
            ),
            min_size=1,
            max_size=8,
        )
    )
    plans = [parse_plan({"plan": raw}, [item.id for item in items]) for raw in raw_plans]
    plans.append(Plan(status=PlanStatus.UNPARSEABLE, repairs=("x",)))
    return items, truth, plans, draw(st.sampled_from([0.25, 0.5, 0.75, 1.0]))


@settings(max_examples=150, deadline=None)
@given(_cells())
def test_batch_equals_one_by_one(
    cell: tuple[list[Item], dict[str, Baseline], list[Plan], float],
) -> None:
    items, truth, plans, alpha = cell
    budget = budget_for([truth[item.id].tokens for item in items], alpha)
    expected = [score_plan(plan, items, truth, budget, seed=5, samples=40) for plan in plans]
    assert score_plans(plans, items, truth, budget, seed=5, samples=40) == expected


def test_a_raw_plan_with_a_repeated_id_is_refused_like_score_plan() -> None:
    items = [Item(id="a", text="t"), Item(id="b", text="t")]
    truth = {"a": Baseline(True, 3), "b": Baseline(True, 4)}
    twice = Plan(entries=(PlanEntry("a", 5), PlanEntry("a", 6)))
    with pytest.raises(ValueError, match="more than once"):
        score_plan(twice, items, truth, 5, seed=0)
    with pytest.raises(ValueError, match="more than once"):
        score_plans([Plan(), twice], items, truth, 5, seed=0)
