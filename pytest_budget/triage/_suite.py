"""The triage suite as the shared layers see it (see :mod:`pytest_budget._core.registry`).

Two cell kinds: ``triage`` (which problems to attempt, in what order, with what
allocation, under a shared budget; TRIAGE) and ``triage-resolve`` (budget-aware re-solve
with the stated allocation, collected with ``--budget-resolve``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_budget._core.metric_spec import MetricSpec
from pytest_budget._core.registry import (
    CellKind,
    ReplyRule,
    Role,
    Suite,
    SuiteOptions,
    lazy,
    reference_agent,
)
from pytest_budget.triage._options import (
    DESTS,
    LIST_DESTS,
    TriageOptions,
    add_options,
    parse_options,
)

__all__ = ["SUITE"]

# Cells of one pool (and unsolvable ratio) share its generation and Phase 0.
_POOL = re.compile(r"^(?P<pool>.+-u[0-9.]+)-a[0-9.]+-")


def _work_group(params: str, options: Any) -> str | None:
    found = _POOL.match(params)
    return f"triage:{found['pool']}" if found else None


def _test_files(options: Any) -> tuple[str, ...]:
    return (
        "test_triage.py",
        *(("test_triage_resolve.py",) if options.of(TriageOptions).resolve else ()),
    )


def _llm_roles() -> Mapping[str, type]:
    from pytest_budget.triage._llm import LLM_ROLES

    return LLM_ROLES


def _is_plan(value: object) -> bool:
    from pytest_budget.triage._types import Plan

    return isinstance(value, Plan | list | tuple)


def _is_solution(value: object) -> bool:
    from pytest_budget.triage._types import Solution

    return isinstance(value, Solution)


def _reference_solver(seed: int) -> object:
    from pytest_budget.triage._domains import ReferenceSolver

    return ReferenceSolver()  # deterministic: no seed


#: Where its reference agents live (imported on first use).
_PLANNERS = "pytest_budget.triage._planners:"


SUITE = Suite(
    name="triage",
    kinds=(
        CellKind(
            name="triage",
            test_file="test_triage.py",
            metrics=(
                MetricSpec("eta_u", "higher", 0.05, "triage efficiency, advisory regime"),
                MetricSpec("eta_e", "higher", 0.05, "triage efficiency, enforced regime"),
                MetricSpec("regret_u", "lower", 0.05, "normalised regret, advisory regime"),
                MetricSpec("regret_e", "lower", 0.05, "normalised regret, enforced regime"),
                MetricSpec("detection", "higher", 0.05, "share of unsolvable items left out"),
                MetricSpec("waste", "lower", 0.05, "share of allocated tokens on unsolvable items"),
            ),
            reference_agents=("cheapest-first", "random", "attempt-all", "oracle"),
            table_title="triage: triage efficiency (eta), regret, detection and waste",
            table=lazy("pytest_budget.triage._summary:triage_table"),
            page_title="triage: which problems to attempt under a shared budget (TRIAGE)",
            columns=lazy("pytest_budget.triage._page:triage_columns"),
            footer=lazy("pytest_budget.triage._page:triage_footer"),
            charts=lazy("pytest_budget.triage._figures:triage_charts"),
            always_on_page=True,
            sample_script=Path(__file__).with_name("samples.js"),
            record_type="pytest_budget.triage._cell_record:TriageCellRecord",
            work_group=_work_group,
        ),
        CellKind(
            name="triage-resolve",
            test_file="test_triage_resolve.py",
            metrics=(
                MetricSpec(
                    "compliance", "higher", 0.05, "share of re-solves within the allocation"
                ),
                MetricSpec(
                    "acc_budget_aware", "higher", 0.05, "accuracy with the allocation stated"
                ),
            ),
            table_title="triage: budget-aware re-solve (stated allocation)",
            table=lazy("pytest_budget.triage._summary:resolve_table"),
            page_title="triage: budget-aware re-solve (stated allocation)",
            columns=lazy("pytest_budget.triage._page:resolve_columns"),
            record_type="pytest_budget.triage._cell_record:ResolveCellRecord",
        ),
    ),
    test_files=_test_files,
    options=SuiteOptions(
        add=add_options,
        parse=parse_options,
        dests=DESTS,
        list_dests=LIST_DESTS,
    ),
    fixture_modules=("pytest_budget.fixtures.triage", "pytest_budget.fixtures.triage_forecast"),
    # Pairs each pool item's new values with the stored ones (issue 30: a noisy planner's
    # baseline is one draw too; benchmarks/bench_gate_runs.py).
    default_gate="paired",
    # Forecast reply lengths: a JSON plan; one worked solution.
    roles=(
        Role(
            "planner",
            method="plan",
            protocol="pytest_budget.triage._roles:Planner",
            reply=ReplyRule(
                "a Plan, a mapping with a 'plan' list, a list of entries or text",
                mapping_keys=("plan",),
                accepts=_is_plan,
            ),
            evaluated=True,
            output_tokens=400,
        ),
        Role(
            "solver",
            method="solve",
            protocol="pytest_budget.triage._roles:Solver",
            reply=ReplyRule(
                "a Solution, a mapping with 'text' (and 'tokens'/'answer') or text",
                mapping_keys=("text", "answer"),
                accepts=_is_solution,
                sized_text=True,
            ),
            fallback=_reference_solver,
            output_tokens=600,
        ),
    ),
    llm_roles=_llm_roles,
    reference_agents={
        "oracle": {"planner": reference_agent(_PLANNERS + "OraclePlanner")},
        "random": {"planner": reference_agent(_PLANNERS + "RandomPlanner", seeded=True)},
        "cheapest-first": {"planner": reference_agent(_PLANNERS + "CheapestFirstPlanner")},
        "attempt-all": {"planner": reference_agent(_PLANNERS + "AttemptAllPlanner")},
    },
    runs_whole={"planner": "one plan call per cell, which cannot be split into batches"},
)
