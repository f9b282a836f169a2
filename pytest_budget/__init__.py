"""pytest-budget: measure in CI whether an LLM agent is budget-aware.

The core (this package, minus :mod:`pytest_budget.plugin` and the ``fixtures``/``suites``
subpackages) never imports pytest: budgets, agents, environments and scoring work in a
notebook or a script as well as under pytest.
"""

from typing import TYPE_CHECKING

# First: pytest's rewrite hook is importing this package for the plugin; everything
# imported after this line loads from pip's bytecode, not compiled from source.
from pytest_budget._core.rewrite_mark import narrow_rewrite_marks

narrow_rewrite_marks()

from pytest_budget._core.lazy_exports import lazy_exports  # noqa: E402
from pytest_budget._core.old_paths import install_old_paths  # noqa: E402
from pytest_budget._version import __version__  # noqa: E402

if TYPE_CHECKING:
    from pytest_budget._core.budget import Budget, BudgetExceeded, Meter, Usage
    from pytest_budget._core.roles import AgentError, call_role
    from pytest_budget._core.tokens import count_tokens
    from pytest_budget._run.agent_names import register_provider
    from pytest_budget._stats.gating import MetricSpec, Regression, compare
    from pytest_budget.awareness._roles import Actor, Estimator
    from pytest_budget.planning._roles import ToolAgent
    from pytest_budget.triage._roles import Planner, Solver

# Imported on first use (see pytest_budget._core.lazy_exports): the pytest plugin imports this
# package in every pytest run of the environment, and an unrelated run must not pay for
# anyio and the rest.
__getattr__, __dir__ = lazy_exports(__name__, __file__)

# Paths from before the layer folders (0.1) still import, with a DeprecationWarning.
install_old_paths()


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
