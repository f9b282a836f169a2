"""Directional score comparison: what counts as a regression against a stored baseline.

Every gated metric declares a direction (higher or lower is better) and an absolute
tolerance.  A score may move in its better direction by any amount; it may move in its
worse direction by at most the tolerance.  This module is plain Python: the syrupy
extension in :mod:`pytest_budget._snapshot` and user scripts both call :func:`compare`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEFAULT_TOLERANCE",
    "MetricSpec",
    "Regression",
    "compare",
    "parse_tolerances",
]

Direction = Literal["higher", "lower"]

#: Absolute tolerance for a gated metric when neither the suite nor ini sets one.
DEFAULT_TOLERANCE = 0.02


@dataclass(frozen=True)
class MetricSpec:
    """How one metric is gated: its direction and its absolute tolerance."""

    name: str
    direction: Direction
    tolerance: float = DEFAULT_TOLERANCE
    description: str = ""

    def fails(self, stored: float, new: float) -> bool:
        """True when ``new`` is worse than ``stored`` by more than the tolerance."""
        if self.direction == "higher":
            return new < stored - self.tolerance - 1e-12
        return new > stored + self.tolerance + 1e-12

    def with_tolerance(self, tolerance: float) -> MetricSpec:
        return MetricSpec(self.name, self.direction, tolerance, self.description)


@dataclass(frozen=True)
class Regression:
    """One metric that got worse past its tolerance."""

    metric: str
    stored: float | None
    new: float | None
    tolerance: float
    direction: Direction

    def message(self) -> str:
        better = "higher" if self.direction == "higher" else "lower"
        if self.new is None:
            return (
                f"{self.metric}: stored {_fmt(self.stored)}, new value missing "
                f"({better} is better, tolerance {self.tolerance:g})"
            )
        return (
            f"{self.metric} regressed: stored {_fmt(self.stored)}, new {_fmt(self.new)}, "
            f"tolerance {self.tolerance:g} ({better} is better)"
        )


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def compare(
    stored: Mapping[str, object],
    new: Mapping[str, object],
    specs: Iterable[MetricSpec],
) -> list[Regression]:
    """Regressions of ``new`` against ``stored`` for every gated metric in ``specs``.

    A metric the baseline does not define (``None``, e.g. regret when V_oracle < 1) is
    not gated; a metric the baseline defines but the new run lost is a regression.
    """
    regressions: list[Regression] = []
    for spec in specs:
        before = _number(stored.get(spec.name))
        if before is None:
            continue
        after = _number(new.get(spec.name))
        if after is None or spec.fails(before, after):
            regressions.append(Regression(spec.name, before, after, spec.tolerance, spec.direction))
    return regressions


def parse_tolerances(lines: Iterable[str], known: Iterable[str]) -> dict[str, float]:
    """Parse ini lines like ``eta_u = 0.05`` into a mapping, with one-line errors.

    ``known`` is the set of gated metric names; a typo is an error, not a silent no-op.
    """
    known_names = sorted(set(known))
    result: dict[str, float] = {}
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(
                f"budget_tolerances: {line!r} is not 'metric = tolerance' (e.g. 'eta_u = 0.05')"
            )
        if name not in known_names:
            raise ValueError(
                f"budget_tolerances: unknown metric {name!r}; "
                f"gated metrics: {', '.join(known_names)}"
            )
        try:
            tolerance = float(value.strip())
        except ValueError:
            raise ValueError(
                f"budget_tolerances: tolerance for {name!r} must be a number, got {value.strip()!r}"
            ) from None
        if not math.isfinite(tolerance) or tolerance < 0:
            raise ValueError(
                f"budget_tolerances: tolerance for {name!r} must be >= 0, got {tolerance:g}"
            )
        result[name] = tolerance
    return result
