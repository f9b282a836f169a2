"""The paired gate: a randomization test on each query's stored and new values."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget._stats.gating import PAIRED_ALPHA, MetricSpec, Regression, compare_paired
from pytest_budget._stats.paired import (
    DRAWS,
    EXACT_LIMIT,
    decode,
    differing_units,
    encode,
    paired_p_value,
    per_unit_fields,
    read_per_unit,
)

EMR = MetricSpec("emr", "higher", 0.05)
GAP = MetricSpec("cost_gap", "lower", 0.05)

Parts = tuple[list[float], list[float]]


def ratio(parts: Parts) -> float:
    return sum(parts[0]) / sum(parts[1])


def brute_force_p(stored: Parts, new: Parts, direction: str) -> float:
    """Second method: every swap pattern over *all* units, each score recomputed from
    scratch (a swapped unit trades its stored and new values)."""
    n = len(stored[0])
    observed = ratio(new) - ratio(stored)
    hits = total = 0
    for pattern in itertools.product((0, 1), repeat=n):
        a = ([], [])  # type: tuple[list[float], list[float]]
        b = ([], [])  # type: tuple[list[float], list[float]]
        for i, swap in enumerate(pattern):
            old_i, new_i = (stored[0][i], stored[1][i]), (new[0][i], new[1][i])
            if swap:
                old_i, new_i = new_i, old_i
            for side, (num, den) in ((a, old_i), (b, new_i)):
                side[0].append(num)
                side[1].append(den)
        if not sum(a[1]) or not sum(b[1]):
            continue
        total += 1
        change = ratio(b) - ratio(a)
        worse = change <= observed + 1e-12 if direction == "higher" else change >= observed - 1e-12
        hits += worse
    return hits / total


# ------------------------------------------------------------------ hand-worked p-values


def test_three_lost_exact_matches_of_four_is_one_in_eight() -> None:
    # Three queries went from EM 1 to 0, the fourth stayed 0.  Under "same agent", each of
    # the three is as likely swapped as not: 2**3 patterns, and only the observed one loses
    # all three (EMR 0.75 -> 0).  p = 1/8 (McNemar's exact test, 3 discordant pairs).
    stored = ([1.0, 1, 1, 0], [1.0, 1, 1, 1])
    new = ([0.0, 0, 0, 0], [1.0, 1, 1, 1])
    assert paired_p_value(stored, new, "higher") == 1 / 8
    # Read as a lower-is-better score the same change is an improvement: every pattern is
    # at least as bad, p = 1.
    assert paired_p_value(stored, new, "lower") == 1.0


def test_ratio_with_moving_denominators_by_hand() -> None:
    # (em, in P) per query.  Stored: 1/1, 1/1, 0/0 -> EMR 2/2 = 1.  New: 1/1, 0/1, 0/1 ->
    # 1/3.  Queries 2 and 3 differ; the four patterns give the change
    #   none swapped: 1/3 - 1     = -2/3 (observed)
    #   query 2:      2/3 - 1/2   = +1/6
    #   query 3:      1/2 - 2/3   = -1/6
    #   both:         1   - 1/3   = +2/3
    # so p = P(change <= -2/3) = 1/4.
    stored = ([1.0, 1, 0], [1.0, 1, 0])
    new = ([1.0, 0, 0], [1.0, 1, 1])
    assert paired_p_value(stored, new, "higher") == 1 / 4
    assert differing_units(stored, new) == 2


def test_cost_gap_by_hand() -> None:
    # Cost differences (lower is better), every query in C.  Stored 0, 0.5, 2 (mean 2.5/3);
    # new 1, 0.5, 4 (mean 5.5/3): queries 1 and 3 got dearer by 1 and 2.  Swapping query 1
    # (s1) and/or 3 (s3) gives the change (3 - 2*s1 - 4*s3) / 3: +1 (observed), +1/3, -1/3,
    # -1.  Only the observed pattern is as bad: p = 1/4.
    stored = ([0.0, 0.5, 2.0], [1.0, 1, 1])
    new = ([1.0, 0.5, 4.0], [1.0, 1, 1])
    assert paired_p_value(stored, new, "lower") == 1 / 4


def test_undefined_ratio_gives_no_p_value() -> None:
    assert paired_p_value(([0.0], [0.0]), ([1.0], [1.0]), "higher") is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 3), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["higher", "lower"]),
)
def test_exact_p_value_equals_brute_force(units: list[tuple[int, int, int, int]], d: str) -> None:
    stored = ([float(u[0]) for u in units], [float(u[1]) for u in units])
    new = ([float(u[2]) for u in units], [float(u[3]) for u in units])
    if not sum(new[1]):
        assert paired_p_value(stored, new, d) is None
        return
    assert paired_p_value(stored, new, d) == pytest.approx(brute_force_p(stored, new, d))


def test_random_patterns_estimate_the_exact_p_value() -> None:
    # 18 differing queries (past EXACT_LIMIT): the 20,000 random patterns estimate the p
    # of the full enumeration (2**18 patterns, computed here by counting).
    assert EXACT_LIMIT < 18
    rng = random.Random(5)
    stored = ([float(rng.random() < 0.8) for _ in range(18)], [1.0] * 18)
    new = ([1.0 - v for v in stored[0]], [1.0] * 18)  # every query flipped
    lost = sum(stored[0])  # 1 -> 0 flips; gained = 18 - lost
    # change = (gained - lost + 2 * (swapped losses - swapped gains)) / 18; count patterns
    # with change <= observed: a swapped loss adds 2/18, a swapped gain takes 2/18 off, so
    # swapped losses <= swapped gains.
    from math import comb

    gained = 18 - int(lost)
    exact = (
        sum(
            comb(int(lost), a) * comb(gained, b)
            for a in range(int(lost) + 1)
            for b in range(gained + 1)
            if a <= b
        )
        / 2**18
    )
    got = paired_p_value(stored, new, "higher")
    assert got is not None
    se = (exact * (1 - exact) / DRAWS) ** 0.5
    assert abs(got - exact) < 4 * se + 1 / DRAWS


# ------------------------------------------------------------------ properties


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-50, 50, allow_nan=False), st.integers(0, 4)),
        min_size=1,
        max_size=300,
    ),
    st.sampled_from([EMR, GAP]),
)
def test_identical_per_query_values_never_fail(
    units: list[tuple[float, int]], spec: MetricSpec
) -> None:
    num = decode(encode([u[0] for u in units]))
    den = [float(u[1]) for u in units]
    score = sum(num) / sum(den) if sum(den) else None
    parts = {spec.name: (num, den)}
    assert compare_paired({spec.name: score}, {spec.name: score}, parts, parts, (spec,)) == []
    if score is not None:
        assert paired_p_value((num, den), (list(num), list(den)), spec.direction) == 1.0


def _agent_runs(seed: int, drop: float) -> tuple[list[float], list[float]]:
    """Two runs on 200 queries of an agent that solves each query with its own chance (some
    always, some never, some in between); the second run's chances are ``drop`` lower."""
    rng = random.Random(seed)
    chance = [rng.choice([0.0, 1.0, 1.0, 0.5, 0.8, 0.9]) for _ in range(200)]
    first = [float(rng.random() < c) for c in chance]
    second = [float(rng.random() < max(0.0, c - drop)) for c in chance]
    return first, second


