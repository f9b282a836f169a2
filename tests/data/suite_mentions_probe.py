"""A probe for tests/test_suite_mentions.py: it names triage here, in its docstring."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_budget.awareness._replay.answers import Estimate  # noqa: F401

SUITE = "planning"
GROUP = "pytest-budget: budget-awareness suites"


def load() -> None:
    """Loads awareness data (a docstring)."""
    from pytest_budget.triage._types import Plan  # noqa: F401

    kinds = ["triage-resolve", "triaged"]
    path = "pytest_budget/suites/test_awareness.py"
    print(kinds, path)
