"""BAGEN awareness metrics, checked against values worked out by hand.

The shared probe set (R_k = C_T - C_k; "feas" = ground-truth feasible)::

    rollout  T  C_T  budget  success feas | k  C_k  R_k  answer        S_k
    a        4  100  200     yes     yes  | 1  20   80   [60, 100]     1*(1-40/80) = 0.5
                                          | 2  50   50   [50, 50]      1
                                          | 3  80   20   impossible    0 (false abort)
    b        3   60  100     yes     yes  | 1  30   30   [0, 10]       0 (optimistic miss)
                                          | 2  60    0   [0, 0]        0 (R_k = 0 gives 0)
    c        4  120  100     no      no   | 1  30   90   [10, 20]      -  (not averaged)
                                          | 2  70   50   impossible    -
                                          | 3 100   20   invalid       -
    d        3  150  100     yes     no   | 1  50  100   invalid       0  (over budget:
                                          | 2 100   50   [10, 60]      0   1 only for impossible)
    e        2   40  100     yes     yes  | 1  10   30   [35, 50]      0 (conservative miss)

S_k, hit rate and the miss bins average over the 8 probes of successful rollouts (a, b, d,
e: d succeeded over budget); the first-turn metric reads k = 1 probes with valid answers.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_budget.awareness import (
    Estimate,
    Impossible,
    Interval,
    IntervalMap,
    Invalid,
    MultiProbeRecord,
    ProbeRecord,
    ProbeTable,
    class_f1,
    early_stop,
    fail_f1,
    hit_rate,
    interval_score,
    interval_scores,
    invalid_rate,
    late_recognition,
    linear_baseline,
    linear_extrapolation,
    macro_f1,
    midpoint_relative_error,
    miss_bins,
    per_dimension_scores,
    project_dimension,
    reward,
    reward_from_text,
    rewards,
    score_probes,
)
from pytest_budget.awareness._scoring.metrics import score_notes

BAD = Invalid("<answer>?</answer>", "no number in the answer")


def _p(
    rid: str,
    k: int,
    T: int,
    used: float,
    total: float,
    budget: float,
    success: bool,
    est: Estimate,
) -> ProbeRecord:
    feasible = success and total <= budget
    return ProbeRecord(rid, k, T, used, total, budget, success, feasible, est)


PROBES = [
    _p("a", 1, 4, 20, 100, 200, True, Interval(60, 100)),
    _p("a", 2, 4, 50, 100, 200, True, Interval(50, 50)),
    _p("a", 3, 4, 80, 100, 200, True, Impossible()),
    _p("b", 1, 3, 30, 60, 100, True, Interval(0, 10)),
    _p("b", 2, 3, 60, 60, 100, True, Interval(0, 0)),
    _p("c", 1, 4, 30, 120, 100, False, Interval(10, 20)),
    _p("c", 2, 4, 70, 120, 100, False, Impossible()),
    _p("c", 3, 4, 100, 120, 100, False, BAD),
    _p("d", 1, 3, 50, 150, 100, True, BAD),
    _p("d", 2, 3, 100, 150, 100, True, Interval(10, 60)),
    _p("e", 1, 2, 10, 40, 100, True, Interval(35, 50)),
]


@pytest.fixture(scope="module")
def table() -> ProbeTable:
    return ProbeTable.from_records(PROBES)


def test_table_columns(table: ProbeTable) -> None:
    assert len(table) == 11
    assert table.rollout_ids == ("a", "b", "c", "d", "e")
    assert table.remaining.tolist() == [80, 50, 20, 30, 0, 90, 50, 20, 100, 50, 30]
    # feasible = success and C_T <= budget: d succeeded over budget
    assert table.feasible.tolist() == [True] * 5 + [False] * 5 + [True]
    # k = 1 and a valid answer: d1 (invalid) is dropped
    assert table.first_turn_mask().tolist() == [
        True, False, False, True, False, True, False, False, False, False, True,
    ]  # fmt: skip


def test_feasible_class_f1(table: ProbeTable) -> None:
    # truth feasible: a1 a2 a3 b1 b2 e1 (6); predicted interval: a1 a2 b1 b2 c1 d2 e1 (7)
    # TP = 5 -> P = 5/7, R = 5/6, F1 = 2PR/(P+R) = (50/42)/(65/42) = 10/13
    res = class_f1(table, "feasible")
    assert res.precision == pytest.approx(5 / 7)
    assert res.recall == pytest.approx(5 / 6)
    assert res.f1 == pytest.approx(10 / 13)
    assert res.support == 6
    assert res.note is None


def test_fail_f1(table: ProbeTable) -> None:
    # truth impossible: c1 c2 c3 d1 d2 (5); predicted impossible: a3 c2 (2); TP = c2
    # P = 1/2, R = 1/5, F1 = 2 * 0.1 / 0.7 = 2/7. Invalid c3, d1 are misses, not FPs.
    res = fail_f1(table)
    assert (res.precision, res.recall) == pytest.approx((0.5, 0.2))
    assert res.f1 == pytest.approx(2 / 7)


def test_macro_f1_all_and_first_turn(table: ProbeTable) -> None:
    # all turns: (10/13 + 2/7) / 2 = (70/91 + 26/91) / 2 = 48/91
    assert macro_f1(table) == pytest.approx(48 / 91)
    assert macro_f1(PROBES) == pytest.approx(48 / 91)  # records accepted directly
    # first turn: a1 b1 c1 e1 (d1 invalid, dropped). feasible: truth a1 b1 e1, predicted
    # a1 b1 c1 e1, TP 3
    # -> P 3/4, R 1, F1 6/7. impossible: nobody predicts it -> F1 0. macro = 3/7
    assert macro_f1(table, first_turn=True) == pytest.approx(3 / 7)
    first = table.subset(table.first_turn_mask())
    assert class_f1(first, "impossible").note == "no probe is predicted impossible"


def test_empty_classes_give_zero_with_a_reason() -> None:
    perfect_but_one_class = [_p("x", 1, 2, 5, 10, 20, True, Interval(5, 5))]
    res = class_f1(perfect_but_one_class, "impossible")
    assert res.f1 == 0.0
    assert res.note == "no probe is truly impossible; no probe is predicted impossible"
    assert macro_f1(perfect_but_one_class) == 0.5
    with pytest.raises(ValueError, match="positive"):
        class_f1(perfect_but_one_class, "maybe")


def test_empty_class_reasons_reach_the_score_notes(table: ProbeTable) -> None:
    # The shared set has both classes over all turns; on first turns nobody says impossible.
    assert score_notes(table) == {
        "macro_f1_first": "F1_impossible = 0: no probe is predicted impossible"
    }
    one_class = [_p("x", 1, 2, 5, 10, 20, True, Interval(5, 5))]
    reason = "F1_impossible = 0: no probe is truly impossible; no probe is predicted impossible"
    assert score_notes(one_class) == {
        "macro_f1_all": reason,
        "macro_f1_first": reason,
        "fail_f1": reason,
    }
    # Only invalid answers: neither class is ever predicted.
    notes = score_notes([_p("y", 1, 2, 5, 10, 20, True, BAD)])
    assert notes["macro_f1_all"].startswith("F1_feasible = 0: no probe is predicted feasible; ")
    assert score_notes([]) == {
        key: "F1_feasible = 0: no probe is truly feasible; no probe is predicted feasible; "
        "F1_impossible = 0: no probe is truly impossible; no probe is predicted impossible"
        for key in ("macro_f1_all", "macro_f1_first")
    } | {"fail_f1": reason}


def test_ties_on_interval_bounds_progress_edges_and_the_linear_baseline() -> None:
    # Rollout t (feasible, T=5, C_T=60):
    #   k=1 C=10 R=50 [50, 70]: lo == R covers, 1 - 20/50 = 0.6; k/T = 0.2 -> bin 1
    #   k=2 C=20 R=40 [20, 40]: hi == R covers, 1 - 20/40 = 0.5; k/T = 0.4 -> bin 2
    #   k=4 C=50 R=10 [10, 10]: exact, 1;                        k/T = 0.8 -> bin 4
    # Rollout u (succeeded over budget: 150 > 100), impossible at k=1 (C=30) and k=2.
    probes = [
        _p("t", 1, 5, 10, 60, 100, True, Interval(50, 70)),
        _p("t", 2, 5, 20, 60, 100, True, Interval(20, 40)),
        _p("t", 4, 5, 50, 60, 100, True, Interval(10, 10)),
        _p("u", 1, 3, 30, 150, 100, True, Impossible()),
        _p("u", 2, 3, 90, 150, 100, True, Impossible()),
    ]
    # u succeeded over budget: impossible scores 1 there; all five probes are averaged
    assert interval_scores(probes).tolist() == pytest.approx([0.6, 0.5, 1.0, 1.0, 1.0])
    assert interval_score(probes) == pytest.approx(4.1 / 5)
    assert hit_rate(probes) == pytest.approx(3 / 5)  # impossible is a miss for the hit rate
    # a bound equal to R_k is a hit, so neither bin counts a miss
    bins = miss_bins(probes, 5)  # Search-R1's 5 bins (bagen.md §2.6)
    assert bins.n == (0, 1, 1, 0, 1)
    assert bins.optimistic == (None, 0.0, 0.0, None, 0.0)
    assert bins.conservative == (None, 0.0, 0.0, None, 0.0)
    # BAGEN's default 10 left-closed bins: k/T = 0.2, 0.4, 0.8 -> bins 2, 4, 8
    assert miss_bins(probes).n == (0, 0, 1, 0, 1, 0, 0, 0, 1, 0)
    # MRE: 10/50 = 0.2, 10/40 = 0.25, 0 -> P50 = 0.2
    assert midpoint_relative_error(probes)[0] == pytest.approx(0.2)
    # R_lin = (C_k/k) T - C_k: 40, 30, 12.5. Errors linear 10, 10, 2.5; agent 10, 10, 0.
    # Two exact ties: no reduction and no win; only k=4 is a win.
    lb = linear_baseline(probes)
    assert lb.mean_reduction == pytest.approx(2.5 / 3)
    assert lb.win_rate == pytest.approx(1 / 3)
    # the first of two impossible answers decides: C_1 = 30 of cap 100
    assert late_recognition(probes).shares == (0.3,)
    # u succeeded (over budget): no failed rollout, nothing to save
    assert early_stop(probes).saved_token_share is None
    assert macro_f1(probes) == 1.0 and fail_f1(probes).f1 == 1.0
    assert score_notes(probes) == {}


def test_interval_scores(table: ProbeTable) -> None:
    # a1: 80 in [60,100], 1 - 40/80 = 0.5; a2: exact -> 1; b2: R = 0 -> 0 even for [0,0]
    s = interval_scores(table)
    assert s.tolist() == [0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # mean over the 8 probes of successful rollouts (a, b, d, e): 1.5 / 8
    assert interval_score(table) == pytest.approx(1.5 / 8)


def test_zero_remaining_scores_zero_except_in_the_rl_reward() -> None:
    probes = [
        _p("z", 1, 2, 10, 10, 20, True, Interval(0, 0)),
        _p("y", 1, 2, 10, 10, 20, True, Interval(0, 5)),
    ]
    # BAGEN's evaluation code: R_k = 0 -> S_k = 0, even for [0, 0]
    assert interval_scores(probes).tolist() == [0.0, 0.0]
    # hit = plain containment of R_k = 0
    assert hit_rate(probes) == 1.0
    # the RL reward gives full credit only for exactly [0, 0]
    assert rewards(probes).tolist() == [1.8, 0.0]
    bins = miss_bins(probes, 5)
    assert bins.n[2] == 2
    assert bins.conservative[2] == 0.0 and bins.optimistic[2] == 0.0


def test_wide_interval_covers_but_scores_zero() -> None:
    # R = 50, [0, 100]: covered, 1 - 100/50 < 0 -> tightness 0; hit still counts
    probes = [_p("w", 1, 2, 50, 100, 200, True, Interval(0, 100))]
    assert interval_scores(probes).tolist() == [0.0]
    assert hit_rate(probes) == 1.0


def test_hit_rate(table: ProbeTable) -> None:
    # contained among the 8 probes of successful rollouts: a1 a2 b2 d2 -> 4/8
    assert hit_rate(table) == pytest.approx(0.5)


def test_midpoint_relative_error(table: ProbeTable) -> None:
    # feasible, interval, R > 0: a1 |80-80|/80 = 0, a2 0, b1 |5-30|/30 = 5/6,
    # e1 |42.5-30|/30 = 5/12. sorted [0, 0, 5/12, 5/6]
    # P50 at position 1.5: 0 + 0.5 * 5/12 = 5/24; P90 at 2.7: 5/12 + 0.7 * 5/12 = 17/24
    p50, p90 = midpoint_relative_error(table)
    assert p50 == pytest.approx(5 / 24)
    assert p90 == pytest.approx(17 / 24)
    assert midpoint_relative_error([]) == (None, None)


def test_invalid_rate(table: ProbeTable) -> None:
    assert invalid_rate(table) == pytest.approx(2 / 11)  # c3, d1


def test_miss_bins(table: ProbeTable) -> None:
    # interval probes of successful rollouts by k/T: a1 0.25 -> bin 1 (hit), b1 1/3 -> bin 1
    # (hi 10 < 30, optimistic), a2 0.5 -> bin 2 (hit), e1 0.5 -> bin 2 (lo 35 > 30,
    # conservative), b2 2/3 -> bin 3 (hit), d2 2/3 -> bin 3 (50 in [10, 60], hit)
    bins = miss_bins(table, 5)
    assert bins.edges == pytest.approx((0.0, 0.2, 0.4, 0.6, 0.8, 1.0))
    # BAGEN's 10 bins: 0.25 and 1/3 -> bin 2 and 3, 0.5 -> bin 5, 2/3 -> bin 6
    ten = miss_bins(table)
    assert len(ten.edges) == 11 and ten.n == (0, 0, 1, 1, 0, 2, 2, 0, 0, 0)
    assert ten.optimistic[3] == 1.0 and ten.conservative[5] == 0.5
    assert bins.n == (0, 2, 2, 2, 0)
    assert bins.optimistic == (None, 0.5, 0.0, 0.0, None)
    assert bins.conservative == (None, 0.0, 0.5, 0.0, None)


def test_late_recognition(table: ProbeTable) -> None:
    # failed rollouts c, d. c first says impossible at k=2 with C_k = 70 of budget 100;
    # d never does.
    late = late_recognition(table)
    assert late.shares == (0.7,)
    assert (late.n_failed, late.n_flagged) == (2, 1)
    assert late.mean == pytest.approx(0.7)
    assert late.median == pytest.approx(0.7)


def test_early_stop(table: ProbeTable) -> None:
    # false aborts: impossible on feasible probes = a3, over all 11 probes (BAGEN's numbers)
    # failed = unsuccessful rollouts: c only (d succeeded over budget).
    # saved: c stops at C_k 70 of C_T 120 -> 50 / 120
    stop = early_stop(table)
    assert stop.false_abort_rate == pytest.approx(1 / 11)
    assert (stop.false_abort_count, stop.feasible_probes) == (1, 6)
    assert stop.saved_token_share == pytest.approx(5 / 12)
    assert (stop.failed_stopped, stop.failed_rollouts) == (1, 1)
    assert stop.succeeded_stopped == 1  # a


def test_early_stop_uses_the_first_impossible() -> None:
    # failed rollout answering impossible at k=1 (C_k 10) and k=2 (C_k 30), C_T = 100
    probes = [
        _p("f", 2, 3, 30, 100, 50, False, Impossible()),
        _p("f", 1, 3, 10, 100, 50, False, Impossible()),
    ]
    assert early_stop(probes).saved_token_share == pytest.approx(0.9)
    assert late_recognition(probes).shares == (0.2,)  # 10 / 50


def test_linear_extrapolation(table: ProbeTable) -> None:
    # R_lin = (C_k/k) T - C_k; a1: 20*4 - 20 = 60; a2: 25*4 - 50 = 50; b1: 30*3 - 30 = 60
    lin = linear_extrapolation(table)
    assert lin[:4].tolist() == [60.0, 50.0, 80 / 3 * 4 - 80, 60.0]


def test_linear_baseline(table: ProbeTable) -> None:
    # feasible interval probes (R, R_lin, midpoint): a1 (80, 60, 80), a2 (50, 50, 50),
    # b1 (30, 60, 5), b2 (0, 30, 0), e1 (30, 10, 42.5)
    # linear errors 20, 0, 30, 30, 20 -> MAE 20; agent errors 0, 0, 25, 0, 12.5 -> 7.5
    # reduction 20 - 7.5 = 12.5; agent strictly closer on a1, b1, b2, e1 -> 4/5
    lb = linear_baseline(table)
    assert lb.n == 5
    assert lb.mae_linear == pytest.approx(20.0)
    assert lb.mae_agent == pytest.approx(7.5)
    assert lb.mean_reduction == pytest.approx(12.5)
    assert lb.win_rate == pytest.approx(0.8)


def test_rewards(table: ProbeTable) -> None:
    # feasible: 1.8 * S_k -> a1 0.9, a2 1.8, b2 1.8; infeasible: c2 impossible -> 0.2
    # mean = (0.9 + 1.8 + 1.8 + 0.2) / 11 = 4.7 / 11
    r = rewards(table)
    assert r.tolist() == pytest.approx([0.9, 1.8, 0, 0, 1.8, 0, 0.2, 0, 0, 0, 0])
    assert reward(table) == pytest.approx(4.7 / 11)


@pytest.mark.parametrize(
    ("text", "remaining", "feasible", "expected"),
    [
        ("<answer>[40, 60]</answer>", 50, True, 1.8 * (1 - 20 / 50)),  # 1.08
        ("<answer>[60, 40]</answer>", 50, True, 0.0),  # reversed = malformed
        ("<answer>[0, 200]</answer>", 50, True, 0.0),  # covered, too wide
        ("<answer>[10, 20]</answer>", 50, True, 0.0),  # not covered
        ("<answer>50</answer>", 50, True, 0.0),  # scalar
        ("<answer>impossible</answer>", 50, True, 0.0),
        ("<answer>impossible</answer>", 50, False, 0.2),
        ("<answer>[40, 60]</answer>", 50, False, 0.0),
        ("[40, 60]", 50, True, 0.0),  # no tag
        ("<answer>[0, 0]</answer>", 0, True, 1.8),
    ],
)
def test_reward_from_text(text: str, remaining: float, feasible: bool, expected: float) -> None:
    assert reward_from_text(text, remaining, feasible) == pytest.approx(expected)


def test_score_probes_names_and_values(table: ProbeTable) -> None:
    scores = score_probes(table, bins=5)
    assert scores["macro_f1_all"] == pytest.approx(48 / 91)
    assert scores["macro_f1_first"] == pytest.approx(3 / 7)
    assert scores["fail_f1"] == pytest.approx(2 / 7)
    assert scores["interval_score"] == pytest.approx(1.5 / 8)
    assert scores["hit_rate"] == pytest.approx(0.5)
    assert scores["invalid_rate"] == pytest.approx(2 / 11)
    assert scores["false_abort_rate"] == pytest.approx(1 / 11)
    assert scores["saved_token_share"] == pytest.approx(5 / 12)
    assert scores["failed_rollouts_stopped"] == 1
    assert scores["failed_rollouts"] == 1 and scores["failed_stopped_share"] == 1.0
    # BAGEN divides by every failed rollout, those without a probe included
    wider = score_probes(table, all_failed_rollouts=4)
    assert wider["failed_rollouts"] == 4 and wider["failed_stopped_share"] == 0.25
    assert scores["reward"] == pytest.approx(4.7 / 11)
    assert scores["optimistic_bin1"] == 0.5
    assert scores["conservative_bin4"] is None


def test_empty_input_does_not_crash() -> None:
    scores = score_probes([])
    assert scores["n_probes"] == 0
    assert scores["macro_f1_all"] == 0.0
    assert scores["interval_score"] is None
    assert scores["saved_token_share"] is None


def test_multi_dimension_estimate_is_rejected() -> None:
    multi = IntervalMap((("time_weeks", Interval(1, 2)),))
    with pytest.raises(TypeError, match="one ProbeRecord per dimension"):
        ProbeTable.from_records([_p("m", 1, 2, 1, 2, 3, True, multi)])


def _m(
    rid: str, used: tuple[float, float], total: tuple[float, float], feasible: bool, est: Estimate
) -> MultiProbeRecord:
    return MultiProbeRecord(
        rid, 1, 4, dict(zip("tc", used, strict=True)), dict(zip("tc", total, strict=True)),
        {"t": 10, "c": 500}, feasible, feasible, est,
    )  # fmt: skip


def test_multi_dimension_scores() -> None:
    # w1: R_t = 8-2 = 6 in [4, 8] -> 1 - 4/6 = 1/3; R_c = 300 in [300, 300] -> 1
    # w2: feasible, impossible -> 0 and 0;  w3: infeasible, impossible -> reward 0.2
    # w4: feasible, a bare interval on a multi-dimension probe -> invalid -> 0
    records = [
        _m("w1", (2, 100), (8, 400), True,
           IntervalMap((("t", Interval(4, 8)), ("c", Interval(300, 300))))),
        _m("w2", (5, 50), (10, 100), True, Impossible()),
        _m("w3", (5, 50), (12, 600), False, Impossible()),
        _m("w4", (5, 50), (9, 90), True, Interval(1, 2)),
    ]  # fmt: skip
    scores = per_dimension_scores(records, ["t", "c"])
    # interval score over the 3 feasible probes: t (1/3)/3 = 1/9, c 1/3; mean 2/9
    assert scores["interval_score_t"] == pytest.approx(1 / 9)
    assert scores["interval_score_c"] == pytest.approx(1 / 3)
    assert scores["interval_score"] == pytest.approx(2 / 9)
    # hit: only w1 covers, in both dimensions -> 1/3 each
    assert scores["hit_rate"] == pytest.approx(1 / 3)
    # reward over 4 probes: t (1.8/3 + 0.2)/4 = 0.2; c (1.8 + 0.2)/4 = 0.5; mean 0.35
    assert scores["reward_t"] == pytest.approx(0.2)
    assert scores["reward_c"] == pytest.approx(0.5)
    assert scores["reward"] == pytest.approx(0.35)
    # midpoints of w1 are exact in both dimensions
    assert (scores["mre_p50"], scores["mre_p90"]) == (0.0, 0.0)
    assert isinstance(project_dimension(records, "c")[3].estimate, Invalid)
    partial = _m("w5", (0, 0), (1, 1), True, IntervalMap((("t", Interval(1, 1)),)))
    est = project_dimension([partial], "c")[0].estimate
    assert isinstance(est, Invalid)
    assert est.reason == "no interval for 'c'"


def test_multi_dimension_linear_baseline_and_misses_per_dimension() -> None:
    # One feasible rollout m, T = 4, caps t 10 / c 500, totals t 8 / c 250.
    #   k=1: used (2, 100), R = (6, 150); R_lin = (6, 300); answer t [4, 6], c [100, 200]
    #        both covered (t on its upper bound); progress 0.25 -> bin 1
    #        errors agent (1, 0), linear (0, 150): reduction t -1, c 150
    #   k=2: used (4, 150), R = (4, 100); R_lin = (4, 150); answer t [1, 2], c [120, 160]
    #        t optimistic miss, c conservative miss; progress 0.5 -> bin 2
    #        errors agent (2.5, 40), linear (0, 50): reduction t -2.5, c 10
    def rec(k: int, used: tuple[float, float], est: IntervalMap) -> MultiProbeRecord:
        return MultiProbeRecord(
            "m", k, 4, dict(zip("tc", used, strict=True)), {"t": 8, "c": 250},
            {"t": 10, "c": 500}, True, True, est,
        )  # fmt: skip

    records = [
        rec(1, (2, 100), IntervalMap((("t", Interval(4, 6)), ("c", Interval(100, 200))))),
        rec(2, (4, 150), IntervalMap((("t", Interval(1, 2)), ("c", Interval(120, 160))))),
    ]
    s = per_dimension_scores(records, ["t", "c"], bins=5)
    assert s["linear_error_reduction_t"] == pytest.approx(-1.75)
    assert s["linear_error_reduction_c"] == pytest.approx(80.0)
    assert "linear_error_reduction" not in s  # weeks and dollars do not average
    assert (s["linear_win_rate_t"], s["linear_win_rate_c"]) == (0.0, 1.0)
    assert s["linear_win_rate"] == 0.5
    # The tables a cell has built already (per dimension) score the same, value for value.
    built = {d: ProbeTable.from_records(project_dimension(records, d)) for d in "tc"}
    assert per_dimension_scores(records, ["t", "c"], bins=5, tables=built) == s
    assert (s["optimistic_bin1_t"], s["optimistic_bin2_t"]) == (0.0, 1.0)
    assert (s["conservative_bin2_t"], s["optimistic_bin2_c"], s["conservative_bin2_c"]) == (
        0.0,
        0.0,
        1.0,
    )
    assert (s["optimistic_bin2"], s["conservative_bin2"]) == (0.5, 0.5)
    assert s["optimistic_bin0"] is None and s["conservative_bin4_c"] is None
    assert s["hit_rate_t"] == 0.5 and s["hit_rate_c"] == 0.5


_estimates = st.one_of(
    st.builds(
        lambda a, b: Interval(min(a, b), max(a, b)),
        st.floats(0, 1e6),
        st.floats(0, 1e6),
    ),
    st.just(Impossible()),
    st.just(BAD),
)
_probe = st.builds(
    lambda rid, k, extra, used, more, budget, success, est: _p(
        f"r{rid}", k, k + extra, used, used + more, budget, success, est
    ),
    st.integers(0, 5),
    st.integers(1, 10),
    st.integers(1, 10),
    st.floats(0, 1e5),
    st.floats(0, 1e5),
    st.floats(1, 2e5),
    st.booleans(),
    _estimates,
)


@given(st.lists(_probe, max_size=30))
def test_scores_are_bounded(probes: list[ProbeRecord]) -> None:
    s = interval_scores(probes)
    assert np.all((s >= 0) & (s <= 1))
    r = rewards(probes)
    assert np.all((r >= 0) & (r <= 1.8))
    assert 0 <= macro_f1(probes) <= 1
    assert 0 <= macro_f1(probes, first_turn=True) <= 1
    scores = score_probes(probes)  # no warning (warnings are errors here), no exception
    for value in scores.values():
        assert value is None or value >= 0 or value == scores["linear_error_reduction"]


@given(st.lists(_probe, min_size=1, max_size=30))
def test_perfect_estimator(probes: list[ProbeRecord]) -> None:
    oracle = [
        ProbeRecord(
            p.rollout_id,
            p.k,
            p.T,
            p.used,
            p.total,
            p.budget,
            p.success,
            p.feasible,
            Interval(p.total - p.used, p.total - p.used) if p.feasible else Impossible(),
        )
        for p in probes
    ]
    table = ProbeTable.from_records(oracle)
    both_classes = table.feasible.any() and (~table.feasible).any()
    assert macro_f1(table) == (1.0 if both_classes else 0.5)
    succeeded = table.success
    if succeeded.any():
        # S_k: 1 on feasible probes with R_k > 0 (R_k = 0 scores 0 by BAGEN's code), 1 for
        # the impossible answer on probes of rollouts that succeeded over budget
        expected = np.where(table.feasible, table.remaining > 0, 1.0)[succeeded].mean()
        assert interval_score(table) == pytest.approx(expected)
        # the hit rate counts an over-budget probe's (right) impossible as a miss
        assert hit_rate(table) == pytest.approx(table.feasible[succeeded].mean())
    assert early_stop(table).false_abort_rate in (None, 0.0)


def test_timing_100k_probes() -> None:
    rng = np.random.default_rng(42)
    n = 100_000
    records = []
    for i in range(n):
        total = float(rng.integers(100, 3000))
        T = 10
        k = i % 9 + 1
        used = total * k / T
        r = total - used
        choice = i % 10
        est: Estimate
        if choice == 0:
            est = Impossible()
        elif choice == 1:
            est = BAD
        else:
            est = Interval(r * 0.8, r * 1.3)
        records.append(
            ProbeRecord(f"r{i // 9}", k, T, used, total, 2500.0, total < 2000, total < 2000, est)
        )
    start = time.perf_counter()
    table = ProbeTable.from_records(records)
    built = time.perf_counter()
    scores = score_probes(table)
    done = time.perf_counter()
    print(
        f"\n100k probes: table {built - start:.3f} s, all metrics {done - built:.3f} s, "
        f"macro_f1_all={scores['macro_f1_all']:.3f}"
    )
    assert scores["n_probes"] == n


def test_midpoint_error_of_a_vanishing_remaining_budget_is_infinite_not_nan() -> None:
    # R_k = 5e-324: the relative error overflows; interpolating two infinities gave NaN.
    probes = [_p("r0", 1, 2, 0.0, 5e-324, 1.0, True, Interval(0.0, 1.0))]
    assert midpoint_relative_error(probes) == (math.inf, math.inf)
