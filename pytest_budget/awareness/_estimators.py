"""Reference estimators for the awareness suite (offline, deterministic per seed).

Each answers a :class:`~pytest_budget.awareness._replay.probes.Probe` with the text an LLM would
write (``<answer>[lo, hi]</answer>``, the Warehouse three-interval form, or
``<answer>impossible</answer>``), so their answers go through the same parser as a model's.

``oracle`` and ``linear-knows-T`` are *baselines with hindsight*, and their names say so:
the paper's upper bound knows R_k and the label, and the paper's linear-extrapolation
baseline R_lin = (C_k / k) * T - C_k uses the rollout's realised length T.  The harness
hands them that knowledge through an explicit side channel, :meth:`with_ground_truth`,
called only for estimators that define it; probes themselves never carry it.  The others
(``linear-visible``, ``always-feasible``, ``always-impossible``, ``random``) see only the
probe.

Answers are written so BAGEN's public parser reads them back: one dimension as integers
(``lo`` rounded down, ``hi`` up, so a covering interval still covers), Warehouse as plain
decimals (never an exponent).

Plain Python: no pytest.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar

from pytest_budget.awareness._replay.probes import Probe, ProbeTruth

__all__ = [
    "AlwaysFeasibleEstimator",
    "AlwaysImpossibleEstimator",
    "LinearEstimator",
    "LinearVisibleEstimator",
    "OracleEstimator",
    "RandomEstimator",
    "TruthLookup",
    "format_answer",
]

#: Ground truth per (rollout id, k), handed to hindsight baselines only.
TruthLookup = Mapping[tuple[str, int], ProbeTruth]

IMPOSSIBLE = "<answer>impossible</answer>"


def _fmt(value: float) -> str:
    # Shortest text that reads back as the same float, in plain decimals (BAGEN's Warehouse
    # parser reads "-?digits(.digits)?", not "1e-05"), so the oracle's [R, R] stays exact.
    if value == int(value):
        return str(int(value))
    text = format(Decimal(repr(float(value))), "f")
    return text


def format_answer(intervals: Mapping[str, tuple[float, float]]) -> str:
    """An answer tag for one dimension (``[lo, hi]``) or several (``dim:[lo, hi], ...``).

    One dimension is written in whole numbers, ``lo`` rounded down and ``hi`` up: BAGEN's
    parser reads digit runs, so ``[12.5, 30]`` would read as [5, 12].
    """
    if len(intervals) == 1:
        (lo, hi) = next(iter(intervals.values()))
        return f"<answer>[{math.floor(lo)}, {math.ceil(hi)}]</answer>"
    parts = [f"{dim}:[{_fmt(lo)}, {_fmt(hi)}]" for dim, (lo, hi) in intervals.items()]
    return f"<answer>{', '.join(parts)}</answer>"


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from sha256 of ``parts`` (same in every process)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class _Hindsight:
    """Shared plumbing of the baselines that read ground truth through the side channel."""

    name = "hindsight"
    run_inline = True  # microseconds per probe: no worker thread

    def __init__(self, truths: TruthLookup | None = None) -> None:
        self._truths: TruthLookup = truths or {}

    def with_ground_truth(self, truths: TruthLookup) -> _Hindsight:
        return type(self)(truths)

    def _truth(self, probe: Probe) -> ProbeTruth:
        try:
            return self._truths[(probe.rollout_id, probe.k)]
        except KeyError:
            raise LookupError(
                f"{self.name} needs ground truth for {probe.rollout_id!r} turn {probe.k}; "
                "it is a hindsight baseline the suite binds with with_ground_truth()"
            ) from None


class OracleEstimator(_Hindsight):
    """The upper bound: the exact remaining usage when feasible, else ``impossible``."""

    name = "oracle"

    def estimate(self, probe: Probe) -> str:
        truth = self._truth(probe)
        if not truth.feasible:
            return IMPOSSIBLE
        return format_answer({d: (truth.remaining[d], truth.remaining[d]) for d in probe.budget})


class LinearEstimator(_Hindsight):
    """Linear extrapolation with hindsight (BAGEN's R_lin): R_lin = (C_k / k) * T - C_k per
    dimension, +/- ``spread``, where T is the rollout's *true* number of turns, which no
    estimator can see; hence the name ``linear-knows-T``.

    ``impossible`` when the extrapolated total C_k + R_lin exceeds a cap (the baseline cannot
    see that a rollout will fail for other reasons).
    """

    name = "linear-knows-T"

    def __init__(self, truths: TruthLookup | None = None, spread: float = 0.25) -> None:
        super().__init__(truths)
        self.spread = spread

    def with_ground_truth(self, truths: TruthLookup) -> LinearEstimator:
        return LinearEstimator(truths, self.spread)

    def estimate(self, probe: Probe) -> str:
        T = self._truth(probe).T  # the paper's symbol for the realised length
        intervals = {}
        for dim, cap in probe.budget.items():
            used = probe.used[dim]
            r_lin = max(0.0, used / probe.k * T - used)
            if used + r_lin > cap:
                return IMPOSSIBLE
            intervals[dim] = (r_lin * (1 - self.spread), r_lin * (1 + self.spread))
        return format_answer(intervals)


@dataclass
class LinearVisibleEstimator:
    """Linear extrapolation from what the estimator sees only: T is guessed as 2k (the
    probe is taken to be halfway), so R_hat = (C_k / k) * 2k - C_k = C_k per dimension,
    +/- ``spread``; ``impossible`` when C_k + R_hat exceeds a cap.  Reads no label, no R_k,
    no future turn: the honest counterpart of ``linear-knows-T``."""

    spread: float = 0.25
    name: str = "linear-visible"
    run_inline: ClassVar[bool] = True

    def estimate(self, probe: Probe) -> str:
        intervals = {}
        for dim, cap in probe.budget.items():
            used = probe.used[dim]
            guess = max(0.0, used / probe.k * (2 * probe.k) - used)
            if used + guess > cap:
                return IMPOSSIBLE
            intervals[dim] = (guess * (1 - self.spread), guess * (1 + self.spread))
        return format_answer(intervals)


@dataclass
class AlwaysFeasibleEstimator:
    """Always says feasible, with the widest sensible interval: [0, cap - used]."""

    name: str = "always-feasible"
    run_inline: ClassVar[bool] = True

    def estimate(self, probe: Probe) -> str:
        return format_answer(
            {d: (0.0, max(0.0, cap - probe.used[d])) for d, cap in probe.budget.items()}
        )


@dataclass
class AlwaysImpossibleEstimator:
    """Always says ``impossible`` (the floor for Fail-F1 and the false-abort rate)."""

    name: str = "always-impossible"
    run_inline: ClassVar[bool] = True

    def estimate(self, probe: Probe) -> str:
        return IMPOSSIBLE


@dataclass
class RandomEstimator:
    """Coin flip between ``impossible`` and a random interval inside [0, cap - used].

    Draws come from sha256 of (seed, rollout id, k), so answers do not depend on order or
    concurrency.
    """

    seed: int = 42
    p_impossible: float = 0.5
    name: str = field(default="random")
    run_inline: ClassVar[bool] = True

    def estimate(self, probe: Probe) -> str:
        key = (self.seed, probe.rollout_id, probe.k)
        if _unit(*key, "coin") < self.p_impossible:
            return IMPOSSIBLE
        intervals = {}
        for dim, cap in probe.budget.items():
            room = max(0.0, cap - probe.used[dim])
            a, b = sorted((_unit(*key, dim, "a") * room, _unit(*key, dim, "b") * room))
            intervals[dim] = (a, b)
        return format_answer(intervals)


def reference_estimator_names() -> Sequence[str]:
    return (
        "oracle", "linear-knows-T", "linear-visible", "always-feasible", "always-impossible",
        "random",
    )  # fmt: skip
