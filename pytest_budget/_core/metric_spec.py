"""How one gated metric is compared: its direction and absolute tolerance.

Apart from :mod:`pytest_budget._stats.gating` (which re-exports it) because every suite's
declaration builds its metrics at import, and the declarations load whenever pytest
registers the options: this module keeps that import light.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_TOLERANCE", "Direction", "MetricSpec"]

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

    def ci_fails(self, stored: float, new: float, interval: tuple[float, float]) -> bool:
        """True when the interval of ``new`` lies entirely on the worse side of ``stored``.

        ``new`` itself must be worse too: a percentile interval need not contain its own
        point estimate, and an unchanged score must never fail.
        """
        lo, hi = interval
        if self.direction == "higher":
            return hi < stored - 1e-12 and new < stored - 1e-12
        return lo > stored + 1e-12 and new > stored + 1e-12

    def overlap_fails(
        self, stored: tuple[float, float], new: float, interval: tuple[float, float]
    ) -> bool:
        """True when the interval of ``new`` lies entirely on the worse side of the stored
        interval ``stored`` (and ``new`` is worse than the stored interval's far end)."""
        lo, hi = interval
        if self.direction == "higher":
            return hi < stored[0] - 1e-12 and new < stored[0] - 1e-12
        return lo > stored[1] + 1e-12 and new > stored[1] + 1e-12

    def with_tolerance(self, tolerance: float) -> MetricSpec:
        return MetricSpec(self.name, self.direction, tolerance, self.description)
