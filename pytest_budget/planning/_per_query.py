"""Each query's share of a planning cell's gated scores, for the paired gate.

Every gated planning score is a ratio of two sums over the cell's episodes (see
:mod:`~pytest_budget.planning._intervals`).  :func:`per_query_parts` gives, per gated metric,
each query's numerator and denominator, so that ``sum(num) / sum(den)`` is the cell's score
and a new run can be compared with its baseline query by query
(:func:`pytest_budget._stats.gating.compare_paired`).  With ``--budget-repeat=K`` a query's values
are the means over the K runs.  Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_budget._stats.paired import PerUnit, per_unit_fields
from pytest_budget.planning._evaluate import PlanningOutcome
from pytest_budget.planning._intervals import UNIT, outcome_columns

__all__ = ["PARTS", "per_query_parts", "per_query_snapshot"]

#: Per reading, the (numerator, denominator) columns of each gated score, as in
#: :func:`~pytest_budget.planning._intervals.resampled_scores`.
PARTS: dict[str, dict[str, tuple[str, str]]] = {
    "code": {
        "emr": ("code_em_p", "code_n_p"),
        "aned": ("code_ned_p", "code_n_p"),
        "cost_gap": ("code_cost_diff_c", "code_n_c"),
        "uihr": ("code_correct_a", "code_n_a"),
        "itur": ("code_invalid_steps_m", "code_steps_m"),
    },
    "prose": {
        "emr": ("em", "path_n"),
        "aned": ("ned", "path_n"),
        "cost_gap": ("gap", "cost_n"),
        "uihr": ("hit", "hit_n"),
        "itur": ("invalid_calls", "total_calls"),
    },
}


def per_query_parts(outcomes: Sequence[PlanningOutcome], reading: str = "code") -> PerUnit:
    """Per gated metric, each query's (numerator, denominator), averaged over the runs.

    Every outcome holds one episode per query, in query order.
    """
    if not outcomes:
        raise ValueError("per_query_parts needs at least one run")
    columns = [outcome_columns(outcome) for outcome in outcomes]
    parts: PerUnit = {}
    for metric, (num, den) in PARTS[reading].items():
        pair: list[list[float]] = []
        for name in (num, den):
            if not outcomes[0].episodes:
                pair.append([])
                continue
            mean = np.mean([cols[name] for cols in columns], axis=0)
            pair.append([float(v) for v in mean])
        parts[metric] = (pair[0], pair[1])
    return parts


def per_query_snapshot(
    outcomes: Sequence[PlanningOutcome], reading: str = "code"
) -> dict[str, Any]:
    """The snapshot's ``per_query`` object (compact strings, :func:`~pytest_budget._stats.paired.
    per_unit_fields`)."""
    return per_unit_fields(per_query_parts(outcomes, reading), UNIT)
