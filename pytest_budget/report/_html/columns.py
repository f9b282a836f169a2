"""Score table columns of the HTML page: the lookup of each cell kind's columns and footer
lines in the suite registry.  The column type and its building blocks are data
(:mod:`pytest_budget._core.page_parts`, so the registry can name them); re-exported here.

Each suite declares its own columns (its ``page`` module) after its terminal table, read
from the cell records directly so the page can mark a delta per score.  Plain Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_budget._core.page_parts import (
    AGENT_COLUMN,
    Column,
    agent_text,
    field_column,
    format_cell_value,
    score_column,
)
from pytest_budget._core.records import CellRecord
from pytest_budget._core.registry import cell_kind

__all__ = [
    "AGENT_COLUMN",
    "Column",
    "agent_text",
    "columns_for",
    "field_column",
    "footer_lines",
    "format_cell_value",
    "interval_text",
    "score_column",
    "section_title",
]

Cell = CellRecord


def section_title(suite: str) -> str:
    """The page section title of a cell kind (``suite`` field of its records)."""
    kind = cell_kind(suite)
    return kind.page_title if kind is not None and kind.page_title else f"{suite} (your own cells)"


def columns_for(suite: str, cells: Sequence[Cell]) -> tuple[Column, ...]:
    """The cell kind's columns; kinds without their own get every numeric score."""
    kind = cell_kind(suite)
    if kind is not None and kind.columns is not None:
        return kind.columns()
    names: list[str] = []
    for cell in cells:
        for key, value in cell.scores.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key not in names:
                names.append(key)
    return (field_column("cell"), AGENT_COLUMN, *(score_column(name) for name in names))


def interval_text(cell: Cell, metric: str) -> str:
    """``95% CI [0.420, 0.580]`` from the cell's bootstrap interval of ``metric``, or ""."""
    from pytest_budget.report._html.figures import interval_of

    bounds = interval_of(cell, metric)
    if bounds is None:
        return ""
    lo, hi = bounds
    level = (cell.ci_meta or {}).get("level")
    prefix = f"{level:.0%} CI" if isinstance(level, float) else "CI"
    return f"{prefix} [{lo:.3f}, {hi:.3f}]"


def footer_lines(suite: str, cells: Sequence[Cell]) -> list[str]:
    """The lines printed under a kind's table: plan counts, rankings, rollout sets."""
    kind = cell_kind(suite)
    return kind.footer(cells) if kind is not None and kind.footer is not None else []
