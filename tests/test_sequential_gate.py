"""The sequential gate's statistics (issue 30, must-have 4): hand-worked cases, and
simulations with a fixed seed showing that the false alarms stay under their level when the
cells stop on their own data, even with a stopping rule chosen to cause false alarms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_budget.metric_spec import MetricSpec
from pytest_budget.run_gate import SequentialRule
from pytest_budget.sequential import (
    RHO_SHARE,
    batch_bounds,
    batch_changes,
    cell_look,
    forecast_lines,
    mixture_log_e,
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


def test_mixture_e_value_by_hand_and_by_integration() -> None:
    # s = 3, v = 1, rho = 1: w = 2, z = 3 / sqrt(2) = 2.12132;
    # e = 2 sqrt(1/2) exp(9/4) Phi(2.12132) = 1.414214 * 9.487736 * 0.983052 = 13.190.
    e = math.exp(float(mixture_log_e(np.array([3.0]), np.array([1.0]), 1.0)[0]))
    assert e == pytest.approx(13.190, abs=2e-3)
    # Second method: the mixture integral itself, over a half-normal lam of precision rho.
    for s, v, rho in ((3.0, 1.0, 1.0), (1.2, 4.0, 0.5), (6.0, 9.0, 3.0)):
        lam = np.linspace(0.0, 40.0, 400_001)
        density = 2.0 * math.sqrt(rho / (2 * math.pi)) * np.exp(-rho * lam**2 / 2)
        integral = np.trapezoid(np.exp(lam * s - lam**2 * v / 2) * density, lam)
        got = math.exp(float(mixture_log_e(np.array([s]), np.array([v]), rho)[0]))
        assert got == pytest.approx(integral, rel=1e-6)
    # No evidence (s <= 0) never reaches 1.
    assert float(mixture_log_e(np.array([-2.0]), np.array([1.0]), 1.0)[0]) <= 0.0


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
    # Batch 1 (2 units, one fell 1 -> 0): R = 3/4, Dbar = 2, d = [0, 0.5].  Batch 2 (units
    # 3-4 unchanged) with the ratio over 4 units: zero change.
    spec = MetricSpec("emr", "higher", 0.05)
    stored = {"emr": ([1.0, 1.0, 1.0, 0.0], [1.0] * 4)}
    new = {"emr": ([1.0, 0.0, 1.0, 0.0], [1.0] * 4)}
    d = batch_changes(stored, new, spec, [2, 4])
    assert d is not None
    assert list(d) == pytest.approx([0.0, 0.5, 0.0, 0.0])


def _adversarial_runs(
    rng: np.random.Generator, runs: int, cells: int, looks: int, size: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Null per-unit changes (fixed magnitudes, fair signs) of cells that stop as soon as
    their running sum is ahead (on the worse side) after a batch: the stopping rule that
    locks in chance excursions.  Returns the units run (0 where not run), in canonical
    order, the all-units version, and the first batches' summed squares."""
    magnitude = rng.uniform(0.5, 1.5, (cells, looks * size))
    d = rng.choice([-1.0, 1.0], (runs, cells, looks * size)) * magnitude
    ran = np.ones_like(d)
    for c in range(cells):
        alive = np.ones(runs, dtype=bool)
        for b in range(looks):
            ran[~alive, c, b * size : (b + 1) * size] = 0.0
            ahead = (d[:, c, : (b + 1) * size] * ran[:, c, : (b + 1) * size]).sum(1) > 0
            alive &= ~ahead
    first = float((magnitude[:, :size] ** 2).sum())
    return (d * ran).reshape(runs, -1), d.reshape(runs, -1), first


def test_pooled_e_process_holds_its_level_under_adversarial_stopping() -> None:
    alpha, runs = 0.05, 20_000
    x, whole, first = _adversarial_runs(np.random.default_rng(20_261_128), runs, 6, 4, 8)
    log_e = mixture_log_e(np.cumsum(x, 1), np.cumsum(x * x, 1), RHO_SHARE * first)
    e_rate = float((log_e.max(1) >= math.log(1 / alpha)).mean())

    def z_test(y: np.ndarray) -> float:
        # The pooled sign-flip test at many units: its normal approximation, S / sqrt(V).
        s, v = y.sum(1), (y * y).sum(1)
        return float((s / np.sqrt(v) > 1.6448536).mean())

    naive, whole_rate = z_test(x), z_test(whole)
    # The adversary works: the pooled sign-flip test of the units run fails more often than
    # its level (measured 6.3%; the same cells run whole: 5.1%) ...
    assert naive > alpha and naive > whole_rate + 0.008
    # ... while the e-process stays under its level (measured 1.5%, bound 5%).
    assert e_rate < alpha
    # The real function on one run agrees with the vectorised one.
    row = int(np.argmax(log_e.max(1)))  # the run with the most evidence
    expected = min(1.0, math.exp(-float(log_e[row].max())))
    assert expected < 1 and sequential_p(x[row], first) == pytest.approx(expected)


def test_pooled_tests_order_cells_canonically() -> None:
    # The e-process follows cells by test id, whatever order they arrived in.
    a = ("b::cell", [0.5, 0.5, -0.1], 1, "higher")
    b = ("a::cell", [0.2, -0.3], 2, "higher")
    one = pooled_sequential_tests({("planning", "emr"): [a, b]}, pairs=1)
    two = pooled_sequential_tests({("planning", "emr"): [b, a]}, pairs=1)
    assert one[0].p_value == two[0].p_value
    expected = sequential_p(np.array([0.2, -0.3, 0.5, 0.5, -0.1]), 0.2**2 + 0.3**2 + 0.5**2)
    assert expected < 1
    assert one[0].p_value == pytest.approx(expected)
    assert one[0].test == "e-process" and one[0].units == 5 and one[0].cells == 2


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
