"""The run's gate: paired per-unit tests whose false alarms are counted per *run*.

A user sees a red run, not a red cell, so the error rate that matters is the chance that an
unchanged agent makes *any* gated (cell, metric) pair of the run fail.  This module holds
the statistics of the default ``paired`` gate of every suite; it is plain Python and numpy
(nothing here imports pytest).

**Per-unit changes.**  Every gated score is a ratio of sums over the cell's units (planning
queries, triage pool items, awareness probes), or the mean of two such ratios (macro-F1).
The baseline stores each unit's numerator and denominator; the new run has the same units.
:func:`unit_changes` turns the two runs into one number per unit, ``d_i``: unit ``i``'s share
of the score's change, positive when it got worse.  For a ratio ``N / D``::

    d_i = sign * (dnum_i - R * dden_i) / Dbar

with ``dnum_i = new_i - stored_i`` (the same for ``den``), ``R = (N_stored + N_new) /
(D_stored + D_new)`` and ``Dbar = (D_stored + D_new) / 2``.  ``R`` and ``Dbar`` do not change
when the stored and new values of any unit are swapped, so swapping unit ``i`` flips the
sign of ``d_i`` and nothing else; ``sum(d)`` is the change of the score to first order.

**The sign-flip test.**  For an unchanged agent, each unit's stored and new values are
exchangeable, so given ``|d_i|`` the signs are independent fair coins.  The one-sided p-value
of ``S = sum(d)`` is bounded by Hoeffding's inequality for Rademacher sums,
``p <= exp(-S**2 / (2 * sum(d**2)))`` (for ``S > 0``), which holds for any number of units
and needs no simulation; up to :data:`EXACT_UNITS` changed units the p-value is exact
(every sign pattern enumerated).  Both are valid at every level, which the run's small
per-pair levels need (a Monte-Carlo p-value cannot go below one over its draws).

**The family.**  The run's level :data:`RUN_ALPHA` (1% of runs) is split in two halves:

* per cell: each gated (cell, metric) pair of the run is tested at ``RUN_ALPHA / 2 /
  pairs`` (Bonferroni over the pairs known at collection), so a regression confined to one
  cell is caught;
* per suite: each gated metric of each cell kind is tested once on the units of all its
  cells pooled (``S`` summed over cells: the summed change of the cells' scores), at
  ``RUN_ALPHA / 2 / pooled pairs``.  A regression that moves every cell a little is caught
  here long before any single cell shows it (:func:`pooled_regressions`, decided by the
  xdist controller at the end of the run).

By the union bound an unchanged agent fails at most ``RUN_ALPHA`` of runs, whatever the
dependence between cells and metrics.  (Holm's step-down would turn exactly the same runs
red: its first step is this Bonferroni test on the smallest p-value, and a run is red as
soon as one pair fails; it would only list more failing pairs of a red run.)

**Sequential.**  :class:`SequentialRule` decides after each batch of units whether a cell
(or a suite's pooled cells) regressed, showed no regression of the stated size, or must go
on; its alpha is spent over the looks (a power-family spending function, the Bonferroni
bound over looks keeps it valid under optional stopping), and the futility stop spends at
most ``beta`` of power.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "EXACT_UNITS",
    "RUN_ALPHA",
    "Decision",
    "PooledRegression",
    "SequentialRule",
    "cell_alpha",
    "pooled_alpha",
    "pooled_regressions",
    "pooled_tests",
    "signflip_p",
    "unit_changes",
]

#: Share of runs of an unchanged agent that may fail (the gate's false alarms per run).
RUN_ALPHA = 0.01
#: Changed units up to which the sign-flip p-value is exact (2**14 patterns).
EXACT_UNITS = 14

Direction = Literal["higher", "lower"]
Array = npt.NDArray[np.float64]
#: One term of a score: per-unit numerators and denominators (the score is sum / sum).
Term = tuple[Sequence[float], Sequence[float]]


def cell_alpha(pairs: int, run_alpha: float = RUN_ALPHA) -> float:
    """Level of one (cell, metric) test when the run gates ``pairs`` of them."""
    return run_alpha / 2 / max(1, pairs)


def pooled_alpha(pairs: int, run_alpha: float = RUN_ALPHA) -> float:
    """Level of one pooled (cell kind, metric) test when the run pools ``pairs`` of them."""
    return run_alpha / 2 / max(1, pairs)


def unit_changes(stored: Sequence[Term], new: Sequence[Term], direction: Direction) -> Array | None:
    """Per unit, its share of the score's change (positive = worse), for a score that is
    the mean of the ratios ``terms`` (one term: a plain ratio; two: macro-F1).

    ``None`` when a ratio is undefined in both runs (no denominator anywhere).  A term
    undefined in one run only still has a defined pooled ratio, so it is compared.
    """
    if len(stored) != len(new) or not stored:
        raise ValueError("stored and new must have the same terms")
    total: Array | None = None
    for (s_num, s_den), (n_num, n_den) in zip(stored, new, strict=True):
        sn, sd, nn, nd = (np.asarray(v, dtype=np.float64) for v in (s_num, s_den, n_num, n_den))
        if not (sn.shape == sd.shape == nn.shape == nd.shape):
            raise ValueError("stored and new per-unit values differ in length")
        both = float(sd.sum() + nd.sum())
        if both == 0:
            return None
        ratio = float(sn.sum() + nn.sum()) / both
        part = ((nn - sn) - ratio * (nd - sd)) / (both / 2)
        total = part if total is None else total + part
    assert total is not None
    sign = -1.0 if direction == "higher" else 1.0
    out: Array = sign * total / len(stored)
    return out


def _clean(d: Array) -> Array:
    """The changed units (a rounding residue is no change)."""
    scale = float(np.abs(d).max(initial=0.0))
    keep: Array = d[np.abs(d) > 1e-12 * max(1.0, scale)]
    return keep


def signflip_p(d: npt.ArrayLike) -> float:
    """One-sided p-value that the summed change ``sum(d)`` is this bad by chance.

    Exact up to :data:`EXACT_UNITS` changed units, else Hoeffding's bound (module
    docstring); 1.0 when nothing changed or the change is not on the worse side.
    """
    x = _clean(np.asarray(d, dtype=np.float64))
    s = float(x.sum())
    if x.size == 0 or s <= 0:
        return 1.0
    if x.size <= EXACT_UNITS:
        rows = np.arange(2**x.size, dtype=np.int64)[:, None] >> np.arange(x.size)
        signs = 1.0 - 2.0 * (rows & 1)
        sums = signs @ x
        return float(np.count_nonzero(sums >= s - 1e-12 * max(1.0, abs(s)))) / sums.size
    return min(1.0, math.exp(-(s * s) / (2.0 * float(x @ x))))


def hoeffding_p(s: Array, v: Array) -> Array:
    """Vectorised Hoeffding bound: ``exp(-s**2 / (2 v))`` where ``s > 0``, else 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: Array = np.where((s > 0) & (v > 0), np.exp(-(s**2) / (2 * np.maximum(v, 1e-300))), 1.0)
    return out


