"""The run's gate (pytest_budget._stats.run_gate): per-unit changes, the sign-flip p-value, the
run-level alpha split, the pooled test and the sequential rule, on hand-worked cases."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from pytest_budget._stats.run_gate import (
    RUN_ALPHA,
    SequentialRule,
    cell_alpha,
    pooled_alpha,
    pooled_regressions,
    signflip_p,
    unit_changes,
)


def test_unit_changes_of_a_plain_mean_are_the_per_unit_differences_over_n() -> None:
    # EMR over 4 queries (den 1 each): unit i's share of the change is (new - old) / 4,
    # positive = worse for a higher-is-better score.
    d = unit_changes([([1, 1, 0, 1], [1, 1, 1, 1])], [([0, 1, 1, 0], [1, 1, 1, 1])], "higher")
    assert d is not None
    assert d.tolist() == [0.25, 0.0, -0.25, 0.25]
    assert float(d.sum()) == pytest.approx(0.75 - 0.5)  # the score's change, worse side


def test_a_swap_flips_the_sign_of_that_unit_only() -> None:
    rng = random.Random(3)
    stored = ([rng.random() for _ in range(6)], [rng.randint(1, 3) for _ in range(6)])
    new = ([rng.random() for _ in range(6)], [rng.randint(1, 3) for _ in range(6)])
    d = unit_changes([stored], [new], "lower")
    assert d is not None
    # Swap unit 2 between the runs: R and Dbar depend on both runs' sums only.
    s2 = (list(stored[0]), list(stored[1]))
    n2 = (list(new[0]), list(new[1]))
    for col in (0, 1):
        s2[col][2], n2[col][2] = new[col][2], stored[col][2]
    swapped = unit_changes([s2], [n2], "lower")
    assert swapped is not None
    expected = d.copy()
    expected[2] = -expected[2]
    assert swapped == pytest.approx(expected)


def test_macro_f1_terms_average_and_approximate_the_change() -> None:
    # Two classes, 200 probes; the first-order sum is close to the exact change of the mean
    # of the two F1 ratios (2 TP / (pred + true)).
    rng = np.random.default_rng(5)
    truth = rng.random(200) < 0.5
    old_pred = np.where(rng.random(200) < 0.8, truth, ~truth)
    new_pred = np.where(rng.random(200) < 0.7, truth, ~truth)

    def terms(pred: np.ndarray) -> list[tuple[list[float], list[float]]]:
        out = []
        for t, p in ((truth, pred), (~truth, ~pred)):
            out.append(((2.0 * (t & p)).tolist(), (t.astype(float) + p).tolist()))
        return out

    def macro(pred: np.ndarray) -> float:
        return float(np.mean([sum(n) / sum(d) for n, d in terms(pred)]))

    d = unit_changes(terms(old_pred), terms(new_pred), "higher")
    assert d is not None
    exact = macro(old_pred) - macro(new_pred)
    assert float(d.sum()) == pytest.approx(exact, abs=0.01)


def test_signflip_p_is_exact_up_to_fourteen_units() -> None:
    d = [0.3, -0.1, 0.2, 0.2, 0.05]
    s = sum(d)
    worse = sum(
        1
        for signs in itertools.product((1, -1), repeat=len(d))
        if sum(x * e for x, e in zip(d, signs, strict=True)) >= s - 1e-12
    )
    assert signflip_p(d) == worse / 2 ** len(d)
    assert signflip_p([0.0, 0.0]) == 1.0
    assert signflip_p([-0.1, -0.2]) == 1.0  # better, not worse


def test_signflip_p_beyond_fourteen_units_is_hoeffdings_bound() -> None:
    d = [0.1] * 20 + [-0.1] * 5
    s, v = 1.5, 25 * 0.01
    assert signflip_p(d) == pytest.approx(math.exp(-(s * s) / (2 * v)))
    # The bound holds: a Monte-Carlo estimate of the true tail is below it.
    rng = np.random.default_rng(0)
    signs = rng.choice([-1.0, 1.0], size=(200_000, 25))
    tail = float(np.mean(signs @ np.array(d) >= s - 1e-12))
    assert tail <= signflip_p(d)


def test_the_run_level_is_split_in_halves() -> None:
    assert RUN_ALPHA == 0.01
    assert cell_alpha(250) == pytest.approx(0.01 / 2 / 250)
    assert pooled_alpha(15) == pytest.approx(0.01 / 2 / 15)
    assert cell_alpha(0) == pooled_alpha(1) == 0.005


def test_pooled_test_sums_cells_and_names_its_level() -> None:
    # 3 cells x 20 units each lose 0.01 on 6 units: pooled 18 equal changes out of 60,
    # Hoeffding: exp(-(18 d)**2 / (2 * 18 d**2)) = exp(-9) = 1.2e-4 < 0.005 / 2 = 0.0025.
    cell = [0.01] * 6 + [0.0] * 14
    found = pooled_regressions(
        {("planning", "emr"): [(cell, "higher")] * 3, ("planning", "aned"): [([0.0] * 20, "lower")]}
    )
    (regression,) = found
    assert regression.p_value == pytest.approx(math.exp(-9))
    assert regression.alpha == pytest.approx(0.0025)
    assert regression.change == pytest.approx(0.06)
    assert regression.message() == (
        "planning emr regressed over the suite: mean change -0.06 (higher is better) on the same "
        "60 units of 3 cells, pooled sign-flip test p=0.00012 < 0.0025 (run level 0.01: half "
        "split over 2 pooled kind x metric pairs, Bonferroni)"
    )


def test_sequential_spending_adds_up_and_is_valid_under_optional_stopping() -> None:
    rule = SequentialRule(looks=4, alpha=0.01, effect=0.1)
    assert sum(rule.spent(k, 0.01) for k in range(1, 5)) == pytest.approx(0.01)
    assert rule.spent(1, 0.01) == pytest.approx(0.01 / 16)  # rho = 2: (1/4)**2
    # Null runs: random signs on 400 units over 4 looks; red at most alpha (+ MC error).
    rng = np.random.default_rng(11)
    runs, units = 4000, 400
    mags = rng.uniform(0.0, 0.01, units)
    d = rng.choice([-1.0, 1.0], size=(runs, units)) * mags
    red = np.zeros(runs, dtype=bool)
    done = np.zeros(runs, dtype=bool)
    strict = SequentialRule(looks=4, alpha=0.05, effect=0.2)
    for k in range(1, 5):
        part = d[:, : units * k // 4]
        out = strict.decide_many(k, part.sum(1), (part * part).sum(1))
        red |= ~done & (out == 1)
        done |= out != 0
    assert done.all()
    assert red.mean() <= 0.05
    # Unchanged runs stop early for futility most of the time.
    first = strict.decide_many(1, d[:, :100].sum(1), (d[:, :100] ** 2).sum(1))
    assert (first == -1).mean() > 0.5


def test_sequential_decide_words() -> None:
    rule = SequentialRule(looks=2, alpha=0.01, effect=0.1)
    assert rule.decide(1, 2.0, 0.01) == "regressed"
    assert rule.decide(1, 0.0, 0.0001) == "no regression"
    assert rule.decide(1, 0.05, 0.01) == "continue"
    assert rule.decide(2, 0.05, 0.01) == "no regression"  # the last look always decides
    with pytest.raises(ValueError, match=r"look 3 outside 1\.\.2"):
        rule.decide(3, 0.0, 1.0)
