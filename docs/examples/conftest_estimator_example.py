"""An awareness estimator plugged in by overriding the ``budget_estimator`` fixture.

Copy this file to ``conftest.py`` in your project's rootdir and run::

    pytest --budget-suite=awareness --budget-env=sokoban-8x8 --budget-gate=off

The estimator guesses that the agent will need as much again as it has used so far, and
answers with the text an LLM would write (a ``<think>`` block, then an ``<answer>`` tag).
Replace the body of ``estimate`` with a call to your model on ``probe.text``, the full
prompt, and return the model's reply as it is.
"""

import math

import pytest


class DoublingEstimator:
    name = "doubling"  # the name shown in the table and the JSON report

    def estimate(self, probe):
        used, caps = probe.used, probe.budget
        if any(2 * used[dim] > cap for dim, cap in caps.items()):
            return "<think>At this pace a cap will not hold.</think><answer>impossible</answer>"
        # Whole numbers, as BAGEN's prompt asks: its parser reads runs of digits, so
        # "[50.00, 150.00]" would read as [0, 50].
        spans = {
            dim: f"[{math.floor(0.5 * used[dim])}, {math.ceil(1.5 * used[dim])}]" for dim in caps
        }
        if len(spans) == 1:  # one budget: a bare interval
            (answer,) = spans.values()
        else:  # several budgets: name every one of them
            answer = ", ".join(f"{dim}:{span}" for dim, span in spans.items())
        return f"<think>About as much again as so far.</think><answer>{answer}</answer>"


@pytest.fixture
def budget_estimator():
    return DoublingEstimator()