def test_p_values_are_calibrated_and_a_real_drop_is_found() -> None:
    # Same agent twice (both runs fresh draws): a valid test rejects at level 0.05 in about
    # 5% of the pairs, not more.  A wrong tail or statistic would be far off.
    ones = [1.0] * 200
    null = [paired_p_value((a, ones), (b, ones), "higher") for a, b in map(
        lambda s: _agent_runs(s, 0.0), range(300))]  # fmt: skip
    rejected = sum(p is not None and p < 0.05 for p in null) / len(null)
    assert 0.01 <= rejected <= 0.09, rejected
    # The agent got 25 points worse on every query it could still lose: found nearly always.
    worse = [paired_p_value((a, ones), (b, ones), "higher") for a, b in map(
        lambda s: _agent_runs(s, 0.25), range(60))]  # fmt: skip
    assert sum(p is not None and p < PAIRED_ALPHA for p in worse) / len(worse) >= 0.9


def test_every_swap_pattern_is_counted_once_at_the_exact_limit() -> None:
    m = EXACT_LIMIT
    stored = ([1.0] * m, [1.0] * m)
    new = ([0.0] * m, [1.0] * m)
    assert paired_p_value(stored, new, "higher") == 2.0**-m


# ------------------------------------------------------------------ the rule


def _emr_cell(stored_em: Sequence[float], new_em: Sequence[float]) -> list[Regression]:
    den = [1.0] * len(stored_em)
    stored, new = (list(map(float, stored_em)), den), (list(map(float, new_em)), den)
    return compare_paired(
        {"emr": ratio(stored)}, {"emr": ratio(new)}, {"emr": stored}, {"emr": new}, (EMR,)
    )


