"""pytest-budget: measure in CI whether an LLM agent is budget-aware.

The core (this package, minus :mod:`pytest_budget.plugin` and the ``fixtures``/``suites``
subpackages) never imports pytest: budgets, agents, environments and scoring work in a
notebook or a script as well as under pytest.
"""

from typing import TYPE_CHECKING, Any

from pytest_budget._version import __version__

if TYPE_CHECKING:
    from pytest_budget.agents import register_provider
    from pytest_budget.budget import Budget, BudgetExceeded, Meter, Usage
    from pytest_budget.gating import MetricSpec, Regression, compare
    from pytest_budget.roles import (
        Actor,
        AgentError,
        Estimator,
        Planner,
        Solver,
        ToolAgent,
        call_role,
    )
    from pytest_budget.tokens import count_tokens

# Imported on first use: the pytest plugin imports this package in every pytest run of the
# environment, and an unrelated run must not pay for anyio and the rest.
_LAZY = {
    "register_provider": "pytest_budget.agents",
    "Budget": "pytest_budget.budget",
    "BudgetExceeded": "pytest_budget.budget",
    "Meter": "pytest_budget.budget",
    "Usage": "pytest_budget.budget",
    "MetricSpec": "pytest_budget.gating",
    "Regression": "pytest_budget.gating",
    "compare": "pytest_budget.gating",
    "Actor": "pytest_budget.roles",
    "AgentError": "pytest_budget.roles",
    "Estimator": "pytest_budget.roles",
    "Planner": "pytest_budget.roles",
    "Solver": "pytest_budget.roles",
    "ToolAgent": "pytest_budget.roles",
    "call_role": "pytest_budget.roles",
    "count_tokens": "pytest_budget.tokens",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_budget' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
