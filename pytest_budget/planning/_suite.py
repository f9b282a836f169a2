"""The planning suite as the shared layers see it (see :mod:`pytest_budget._core.registry`).

One cell kind, ``planning``: cost-optimal tool use and re-planning under blocking events
(CostBench), one cell per task, scenario and agent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from pytest_budget.planning._options import (
    DESTS,
    LIST_DESTS,
    add_options,
    parse_options,
)

if TYPE_CHECKING:  # records load when a run records cells, not when options register
    from pytest_budget._core.records import CellRecord

__all__ = ["SUITE"]

# Cells of one task and refinement level share its queries and ground truth.
_TASK_LEVEL = re.compile(r"^(?P<task>[a-z]+)-.*?-L(?P<level>\d+)-")


def _work_group(params: str, options: Any) -> str | None:
    found = _TASK_LEVEL.match(params)
    return f"planning:{found['task']}-L{found['level']}" if found else None


def _report_blocks(cells: Sequence[CellRecord]) -> dict[str, Any]:
    """The row per (agent, scenario) pooled over tasks as CostBench pools it."""
    from pytest_budget.planning._summary import pooled_rows

    return {"planning_pooled": pooled_rows(cells)}


def _llm_roles() -> Mapping[str, type]:
    from pytest_budget.planning._llm import LLM_ROLES

    return LLM_ROLES


def _is_message(value: object) -> bool:
    """An SDK message or completion object (a mapping is checked by its keys)."""
    return hasattr(value, "tool_calls") or callable(getattr(value, "model_dump", None))


#: Where its reference agents live (imported on first use).
_TOOL_AGENTS = "pytest_budget.planning._reference_agents:"


SUITE = Suite(
    name="planning",
    kinds=(
        CellKind(
            name="planning",
            test_file="test_planning.py",
            metrics=(
                MetricSpec(
                    "emr", "higher", 0.05, "exact match of the tool sequence with an optimum"
                ),
                MetricSpec(
                    "aned", "lower", 0.05, "normalised edit distance to the nearest optimum"
                ),
                MetricSpec(
                    "cost_gap", "lower", 0.05, "relative extra cost over the optimum (static)"
                ),
                MetricSpec("uihr", "higher", 0.05, "final answers that match the user's request"),
                MetricSpec("itur", "lower", 0.05, "invalid tool calls over all calls"),
            ),
            reference_agents=("greedy", "random-valid", "atomic-only", "oracle"),
            table_title="planning: cost-optimal tool use (CostBench)",
            table=lazy("pytest_budget.planning._summary:planning_table"),
            page_title="planning: cost-optimal tool use (CostBench)",
            columns=lazy("pytest_budget.planning._page:planning_columns"),
            footer=lazy("pytest_budget.planning._page:planning_footer"),
            charts=lazy("pytest_budget.planning._figures:planning_charts"),
            always_on_page=True,
            sample_script=Path(__file__).with_name("samples.js"),
            record_type="pytest_budget.planning._cell_record:PlanningCellRecord",
            # The scenario's fields under the names its records use.
            param_renames={"blocks": "block_count", "level": "refinement_level"},
            work_group=_work_group,
        ),
    ),
    test_files=lambda options: ("test_planning.py",),
    options=SuiteOptions(
        add=add_options,
        parse=parse_options,
        dests=DESTS,
        list_dests=LIST_DESTS,
    ),
    fixture_modules=("pytest_budget.fixtures.planning", "pytest_budget.fixtures.planning_forecast"),
    # Pairs each query's new values with the stored ones: a sampling agent's baseline is
    # one noisy draw too, and pairing cancels the differences between queries (issue 17,
    # item 8; benchmarks/bench_planning_gate.py).
    default_gate="paired",
    # Forecast: one tool call per reply; a few tool calls and the answer per episode.
    roles=(
        Role(
            "tool_agent",
            method="act",
            protocol="pytest_budget.planning._roles:ToolAgent",
            reply=ReplyRule(
                "text or an assistant message (a mapping with 'content'/'tool_calls')",
                mapping_keys=("content", "text", "tool_calls", "choices"),
                accepts=_is_message,
            ),
            evaluated=True,
            output_tokens=250,
            turns=6,
        ),
    ),
    llm_roles=_llm_roles,
    reference_agents={
        "oracle": {"tool_agent": reference_agent(_TOOL_AGENTS + "OracleToolAgent")},
        "greedy": {"tool_agent": reference_agent(_TOOL_AGENTS + "GreedyToolAgent")},
        "random-valid": {
            "tool_agent": reference_agent(_TOOL_AGENTS + "RandomValidToolAgent", seeded=True)
        },
        "atomic-only": {"tool_agent": reference_agent(_TOOL_AGENTS + "AtomicOnlyToolAgent")},
    },
    report_blocks=_report_blocks,
    # bench_gate_runs.py --sizes default --designs wired --only none: 0.851 of the calls.
    sequential_shares={"tool_agent": 0.84},
)
