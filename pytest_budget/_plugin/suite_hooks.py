"""Hooks a suite's plugin modules implement (see docs/how-to/add-a-suite.md).

The shared plugin calls them for every suite a run selects and never names a suite; each
suite answers for itself from its fixture modules
(:attr:`~pytest_budget._core.registry.Suite.fixture_modules`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_budget._run.session import BudgetSession

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_budget_forecast(
    config: pytest.Config, session: BudgetSession, suite: str, rows: Any
) -> bool | None:
    """Add the model calls suite ``suite`` will make to ``rows`` (a live run's cost
    forecast, :class:`~pytest_budget._plugin.forecast_hooks.ForecastRows`) and return True; None
    when ``suite`` is not yours.  A selected suite nobody answers for is listed as not
    forecast."""
