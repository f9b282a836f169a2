"""The trivial-estimator floor of a probe set: how far one visible number gets you.

For every quantity an estimator sees as a plain number (each budget cap, the turn index
k, the budget used so far C_k per dimension, the remaining cap = cap - C_k per dimension,
and every numeric task field such as Warehouse's target cash), the floor tries every
threshold rule "impossible iff x > t" and "impossible iff x <= t" and keeps the best
all-turn macro-F1 (the score's own definition,
:func:`~pytest_budget.awareness._scoring.metrics.macro_f1`).
A floor near 1 means the probe set can be solved without reading the dialogue: the labels
leak through one number, and an estimator's macro-F1 there says little.  A floor at or
below 0.75 (:data:`FLOOR_WARN`) is what the built-in probe sets keep to; the paper's own
Warehouse scheme does not (``warehouse-paper``).  Plain numpy: no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_budget.awareness._replay.probes import Probe, ProbeTruth

__all__ = [
    "FLOOR_WARN",
    "Floor",
    "best_threshold_f1",
    "floor_line",
    "probe_features",
    "trivial_floor",
]

#: A probe set whose floor is above this is flagged in the table and warned about.
FLOOR_WARN = 0.75


@dataclass(frozen=True)
class Floor:
    """The best one-feature threshold rule on a probe set, and the class balance."""

    macro_f1: float
    feature: str
    threshold: float | None
    impossible_if: str  # "above" or "at_or_below" the threshold
    feasible_probes: int
    impossible_probes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "macro_f1": round(self.macro_f1, 6),
            "feature": self.feature,
            "threshold": self.threshold,
            "impossible_if": self.impossible_if,
            "feasible_probes": self.feasible_probes,
            "impossible_probes": self.impossible_probes,
            "warn": self.macro_f1 > FLOOR_WARN,
        }


def probe_features(probe: Probe) -> dict[str, float]:
    """The plain numbers an estimator sees on ``probe`` (see the module docstring)."""
    out: dict[str, float] = {"turn": float(probe.k)}
    for dim, cap in probe.budget.items():
        used = float(probe.used.get(dim, 0.0))
        out[f"cap:{dim}"] = float(cap)
        out[f"used:{dim}"] = used
        out[f"remaining_cap:{dim}"] = float(cap) - used
    for key, value in (probe.task or {}).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(float(value)):
                out[f"task:{key}"] = float(value)
    return out


def _f1(tp: npt.NDArray[np.float64], n_pred: npt.NDArray[np.float64], n_true: float) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        recall = tp / n_true if n_true else np.zeros_like(tp)
        both = precision + recall
        return np.where(both > 0, 2 * precision * recall / np.where(both > 0, both, 1.0), 0.0)


def best_threshold_f1(
    x: npt.ArrayLike, impossible: npt.ArrayLike
) -> tuple[float, float | None, str]:
    """Best macro-F1 of "impossible iff x > t" or "x <= t" over every threshold t.

    Returns (macro-F1, t, direction); t is ``None`` for a constant rule (every probe one
    class), which the sweep includes.  O(n log n).
    """
    values = np.asarray(x, dtype=np.float64)
    labels = np.asarray(impossible, dtype=np.bool_)
    n = values.size
    if n == 0:
        return 0.0, None, "above"
    order = np.argsort(values, kind="stable")
    v, y = values[order], labels[order]
    n_imp = float(y.sum())
    n_feas = float(n - n_imp)
    # Cut after position i (i = -1 .. n-1) at a change of value: probes 0..i are "low".
    change = np.flatnonzero(np.diff(v) > 0)
    cuts = np.concatenate(([-1], change, [n - 1]))
    imp_low = np.concatenate(([0.0], np.cumsum(y)))[cuts + 1]
    n_low = (cuts + 1).astype(np.float64)
    feas_low = n_low - imp_low
    best: tuple[float, float | None, str] = (-1.0, None, "above")
    for direction in ("above", "at_or_below"):
        if direction == "above":  # impossible iff x > t: the high side is impossible
            tp_imp, pred_imp = n_imp - imp_low, n - n_low
            tp_feas, pred_feas = feas_low, n_low
        else:
            tp_imp, pred_imp = imp_low, n_low
            tp_feas, pred_feas = n_feas - feas_low, n - n_low
        macro = (_f1(tp_imp, pred_imp, n_imp) + _f1(tp_feas, pred_feas, n_feas)) / 2.0
        i = int(np.argmax(macro))
        if macro[i] > best[0] + 1e-12:
            cut = int(cuts[i])
            t = None if cut in (-1, n - 1) else float(v[cut])
            best = (float(macro[i]), t, direction)
    return best


def trivial_floor(probes: Sequence[tuple[Probe, ProbeTruth]]) -> Floor:
    """The floor of a probe set (module docstring); ``feature`` names the best number."""
    impossible = np.array([not truth.feasible for _, truth in probes], dtype=np.bool_)
    n_imp = int(impossible.sum())
    features: dict[str, list[float]] = {}
    rows = [probe_features(probe) for probe, _ in probes]
    names = sorted({name for row in rows for name in row})
    for name in names:
        features[name] = [row.get(name, math.nan) for row in rows]
    best = Floor(0.0, "none", None, "above", len(probes) - n_imp, n_imp)
    for name in names:
        column = np.array(features[name], dtype=np.float64)
        column = np.where(np.isnan(column), -np.inf, column)
        score, t, direction = best_threshold_f1(column, impossible)
        if score > best.macro_f1 + 1e-12:
            best = Floor(score, name, t, direction, len(probes) - n_imp, n_imp)
    if best.feature == "none" and probes:
        score, t, direction = best_threshold_f1(np.zeros(len(probes)), impossible)
        best = Floor(score, "constant", t, direction, len(probes) - n_imp, n_imp)
    return best


def floor_line(env: str, floor: Mapping[str, Any]) -> str:
    """The footer line of a probe set: class balance and the floor, flagged above 0.75."""
    total = int(floor.get("feasible_probes", 0)) + int(floor.get("impossible_probes", 0))
    share = floor.get("impossible_probes", 0) / total if total else 0.0
    line = (
        f"{env}: probes {floor.get('feasible_probes')} feasible / "
        f"{floor.get('impossible_probes')} impossible ({share:.0%} impossible); trivial floor "
        f"macro-F1 {float(floor.get('macro_f1', 0.0)):.3f} ({floor.get('feature')})"
    )
    if float(floor.get("macro_f1", 0.0)) > FLOOR_WARN:
        line += f" WARNING: above {FLOOR_WARN}, one visible number separates the classes"
    return line
