"""Terminal table for planning cells (one row per task x scenario x agent), and the row
pooled over all tasks per (scenario, agent) - the row to compare with CostBench's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.planning._cell_record import PlanningCellRecord
from pytest_budget.planning._code_metrics import (
    GREEDY_POOL_FIELDS,
    POOL_FIELDS,
    greedy_pooled_scores,
    pooled_scores,
)
from pytest_budget.report._text_table import render_table

__all__ = ["POOLED_TASK", "planning_table", "pooled_rows"]

#: The ``task`` of a pooled row.
POOLED_TASK = "all"


def pooled_rows(cells: Sequence[CellRecord]) -> list[dict[str, Any]]:
    """Per (scenario, agent): the scores pooled over every task's queries, as CostBench pools
    them (sums of the cells' ``planning_pool`` / ``planning_greedy_pool``, then the ratios;
    not a mean of per-task means).  Cells without pool sums (other readings, errors) are
    skipped; a row appears only when at least one cell pooled."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for cell in of_type(cells, PlanningCellRecord):
        pool, greedy = cell.planning_pool, cell.planning_greedy_pool
        if pool is None or greedy is None:
            continue
        if cell.reading not in (None, "code") or cell.outcome != "ok":
            continue
        key = (cell.scenario, cell.agent)
        group = groups.setdefault(
            key,
            {
                "pool": dict.fromkeys(POOL_FIELDS, 0.0),
                "greedy_pool": dict.fromkeys(GREEDY_POOL_FIELDS, 0.0),
                "tasks": [],
                "queries": 0,
            },
        )
        for name in POOL_FIELDS:
            group["pool"][name] += float(pool.get(name, 0.0))
        for name in GREEDY_POOL_FIELDS:
            group["greedy_pool"][name] += float(greedy.get(name, 0.0))
        group["tasks"].append(cell.task)
        group["queries"] += cell.queries
    rows = []
    for (scenario, agent), group in groups.items():
        rows.append(
            {
                "task": POOLED_TASK,
                "scenario": scenario,
                "agent": agent,
                "tasks": group["tasks"],
                "queries": group["queries"],
                "scores": pooled_scores(group["pool"]),
                "greedy": greedy_pooled_scores(group["greedy_pool"]),
                "pool": group["pool"],
                "greedy_pool": group["greedy_pool"],
            }
        )
    return rows


def planning_table(cells: Sequence[CellRecord]) -> list[str]:
    """Path, cost and intent scores per cell, with greedy's beside them; then the pooled
    all-task row per (scenario, agent)."""
    headers = [
        "task", "scenario", "agent", "n", "emr", "aed", "aned", "cost_gap", "uihr", "itur",
        "blocks", "greedy_emr", "greedy_aed", "greedy_aned", "greedy_gap",
    ]  # fmt: skip
    rows = []
    planning = of_type(cells, PlanningCellRecord)
    for cell in planning:
        s, g = cell.scores, cell.greedy
        agent = cell.agent if cell.outcome == "ok" else f"{cell.agent} ({cell.outcome})"
        blocks = f"{s.get('blocks_applied', 0)}/{s.get('blocks_dropped', 0)}"
        rows.append([
            cell.task, cell.scenario, agent, s.get("n_episodes"), s.get("emr"),
            s.get("aed"), s.get("aned"), s.get("cost_gap"), s.get("uihr"), s.get("itur"),
            blocks, g.get("emr"), g.get("aed"), g.get("aned"), g.get("cost_gap"),
        ])  # fmt: skip
    for row in pooled_rows(planning):
        s, g = row["scores"], row["greedy"]
        rows.append([
            POOLED_TASK, row["scenario"], row["agent"], row["queries"], s["emr"], s["aed"],
            s["aned"], s["cost_gap"], s["uihr"], s["itur"], "", g["emr"], g["aed"], g["aned"],
            g["cost_gap"],
        ])  # fmt: skip
    lines = render_table(headers, rows)
    lines.append(
        "task 'all' = pooled over every task's queries as CostBench pools them (compare it with "
        "the paper; emr/aned x 100 = the paper's %); cost_gap = mean extra cost in cost units; "
        "blocks = applied/dropped"
    )
    return lines
