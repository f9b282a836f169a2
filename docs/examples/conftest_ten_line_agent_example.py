"""Your own triage planner in ten lines (the first-run tutorial, step 6, and the README).

Copy this file to ``conftest.py`` in an empty directory and run::

    pytest --budget-suite=triage --budget-alpha=0.5 --budget-gate=off

The planner attempts the first five problems and gives each an equal share of the budget.
"""

import pytest

from pytest_budget.triage import Plan, PlanEntry


class MyPlanner:
    name = "my-planner"

    def plan(self, request):  # request.items (.id, .text, .value), request.budget
        share = request.budget // len(request.items)
        return Plan(entries=tuple(PlanEntry(p.id, share) for p in request.items[:5]))
        # ... or return the raw LLM text: '{"plan": [{"id": "arith-003", "tokens": 120}]}'


@pytest.fixture
def budget_planner():
    return MyPlanner()
