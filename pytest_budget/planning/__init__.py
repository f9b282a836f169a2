"""CostBench-style cost-optimal tool-use planning (travel domain); importable without pytest."""

from __future__ import annotations

from pytest_budget.planning.costs import (
    atomic_cost_order,
    atomic_costs,
    composite_cost,
    query_seed,
)
from pytest_budget.planning.env import TravelEnv, expected_answer, make_id
from pytest_budget.planning.tools import (
    DIMENSIONS,
    PREFERENCE_VALUES,
    TASKS,
    Tool,
    atomic_chain,
    build_tools,
    composite_name,
)

__all__ = [
    "DIMENSIONS",
    "PREFERENCE_VALUES",
    "TASKS",
    "Tool",
    "TravelEnv",
    "atomic_chain",
    "atomic_cost_order",
    "atomic_costs",
    "build_tools",
    "composite_cost",
    "composite_name",
    "expected_answer",
    "make_id",
    "query_seed",
]
