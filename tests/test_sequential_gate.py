"""The sequential gate's statistics (issue 30, must-have 4): hand-worked cases, and
simulations with a fixed seed showing that the false alarms stay under their level when the
cells stop on their own data, even with a stopping rule chosen to cause false alarms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_budget._core.metric_spec import MetricSpec
from pytest_budget._stats.run_gate import SequentialRule
from pytest_budget._stats.sequential import (
    batch_bounds,
    batch_changes,
    cell_look,
    forecast_lines,
    log_e_path,
    pooled_lambda,
    pooled_sequential_tests,
    sequential_applies,
    sequential_p,
)


def test_batch_bounds() -> None:
    assert batch_bounds(9) == [3, 5, 7, 9]
    assert batch_bounds(60) == [15, 30, 45, 60]
    assert batch_bounds(2) == [1, 2]  # fewer units than looks: fewer looks
    assert batch_bounds(0) == []


def test_auto_is_on_for_metered_agents_only() -> None:
    assert sequential_applies("auto", metered=True)
    assert not sequential_applies("auto", metered=False)
    assert sequential_applies("on", metered=False)
    assert not sequential_applies("off", metered=True)
    with pytest.raises(ValueError, match="choose from auto, on, off"):
        sequential_applies("sometimes", metered=True)


def test_matched_e_process_by_hand_and_by_a_product_of_factors() -> None:
    # level 0.01, predicted squares V* = 1: lam = sqrt(2 ln 100 / 1) = 3.034854.
    lam = float(pooled_lambda(1.0, 0.01))
    assert lam == pytest.approx(3.034854, abs=1e-6)
    # d = (0.5, 0.5, -0.2, 0.6): S = 0.5, 1.0, 0.8, 1.4; V = 0.25, 0.5, 0.54, 0.9.
    # log e = lam S - lam**2 V / 2 = 1.517427 - 1.151293 = 0.366134; 3.034854 - 2.302585
    # = 0.732269; 2.427883 - 2.486792 = -0.058909; 4.248796 - 4.144653 = 0.104143.
    d = np.array([0.5, 0.5, -0.2, 0.6])
    got = log_e_path(d, lam)
    assert list(got) == pytest.approx([0.366134, 0.732269, -0.058909, 0.104143], abs=2e-6)
    # Second method: the running product of each unit's factor exp(lam d - lam**2 d**2 / 2).
    product = np.cumprod([math.exp(lam * x - lam * lam * x * x / 2) for x in d])
    assert list(np.exp(got)) == pytest.approx(list(product), rel=1e-12)
    # p = 1 / max e = exp(-0.732269) = 0.480817; it never reaches 1 / 0.01.
    assert sequential_p(d, 1.0, 0.01) == (pytest.approx(0.480817, abs=1e-6), None)
    # At V = V* it rejects exactly where Hoeffding's bound of the fixed gate does:
    # S = sqrt(2 V ln(1 / level)) gives log e = ln(1 / level) (here 4 units of 0.5).
    # Four units of 0.5 (S = 2, V = 1 = V*) at level exp(-2), where Hoeffding's threshold
    # sqrt(2 V ln(1 / level)) is 2: lam = 2, log e = 2 x 2 - 4 x 1 / 2 = 2 = ln(1 / level).
    edge = log_e_path(np.full(4, 0.5), pooled_lambda(1.0, math.exp(-2.0)))
    assert float(edge[-1]) == pytest.approx(2.0)
    # Nothing changed in any first batch: nothing to predict lam from, no evidence.
    assert sequential_p(d, 0.0, 0.01) == (1.0, None)


def test_cell_look_hand_worked() -> None:
    # 8 queries, 4 looks of 2; the baseline solved all, the new run solves none.  At look 2
    # (4 queries): both = 4 + 4 denominators, pooled ratio R = (4 + 0) / 8 = 0.5, and each
    # unit's change d = -((0 - 1) - 0.5 * 0) / (8 / 2) = 0.25 (worse side positive):
    # S = 1.0 (the score fell from 1 to 0), V = 4 * 0.0625 = 0.25, Hoeffding's
    # p = exp(-S**2 / (2 V)) = exp(-2) = 0.1353.  Level of look 2 of 4 at alpha 0.5:
    # 0.5 * ((2/4)**2 - (1/4)**2) = 0.09375 < p: go on.
    spec = MetricSpec("emr", "higher", 0.05)
    stored = {"emr": ([1.0] * 8, [1.0] * 8)}
    new = {"emr": ([0.0] * 4, [1.0] * 4)}
    look = cell_look(stored, new, (spec,), 0.5, [2, 4, 6, 8], 2)
    (m,) = look.metrics
    assert m.p_value == pytest.approx(math.exp(-2.0))
    assert m.level == pytest.approx(0.09375)
    assert (look.units, look.total, m.stored, m.new) == (4, 8, 1.0, 0.0)
    # Futility: the upper bound (S + z sqrt(V)) is far above the stated effect 0.20.
    assert look.decision == "continue"
    # Look 4 with all 8 failed: S = 1, V = 8 / 64, p = exp(-4) = 0.0183 < 0.5 * 7/16.
    last = cell_look(stored, {"emr": ([0.0] * 8, [1.0] * 8)}, (spec,), 0.5, [2, 4, 6, 8], 4)
    assert last.decision == "regressed"
    assert last.metrics[0].p_value == pytest.approx(math.exp(-4.0))
    (text,) = last.messages("query")
    assert "at look 4 of 4" in text and "p=0.018 < 0.22" in text and "8 of 8 queries" in text
    # Unchanged units: S = V = 0, the upper bound is 0 < 0.20, but look 1 may only reject;
    # look 2 stops: no regression of the stated size.
    same = cell_look(stored, {"emr": ([1.0] * 2, [1.0] * 2)}, (spec,), 0.5, [2, 4, 6, 8], 1)
    assert same.decision == "continue"
    same = cell_look(stored, {"emr": ([1.0] * 4, [1.0] * 4)}, (spec,), 0.5, [2, 4, 6, 8], 2)
    assert same.decision == "no regression" and same.units == 4
    # A score undefined on the units run in both runs (no denominator): no change to judge,
    # so from look 2 it does not hold the cell open.
    empty = {"emr": ([0.0] * 8, [0.0] * 8)}
    for k, want in ((1, "continue"), (2, "no regression")):
        new_k = {"emr": ([0.0] * 2 * k, [0.0] * 2 * k)}
        assert cell_look(empty, new_k, (spec,), 0.5, [2, 4, 6, 8], k).decision == want


def test_batch_changes_use_each_batch_prefix() -> None:
    # Batch 1 (2 units, one fell 1 -> 0): R = 3/4, Dbar = 2, d = [0, 0.5], scaled by the
    # prefix's share of the cell's 8 units, 2/8: [0, 0.125].  Batch 2 (units 3-4 unchanged)
    # with the ratio over 4 units: zero change.
    spec = MetricSpec("emr", "higher", 0.05)
    stored = {"emr": ([1.0, 1.0, 1.0, 0.0], [1.0] * 4)}
    new = {"emr": ([1.0, 0.0, 1.0, 0.0], [1.0] * 4)}
    d = batch_changes(stored, new, spec, [2, 4], 8)
    assert d is not None
    assert list(d) == pytest.approx([0.0, 0.125, 0.0, 0.0])
    # All four stored solved, units 2 and 4 fell: batch 1 as above, d2 = 0.5 x 2/8; batch 2
    # on 4 units (Dbar = 4): d4 = 1 / 4, scaled by 4/8: 0.125, the weight unit 2 has too
    # (a unit weighs the same whichever batch it is in).
    solved = {"emr": ([1.0] * 4, [1.0] * 4)}
    worse = {"emr": ([1.0, 0.0, 1.0, 0.0], [1.0] * 4)}
    d = batch_changes(solved, worse, spec, [2, 4], 8)
    assert d is not None and list(d) == pytest.approx([0.0, 0.125, 0.0, 0.125])


def _adversarial_runs(
    rng: np.random.Generator, runs: int, cells: int, looks: int, size: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Null per-unit changes (fixed magnitudes, fair signs) of cells that stop as soon as
    their running sum is ahead (on the worse side) after a batch: the stopping rule that
    locks in chance excursions.  Returns the units run (0 where not run), in canonical
    order, the all-units version, and the squares predicted for the whole run from the
    first batches (their squares x looks)."""
    magnitude = rng.uniform(0.5, 1.5, (cells, looks * size))
    d = rng.choice([-1.0, 1.0], (runs, cells, looks * size)) * magnitude
    ran = np.ones_like(d)
    for c in range(cells):
        alive = np.ones(runs, dtype=bool)
        for b in range(looks):
            ran[~alive, c, b * size : (b + 1) * size] = 0.0
            ahead = (d[:, c, : (b + 1) * size] * ran[:, c, : (b + 1) * size]).sum(1) > 0
            alive &= ~ahead
    predicted = float((magnitude[:, :size] ** 2).sum()) * looks
    return (d * ran).reshape(runs, -1), d.reshape(runs, -1), predicted


