"""The triage suite's cell records: ``triage`` and ``triage-resolve``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pytest_budget._core.records import CellRecord, describe

__all__ = ["ResolveCellRecord", "TriageCellRecord"]


@dataclass(kw_only=True, slots=True)
class _PlanCellRecord(CellRecord):
    """What both triage kinds record: the cell's coordinates and the plan's status."""

    # The coordinates: every cell of the suite has them; a cell your own test records
    # under this kind may leave them out (the table shows a dash).
    pool: str | None = describe(
        "Bundled pool (arith, sokoban) or a user pool's file stem, plus #k for chunk k."
    )
    unsolvable_ratio: float | None = describe(
        "Share of the pool's items injected as unsolvable.", minimum=0, maximum=1
    )
    alpha: float | None = describe(
        "Budget as a share of the pool's Phase 0 cost.", exclusiveMinimum=0, maximum=1
    )
    variant: Literal["A", "B", "C"] | None = describe("Prompt variant (what the planner is told).")
    budget: int | None = describe("B = floor(alpha * sum c_i) in tokens.", minimum=0)
    solver: str | None = describe("The solver that ran Phase 0.")
    plan_status: Literal["ok", "repaired", "unparseable"] | None = describe(
        "Whether the plan was read as written, repaired, or could not be read."
    )
    truncated: dict[str, int] | None = describe(
        "Model outputs cut at their token cap, and the calls made: planner and Phase 0 "
        "(triage), re-solve (triage-resolve)."
    )


@dataclass(kw_only=True, slots=True)
class TriageCellRecord(_PlanCellRecord):
    """A ``triage`` cell: which problems the planner attempts, in what order, with what
    allocation, scored under regimes U and E against the knapsack oracle (TRIAGE)."""

    KIND: ClassVar[str] = "triage"
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset(
        {"reason", "eta_note", "detection_counts", "waste_tokens", "plan_raw"}
    )

    repairs: list[str] | None = describe("What the plan parser repaired.")
    repairs_omitted: int | None = describe("Entries of repairs left out.", minimum=1)
    over_budget: bool | None = describe(
        "The plan's allocations add up to more than B (scored as written)."
    )
    excluded: dict[str, int] | None = describe(
        "Plans left out of the eta averages (unparseable after repair), out of the K plans."
    )
    eta_note: str | None = describe(
        "Why eta is missing (V_oracle = 0, every plan excluded) or set by the App. D.2 "
        "convention; null otherwise."
    )
    detection_counts: list[int] | None = describe(
        "[unsolvable items left out, unsolvable items], over the counted plans; null "
        "without injected items."
    )
    waste_tokens: list[int] | None = describe(
        "[tokens allocated to unsolvable items, tokens allocated], over the counted "
        "plans; null without injected items."
    )
    v_random_stderr: float | None = describe(
        "Standard error of V_random's Monte Carlo mean.", minimum=0
    )
    planned_ids: list[str] | None = describe("The plan's item ids, in order.")
    planned_ids_omitted: int | None = describe("Entries of planned_ids left out.", minimum=1)
    unsolvable_domains: dict[str, int] | None = describe("Unsolvable items per domain label.")
    executed_ids: dict[str, list[str]] | None = describe(
        "Items executed under regime U and regime E.",
        properties={
            "u": {"type": "array", "items": {"type": "string"}},
            "e": {"type": "array", "items": {"type": "string"}},
        },
    )
    plan_raw: str | None = describe(
        "The planner's reply (clipped, credentials masked); null when the planner raised."
    )
    phase0: dict[str, Any] | None = describe(
        "The pool's Phase 0: items, gradeable items, items solved, errors, and where the "
        "results came from.",
        properties={
            "items": {"type": "integer"},
            "gradeable": {"type": "integer"},
            "solved": {
                "type": "integer",
                "minimum": 0,
                "description": "items the solver got right in Phase 0 (solved / items is "
                "the pool's base accuracy)",
            },
            "errors": {"type": "object", "additionalProperties": {"type": "string"}},
            "errors_omitted": {"type": "integer", "minimum": 1},
            "from_cache": {"type": "integer", "minimum": 0},
            "measured": {"type": "integer", "minimum": 0},
            "from_file": {"type": "integer", "minimum": 0},
        },
    )

    def drill_fields(self) -> dict[str, Any]:
        """The planner's reply, shown above the items."""
        return {"plan_raw": self.plan_raw}

    def junit_properties(self) -> dict[str, Any]:
        found = CellRecord.junit_properties(self)
        if self.plan_status is not None:
            found["plan_status"] = self.plan_status
        return found


@dataclass(kw_only=True, slots=True)
class ResolveCellRecord(_PlanCellRecord):
    """A ``triage-resolve`` cell: the planned items solved again with the stated
    allocation (``--budget-resolve``)."""

    KIND: ClassVar[str] = "triage-resolve"
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset({"reason"})
