"""Directional comparison of scores against a stored baseline."""

from __future__ import annotations

import pytest

from pytest_budget.gating import MetricSpec, compare, parse_tolerances

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
