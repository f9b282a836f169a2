"""Score table columns of the HTML page: the column type, its building blocks, and the
lookup of each cell kind's columns and footer lines in the suite registry.

Each suite declares its own columns (its ``page`` module) after its terminal table, read
from the cell records directly so the page can mark a delta per score.  Plain Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_budget.records import CellRecord, field_value
from pytest_budget.suite_registry import cell_kind

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


@dataclass(frozen=True)
class Column:
    """One table column: its header, how to read it from a cell, and whether it is a
    score whose change between two runs is marked (``metric`` = the score's name)."""

    header: str
    read: Callable[[Cell], object]
    metric: str | None = None
    tooltip: str = ""
    #: A coordinate (alpha, ratio), not a score: numbers shown as written (0.5, not 0.500).
    plain: bool = False

    def text(self, cell: Cell) -> str:
        return format_cell_value(self.read(cell), plain=self.plain)


def field_column(name: str, header: str | None = None) -> Column:
    """A coordinate read from the record (``pool``, ``alpha``), shown as written."""
    return Column(header or name, lambda cell: field_value(cell, name), plain=True)


def score_column(name: str, header: str | None = None, *, delta: bool = True) -> Column:
    """A score from the record's ``scores``; ``delta``: a change between runs is marked."""
    return Column(header or name, lambda cell: cell.scores.get(name), name if delta else None, name)


def agent_text(cell: Cell) -> object:
    """The agent's name, with the outcome when the cell did not end ``ok``."""
    return cell.agent if cell.status == "ok" else f"{cell.agent} ({cell.status})"


AGENT_COLUMN = Column("agent", agent_text)


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


def format_cell_value(value: object, *, plain: bool = False) -> str:
    """Like the terminal tables (three decimals), but an undefined score is an en dash;
    ``plain`` numbers (coordinates such as alpha) are shown as short as they are."""
    if value is None:
        return "\u2013"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:g}" if plain else f"{value:.3f}"
    return str(value)


def interval_text(cell: Cell, metric: str) -> str:
    """``95% CI [0.420, 0.580]`` from the cell's bootstrap interval of ``metric``, or ""."""
    from pytest_budget.html.figures import interval_of

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
