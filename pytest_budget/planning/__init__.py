"""CostBench-style cost-optimal tool-use planning (travel domain); importable without pytest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.planning._blocking import BLOCK_MODES, EPISODE_MODES, Blocker, trigger_step
    from pytest_budget.planning._code_metrics import evaluate_episode
    from pytest_budget.planning._costs import (
        atomic_cost_order,
        atomic_costs,
        composite_cost,
        query_seed,
    )
    from pytest_budget.planning._env import StepResult, TravelEnv, expected_answer
    from pytest_budget.planning._episode import ToolAgentObservation, run_episode
    from pytest_budget.planning._episode_records import (
        EpisodeRecord,
        Query,
        Segment,
        ToolCallRecord,
    )
    from pytest_budget.planning._evaluate import PlanningOutcome, run_planning_cell
    from pytest_budget.planning._metrics import (
        edit_distance,
        greedy_scores,
        score_episode,
        score_episodes,
    )
    from pytest_budget.planning._queries import (
        QueryFileError,
        dump_queries,
        generate_queries,
        load_queries,
    )
    from pytest_budget.planning._reference_agents import (
        AtomicOnlyToolAgent,
        GreedyToolAgent,
        OracleToolAgent,
        RandomValidToolAgent,
    )
    from pytest_budget.planning._tools import (
        DIMENSIONS,
        PREFERENCE_VALUES,
        TASKS,
        Tool,
        atomic_chain,
        build_tools,
        composite_name,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "BLOCK_MODES",
    "DIMENSIONS",
    "EPISODE_MODES",
    "PREFERENCE_VALUES",
    "TASKS",
    "AtomicOnlyToolAgent",
    "Blocker",
    "EpisodeRecord",
    "GreedyToolAgent",
    "OracleToolAgent",
    "PlanningOutcome",
    "Query",
    "QueryFileError",
    "RandomValidToolAgent",
    "Segment",
    "StepResult",
    "Tool",
    "ToolAgentObservation",
    "ToolCallRecord",
    "TravelEnv",
    "atomic_chain",
    "atomic_cost_order",
    "atomic_costs",
    "build_tools",
    "composite_cost",
    "composite_name",
    "dump_queries",
    "edit_distance",
    "evaluate_episode",
    "expected_answer",
    "generate_queries",
    "greedy_scores",
    "load_queries",
    "query_seed",
    "run_episode",
    "run_planning_cell",
    "score_episode",
    "score_episodes",
    "trigger_step",
]
