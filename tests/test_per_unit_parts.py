"""Per-unit values of the triage and awareness baselines (issue 30): the ratio of their sums
is the cell's score, computed independently by the suites' own scorers."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from pytest_budget._stats.paired import read_per_unit
from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
from pytest_budget.awareness._estimators import LinearEstimator, RandomEstimator
from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._scoring.per_probe import per_probe_parts
from pytest_budget.triage._evaluate import CellOutcome, budget_for, score_plan
from pytest_budget.triage._intervals import item_units
from pytest_budget.triage._per_item import per_item_parts, per_item_snapshot
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry


def _ratio(parts: tuple[list[float], list[float]]) -> float:
    return sum(parts[0]) / sum(parts[1])


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_triage_items_add_up_to_the_cell_scores(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = [
        Item(id=f"i{j}", text="", value=float(rng.integers(1, 4)), unsolvable=rng.random() < 0.3)
        for j in range(20)
    ]
    baselines = {
        item.id: Baseline(solved=bool(rng.random() < 0.7), tokens=int(rng.integers(1, 60)))
        for item in items
    }
    order = rng.permutation(20)[:14]
    plan = Plan(entries=tuple(PlanEntry(items[j].id, int(rng.integers(0, 70))) for j in order))
    budget = budget_for([b.tokens for b in baselines.values()], 0.5)
    scores = score_plan(plan, items, baselines, budget, seed=1)
    parts = per_item_parts([CellOutcome(budget, plan, scores)], items, baselines)
    gap = scores.v_oracle - scores.v_random
    assert scores.eta_u is not None and scores.eta_e is not None
    assert _ratio(parts["eta_u"]) - scores.v_random / gap == pytest.approx(scores.eta_u)
    assert _ratio(parts["eta_e"]) - scores.v_random / gap == pytest.approx(scores.eta_e)
    assert 1 + _ratio(parts["regret_u"]) == pytest.approx(scores.regret_u)
    assert 1 + _ratio(parts["regret_e"]) == pytest.approx(scores.regret_e)
    assert _ratio(parts["detection"]) == pytest.approx(scores.detection)
    assert _ratio(parts["waste"]) == pytest.approx(scores.waste)
    # One value per gradeable item, and the snapshot form reads back to the same values.
    assert {len(num) for num, _ in parts.values()} == {len(item_units(items, baselines))}
    read = read_per_unit(per_item_snapshot([CellOutcome(budget, plan, scores)], items, baselines))
    assert not isinstance(read, str)
    assert read[1]["eta_u"][0] == parts["eta_u"][0]  # whole values: exact
    assert read[1]["eta_u"][1] == pytest.approx(parts["eta_u"][1])


def test_triage_leaves_out_scores_the_cell_leaves_undefined() -> None:
    items = [Item(id="a", text=""), Item(id="b", text="")]
    baselines = {"a": Baseline(solved=False, tokens=5), "b": Baseline(solved=False, tokens=5)}
    plan = Plan(entries=(PlanEntry("a", 5),))
    scores = score_plan(plan, items, baselines, 5, seed=1)
    # Nothing solvable: V_oracle = 0, no eta, no regret; no unsolvable item: no detection.
    assert per_item_parts([CellOutcome(5, plan, scores)], items, baselines) == {}


@pytest.fixture(scope="module")
def rollouts() -> object:
    return anyio.run(
        lambda: generate_env_rollouts("sokoban-8x8", 12, seed=42, actor=ReferenceActor(42))
    )


@pytest.mark.parametrize("estimator", [RandomEstimator(seed=5), LinearEstimator()])
def test_awareness_probes_add_up_to_the_cell_scores(rollouts: object, estimator: object) -> None:
    outcome = anyio.run(lambda: run_awareness_cell(rollouts, estimator))  # type: ignore[arg-type]
    parts = per_probe_parts([outcome])
    scores = outcome.scores
    assert _ratio(parts["fail_f1"]) == pytest.approx(scores["fail_f1"])
    macro = (_ratio(parts["macro_f1_all"]) + _ratio(parts["macro_f1_all.2"])) / 2
    assert macro == pytest.approx(scores["macro_f1_all"])
    assert _ratio(parts["interval_score"]) == pytest.approx(scores["interval_score"])
    assert _ratio(parts["invalid_rate"]) == pytest.approx(scores["invalid_rate"])
    assert {len(num) for num, _ in parts.values()} == {len(outcome.results)}
