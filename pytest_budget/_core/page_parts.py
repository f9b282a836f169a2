"""What a suite gives the HTML page, as plain data: its table columns and its figures.

A suite's declaration (:class:`~pytest_budget._core.registry.CellKind`) names its page
columns and charts by these types, so the registry needs them without importing the page
(:mod:`pytest_budget.report._html`, which imports the registry to find each kind's parts).
Data only: no matplotlib, no HTML; :mod:`pytest_budget.report._html.columns` and
:mod:`pytest_budget.report._html.figures` re-export them beside the code that renders them.
Plain Python: no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_budget._core.records import CellRecord, field_value

__all__ = [
    "AGENT_COLUMN",
    "Chart",
    "Column",
    "agent_text",
    "field_column",
    "format_cell_value",
    "score_column",
]

Cell = CellRecord


@dataclass(frozen=True)
class Chart:
    """One figure of the page: a PNG (base64) at a CSS size, or a note when absent."""

    key: str
    title: str
    caption: str
    png: str | None = None
    width: int = 0
    height: int = 0
    note: str | None = None
    #: The drawn figure, kept unencoded inside :func:`~pytest_budget.report._html.figures.deferred`
    #: (see :func:`~pytest_budget.report._html.figures.finish_pair`).
    figure: Any = field(default=None, compare=False, repr=False)
    #: Recorded, not yet drawn (:mod:`pytest_budget.report._html.batch`): its placeholder.
    pending: str | None = None


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
