"""Terminal table for awareness cells (one row per environment x estimator)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.awareness._cell_records import AwarenessCellRecord
from pytest_budget.awareness._replay.floor import floor_line
from pytest_budget.report._text_table import render_table

__all__ = ["awareness_table", "floor_value", "rollout_lines"]


def floor_value(cell: CellRecord) -> object:
    """The cell's trivial floor (best one-number macro-F1), with ``!`` above 0.75."""
    floor = cell.trivial_floor if isinstance(cell, AwarenessCellRecord) else None
    if floor is None or not isinstance(floor.get("macro_f1"), int | float):
        return None
    value = float(floor["macro_f1"])
    return f"{value:.3f}!" if floor.get("warn") else value


def awareness_table(cells: Sequence[CellRecord]) -> list[str]:
    """Feasibility, interval quality, early stop and answer hygiene per cell; ``floor`` is
    the probe set's trivial-estimator floor beside ``f1_all`` (``!``: above 0.75)."""
    headers = [
        "env", "estimator", "probes", "f1_all", "floor", "f1_first", "fail_f1", "interval", "hit",
        "mre_p50", "invalid", "false_abort", "saved", "reward", "errors",
    ]  # fmt: skip
    rows = []
    records = of_type(cells, AwarenessCellRecord)
    for cell in records:
        s = cell.scores
        agent = cell.agent if cell.outcome == "ok" else f"{cell.agent} ({cell.outcome})"
        rows.append([
            cell.env, agent, s.get("n_probes"), s.get("macro_f1_all"),
            floor_value(cell), s.get("macro_f1_first"), s.get("fail_f1"), s.get("interval_score"),
            s.get("hit_rate"), s.get("mre_p50"), s.get("invalid_rate"),
            s.get("false_abort_rate"), s.get("saved_token_share"), s.get("reward"),
            s.get("n_errors"),
        ])  # fmt: skip
    return [*render_table(headers, rows), *_rollout_lines(records)]


def rollout_lines(cells: Sequence[CellRecord]) -> list[str]:
    """Per environment: how many rollouts, by whom, how many succeeded; then the probe
    set's feasible/impossible balance and its trivial floor (``floor.py``)."""
    return _rollout_lines(of_type(cells, AwarenessCellRecord))


def _rollout_lines(cells: Sequence[AwarenessCellRecord]) -> list[str]:
    lines: list[str] = []
    seen: set[str] = set()
    for cell in cells:
        env, summary = cell.env, cell.rollouts
        if env in seen or summary is None:
            continue
        seen.add(env)
        lines.append(
            f"{env}: {summary.get('rollouts')} rollouts by {cell.actor}, "
            f"{summary.get('succeeded')} succeeded, {summary.get('feasible')} feasible within "
            f"budget, {summary.get('mean_turns')} turns on average"
        )
        unverified = summary.get("success_unverified")
        if unverified:
            lines.append(
                f"WARNING {env}: {unverified} of {summary.get('rollouts')} rollouts have only "
                "the agent's exit status 'Submitted' as outcome, not the harness verdict, so "
                "a submitted patch counts as success; give --budget-swe-report=REPORT.json"
            )
        if cell.trivial_floor is not None:
            lines.append(floor_line(env, cell.trivial_floor))
    return lines