def test_pooled_e_process_holds_its_level_under_adversarial_stopping() -> None:
    alpha, runs = 0.05, 20_000
    x, whole, predicted = _adversarial_runs(np.random.default_rng(20_261_128), runs, 6, 4, 8)
    log_e = log_e_path(x, pooled_lambda(predicted, alpha))
    e_rate = float((log_e.max(1) > math.log(1 / alpha)).mean())

    def z_test(y: np.ndarray) -> float:
        # The pooled sign-flip test at many units: its normal approximation, S / sqrt(V).
        s, v = y.sum(1), (y * y).sum(1)
        return float((s / np.sqrt(v) > 1.6448536).mean())

    naive, whole_rate = z_test(x), z_test(whole)
    # The adversary works: the pooled sign-flip test of the units run fails more often than
    # its level (measured 6.3%; the same cells run whole: 5.1%) ...
    assert naive > alpha and naive > whole_rate + 0.008
    # ... while the e-process stays under its level (measured 0.3%, bound 5%).
    assert e_rate < alpha
    # The real function on one run agrees with the vectorised one.
    row = int(np.argmax(log_e.max(1)))  # the run with the most evidence
    expected = min(1.0, math.exp(-float(log_e[row].max())))
    p, _ = sequential_p(x[row], predicted, alpha)
    assert expected < 1 and p == pytest.approx(expected)