def test_a_twenty_point_drop_on_200_queries_is_caught() -> None:
    rng = random.Random(1)
    stored = [float(rng.random() < 0.7) for _ in range(200)]
    solved = [i for i, v in enumerate(stored) if v]
    new = list(stored)
    for i in rng.sample(solved, 40):  # 40 of 200 queries lost: EMR down 20 points
        new[i] = 0.0
    (regression,) = _emr_cell(stored, new)
    assert regression.rule == "paired" and regression.units == 200
    assert regression.p_value is not None and regression.p_value < PAIRED_ALPHA
    # 40 losses, no gains: 40 equal changes d, so Hoeffding's bound (beyond 14 changed
    # units) is exp(-(40 d)**2 / (2 * 40 d**2)) = exp(-20).
    assert regression.p_value == pytest.approx(math.exp(-20))
    assert regression.message() == (
        f"emr regressed: stored {ratio((stored, [1.0] * 200)):.6g}, new "
        f"{ratio((new, [1.0] * 200)):.6g} on the same 200 queries, paired sign-flip test "
        f"p={regression.p_value:.2g} < 0.0005 and past the tolerance 0.05 (higher is better)"
    )


def test_noise_past_the_tolerance_passes() -> None:
    # 10 queries lost an exact match and 2 gained one: EMR 0.98 -> 0.90, past the 0.05
    # tolerance.  Each of the 12 changes is +-1 with probability 1/2 under "same agent", so
    # p = P(at most 2 gains of 12) = (1 + 12 + 66) / 4096 = 79/4096: noise at 0.0005.
    stored = [1.0] * 10 + [0.0] * 2 + [1.0] * 88
    new = [0.0] * 10 + [1.0] * 2 + [1.0] * 88
    assert _emr_cell(stored, new) == []
    assert paired_p_value((stored, [1.0] * 100), (new, [1.0] * 100), "higher") == 79 / 4096


def test_within_the_tolerance_is_never_tested() -> None:
    stored = [1.0] * 200
    new = [0.0] * 9 + [1.0] * 191  # 4.5 points down, tolerance 0.05
    assert _emr_cell(stored, new) == []


def test_a_small_cell_falls_back_and_says_so() -> None:
    # Four queries all lost: p = 1/16 can never be below 0.0005, so the fallback rule decides.
    (regression,) = _emr_cell([1, 1, 1, 1], [0, 0, 0, 0])
    assert regression.rule == "tolerance"
    assert regression.message().endswith(
        "; only 4 of 4 queries changed, too few for the paired test, so compared by the "
        "tolerance rule"
    )
    calls: list[str] = []

    def fallback(spec: MetricSpec) -> list[Regression]:
        calls.append(spec.name)
        return []

    stored, new = ([1.0] * 4, [1.0] * 4), ([0.0] * 4, [1.0] * 4)
    assert compare_paired({"emr": 1.0}, {"emr": 0.0}, {"emr": stored}, {"emr": new}, (EMR,),
                          fallback=fallback, fallback_name="x") == []  # fmt: skip
    assert calls == ["emr"]


def test_missing_per_query_values_fall_back_with_a_note() -> None:
    found = compare_paired({"emr": 0.9}, {"emr": 0.5}, {}, {"emr": ([1.0], [1.0])}, (EMR,))
    (regression,) = found
    assert regression.message() == (
        "emr regressed: stored 0.9, new 0.5, tolerance 0.05 (higher is better); no per-query "
        "values to pair, so compared by the tolerance rule"
    )
    # Lost and undefined metrics as in the other rules.
    (lost,) = compare_paired({"emr": 0.9}, {"emr": None}, {}, {}, (EMR,))
    assert lost.new is None
    assert compare_paired({"emr": None}, {"emr": 0.1}, {}, {}, (EMR,)) == []


# ------------------------------------------------------------------ storage


def test_encoding_round_trips_compactly() -> None:
    values = [1.0, 0.0, 0.0, 0.0, 0.25, -3.5, 1 / 3, 1 / 3, 12.0]
    text = encode(values)
    assert text == "1 0*3 0.25 -3.5 0.33333333*2 12"
    assert decode(text) == [1.0, 0.0, 0.0, 0.0, 0.25, -3.5, 0.33333333, 0.33333333, 12.0]
    assert encode(decode(text)) == text  # stored values re-encode to the same text
    assert encode([]) == "" and decode("") == []
    with pytest.raises(ValueError):
        encode([float("nan")])
    for bad in ("1*0", "1*x", "x", "inf"):
        with pytest.raises(ValueError):
            decode(bad)
    fields = per_unit_fields({"emr": ([1.0, 0.0], [1.0, 1.0])}, "query")
    assert fields == {"unit": "query", "n": 2, "emr": {"num": "1 0", "den": "1*2"}}
    assert read_per_unit(fields) == (2, {"emr": ([1.0, 0.0], [1.0, 1.0])})


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (None, "stores no per-query values"),
        ([1, 2], "has a malformed 'per_query' object"),
        ({"n": 2, "emr": {"num": "1 x", "den": "1 1"}}, "malformed per-query values for 'emr'"),
        ({"n": 2, "emr": {"num": "1", "den": "1 1"}}, "has 1/2 per-query values for 'emr'"),
        ({"n": 2, "emr": "1 1"}, "malformed per-query values for 'emr'"),
    ],
)
def test_unusable_stored_values_say_why(data: object, why: str) -> None:
    found = read_per_unit(data)
    assert isinstance(found, str) and why in found


