"""A triage planner plugged in by overriding the ``budget_planner`` fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=triage --budget-gate=off

The planner guesses each problem's cost from the length of its text, attempts the
cheapest-looking problems first and gives each one its guess plus a safety margin.
"""

import pytest

from pytest_budget.triage import Plan, PlanEntry, PlanRequest

#: Guessed output tokens per word of problem text.
TOKENS_PER_WORD = 4
#: Allocation = guess x MARGIN, so a modest underestimate still fits under a hard cap.
MARGIN = 1.5


class ShortestFirstPlanner:
    name = "shortest-first"  # the name shown in the table and the JSON report

    def plan(self, request: PlanRequest) -> Plan:
        guesses = {p.id: TOKENS_PER_WORD * len(p.text.split()) for p in request.items}
        order = sorted(request.items, key=lambda p: guesses[p.id], reverse=False)
        entries, left = [], request.budget
        for problem in order:
            tokens = round(guesses[problem.id] * MARGIN)
            if tokens > left:
                break
            entries.append(PlanEntry(problem.id, tokens))
            left -= tokens
        return Plan(entries=tuple(entries))


@pytest.fixture
def budget_planner():
    return ShortestFirstPlanner()
