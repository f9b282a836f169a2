"""Terminal table for awareness cells (one row per environment x estimator)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget.tables import render_table

__all__ = ["awareness_table", "rollout_lines"]


def awareness_table(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """Feasibility, interval quality, early stop and answer hygiene per cell."""
    headers = [
        "env", "estimator", "probes", "f1_all", "f1_first", "fail_f1", "interval", "hit",
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
            s.get("macro_f1_first"), s.get("fail_f1"), s.get("interval_score"),
            s.get("hit_rate"), s.get("mre_p50"), s.get("invalid_rate"),
            s.get("false_abort_rate"), s.get("saved_token_share"), s.get("reward"),
            s.get("n_errors"),
        ])  # fmt: skip
    return [*render_table(headers, rows), *rollout_lines(cells)]


def rollout_lines(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per environment: how many rollouts, by whom, how many succeeded."""
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
    return lines
