"""pytest-budget: measure in CI whether an LLM agent is budget-aware.

The core (this package, minus :mod:`pytest_budget.plugin` and the ``fixtures``/``suites``
subpackages) never imports pytest: budgets, agents, environments and scoring work in a
notebook or a script as well as under pytest.
"""

from typing import TYPE_CHECKING

from pytest_budget._version import __version__
from pytest_budget.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from pytest_budget.agents import register_provider
    from pytest_budget.awareness.roles import Actor, Estimator
    from pytest_budget.budget import Budget, BudgetExceeded, Meter, Usage
    from pytest_budget.gating import MetricSpec, Regression, compare
    from pytest_budget.planning.roles import ToolAgent
    from pytest_budget.roles import AgentError, call_role
    from pytest_budget.tokens import count_tokens
    from pytest_budget.triage.roles import Planner, Solver

# Imported on first use (see pytest_budget.lazy_exports): the pytest plugin imports this
# package in every pytest run of the environment, and an unrelated run must not pay for
# anyio and the rest.
__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "Actor",
    "AgentError",
    "Budget",
    "BudgetExceeded",
    "Estimator",
    "Meter",
    "MetricSpec",
    "Planner",
    "Regression",
    "Solver",
    "ToolAgent",
    "Usage",
    "__version__",
    "call_role",
    "compare",
    "count_tokens",
    "register_provider",
]
