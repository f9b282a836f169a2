"""Your own budget tests with pytest-budget's scoring functions and fixtures.

Copy this file into your tests and run it once with ``--snapshot-update`` to store the
baseline, then without::

    pytest test_own_scores_example.py --snapshot-update
    pytest test_own_scores_example.py
"""

import functools

import anyio
import pytest

from pytest_budget import BudgetExceeded
from pytest_budget.triage import (
    Baseline,
    CheapestFirstPlanner,
    Item,
    PlanStatus,
    budget_for,
    parse_plan,
    run_cell,
    score_plan,
)

# A tiny pool with its Phase 0 ground truth: solved y_i and output tokens c_i.
ITEMS = [
    Item(id="easy", text="2 + 2 = ?"),
    Item(id="hard", text="Prove the Riemann hypothesis."),
    Item(id="long", text="Sum the first 100 primes."),
    Item(id="trap", text="What number am I thinking of?", unsolvable=True),
]
TRUTH = {
    "easy": Baseline(solved=True, tokens=50),
    "hard": Baseline(solved=False, tokens=900),
    "long": Baseline(solved=True, tokens=400),
    "trap": Baseline(solved=False, tokens=300),
}
RAW_REPLY = """I'll skip the proof and the riddle.
```json
{"plan": [{"id": "easy", "tokens": "80"}, {"id": "long", "tokens": 450},
          {"id": "nope", "tokens": 9}]}
```"""


def my_planner_reply() -> str:
    return RAW_REPLY  # call your agent here


def test_reply_parses_with_repairs():
    plan = parse_plan(my_planner_reply(), [item.id for item in ITEMS])
    assert plan.status is PlanStatus.REPAIRED  # text around the JSON, a string count, an unknown id
    assert [(entry.id, entry.tokens) for entry in plan.entries] == [("easy", 80), ("long", 450)]


def test_plan_scores(budget_record, budget_snapshot, budget_seed):
    budget = budget_for([truth.tokens for truth in TRUTH.values()], alpha=0.5)  # 825
    plan = parse_plan(my_planner_reply(), [item.id for item in ITEMS])
    scores = score_plan(plan, ITEMS, TRUTH, budget, seed=budget_seed)
    assert scores.eta_u == 1.0 and scores.eta_e == 1.0
    assert scores.detection == 1.0 and scores.waste == 0.0
    # Shown in the terminal table, the --budget-report JSON and JUnit properties.
    budget_record(
        {
            "suite": "triage",
            "cell": "tiny-pool",
            "agent": "my-planner",
            "seed": budget_seed,
            "outcome": "ok",
            "budget": budget,
            "plan_status": scores.plan_status,
            "scores": scores.as_scores(),
        }
    )
    # Compared with __budget_snapshots__/triage/tiny-pool.json by direction and tolerance.
    payload = {"scores": scores.as_scores(), "context": {"seed": budget_seed}}
    assert budget_snapshot("triage", "tiny-pool") == payload


@pytest.mark.budget(tokens=1000, tool_calls=3)
def test_agent_stays_within_its_cap(budget_cap, budget_meter):
    assert budget_cap.caps == {"tokens": 1000.0, "tool_calls": 3.0}
    for _ in range(3):
        budget_meter.charge(tokens=300, tool_calls=1)  # charge what your agent reports
    assert budget_meter.remaining["tokens"] == 100
    with pytest.raises(BudgetExceeded, match="tokens 1200 > cap 1000"):
        budget_meter.charge(tokens=300)


def test_planner_on_a_bundled_pool(triage_ground_truth, budget_solver, budget_seed):
    pool = triage_ground_truth.pool("arith", 0.5)  # bundled pool, half replaced by unsolvables
    phase0 = triage_ground_truth.baselines(pool, budget_solver)  # reference solver, cached
    planner = CheapestFirstPlanner()  # put your planner here
    cell = functools.partial(run_cell, pool, phase0.baselines, 0.5, planner, seed=budget_seed)
    outcome = anyio.run(cell)
    assert outcome.outcome == "ok"
    assert outcome.scores.eta_u > 0.5
    assert outcome.scores.detection > 0.5
