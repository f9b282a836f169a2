"""The gated metrics of every cell kind: direction and default tolerance.

Each suite declares its own (:attr:`pytest_budget._core.registry.CellKind.metrics`).
Scores not listed there (for example V_oracle, which describes the pool, not the agent)
are stored in snapshots for context but never fail a run.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_budget._core.registry import cell_kind, cell_kinds
from pytest_budget._stats.gating import MetricSpec

__all__ = ["gated_metric_names", "metric_specs", "suite_metrics"]


def suite_metrics() -> dict[str, tuple[MetricSpec, ...]]:
    """The gated metrics per cell kind (the ``suite`` field of a record)."""
    return {name: kind.metrics for name, kind in cell_kinds().items() if kind.metrics}


def gated_metric_names() -> set[str]:
    return {spec.name for specs in suite_metrics().values() for spec in specs}


def metric_specs(
    suite: str,
    overrides: Mapping[str, float] | None = None,
    default: float | None = None,
) -> tuple[MetricSpec, ...]:
    """The kind's specs with ini tolerances applied (per metric beats the global default)."""
    overrides = overrides or {}
    kind = cell_kind(suite)
    specs = []
    for spec in kind.metrics if kind is not None else ():
        if spec.name in overrides:
            spec = spec.with_tolerance(overrides[spec.name])
        elif default is not None:
            spec = spec.with_tolerance(default)
        specs.append(spec)
    return tuple(specs)
