"""Terminal table of the online cells: one row per environment x cap x protocol x agent,
the online scores with the same agent's replay-mode result beside them."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.awareness._cell_records import OnlineCellRecord
from pytest_budget.report._text_table import render_table

__all__ = ["online_table"]


def online_table(cells: Sequence[CellRecord]) -> list[str]:
    """Rows of the online mode; ``r_`` columns are the replay pass of the same agent."""
    headers = [
        "env",
        "cap",
        "protocol",
        "agent",
        "success",
        "r_success",
        "acting",
        "r_acting",
        "estim",
        "est_share",
        "stop",
        "saved",
        "lost",
        "net",
        "f1_all",
        "r_f1_all",
        "fail_f1",
        "hit",
        "mre_p50",
        "r_mre_p50",
        "invalid",
    ]
    rows = []
    records = of_type(cells, OnlineCellRecord)
    for cell in records:
        s = cell.scores
        agent = cell.agent if cell.outcome == "ok" else f"{cell.agent} ({cell.outcome})"
        rows.append(
            [
                cell.env,
                f"{cell.cap_multiplier}x",
                cell.protocol,
                agent,
                s.get("success_rate"),
                s.get("replay_success_rate"),
                s.get("acting_tokens"),
                s.get("replay_acting_tokens"),
                s.get("estimation_tokens"),
                s.get("estimation_share"),
                s.get("stop_rate"),
                s.get("saved_token_share"),
                s.get("successes_lost"),
                s.get("net_value"),
                s.get("macro_f1_all"),
                s.get("replay_macro_f1_all"),
                s.get("fail_f1"),
                s.get("hit_rate"),
                s.get("mre_p50"),
                s.get("replay_mre_p50"),
                s.get("invalid_rate"),
            ]
        )
    charges = sorted({str(c.charge) for c in records})
    lines = [
        "acting/estim = tokens per run; est_share = estimation / acting tokens; saved = "
        "tokens the stopped runs that would have failed did not spend, over those runs' "
        "tokens (measured by continuing them); lost = successes lost to stopping per run; "
        "net = share of all tokens saved - success value x lost; r_* = the same agent in "
        f"replay mode; cap charged with: {', '.join(charges)} tokens",
    ]
    return [*render_table(headers, rows), *lines]
