"""An LLM-style triage planner plugged in through the ``pytest_budget_planner`` hook.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=triage --budget-gate=off

The planner sends ``request.prompt`` (the full planning prompt) to a model and returns the
model's raw text; pytest-budget parses and repairs it.  ``fake_complete`` stands in for
your model client so the example runs offline: replace it with a real call.
"""

import json
import re


def fake_complete(prompt: str) -> str:
    """Pretend model: reads the ids and the budget from the prompt, answers chattily."""
    ids = re.findall(r"^\[id: (.+?)\]", prompt, flags=re.MULTILINE)
    budget = int(re.search(r"no more than (\d+) tokens", prompt).group(1))
    share = budget // max(1, len(ids))
    plan = {"plan": [{"id": item_id, "tokens": share} for item_id in ids[::2]]}
    return (
        "<think>Every other problem, equal shares.</think>\n"
        "Here is my plan:\n```json\n" + json.dumps(plan) + "\n```\nGood luck!"
    )


class LLMPlanner:
    name = "llm-planner"

    def plan(self, request):
        return fake_complete(request.prompt)  # raw text is fine


def pytest_budget_planner(config):
    return LLMPlanner()
