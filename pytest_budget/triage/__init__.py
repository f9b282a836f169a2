"""The triage suite's public API (TRIAGE): pools, plans, Phase 0 and scoring.

Everything here is plain Python, usable without pytest::

    from pytest_budget.triage import score_plan, parse_plan, bundled_pools
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.triage._domains import ReferenceSolver
    from pytest_budget.triage._evaluate import (
        CellOutcome,
        TriageScores,
        budget_for,
        run_cell,
        score_plan,
    )
    from pytest_budget.triage._graders import GRADERS, extract_answer, get_grader, grade
    from pytest_budget.triage._phase0 import Phase0Cache, coerce_solution, measure_baselines
    from pytest_budget.triage._plan_parser import parse_plan
    from pytest_budget.triage._planners import (
        AttemptAllPlanner,
        CheapestFirstPlanner,
        OraclePlanner,
        RandomPlanner,
    )
    from pytest_budget.triage._pool_file import (
        PoolFileError,
        chunk_pool,
        load_pool_file,
        load_pools,
    )
    from pytest_budget.triage._pools import bundled_pools, inject_unsolvable
    from pytest_budget.triage._prompts import render_plan_prompt, render_resolve_banner
    from pytest_budget.triage._resolve import ResolveScores, run_resolve
    from pytest_budget.triage._scoring import (
        detection_rate,
        efficiency,
        execute_advisory,
        execute_enforced,
        kendall_tau_b,
        oracle_value,
        random_reference,
        regret,
        waste_rate,
    )
    from pytest_budget.triage._types import (
        Baseline,
        Item,
        Plan,
        PlanEntry,
        PlanRequest,
        PlanStatus,
        Pool,
        Problem,
        Solution,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "GRADERS",
    "AttemptAllPlanner",
    "Baseline",
    "CellOutcome",
    "CheapestFirstPlanner",
    "Item",
    "OraclePlanner",
    "Phase0Cache",
    "Plan",
    "PlanEntry",
    "PlanRequest",
    "PlanStatus",
    "Pool",
    "PoolFileError",
    "Problem",
    "RandomPlanner",
    "ReferenceSolver",
    "ResolveScores",
    "Solution",
    "TriageScores",
    "budget_for",
    "bundled_pools",
    "chunk_pool",
    "coerce_solution",
    "detection_rate",
    "efficiency",
    "execute_advisory",
    "execute_enforced",
    "extract_answer",
    "get_grader",
    "grade",
    "inject_unsolvable",
    "kendall_tau_b",
    "load_pool_file",
    "load_pools",
    "measure_baselines",
    "oracle_value",
    "parse_plan",
    "random_reference",
    "regret",
    "render_plan_prompt",
    "render_resolve_banner",
    "run_cell",
    "run_resolve",
    "score_plan",
    "waste_rate",
]
