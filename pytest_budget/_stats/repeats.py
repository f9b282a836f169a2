"""Repeats and intervals of one cell: mean, spread, pass^k consistency and the ``ci`` fields.

``--budget-repeat=K`` runs a cell's agent K times on the same data (same pool, rollouts or
queries); reference agents get a different seed per repeat (:func:`repeat_seed`; repeat 0
keeps the run's seed, so K = 1 is the ordinary run).  :func:`summarize_cell` turns the K
runs into what the report and the snapshot store:

* ``scores``: per score the mean over the repeats that define it (the run's own scores
  when K = 1);
* ``ci`` and ``ci_meta``: bootstrap intervals of those scores (see
  :mod:`pytest_budget._stats.bootstrap`); with K > 1 every repeat is recomputed on the same
  resamples and each resample averages K repeats drawn with replacement, so the interval
  of the repeat-averaged score covers the agent's run-to-run variation too;
* ``repeat`` (K > 1 only): per score the values, mean, sample standard deviation, min and
  max, and the pass^k consistency of :func:`pass_hat_k`.

Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_budget._stats.bootstrap import (
    CIMeta,
    IntervalMap,
    ResampleMatrix,
    mean_over_repeats,
    percentile_intervals,
)

__all__ = [
    "CellSummary",
    "Consistency",
    "mean_scores",
    "pass_hat_k",
    "repeat_seed",
    "score_spread",
    "summarize_cell",
]


def repeat_seed(seed: int, index: int) -> int:
    """The agent seed of repeat ``index``: the run's seed for repeat 0, else a 31-bit
    seed from sha256 of the run's seed and the index (never ``hash()``)."""
    if index == 0:
        return seed
    text = f"repeat:{int(seed)}:{int(index)}"
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % (2**31 - 1)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def mean_scores(runs: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """Per score, the mean over the runs that define it (``None`` when none does).

    One run is returned unchanged (integers stay integers).  Keys keep the first run's
    order; a key only later runs have is appended.
    """
    if len(runs) == 1:
        return dict(runs[0])
    names: list[str] = []
    for run in runs:
        names.extend(name for name in run if name not in names)
    out: dict[str, object] = {}
    for name in names:
        given = [run.get(name) for run in runs if _number(run.get(name)) is not None]
        out[name] = _mean(given)
    return out


def _mean(values: Sequence[object]) -> object:
    """Mean of defined numbers; equal values come back unchanged (a count stays an int
    and a deterministic agent's repeats average to exactly its score)."""
    if not values:
        return None
    if all(v == values[0] for v in values):
        return values[0]
    numbers = [float(v) for v in values]  # type: ignore[arg-type]
    return math.fsum(numbers) / len(numbers)


def score_spread(runs: Sequence[Mapping[str, object]]) -> dict[str, dict[str, Any]]:
    """Per score: ``values`` (one per repeat, ``None`` where undefined), and over the
    defined ones ``mean``, ``std`` (sample standard deviation, ddof = 1; ``None`` with
    fewer than two), ``min`` and ``max``."""
    names: list[str] = []
    for run in runs:
        names.extend(name for name in run if name not in names)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        values = [_number(run.get(name)) for run in runs]
        defined = [v for v in values if v is not None]
        entry: dict[str, Any] = {"values": values}
        if defined:
            mean = float(_mean(defined))  # type: ignore[arg-type]
            entry["mean"] = mean
            entry["std"] = (
                math.sqrt(math.fsum((v - mean) ** 2 for v in defined) / (len(defined) - 1))
                if len(defined) > 1
                else None
            )
            entry["min"] = min(defined)
            entry["max"] = max(defined)
        else:
            entry.update(mean=None, std=None, min=None, max=None)
        out[name] = entry
    return out


def pass_hat_k(successes: Sequence[Sequence[bool]]) -> dict[str, float | None]:
    """tau-bench's pass^k for k = 1..K from ``successes`` (tasks x K repeats).

    pass^k is the chance that k independent trials of a task all succeed, averaged over
    tasks; with c successes in K trials its unbiased estimate is C(c, k) / C(K, k).  So
    pass^1 is the mean success rate and pass^K the share of tasks that succeeded in every
    repeat.  Keys are ``"1"`` .. ``"K"``; ``None`` when there is no task.
    """
    table = np.asarray(successes, dtype=np.bool_)
    if table.ndim != 2:
        raise ValueError("successes must be a tasks x repeats table")
    tasks, k_total = table.shape
    out: dict[str, float | None] = {}
    wins = table.sum(axis=1).tolist()
    for k in range(1, k_total + 1):
        if tasks == 0:
            out[str(k)] = None
            continue
        denominator = math.comb(k_total, k)
        out[str(k)] = round(math.fsum(math.comb(c, k) / denominator for c in wins) / tasks, 9)
    return out


@dataclass(frozen=True)
class Consistency:
    """What one trial's success means in a suite, and the success table (tasks x K)."""

    unit: str
    success: str
    table: Sequence[Sequence[bool]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "success": self.success,
            "n": len(self.table),
            "pass_hat_k": pass_hat_k(self.table),
        }


@dataclass(frozen=True)
class CellSummary:
    """The ``scores``, ``ci``, ``ci_meta`` and ``repeat`` fields of one cell."""

    scores: dict[str, object]
    ci: IntervalMap | None
    ci_meta: dict[str, Any] | None
    repeat: dict[str, Any] | None

    def report_fields(self) -> dict[str, Any]:
        """``scores`` plus the noise fields that apply (for the JSON report's cell)."""
        out: dict[str, Any] = {"scores": self.scores}
        if self.ci is not None:
            out["ci"] = self.ci
            out["ci_meta"] = self.ci_meta
        if self.repeat is not None:
            out["repeat"] = self.repeat
        return out

    def snapshot_fields(self) -> dict[str, Any]:
        """``scores`` and, when computed, ``ci``: the baseline value and its interval."""
        out: dict[str, Any] = {"scores": self.scores}
        if self.ci is not None:
            out["ci"] = self.ci
        return out


def summarize_cell(
    runs: Sequence[Mapping[str, object]],
    *,
    matrices: Sequence[ResampleMatrix] | None,
    meta: CIMeta | None,
    consistency: Consistency | None = None,
    seeds: Sequence[int] = (),
    outcomes: Sequence[str] = (),
    repeat_draws: int | None = None,
) -> CellSummary:
    """Combine K runs of one cell (K >= 1) into its report and snapshot fields.

    ``matrices`` holds each run's recomputed scores on the same resamples (``None`` when
    intervals are off); ``meta`` describes them.  ``repeat_draws`` seeds the draw of K
    repeats per resample (see :func:`~pytest_budget._stats.bootstrap.mean_over_repeats`).
    """
    if not runs:
        raise ValueError("a cell needs at least one run")
    scores = mean_scores(runs)
    ci: IntervalMap | None = None
    ci_meta: dict[str, Any] | None = None
    if matrices is not None and meta is not None:
        combined = mean_over_repeats(matrices, seed=repeat_draws)
        ci = percentile_intervals(scores, combined, meta.level)
        ci_meta = meta.as_dict()
    repeat: dict[str, Any] | None = None
    if len(runs) > 1:
        repeat = {"k": len(runs), "seeds": list(seeds), "outcomes": list(outcomes)}
        repeat["scores"] = score_spread(runs)
        if consistency is not None:
            repeat["consistency"] = consistency.as_dict()
    return CellSummary(scores=scores, ci=ci, ci_meta=ci_meta, repeat=repeat)
