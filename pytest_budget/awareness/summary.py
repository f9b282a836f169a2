"""Terminal table for awareness cells (one row per environment x estimator)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget.awareness.floor import floor_line
from pytest_budget.tables import render_table

__all__ = ["awareness_table", "floor_value", "rollout_lines"]


def floor_value(cell: Mapping[str, Any]) -> object:
    """The cell's trivial floor (best one-number macro-F1), with ``!`` above 0.75."""
    floor = cell.get("trivial_floor")
    if not isinstance(floor, Mapping) or not isinstance(floor.get("macro_f1"), int | float):
        return None
    value = float(floor["macro_f1"])
    return f"{value:.3f}!" if floor.get("warn") else value


def awareness_table(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """Feasibility, interval quality, early stop and answer hygiene per cell; ``floor`` is
    the probe set's trivial-estimator floor beside ``f1_all`` (``!``: above 0.75)."""
    headers = [
        "env", "estimator", "probes", "f1_all", "floor", "f1_first", "fail_f1", "interval", "hit",
        "mre_p50", "invalid", "false_abort", "saved", "reward", "errors",
    ]  # fmt: skip
    rows = []
    for cell in cells:
        s = cell.get("scores", {})
        agent = str(cell.get("agent"))
        if cell.get("outcome", "ok") != "ok":
            agent = f"{agent} ({cell.get('outcome')})"
        rows.append([
            cell.get("env"), agent, s.get("n_probes"), s.get("macro_f1_all"),
            floor_value(cell), s.get("macro_f1_first"), s.get("fail_f1"), s.get("interval_score"),
            s.get("hit_rate"), s.get("mre_p50"), s.get("invalid_rate"),
            s.get("false_abort_rate"), s.get("saved_token_share"), s.get("reward"),
            s.get("n_errors"),
        ])  # fmt: skip
    return [*render_table(headers, rows), *rollout_lines(cells)]


def rollout_lines(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per environment: how many rollouts, by whom, how many succeeded; then the probe
    set's feasible/impossible balance and its trivial floor (``floor.py``)."""
    lines: list[str] = []
    seen: set[str] = set()
    for cell in cells:
        env, summary = str(cell.get("env")), cell.get("rollouts")
        if env in seen or not isinstance(summary, Mapping):
            continue
        seen.add(env)
        lines.append(
            f"{env}: {summary.get('rollouts')} rollouts by {cell.get('actor')}, "
            f"{summary.get('succeeded')} succeeded, {summary.get('feasible')} feasible within "
            f"budget, {summary.get('mean_turns')} turns on average"
        )
        floor = cell.get("trivial_floor")
        if isinstance(floor, Mapping):
            lines.append(floor_line(env, floor))
    return lines
