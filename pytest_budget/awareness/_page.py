"""Awareness on the HTML page: the score columns of the replay cells and the footer lines.

The columns follow the terminal table of :mod:`pytest_budget.awareness._summary`.
"""

from __future__ import annotations

from pytest_budget.awareness._summary import floor_value, rollout_lines
from pytest_budget.report._html.columns import Column, agent_text, field_column, score_column

__all__ = ["awareness_columns", "rollout_lines"]


def awareness_columns() -> tuple[Column, ...]:
    return (
        field_column("env"), Column("estimator", agent_text),
        score_column("n_probes", "probes", delta=False), score_column("macro_f1_all", "f1_all"),
        Column("floor", floor_value, None, "trivial floor: best macro-F1 of a one-number "
               "threshold rule on what the estimator sees (! above 0.75)"),
        score_column("macro_f1_first", "f1_first"), score_column("fail_f1"),
        score_column("interval_score", "interval"), score_column("hit_rate", "hit"),
        score_column("mre_p50"), score_column("invalid_rate", "invalid"),
        score_column("false_abort_rate", "false_abort"),
        score_column("saved_token_share", "saved"), score_column("reward"),
        score_column("n_errors", "errors", delta=False),
    )  # fmt: skip
