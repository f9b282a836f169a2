"""Triage on the HTML page: the score columns of its two cell kinds and the footer lines.

The columns follow the terminal tables of :mod:`pytest_budget.triage.summary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget.html.tables import AGENT_COLUMN, Column, field_column, score_column
from pytest_budget.triage.summary import cell_note, phase0_lines, variant_agreement

__all__ = ["resolve_columns", "triage_columns", "triage_footer"]

Cell = Mapping[str, Any]


def _plan(cell: Cell) -> object:
    return cell.get("plan_status", "-")


def triage_columns() -> tuple[Column, ...]:
    return (
        field_column("pool"), field_column("unsolvable_ratio", "unsolv"), field_column("alpha"),
        field_column("variant", "var"), AGENT_COLUMN, field_column("budget", "B"),
        score_column("eta_u"), score_column("eta_e"), score_column("regret_u"),
        score_column("regret_e"), score_column("detection", "detect"), score_column("waste"),
        Column("plan", _plan),
        Column("note", cell_note, None, "why eta is undefined or set by convention"),
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


def triage_footer(cells: Sequence[Cell]) -> list[str]:
    """Plan outcomes, Phase 0 facts and how the prompt variants rank the agents."""
    statuses = Counter(str(c.get("plan_status", "-")) for c in cells)
    over = sum(bool(c.get("over_budget")) for c in cells)
    counts = ", ".join(f"{statuses.get(k, 0)} {k}" for k in ("ok", "repaired", "unparseable"))
    return [
        f"plans: {counts}; {over} with allocations over B",
        *phase0_lines(cells),
        *variant_agreement(cells),
    ]
