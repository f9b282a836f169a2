"""The generic bootstrap and the repeat summary: hand-worked cases and coverage properties."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from pytest_budget._stats.bootstrap import (
    CIMeta,
    bootstrap_seed,
    counts_from_indices,
    mean_over_repeats,
    percentile_interval,
    percentile_intervals,
    recompute_by_expansion,
    resample_draws,
    resample_indices,
    unit_weighted_percentiles,
    validate_level,
    weighted_percentile,
    weighted_percentiles,
)
from pytest_budget._stats.repeats import (
    Consistency,
    mean_scores,
    pass_hat_k,
    repeat_seed,
    score_spread,
    summarize_cell,
)


def mean_intervals(data: np.ndarray, resamples: int, level: float, seed: int) -> list[float]:
    """Percentile interval of the mean of ``data`` (counts @ data / n per resample)."""
    n = data.size
    counts = counts_from_indices(resample_indices(n, resamples, seed), n)
    interval = percentile_interval(counts @ data / n, level)
    assert interval is not None
    return interval


# --------------------------------------------------------------------------- seeds


def test_seed_is_sha256_of_the_stable_parts() -> None:
    text = "bootstrap:42:awareness:sokoban-8x8"
    expected = int(hashlib.sha256(text.encode()).hexdigest(), 16) % (2**63 - 1)
    assert bootstrap_seed(42, "awareness", "sokoban-8x8") == expected
    assert bootstrap_seed(42, "awareness", "sokoban-6x6") != expected
    assert bootstrap_seed(7, "awareness", "sokoban-8x8") != expected


def test_same_seed_same_resamples_and_counts_sum_to_n() -> None:
    a = resample_indices(12, 50, 9)
    assert np.array_equal(a, resample_indices(12, 50, 9))
    assert not np.array_equal(a, resample_indices(12, 50, 10))
    assert a.shape == (50, 12) and a.min() >= 0 and a.max() < 12
    counts = counts_from_indices(a, 12)
    assert counts.shape == (50, 12)
    assert (counts.sum(axis=1) == 12).all()
    # Row 0 by hand: how often each index appears.
    assert counts[0].tolist() == [int((a[0] == j).sum()) for j in range(12)]


def test_bad_sizes_and_levels_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="at least one unit"):
        resample_indices(0, 10, 1)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        resample_indices(3, 0, 1)
    for bad in (0, 1, 1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match=r"in \(0, 1\)"):
            validate_level(bad)
    assert validate_level(0.9) == 0.9


# --------------------------------------------------------------------------- intervals


def test_percentile_interval_hand_worked() -> None:
    samples = np.arange(101, dtype=float)  # 0..100: the q-th percentile is q
    assert percentile_interval(samples, 0.9) == [5.0, 95.0]
    assert percentile_interval(samples, 0.95) == [2.5, 97.5]
    # Undefined resamples are left out: 0..100 plus NaNs gives the same interval.
    with_nan = np.concatenate([samples, [np.nan] * 40])
    assert percentile_interval(with_nan, 0.9) == [5.0, 95.0]
    assert percentile_interval(np.full(5, np.nan), 0.9) is None
    # Four values 1, 2, 3, 4 at level 0.5: quantiles 0.25 and 0.75 -> positions 0.75, 2.25.
    assert percentile_interval([4.0, 1.0, 3.0, 2.0], 0.5) == [1.75, 3.25]


def test_percentile_intervals_per_score_and_undefined_scores() -> None:
    rng = np.random.default_rng(0)
    samples = {"a": rng.normal(size=500), "b": rng.random(500), "gone": np.full(500, np.nan)}
    samples["b"][::3] = np.nan
    point = {"a": 0.1, "b": 0.5, "gone": 0.2, "undefined": None, "missing": 1.0}
    out = percentile_intervals(point, samples, 0.9)
    assert list(out) == list(point)
    assert out["a"] == percentile_interval(samples["a"], 0.9)
    assert out["b"] == percentile_interval(samples["b"], 0.9)
    assert out["gone"] is None and out["undefined"] is None and out["missing"] is None


def test_weighted_percentile_equals_numpy_on_the_expanded_data() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(size=17)
    values[4] = values[9]  # a tie
    weights = rng.integers(0, 4, size=(60, 17))
    weights[0] = 0  # nothing drawn: undefined
    for q in (0.0, 10.0, 50.0, 90.0, 100.0):
        got = weighted_percentile(values, weights, q)
        assert np.isnan(got[0])
        for row in range(1, 60):
            expected = np.percentile(np.repeat(values, weights[row]), q)
            assert got[row] == pytest.approx(expected, abs=1e-12)


def test_unit_weighted_percentiles_equal_numpy_and_the_per_value_weights() -> None:
    """Values grouped in units, each counted as often as its unit was drawn: the per-unit
    binary search, the per-value weights and numpy on the expanded data agree exactly."""
    rng = np.random.default_rng(5)
    for n_units, m in ((1, 1), (3, 40), (12, 7), (25, 300)):
        values = rng.choice([-1.0, 0.0, 0.5, 2.0], size=m) + rng.integers(0, 2, size=m)
        unit = rng.integers(0, n_units, size=m)
        _, counts = resample_draws(n_units, 80, 11)
        counts = np.vstack([np.zeros((1, n_units), dtype=np.int64), counts])  # row 0: nothing
        qs = (0.0, 12.5, 50.0, 90.0, 100.0)
        got = unit_weighted_percentiles(values, unit, counts, qs)
        same = weighted_percentiles(values, counts[:, unit], qs)
        for q, by_unit, by_value in zip(qs, got, same, strict=True):
            assert np.array_equal(by_unit, by_value, equal_nan=True)
            assert np.isnan(by_unit[0]) == (counts[0, unit].sum() == 0)
            for row in range(1, counts.shape[0]):
                weights = counts[row, unit]
                if weights.sum():
                    assert by_unit[row] == np.percentile(np.repeat(values, weights), q)
    assert np.isnan(unit_weighted_percentiles([], [], np.ones((4, 2)), (50.0,))[0]).all()


def test_resample_draws_are_the_seeded_draws_read_only() -> None:
    indices, counts = resample_draws(9, 50, 1234)
    assert np.array_equal(indices, resample_indices(9, 50, 1234))
    assert np.array_equal(counts, counts_from_indices(resample_indices(9, 50, 1234), 9))
    assert resample_draws(9, 50, 1234)[1] is counts  # remembered
    with pytest.raises(ValueError, match="read-only"):
        counts[0, 0] = 5


def test_recompute_by_expansion_hand_worked() -> None:
    indices = np.array([[0, 0, 1], [2, 2, 2]])
    out = recompute_by_expansion(
        [1.0, 2.0, 3.0], lambda xs: {"mean": sum(xs) / len(xs), "none": None}, indices
    )
    assert out["mean"].tolist() == [pytest.approx(4 / 3), 3.0]
    assert np.isnan(out["none"]).all()


def test_mean_over_repeats_skips_undefined_repeats() -> None:
    a = {"x": np.array([1.0, np.nan, np.nan]), "y": np.array([1.0, 2.0, 3.0])}
    b = {"x": np.array([3.0, 5.0, np.nan]), "y": np.array([3.0, 2.0, 1.0])}
    out = mean_over_repeats([a, b])
    assert out["x"][:2].tolist() == [2.0, 5.0] and np.isnan(out["x"][2])
    assert out["y"].tolist() == [2.0, 2.0, 2.0]


def test_drawing_repeats_adds_their_spread() -> None:
    low, high = {"x": np.zeros(400)}, {"x": np.ones(400)}
    # Averaging all repeats: every resample is 0.5, the runs' difference is invisible.
    assert percentile_interval(mean_over_repeats([low, high])["x"], 0.9) == [0.5, 0.5]
    # Drawing 2 of the 2 repeats per resample: 0, 0.5 or 1 with chances 1/4, 1/2, 1/4.
    drawn = mean_over_repeats([low, high], seed=3)["x"]
    assert set(drawn.tolist()) == {0.0, 0.5, 1.0}
    assert 0.2 < float(np.mean(drawn == 0.0)) < 0.3
    assert percentile_interval(drawn, 0.9) == [0.0, 1.0]
    # Identical repeats: drawing changes nothing.
    same = {"x": np.linspace(0, 1, 400)}
    assert np.array_equal(mean_over_repeats([same, same], seed=3)["x"], same["x"])


# --------------------------------------------------------------------------- properties


def test_interval_of_a_mean_contains_the_mean() -> None:
    rng = np.random.default_rng(11)
    for trial in range(40):
        data = rng.exponential(size=int(rng.integers(5, 60)))
        lo, hi = mean_intervals(data, 400, 0.95, seed=trial)
        assert lo <= data.mean() <= hi


def test_width_shrinks_like_one_over_root_n() -> None:
    rng = np.random.default_rng(5)
    small = mean_intervals(rng.normal(size=25), 1000, 0.95, seed=1)
    large = mean_intervals(rng.normal(size=400), 1000, 0.95, seed=1)
    # sqrt(400 / 25) = 4: the large sample's interval is about four times narrower.
    ratio = (small[1] - small[0]) / (large[1] - large[0])
    assert 2.5 < ratio < 6.0


def test_coverage_of_the_true_mean_is_near_the_level() -> None:
    rng = np.random.default_rng(2024)
    trials, covered = 300, 0
    for trial in range(trials):
        data = rng.normal(loc=1.0, size=50)
        lo, hi = mean_intervals(data, 500, 0.9, seed=trial)
        covered += lo <= 1.0 <= hi
    # The percentile bootstrap of a mean of 50 normals covers about 88% at level 0.9
    # (slightly under); 300 trials have a binomial sd of 1.8 points.
    assert 0.83 <= covered / trials <= 0.95


def test_same_seed_same_interval() -> None:
    data = np.random.default_rng(1).random(30)
    assert mean_intervals(data, 300, 0.95, seed=4) == mean_intervals(data, 300, 0.95, seed=4)
    assert mean_intervals(data, 300, 0.95, seed=4) != mean_intervals(data, 300, 0.95, seed=5)


# --------------------------------------------------------------------------- repeats


def test_pass_hat_k_hand_worked() -> None:
    table = [[True, True, True], [True, False, True], [False, False, False]]
    # Successes c = 3, 2, 0 of K = 3: pass^k = mean of C(c, k) / C(3, k).
    assert pass_hat_k(table) == {
        "1": pytest.approx((3 + 2 + 0) / 9),
        "2": pytest.approx((3 / 3 + 1 / 3 + 0) / 3),
        "3": pytest.approx(1 / 3),
    }
    assert pass_hat_k(np.zeros((0, 2), dtype=bool)) == {"1": None, "2": None}


def test_spread_and_mean_hand_worked() -> None:
    runs = [{"a": 1.0, "b": None, "n": 5}, {"a": 2.0, "b": 0.5, "n": 5}, {"a": 4.0, "b": None}]
    assert mean_scores(runs) == {"a": 7 / 3, "b": 0.5, "n": 5.0}
    assert mean_scores(runs[:1]) == runs[0]  # one run: unchanged, ints stay ints
    spread = score_spread(runs)
    assert spread["a"]["values"] == [1.0, 2.0, 4.0]
    assert spread["a"]["std"] == pytest.approx(math.sqrt(7 / 3))
    assert (spread["a"]["min"], spread["a"]["max"]) == (1.0, 4.0)
    assert spread["b"] == {"values": [None, 0.5, None], "mean": 0.5, "std": None,
                           "min": 0.5, "max": 0.5}  # fmt: skip
    assert spread["n"]["std"] == 0.0


def test_repeat_seed_keeps_repeat_zero() -> None:
    assert repeat_seed(42, 0) == 42
    seeds = [repeat_seed(42, i) for i in range(1, 6)]
    assert len(set(seeds)) == 5 and all(0 <= s < 2**31 for s in seeds)
    assert seeds == [repeat_seed(42, i) for i in range(1, 6)]


def test_summarize_cell_fields() -> None:
    runs = [{"x": 1.0}, {"x": 3.0}]
    matrices = [{"x": np.linspace(0.0, 2.0, 101)}, {"x": np.linspace(2.0, 4.0, 101)}]
    meta = CIMeta(level=0.9, resamples=101, unit="item", n_units=7, repeats=2)
    summary = summarize_cell(
        runs,
        matrices=matrices,
        meta=meta,
        consistency=Consistency("item", "x > 2", [[False, True]]),
        seeds=[42, 9],
        outcomes=["ok", "ok"],
    )
    assert summary.scores == {"x": 2.0}
    # Averaged per resample: linspace(1, 3, 101), whose 5th/95th percentiles are 1.1, 2.9.
    assert summary.ci == {"x": [pytest.approx(1.1), pytest.approx(2.9)]}
    assert summary.ci_meta == {"level": 0.9, "resamples": 101, "method": "percentile",
                               "unit": "item", "n_units": 7, "repeats": 2}  # fmt: skip
    assert summary.repeat is not None
    assert summary.repeat["consistency"]["pass_hat_k"] == {"1": 0.5, "2": 0.0}
    assert set(summary.report_fields()) == {"scores", "ci", "ci_meta", "repeat"}
    assert set(summary.snapshot_fields()) == {"scores", "ci"}
    off = summarize_cell(runs[:1], matrices=None, meta=None)
    assert off.report_fields() == {"scores": {"x": 1.0}} and off.repeat is None
