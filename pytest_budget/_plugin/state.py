"""Where the plugin keeps the run's state on pytest's objects: the session on the config,
a cell's record on its test item.  Imported by the plugin, its reporter and every suite's
fixtures and cell modules (which must not import the plugin module itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_budget._run.session import BudgetSession

__all__ = ["CELL_KEY", "GATE_KEY", "NO_BASELINE", "SESSION_KEY", "budget_session"]

SESSION_KEY = pytest.StashKey["BudgetSession"]()
#: A cell's record (JSON), stashed on its test item by ``budget_record``.
CELL_KEY = pytest.StashKey[str]()
#: A cell's per-unit score changes (JSON), for the run's pooled paired test.
GATE_KEY = pytest.StashKey[str]()
#: The user property of a cell that had no stored baseline (scored, not gated).
NO_BASELINE = "budget_no_baseline"


def budget_session(config: pytest.Config) -> BudgetSession:
    """The run's :class:`~pytest_budget._run.session.BudgetSession` (after ``pytest_configure``)."""
    return config.stash[SESSION_KEY]