@dataclass(frozen=True)
class PooledRegression:
    """A gated metric whose pooled change over a cell kind's cells is significant."""

    kind: str
    metric: str
    change: float  # mean change of the cells' scores, positive = worse
    cells: int
    units: int
    p_value: float
    alpha: float
    pairs: int
    direction: Direction
    #: ``sign-flip`` (every cell ran whole) or ``e-process`` (the sequential gate's
    #: anytime-valid pooled test, :mod:`pytest_budget._stats.sequential`).
    test: str = "sign-flip"
    #: The e-process's first crossing of ``1 / alpha`` (unit, cell, look); "" otherwise.
    crossed: str = ""

    @property
    def regressed(self) -> bool:
        return self.p_value < self.alpha

    def as_json(self) -> dict[str, object]:
        """The test in the JSON report (``pooled_gate``)."""
        return {
            "kind": self.kind, "metric": self.metric, "mean_change_worse": self.change,
            "cells": self.cells, "units": self.units, "p_value": self.p_value,
            "alpha": self.alpha, "pairs": self.pairs, "direction": self.direction,
            "regressed": self.regressed, "test": self.test,
            **({"crossed": self.crossed} if self.crossed else {}),
        }  # fmt: skip

    def message(self) -> str:
        # ``change`` is signed worse-positive; the message shows the score's own change.
        moved = -self.change if self.direction == "higher" else self.change
        test = (
            "pooled sign-flip test"
            if self.test == "sign-flip"
            else "pooled anytime-valid e-process over the cells' batches (sequential gate)"
        )
        return (
            f"{self.kind} {self.metric} regressed over the suite: mean change {moved:+.4g} "
            f"({self.direction} is better) on the same {self.units} units of {self.cells} "
            f"cells, {test} p={self.p_value:.2g} < {self.alpha:.2g} (run level {RUN_ALPHA:g}: "
            f"half split over {self.pairs} pooled kind x metric pairs, Bonferroni)"
            + (f"; it crossed 1/alpha at {self.crossed}" if self.crossed else "")
        )


