"""The planning suite's cell record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pytest_budget._core.records import CellRecord, describe, must

__all__ = ["PlanningCellRecord"]


@dataclass(kw_only=True, slots=True)
class PlanningCellRecord(CellRecord):
    """A ``planning`` cell: one task under one scenario, every query an episode of tool
    calls scored against the cheapest paths (CostBench)."""

    KIND: ClassVar[str] = "planning"
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset({"reason", "first_error"})

    task: Literal[
        "location", "transportation", "accommodation", "attraction", "dining", "shopping"
    ] = must("The travel task.")
    scenario: str = must(
        "The scenario id, <mode><N>-L<level>, or static-L<level> (e.g. ban_tool1-L5, static-L2)."
    )
    mode: Literal["static", "ban_tool", "preference_change", "cost_change", "remove_tools"] = must(
        "The blocking mode."
    )
    block_count: int = must(
        "Blocking events asked for per episode (0 for static).", minimum=0, maximum=3
    )
    refinement_level: int = must(
        "Refinement level L; the task takes L + 3 atomic steps.", minimum=0, maximum=5
    )
    queries: int = describe("Queries (episodes) in the cell.", default=0, required=True, minimum=0)
    greedy: dict[str, float | None] = describe(
        "CostBench's greedy baseline scored on the same episodes: emr, aed, aned, "
        "cost_gap, cost_gap_clean, uihr (null), itur (null), n_episodes, n_path, n_cost, "
        "excluded.",
        factory=dict,
        required=True,
        additionalProperties={"$ref": "#/$defs/score"},
    )
    planning_pool: dict[str, float] | None = describe(
        "The cell's sums behind the all-task row (report's planning_pooled)."
    )
    planning_greedy_pool: dict[str, float] | None = describe(
        "The greedy baseline's sums behind the all-task row."
    )
    reading: str | None = describe("How the metrics were read (--budget-planning-reading).")
    ban_longest: bool | None = describe("--budget-planning-ban-longest of the run.")
    first_error: str | None = describe(
        "The first episode the tool agent raised on; null when none.", required=True
    )