def test_pooled_e_process_level_exact_by_enumeration() -> None:
    # Every sign pattern of 2 cells x 2 batches x 3 units (4,096 equally likely under the
    # null), each cell stopping after batch 1 when it is ahead (the adversary above): the
    # exact chance that the e-process ever passes 1 / alpha is at most alpha for every
    # alpha (Ville's inequality; exact 0, 1.6%, 6.8%, 23.4% at 5%, 10%, 25%, 50%), while
    # the pooled z-test of the units run (S / sqrt(V) against the normal quantile) is
    # lifted above its level (exact 12.7% at 10%; 10.2% with both cells run whole).
    magnitude = np.array([[0.9, 0.4, 1.3, 0.7, 1.1, 0.6], [0.5, 1.2, 0.8, 1.0, 0.3, 1.4]])
    signs = 1.0 - 2.0 * ((np.arange(4096)[:, None] >> np.arange(12)) & 1)
    d = signs.reshape(4096, 2, 6) * magnitude
    ahead = d[:, :, :3].sum(2) > 0
    x = d.copy()
    x[:, :, 3:] *= ~ahead[:, :, None]
    x = x.reshape(4096, 12)
    predicted = float((magnitude[:, :3] ** 2).sum()) * 2
    exact = []
    for alpha in (0.05, 0.1, 0.25, 0.5):
        log_e = log_e_path(x, pooled_lambda(predicted, alpha))
        exact.append(float((log_e.max(1) > math.log(1 / alpha)).mean()))
    assert exact == pytest.approx([0.0, 64 / 4096, 280 / 4096, 957 / 4096])
    assert all(rate <= alpha for rate, alpha in zip(exact, (0.05, 0.1, 0.25, 0.5), strict=True))
    z = x.sum(1) / np.sqrt((x * x).sum(1))
    assert float((z > 1.2815516).mean()) > 0.12  # the z-test at 10%


