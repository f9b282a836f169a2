"""Triage on the HTML page: the score columns of its two cell kinds and the footer lines.

The columns follow the terminal tables of :mod:`pytest_budget.triage._summary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.report._html.columns import AGENT_COLUMN, Column, field_column, score_column
from pytest_budget.triage._cell_record import TriageCellRecord
from pytest_budget.triage._summary import cell_note, phase0_lines, plan_status, variant_agreement

__all__ = ["resolve_columns", "triage_columns", "triage_footer"]


# Column.read gets a record (html/tables.py still types it as a Mapping: ``object`` fits both).
def _plan(cell: CellRecord) -> object:
    return plan_status(cell) if isinstance(cell, TriageCellRecord) else "-"


def _note(cell: CellRecord) -> str:
    return cell_note(cell) if isinstance(cell, TriageCellRecord) else ""


def triage_columns() -> tuple[Column, ...]:
    return (
        field_column("pool"), field_column("unsolvable_ratio", "unsolv"), field_column("alpha"),
        field_column("variant", "var"), AGENT_COLUMN, field_column("budget", "B"),
        score_column("eta_u"), score_column("eta_e"), score_column("regret_u"),
        score_column("regret_e"), score_column("detection", "detect"), score_column("waste"),
        Column("plan", _plan),
        Column("note", _note, None, "why eta is undefined or set by convention"),
    )  # fmt: skip


def resolve_columns() -> tuple[Column, ...]:
    return (
        field_column("pool"), field_column("alpha"), AGENT_COLUMN,
        score_column("n", delta=False), score_column("compliance"),
        score_column("kept", delta=False), score_column("lost", delta=False),
        score_column("newly_correct", "newly", delta=False),
        score_column("still_wrong", "wrong", delta=False),
        score_column("acc_baseline", "acc_base"), score_column("acc_budget_aware", "acc_stated"),
    )  # fmt: skip


def triage_footer(cells: Sequence[CellRecord]) -> list[str]:
    """Plan outcomes, Phase 0 facts and how the prompt variants rank the agents."""
    triage = of_type(cells, TriageCellRecord)
    statuses = Counter(plan_status(c) for c in triage)
    over = sum(bool(c.over_budget) for c in triage)
    counts = ", ".join(f"{statuses.get(k, 0)} {k}" for k in ("ok", "repaired", "unparseable"))
    return [
        f"plans: {counts}; {over} with allocations over B",
        *phase0_lines(triage),
        *variant_agreement(triage),
    ]