def pooled_tests(
    changes: Mapping[tuple[str, str], Sequence[tuple[Sequence[float], Direction]]],
    *,
    pairs: int | None = None,
    run_alpha: float = RUN_ALPHA,
) -> list[PooledRegression]:
    """Every pooled per-suite test, failed or not: ``changes[(kind, metric)]`` lists each
    cell's per-unit changes (:func:`unit_changes`) and the metric's direction.  ``pairs``
    (default: as many as given) sets the Bonferroni split.  A test failed when
    ``p_value < alpha`` (:attr:`PooledRegression.regressed`)."""
    count = pairs if pairs is not None else len(changes)
    alpha = pooled_alpha(count, run_alpha)
    found: list[PooledRegression] = []
    for (kind, metric), cells in sorted(changes.items()):
        if not cells:
            continue
        d = np.concatenate([np.asarray(c, dtype=np.float64) for c, _ in cells])
        p = signflip_p(d)
        found.append(
            PooledRegression(
                kind, metric, float(d.sum()) / len(cells), len(cells), int(d.size), p, alpha,
                count, cells[0][1],
            )
        )  # fmt: skip
    return found


def pooled_regressions(
    changes: Mapping[tuple[str, str], Sequence[tuple[Sequence[float], Direction]]],
    *,
    pairs: int | None = None,
    run_alpha: float = RUN_ALPHA,
) -> list[PooledRegression]:
    """The pooled per-suite tests that failed (:func:`pooled_tests`)."""
    tests = pooled_tests(changes, pairs=pairs, run_alpha=run_alpha)
    return [test for test in tests if test.regressed]


Decision = Literal["regressed", "no regression", "continue"]


@dataclass(frozen=True)
class SequentialRule:
    """A group-sequential decision on the summed per-unit change ``S`` after each look.

    ``looks`` is the number of looks (the last one at the maximum size); ``alpha`` the
    false-alarm level of the whole sequence; ``effect`` the regression (score change,
    positive = worse) it must detect with power at least ``1 - beta`` at the maximum size
    (the caller sizes the maximum for that).  Spending: look ``k`` of ``K`` may spend
    ``alpha * ((k/K)**rho - ((k-1)/K)**rho)``; by the union bound over looks the run's
    level holds however the looks are stopped.  The futility stop at look ``k`` (the
    regression's upper confidence bound below ``effect``) spends ``beta_spend`` the same
    way, so it costs at most that much power (normal approximation of the mean change).
    """

    looks: int
    alpha: float
    effect: float
    beta_spend: float = 0.05
    rho: float = 2.0
    #: The first look that may stop for futility (earlier looks may only reject).
    futility_from: int = 1

    def spent(self, k: int, total: float) -> float:
        """What look ``k`` (1-based) may spend of ``total``."""
        t, u = k / self.looks, (k - 1) / self.looks
        return float(total * (t**self.rho - u**self.rho))

    def decide(self, k: int, s: float, v: float, cells: int = 1) -> Decision:
        """After look ``k``: ``s`` the summed per-unit change so far, ``v`` the sum of
        their squares, ``cells`` how many cells' changes are summed (the change per cell
        is ``s / cells``)."""
        out = self.decide_many(k, np.array([s]), np.array([v]), cells)
        return "regressed" if out[0] == 1 else "no regression" if out[0] == -1 else "continue"

    def decide_many(self, k: int, s: Array, v: Array, cells: int = 1) -> npt.NDArray[np.int8]:
        """:meth:`decide` for many runs at once: 1 regressed, -1 no regression, 0 go on."""
        if not 1 <= k <= self.looks:
            raise ValueError(f"look {k} outside 1..{self.looks}")
        reject = hoeffding_p(s, v) < self.spent(k, self.alpha)
        out = np.where(reject, 1, 0).astype(np.int8)
        if k == self.looks:
            return np.where(reject, 1, -1).astype(np.int8)
        if k < self.futility_from:
            return out
        gamma = self.spent(k, self.beta_spend)
        z = NormalDist().inv_cdf(1.0 - gamma)
        upper = (s + z * np.sqrt(v)) / cells
        return np.where(~reject & (upper < self.effect), -1, out).astype(np.int8)