# ------------------------------------------------------------------ planning cells


@pytest.mark.parametrize("reading", ["code", "prose"])
@pytest.mark.parametrize("scenario", [("static", 0, 2), ("ban_tool", 1, 5)], ids=str)
def test_per_query_parts_sum_to_the_cell_scores(
    reading: str, scenario: tuple[str, int, int]
) -> None:
    from pytest_budget.planning._evaluate import run_planning_cell
    from pytest_budget.planning._intervals import cell_summary
    from pytest_budget.planning._per_query import per_query_parts, per_query_snapshot
    from pytest_budget.planning._queries import generate_queries
    from pytest_budget.planning._reference_agents import RandomValidToolAgent

    mode, blocks, level = scenario
    queries = generate_queries("dining", 12, seed=42)
    outcomes = [
        anyio.run(
            lambda seed=seed: run_planning_cell(
                queries,
                level,
                mode,
                blocks,
                RandomValidToolAgent(seed=seed),
                seed=42,
                reading=reading,
            )
        )
        for seed in (3, 4)
    ]
    parts = per_query_parts(outcomes, reading)
    assert set(parts) == {"emr", "aned", "cost_gap", "uihr", "itur"}
    # One run: sum / sum is the cell's score.  Two runs (--budget-repeat=2): each query's
    # values are the means, and sum / sum pools both runs.
    one = per_query_parts(outcomes[:1], reading)
    summary = cell_summary(outcomes[:1], seed=42, cell_id="c", level=0.95, resamples=0,
                           reading=reading)  # fmt: skip
    for metric, (num, den) in one.items():
        assert len(num) == len(den) == 12
        expected = summary.scores[metric]
        got = sum(num) / sum(den) if sum(den) else None
        assert got == pytest.approx(expected, abs=1e-12) if expected is not None else got is None
    for metric, (num, den) in parts.items():
        a, b = one[metric], per_query_parts(outcomes[1:], reading)[metric]
        assert num == pytest.approx([(x + y) / 2 for x, y in zip(a[0], b[0], strict=True)])
        assert den == pytest.approx([(x + y) / 2 for x, y in zip(a[1], b[1], strict=True)])
    stored = per_query_snapshot(outcomes[:1], reading)
    assert stored["unit"] == "query" and stored["n"] == 12
    _, decoded = read_per_unit(stored)  # type: ignore[misc]
    assert decoded["emr"][0] == pytest.approx(one["emr"][0])


# ------------------------------------------------------------------ the default level


def test_default_level_by_hand() -> None:
    # 0.0005 per metric; five gated planning metrics: at most 0.25% of a cell's reruns
    # fail by chance (Bonferroni), the level benchmarks/bench_planning_gate.py measured.
    from pytest_budget._stats.gated_metrics import metric_specs

    assert PAIRED_ALPHA == 0.0005
    assert len(metric_specs("planning")) * PAIRED_ALPHA == pytest.approx(0.0025)
    # 11 of 200 queries lost an exact match, none gained: p = 2**-11 = 0.00049 < 0.0005.
    (regression,) = _emr_cell([1.0] * 200, [0.0] * 11 + [1.0] * 189)
    assert regression.rule == "paired" and regression.p_value == 2.0**-11
    # 13 lost and 1 gained of 200 (6 points down): p = (1 + 14) / 2**14 = 0.00092, which
    # failed at the previous level 0.001 and passes now.
    stored = [1.0] * 13 + [0.0] + [1.0] * 186
    new = [0.0] * 13 + [1.0] + [1.0] * 186
    assert paired_p_value((stored, [1.0] * 200), (new, [1.0] * 200), "higher") == 15 / 2**14
    assert _emr_cell(stored, new) == []
    # 10 of 20 lost: the test's smallest p, 2**-10 = 0.00098, cannot reach 0.0005; a cell of
    # more than TINY_CELL = 10 queries passes its own test (the run's pooled test counts it).
    assert _emr_cell([1.0] * 20, [0.0] * 10 + [1.0] * 10) == []
