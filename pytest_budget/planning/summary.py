"""Terminal table for planning cells (one row per task x scenario x agent)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget.tables import render_table

__all__ = ["planning_table"]


def planning_table(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """Path, cost and intent scores per cell, with greedy's beside them."""
    headers = [
        "task", "scenario", "agent", "n", "emr", "aned", "cost_gap", "gap_clean", "uihr",
        "itur", "excl", "blocks", "greedy_emr", "greedy_gap",
    ]  # fmt: skip
    rows = []
    for cell in cells:
        s, g = cell.get("scores", {}), cell.get("greedy", {})
        agent = str(cell.get("agent"))
        if cell.get("outcome", "ok") != "ok":
            agent = f"{agent} ({cell.get('outcome')})"
        blocks = f"{s.get('blocks_applied', 0)}/{s.get('blocks_dropped', 0)}"
        rows.append([
            cell.get("task"), cell.get("scenario"), agent, s.get("n_episodes"), s.get("emr"),
            s.get("aned"), s.get("cost_gap"), s.get("cost_gap_clean"), s.get("uihr"),
            s.get("itur"), s.get("excluded"), blocks, g.get("emr"), g.get("cost_gap"),
        ])  # fmt: skip
    lines = render_table(headers, rows)
    lines.append(
        "blocks = applied/dropped (too late to matter); excl = episodes left out of path and "
        "cost metrics (goal not reached, error, or fewer blocks than asked); cost gaps are "
        "measured without blocking only, as CostBench does"
    )
    return lines