def test_pooled_tests_order_cells_canonically_and_say_where_they_crossed() -> None:
    # The e-process follows cells by test id, whatever order they arrived in.
    a = ("b::cell", [0.5, 0.5, -0.1], 1, "higher", 3)
    b = ("a::cell", [0.2, -0.3], 2, "higher")  # ran whole (no full size given: its units)
    one = pooled_sequential_tests({("planning", "emr"): [a, b]}, pairs=1)
    two = pooled_sequential_tests({("planning", "emr"): [b, a]}, pairs=1)
    assert one[0].p_value == two[0].p_value
    # Predicted squares: b's 0.13 (ran whole) + a's first batch 0.25 x 3 / 1 = 0.88.
    expected, at = sequential_p(np.array([0.2, -0.3, 0.5, 0.5, -0.1]), 0.88, 0.005)
    assert expected < 1 and at is None
    assert one[0].p_value == pytest.approx(expected)
    assert one[0].test == "e-process" and one[0].units == 5 and one[0].cells == 2
    assert one[0].crossed == "" and "crossed" not in one[0].as_json()
    # A regression: 12-unit cells of 4 looks (3, 6, 9, 12), every unit 0.1 worse; cell
    # "c" stopped regressed at look 2 (6 units).  V* = (3 x 0.01) x 12 / 3 per cell = 0.24;
    # level 0.005 (one pooled pair): lam = sqrt(2 ln 200 / 0.24) = 6.644733, and each unit
    # adds 0.664473 - 0.220763 = 0.443710 to log e, which passes ln 200 = 5.298317 at the
    # 12th unit (11 x 0.44371 = 4.881 < 5.298 < 5.325): c's 6, then d's 6th, in d's look 2.
    c = ("c::cell", [0.1] * 6, 3, "higher", 12)
    d = ("d::cell", [0.1] * 12, 3, "higher", 12)
    (test,) = pooled_sequential_tests({("planning", "emr"): [d, c]}, pairs=1)
    assert test.regressed and test.p_value == pytest.approx(math.exp(-18 * 0.443710), rel=1e-4)
    assert test.crossed == (
        "unit 12 of the 18 run in canonical order (cells by test id, then batch): d::cell, "
        "look 2 of 4 (6 of 12 units)"
    )
    assert test.message().endswith("; it crossed 1/alpha at " + test.crossed)
    assert test.as_json()["crossed"] == test.crossed


def test_cell_rule_holds_its_level_over_all_looks() -> None:
    # Every look taken (the most a stopping rule can expose): the chance that any look of
    # an unchanged cell rejects stays under alpha (union bound; measured 0.37% at 5%:
    # Hoeffding's bound is conservative).
    rng = np.random.default_rng(7)
    alpha, runs, looks, size = 0.05, 20_000, 4, 10
    magnitude = rng.uniform(0.1, 1.0, looks * size)
    d = rng.choice([-1.0, 1.0], (runs, looks * size)) * magnitude
    rule = SequentialRule(looks, alpha, effect=0.2)
    rejected = np.zeros(runs, dtype=bool)
    for k in range(1, looks + 1):
        upto = k * size
        s, v = d[:, :upto].sum(1), (d[:, :upto] ** 2).sum(1)
        rejected |= rule.decide_many(k, s, v) == 1
    assert float(rejected.mean()) < alpha


def test_forecast_lines_give_the_most_and_the_expected_calls() -> None:
    rows = [("planning", "tool_agent", 1000, 4000), ("triage", "planner", 16, 16)]
    shares = {("planning", "tool_agent"): 0.85}
    whole = {("triage", "planner"): "one plan call per cell, which cannot be split into batches"}
    lines = forecast_lines(rows, "auto", shares, whole)
    assert lines[0].startswith("sequential gate (auto): planning tool_agent: at most 4,000 calls")
    assert "expected ~850 for an unchanged agent (85% of its units" in lines[0]
    assert "cannot be split into batches" in lines[1]
    # 850 + 16 expected; 4,000 + 16 at most.
    assert lines[2].startswith("sequential gate: at most 4,016 calls, expected ~866")
    assert forecast_lines(rows, "off", shares, whole) == [
        "sequential gate: off (--budget-sequential=off): every cell runs every unit"
    ]
