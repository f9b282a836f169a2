"""Planning on the HTML page: the score columns of its cells and the footer line.

The columns follow the terminal table of :mod:`pytest_budget.planning._summary`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_budget._core.records import CellRecord
from pytest_budget.planning._cell_record import PlanningCellRecord
from pytest_budget.report._html.columns import AGENT_COLUMN, Column, field_column, score_column

__all__ = ["planning_columns", "planning_footer"]


_BLOCKS = "blocking events applied/dropped"


def _blocks(cell: CellRecord) -> object:
    scores = cell.scores
    return f"{scores.get('blocks_applied', 0)}/{scores.get('blocks_dropped', 0)}"


def _greedy(name: str, header: str) -> Column:
    def read(cell: CellRecord) -> object:
        return cell.greedy.get(name) if isinstance(cell, PlanningCellRecord) else None

    tooltip = f"greedy baseline's {name} on the same episodes"
    return Column(header, read, None, tooltip)


def planning_columns() -> tuple[Column, ...]:
    return (
        field_column("task"), field_column("scenario"), AGENT_COLUMN,
        score_column("n_episodes", "n", delta=False), score_column("emr"), score_column("aned"),
        score_column("cost_gap"), score_column("cost_gap_clean", "gap_clean"),
        score_column("uihr"), score_column("itur"), score_column("excluded", "excl", delta=False),
        Column("blocks", _blocks, None, _BLOCKS),
        _greedy("emr", "greedy_emr"), _greedy("cost_gap", "greedy_gap"),
    )  # fmt: skip


def planning_footer(cells: Sequence[CellRecord]) -> list[str]:
    return [
        "blocks = blocking events applied/dropped (dropped: too late to matter); excl = "
        "episodes left out of path and cost metrics (goal not reached, error, or fewer "
        "blocks than asked); cost gaps are measured without blocking only, as CostBench "
        "does; greedy_* = the greedy baseline on the same episodes"
    ]
