"""The HTML report: figure data, the page, comparisons, bad input, --budget-html end to end.

Reports used here are either written by a real run (pytester, in-process) or built by
hand with values chosen so that every expected number can be worked out on paper.
"""

from __future__ import annotations

from typing import Any

from pytest_budget.awareness.answers import Impossible, Interval
from pytest_budget.awareness.metrics import (
    ProbeRecord,
    late_recognition_curve,
    progress_curves,
)

# --------------------------------------------------------------------------- figure data


def _probe(rollout: str, k: int, T: int, used: float, total: float, feasible: bool, est: Any):
    return ProbeRecord(rollout, k, T, used, total, 100.0, feasible, feasible, est)


# Rollout a (feasible, T = 4, C_T = 80, budget 100): k = 1, 2, 3 at progress .25, .5, .75
# (bins 1, 2, 3).  Rollout b (failed, T = 2): one interval at progress .5 (bin 2).
# Rollout c (failed, T = 3): interval at k = 1, impossible at k = 2 with C_2 = 60.
PROBES = [
    _probe("a", 1, 4, 20.0, 80.0, True, Interval(40.0, 80.0)),  # R = 60, mid 60, R_lin 60
    _probe("a", 2, 4, 40.0, 80.0, True, Interval(10.0, 30.0)),  # R = 40, mid 20, R_lin 40
    _probe("a", 3, 4, 60.0, 80.0, True, Impossible()),
    _probe("b", 1, 2, 50.0, 120.0, False, Interval(0.0, 100.0)),
    _probe("c", 1, 3, 30.0, 90.0, False, Interval(10.0, 20.0)),  # progress 1/3: bin 1
    _probe("c", 2, 3, 60.0, 90.0, False, Impossible()),
]


def test_progress_curves_hand_worked() -> None:
    curves = progress_curves(PROBES, bins=5)
    # interval answers: bin 1 = a@1 and c@1, bin 2 = a@2 and b@1
    assert curves["interval_answers"] == [0, 2, 2, 0, 0]
    # widths / 100: bin 1 (40 + 10) / 2 = 25 -> .25; bin 2 (20 + 100) / 2 = 60 -> .6
    assert curves["width"] == [None, 0.25, 0.6, None, None]
    # paired = feasible probes answered with an interval: a@1 (bin 1) and a@2 (bin 2)
    assert curves["paired"] == [0, 1, 1, 0, 0]
    # agent: |60 - 60| = 0, |20 - 40| = 20 -> .2; linear: R_lin = 20*4-20 = 60, 20*4-40 = 40
    assert curves["agent_error"] == [None, 0.0, 0.2, None, None]
    assert curves["linear_error"] == [None, 0.0, 0.0, None, None]


def test_late_recognition_curve_hand_worked() -> None:
    # failed rollouts: b (never impossible) and c (first impossible at C = 60 of 100)
    curve, failed = late_recognition_curve(PROBES, [0.0, 0.5, 0.6, 1.0])
    assert failed == 2
    assert curve == [1.0, 1.0, 0.5, 0.5]


def test_late_recognition_curve_without_failed_rollouts() -> None:
    curve, failed = late_recognition_curve(PROBES[:3], [0.0, 1.0])
    assert (curve, failed) == ([None, None], 0)
