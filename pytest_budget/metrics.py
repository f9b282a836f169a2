"""The gated metrics of every suite: direction and default tolerance.

Scores not listed here (for example V_oracle, which describes the pool, not the agent)
are stored in snapshots for context but never fail a run.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_budget.gating import MetricSpec

__all__ = ["SUITE_METRICS", "gated_metric_names", "metric_specs"]

SUITE_METRICS: dict[str, tuple[MetricSpec, ...]] = {
    "triage": (
        MetricSpec("eta_u", "higher", 0.05, "triage efficiency, advisory regime"),
        MetricSpec("eta_e", "higher", 0.05, "triage efficiency, enforced regime"),
        MetricSpec("regret_u", "lower", 0.05, "normalised regret, advisory regime"),
        MetricSpec("regret_e", "lower", 0.05, "normalised regret, enforced regime"),
        MetricSpec("detection", "higher", 0.05, "share of unsolvable items left out"),
        MetricSpec("waste", "lower", 0.05, "share of allocated tokens on unsolvable items"),
    ),
    "triage-resolve": (
        MetricSpec("compliance", "higher", 0.05, "share of re-solves within the allocation"),
        MetricSpec("acc_budget_aware", "higher", 0.05, "accuracy with the allocation stated"),
    ),
    "awareness": (
        MetricSpec("macro_f1_all", "higher", 0.05, "feasibility macro-F1 over all probes"),
        MetricSpec("fail_f1", "higher", 0.05, "F1 of the impossible class"),
        MetricSpec("interval_score", "higher", 0.05, "mean S_k over feasible probes"),
        MetricSpec("invalid_rate", "lower", 0.05, "share of unreadable answers"),
    ),
    "awareness-online": (
        MetricSpec("success_rate", "higher", 0.05, "runs that succeed within the cap"),
        MetricSpec("macro_f1_all", "higher", 0.05, "feasibility macro-F1 of online estimates"),
        MetricSpec("fail_f1", "higher", 0.05, "F1 of the impossible class, online"),
        MetricSpec("net_value", "higher", 0.05, "early-stop net value under the cost model"),
    ),
    "planning": (
        MetricSpec("emr", "higher", 0.05, "exact match of the tool sequence with an optimum"),
        MetricSpec("aned", "lower", 0.05, "normalised edit distance to the nearest optimum"),
        MetricSpec("cost_gap", "lower", 0.05, "relative extra cost over the optimum (static)"),
        MetricSpec("uihr", "higher", 0.05, "final answers that match the user's request"),
        MetricSpec("itur", "lower", 0.05, "invalid tool calls over all calls"),
    ),
}


def gated_metric_names() -> set[str]:
    return {spec.name for specs in SUITE_METRICS.values() for spec in specs}


def metric_specs(
    suite: str,
    overrides: Mapping[str, float] | None = None,
    default: float | None = None,
) -> tuple[MetricSpec, ...]:
    """The suite's specs with ini tolerances applied (per metric beats the global default)."""
    overrides = overrides or {}
    specs = []
    for spec in SUITE_METRICS.get(suite, ()):
        if spec.name in overrides:
            spec = spec.with_tolerance(overrides[spec.name])
        elif default is not None:
            spec = spec.with_tolerance(default)
        specs.append(spec)
    return tuple(specs)
