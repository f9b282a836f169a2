"""Directional comparison of scores against a stored baseline."""

from __future__ import annotations

import pytest

from pytest_budget._stats.gating import (
    MetricSpec,
    compare,
    compare_ci,
    compare_overlap,
    parse_tolerances,
)

SPECS = (
    MetricSpec("eta_u", "higher", 0.05),
    MetricSpec("waste", "lower", 0.1),
)


def test_improvement_passes_by_any_amount() -> None:
    assert compare({"eta_u": 0.5, "waste": 0.4}, {"eta_u": 0.99, "waste": 0.0}, SPECS) == []


def test_regression_within_tolerance_passes() -> None:
    assert compare({"eta_u": 0.5, "waste": 0.4}, {"eta_u": 0.45, "waste": 0.5}, SPECS) == []


def test_regression_past_tolerance_names_everything() -> None:
    regressions = compare({"eta_u": 0.8125, "waste": 0.2}, {"eta_u": 0.6, "waste": 0.35}, SPECS)
    messages = [r.message() for r in regressions]
    assert messages == [
        "eta_u regressed: stored 0.8125, new 0.6, tolerance 0.05 (higher is better)",
        "waste regressed: stored 0.2, new 0.35, tolerance 0.1 (lower is better)",
    ]


def test_undefined_baseline_is_not_gated_but_lost_metric_is() -> None:
    assert compare({"eta_u": None}, {"eta_u": 0.1}, SPECS) == []
    lost = compare({"eta_u": 0.3}, {"eta_u": None}, SPECS)
    assert len(lost) == 1 and lost[0].new is None
    assert "new value missing" in lost[0].message()


def test_booleans_are_not_scores() -> None:
    assert compare({"eta_u": True}, {"eta_u": 0.0}, SPECS) == []


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["eta_u 0.1"], "is not 'metric = tolerance'"),
        (["eta = 0.1"], "unknown metric 'eta'; gated metrics: eta_u, waste"),
        (["eta_u = lots"], "must be a number, got 'lots'"),
        (["eta_u = -1"], "must be >= 0, got -1"),
    ],
)
def test_bad_tolerance_lines(lines: list[str], message: str) -> None:
    with pytest.raises(ValueError, match="budget_tolerances") as info:
        parse_tolerances(lines, ["eta_u", "waste"])
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_tolerances_parse() -> None:
    assert parse_tolerances(["eta_u = 0.1", "", " waste=0 "], ["eta_u", "waste"]) == {
        "eta_u": 0.1,
        "waste": 0.0,
    }


# ------------------------------------------------------------------ overlap rule
OVERLAP_SPECS = (MetricSpec("emr", "higher", 0.05), MetricSpec("cost_gap", "lower", 0.05))
STORED = {"emr": 0.60, "cost_gap": 1.0}
STORED_CI = {"emr": [0.50, 0.70], "cost_gap": [0.5, 1.5]}


def test_overlap_passes_while_the_intervals_touch() -> None:
    # 0.45 is past the tolerance and its interval is below the stored point (the ci rule
    # would fail it), but it reaches into the stored interval: noise of either run.
    new = {"emr": 0.45, "cost_gap": 1.9}
    ci = {"emr": [0.38, 0.52], "cost_gap": [1.4, 2.4]}
    assert compare(STORED, new, OVERLAP_SPECS)
    assert [r.metric for r in compare_ci(STORED, new, ci, OVERLAP_SPECS)] == ["emr", "cost_gap"]
    assert compare_overlap(STORED, new, ci, STORED_CI, OVERLAP_SPECS) == []


def test_overlap_fails_when_the_new_interval_clears_the_stored_one() -> None:
    new = {"emr": 0.40, "cost_gap": 2.0}
    ci = {"emr": [0.30, 0.49], "cost_gap": [1.51, 2.5]}
    emr, gap = compare_overlap(STORED, new, ci, STORED_CI, OVERLAP_SPECS, level=0.95)
    assert (emr.metric, emr.rule, emr.interval, emr.stored_interval) == (
        "emr", "overlap", (0.30, 0.49), (0.50, 0.70)
    )  # fmt: skip
    assert gap.metric == "cost_gap" and gap.new == 2.0
    assert emr.message() == (
        "emr regressed: new 0.4 with 95% interval [0.3, 0.49] entirely below the stored 0.6 "
        "with interval [0.5, 0.7] (higher is better)"
    )
    # Better, however far: never fails.
    assert compare_overlap(STORED, {"emr": 0.99, "cost_gap": -9.0},
                           {"emr": [0.95, 1.0], "cost_gap": [-10, -8]}, STORED_CI,
                           OVERLAP_SPECS) == []  # fmt: skip


def test_overlap_falls_back_without_intervals() -> None:
    new = {"emr": 0.40, "cost_gap": 1.0}
    ci = {"emr": [0.30, 0.55], "cost_gap": [0.9, 1.1]}
    # No stored interval: the new interval against the stored point (the ci rule).
    (emr,) = compare_overlap(STORED, new, ci, None, OVERLAP_SPECS)
    assert (emr.metric, emr.rule) == ("emr", "ci")
    # No new interval: the tolerance rule, said so.
    (emr,) = compare_overlap(STORED, new, {}, STORED_CI, OVERLAP_SPECS)
    assert "compared with the tolerance" in emr.message()
    # A metric the new run lost fails; one the baseline leaves undefined is not gated.
    (lost,) = compare_overlap(STORED, {"emr": None, "cost_gap": 1.0}, ci, STORED_CI,
                              OVERLAP_SPECS)  # fmt: skip
    assert lost.metric == "emr" and lost.new is None
    assert compare_overlap({"emr": None}, {"emr": 0.0}, ci, STORED_CI, OVERLAP_SPECS[:1]) == []


def test_planning_gates_by_paired_test_unless_a_gate_is_given() -> None:
    from pytest_budget._run.options import BudgetOptions

    default = BudgetOptions()
    assert [default.gate_for(s) for s in ("planning", "triage", "awareness")] == [
        "paired", "paired", "paired"
    ]  # fmt: skip
    given = BudgetOptions(gate="tolerance", gate_given=True)
    assert given.gate_for("planning") == "tolerance"
    assert BudgetOptions(gate="ci", gate_given=True).gate_for("triage") == "ci"
