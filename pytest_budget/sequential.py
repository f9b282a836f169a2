"""The sequential gate: a cell runs its units in batches and stops when the decision is made.

Issue 30, must-have 4.  A cell of a metered agent (every call costs money) runs its units
(planning queries; awareness probes) in :data:`LOOKS` batches.  After each batch the cell
compares the units it ran with the *same* units of its baseline and decides, per gated
metric, ``regressed``, ``no regression`` (of the stated size) or go on; it stops at the
first ``regressed`` metric, or when every metric says ``no regression``, or at its maximum
size.  Plain Python and numpy: nothing here imports pytest.

**Per cell** (:func:`cell_look`): the group-sequential rule of
:class:`pytest_budget.run_gate.SequentialRule` at the cell's Bonferroni level (half the
run's 1% split over its gated cell x metric pairs): look ``k`` of ``K`` may spend
``alpha * ((k/K)**2 - ((k-1)/K)**2)`` on the sign-flip test (Hoeffding's bound) of the
units run so far.  Given the unordered (stored, new) pairs of those units, each look's test
has its spent level whatever happened at the other looks, so by the union bound over looks
the cell fails an unchanged agent with probability at most ``alpha``, however it stopped.
A regression must also be past the metric's tolerance (as the fixed gate asks).  The
futility stop, "no regression of the stated size", comes when the change's upper
confidence bound is below the metric's :data:`STATED_EFFECTS` (it spends at most 5% of
power and none of the false alarms).

**Pooled per suite** (:func:`pooled_sequential_tests`): a pooled sign-flip test over cells
that each stopped on their own data is no longer valid, so the sequential run pools by an
anytime-valid test instead.  The units of every cell of a kind are put in one canonical
order (cells by test id, then batch by batch); unit ``i`` of batch ``b`` carries its change
``d_i`` computed on the cell's batches ``1..b`` (:func:`batch_changes`), whose magnitude
does not change when any unit's stored and new values are swapped.  Under the null the sign
of each ``d_i`` is a fair coin given the magnitudes and everything earlier in the order,
and whether a batch is run at all depends only on earlier batches of its cell.  So for
every ``lam >= 0``, ``exp(lam * S_t - lam**2 * V_t / 2)`` (``S_t``, ``V_t``: the sum and
the sum of squares of the changes so far) is a non-negative supermartingale (``E[exp(lam
s a)] = cosh(lam a) <= exp(lam**2 a**2 / 2)``), and so is its mixture over a half-normal
``lam`` of precision ``rho`` (:func:`mixture_log_e`, closed form).  By Ville's inequality
it ever reaches ``1 / alpha`` with probability at most ``alpha``, whatever each cell's
stopping rule did; the test's p-value is ``1 / max e``.  ``rho`` is set from the cells'
first batches (which always run), a quantity fixed under the null.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_budget.metric_spec import MetricSpec
from pytest_budget.run_gate import RUN_ALPHA, PooledRegression, SequentialRule, unit_changes

__all__ = [
    "LOOKS",
    "MODES",
    "STATED_EFFECTS",
    "CellLook",
    "MetricLook",
    "batch_bounds",
    "batch_changes",
    "cell_look",
    "cell_rule",
    "forecast_lines",
    "mixture_log_e",
    "pooled_sequential_tests",
    "sequential_applies",
]

#: Looks (batches) of a sequential cell; the last one at the cell's full size.
LOOKS = 4
#: ``--budget-sequential`` values.
MODES = ("auto", "on", "off")
#: "No regression of the stated size": per metric, the change of a cell's score (worse
#: side, in the score's own units) whose absence its futility stop establishes: the effect
#: each suite's default run catches in 90% of runs (docs/how-to/gate-ci.md).  A cell stops
#: for futility when every metric of its suite listed here says "no regression"; the other
#: gated metrics are tested at every look (and pooled) but do not hold a cell open.
STATED_EFFECTS: dict[str, float] = {
    "emr": 0.20,
    "eta_u": 0.50,
    "macro_f1_all": 0.10,
    "interval_score": 0.15,
}
#: The futility effect of a metric of a suite with none of the above (your own cells).
DEFAULT_EFFECT = 0.10
#: The first look that may stop a cell for futility: a batch of a quarter of a small cell
#: (3 of 9 planning queries) often has no changed unit under a regression too, and an early
#: futility stop takes its units out of the suite's pooled test.
FUTILITY_FROM = 2
#: The pooled mixture's precision, as a share of the first batches' summed squares.
RHO_SHARE = 0.1


Decision = Literal["regressed", "no regression", "continue"]
Array = npt.NDArray[np.float64]
PerUnit = Mapping[str, tuple[Sequence[float], Sequence[float]]]


def sequential_applies(mode: str, metered: bool) -> bool:
    """Whether a cell runs sequentially: ``on``, or ``auto`` for an agent whose calls cost
    money (a metered model agent); ``off`` never."""
    if mode not in MODES:
        raise ValueError(f"--budget-sequential: unknown mode {mode!r}; choose from auto, on, off")
    return mode == "on" or (mode == "auto" and metered)


def forecast_lines(
    rows: Iterable[tuple[str, str, int, int]],
    mode: str,
    shares: Mapping[tuple[str, str], float],
    runs_whole: Mapping[tuple[str, str], str],
) -> list[str]:
    """The forecast's lines for the sequential gate: per forecast row ``(suite, role,
    expected calls, worst-case calls)`` of a model agent, the most it may call (every
    batch) and what an unchanged agent is expected to call (``shares``, each suite's
    ``Suite.sequential_shares``); a role in ``runs_whole`` gets its reason."""
    rows = list(rows)
    if not rows:
        return []
    if mode == "off":
        return ["sequential gate: off (--budget-sequential=off): every cell runs every unit"]
    out: list[str] = []
    most = expected = 0.0
    for suite, role, calls, worst in rows:
        share = shares.get((suite, role))
        most += worst
        if share is None:
            expected += calls
            reason = runs_whole.get((suite, role))
            if reason:
                out.append(f"sequential gate: {suite} {role}: {reason}: runs whole")
            continue
        expected += calls * share
        out.append(
            f"sequential gate ({mode}): {suite} {role}: at most {worst:,} calls (every batch "
            f"of {LOOKS}), expected ~{round(calls * share):,} for an unchanged agent "
            f"({share:.0%} of its units, measured by benchmarks/bench_gate_runs.py)"
        )
    out.append(
        f"sequential gate: at most {round(most):,} calls, expected ~{round(expected):,} for an "
        "unchanged agent (cells without a stored baseline, and --snapshot-update, run whole)"
    )
    return out


def cell_rule(looks: int, alpha: float, metric: str) -> SequentialRule:
    """A cell's group-sequential rule for ``metric`` (its stated effect, futility from
    :data:`FUTILITY_FROM`)."""
    effect = STATED_EFFECTS.get(metric, DEFAULT_EFFECT)
    return SequentialRule(looks, alpha, effect, futility_from=FUTILITY_FROM)


def batch_bounds(units: int, looks: int = LOOKS) -> list[int]:
    """The units run after each look: ``ceil(units * k / looks)``, without repeats (a cell
    of fewer units than looks has fewer looks)."""
    if units <= 0:
        return []
    bounds = [math.ceil(units * k / looks) for k in range(1, looks + 1)]
    return sorted(set(bounds))


def _names(spec: MetricSpec, parts: PerUnit) -> list[str]:
    return [n for n in (spec.name, f"{spec.name}.2") if n in parts]


def _terms(
    parts: PerUnit, names: Sequence[str], lo: int, hi: int
) -> list[tuple[Sequence[float], Sequence[float]]]:
    return [(parts[n][0][lo:hi], parts[n][1][lo:hi]) for n in names]


def _score(terms: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float | None:
    """The score of these units: the mean of the terms' ratios (``None``: undefined)."""
    ratios = []
    for num, den in terms:
        total = float(np.sum(den))
        if total == 0:
            return None
        ratios.append(float(np.sum(num)) / total)
    return sum(ratios) / len(ratios)


@dataclass(frozen=True)
class MetricLook:
    """One gated metric after one look."""

    metric: str
    decision: Decision
    stored: float | None
    new: float | None
    p_value: float
    level: float  # what this look may spend of the cell's alpha
    direction: str
    tolerance: float
    effect: float


@dataclass(frozen=True)
class CellLook:
    """A sequential cell after look ``look`` of ``looks`` (``units`` of ``total`` run)."""

    look: int
    looks: int
    units: int
    total: int
    alpha: float
    decision: Decision
    metrics: list[MetricLook] = field(default_factory=list)

    def messages(self, unit: str = "query", family: str = "") -> list[str]:
        """One line per regressed metric: which test decided, at which look, at what level."""
        plural = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
        out = []
        for m in self.metrics:
            if m.decision != "regressed":
                continue
            text = (
                f"{m.metric} regressed: stored {_fmt(m.stored)}, new {_fmt(m.new)} on the same "
                f"{self.units} of {self.total} {plural}, sequential paired sign-flip test at "
                f"look {self.look} of {self.looks}: p={m.p_value:.2g} < {m.level:.2g} (this "
                f"look's share of the cell's level {self.alpha:.2g}, spent as alpha*t^2 over "
                f"{self.looks} looks) and past the tolerance {m.tolerance:g} "
                f"({m.direction} is better)"
            )
            out.append(f"{text}; {family}" if family else text)
        return out

    def as_json(self) -> dict[str, object]:
        """The cell's ``sequential`` record in the JSON report."""
        return {
            "decision": self.decision, "look": self.look, "looks": self.looks,
            "units": self.units, "max_units": self.total, "alpha": self.alpha,
            "metrics": {
                m.metric: {"decision": m.decision, "p_value": m.p_value, "level": m.level,
                           "effect": m.effect}
                for m in self.metrics
            },
        }  # fmt: skip

    def line(self, unit: str = "query") -> str:
        """The terminal's line for a cell that stopped."""
        plural = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
        what = {
            "regressed": "regressed",
            "no regression": "no regression of the stated size",
            "continue": "undecided",
        }[self.decision]
        return f"{what} at look {self.look} of {self.looks} ({self.units} of {self.total} {plural})"


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def cell_look(
    stored: PerUnit,
    new: PerUnit,
    specs: Iterable[MetricSpec],
    alpha: float,
    bounds: Sequence[int],
    look: int,
    stored_scores: Mapping[str, object] | None = None,
) -> CellLook:
    """The cell's decision after look ``look`` (1-based) of ``len(bounds)``: ``new`` holds
    the first ``bounds[look - 1]`` units, ``stored`` the baseline's (at least as many).

    ``stored_scores``: the baseline's scores; a metric it leaves undefined is not gated.
    """
    looks, upto = len(bounds), bounds[look - 1]
    found: list[MetricLook] = []
    for spec in specs:
        if stored_scores is not None and not isinstance(stored_scores.get(spec.name), int | float):
            continue
        names = _names(spec, stored)
        if not names or _names(spec, new) != names:
            continue
        effect = STATED_EFFECTS.get(spec.name, DEFAULT_EFFECT)
        rule = cell_rule(looks, alpha, spec.name)
        kept, got = _terms(stored, names, 0, upto), _terms(new, names, 0, upto)
        d = unit_changes(kept, got, spec.direction)
        if d is None:  # undefined on these units in both runs: no change to judge (as the
            # fixed gate), so no evidence of a regression either
            stop = look >= min(FUTILITY_FROM, looks)
            decision: Decision = "no regression" if stop else "continue"
            s = v = 0.0
        else:
            s, v = float(d.sum()), float(d @ d)
            decision = rule.decide(look, s, v)
        before, after = _score(kept), _score(got)
        past = after is None or (before is not None and spec.fails(before, after))
        if decision == "regressed" and not past:
            decision = "no regression" if look == looks else "continue"
        p = math.exp(-s * s / (2 * v)) if s > 0 and v > 0 else 1.0
        found.append(
            MetricLook(
                spec.name, decision, before, after, min(1.0, p), rule.spent(look, alpha),
                spec.direction, spec.tolerance, effect,
            )
        )  # fmt: skip
    # Futility is decided on the stated metrics (all of them when none is stated).
    stated = [m for m in found if m.metric in STATED_EFFECTS] or found
    decisions = {m.decision for m in stated} | {
        m.decision for m in found if m.decision == "regressed"
    }
    overall: Decision = (
        "regressed"
        if "regressed" in decisions
        else "continue"
        if "continue" in decisions and look < looks
        else "no regression"
    )
    return CellLook(look, looks, upto, bounds[-1], alpha, overall, found)


def batch_changes(
    stored: PerUnit, new: PerUnit, spec: MetricSpec, bounds: Sequence[int]
) -> Array | None:
    """Every unit run, its change computed on its own batch's prefix (batch ``b``'s units
    with the ratio of batches ``1..b``): the pooled e-process's increments, in batch order.
    ``bounds`` are the looks run (the last one: the units run)."""
    names = _names(spec, stored)
    if not names or _names(spec, new) != names:
        return None
    out: list[Array] = []
    lo = 0
    for hi in bounds:
        d = unit_changes(_terms(stored, names, 0, hi), _terms(new, names, 0, hi), spec.direction)
        out.append(np.zeros(hi - lo) if d is None else d[lo:hi])
        lo = hi
    return np.concatenate(out) if out else np.zeros(0)


def mixture_log_e(s: Array, v: Array, rho: float | Array) -> Array:
    """Log of the half-normal mixture of ``exp(lam * s - lam**2 * v / 2)`` over ``lam >= 0``
    of precision ``rho``: ``2 sqrt(rho / (v + rho)) exp(s**2 / (2 (v + rho))) Phi(s /
    sqrt(v + rho))`` (module docstring).  Where ``s <= 0`` the e-value is below
    ``sqrt(rho / (v + rho)) <= 1`` and never rejects; that bound is returned there."""
    w = np.asarray(v, dtype=np.float64) + rho
    z = np.maximum(np.asarray(s, dtype=np.float64), 0.0) / np.sqrt(w)
    phi = 0.5 * np.asarray(_ERFC(-z / math.sqrt(2.0)), dtype=np.float64)  # Phi(z) in [0.5, 1]
    out: Array = np.where(
        z > 0, math.log(2.0) + 0.5 * np.log(rho / w) + z * z / 2 + np.log(phi),
        0.5 * np.log(rho / w),
    )  # fmt: skip
    return out


_ERFC = np.frompyfunc(math.erfc, 1, 1)


@dataclass(frozen=True)
class _Cell:
    order: str
    d: Array
    first: int


def pooled_sequential_tests(
    cells: Mapping[tuple[str, str], Sequence[tuple[str, Sequence[float], int, str]]],
    *,
    pairs: int | None = None,
    run_alpha: float = RUN_ALPHA,
) -> list[PooledRegression]:
    """The run's pooled tests as anytime-valid e-processes: ``cells[(kind, metric)]`` lists
    each cell's ``(test id, per-unit changes in batch order, units of its first batch,
    direction)``; a cell that ran whole is one batch (``first`` = all its units).  Failed
    when ``1 / max e < alpha``, ``alpha`` half the run's level split over ``pairs``."""
    from pytest_budget.run_gate import pooled_alpha

    count = pairs if pairs is not None else len(cells)
    level = pooled_alpha(count, run_alpha)
    return [
        _pooled(kind, metric, rows, level, count)
        for (kind, metric), rows in sorted(cells.items())
        if rows
    ]


def _pooled(
    kind: str, metric: str, rows: Sequence[tuple[str, Sequence[float], int, str]], level: float,
    count: int,
) -> PooledRegression:  # fmt: skip
    """One kind and metric's e-process over its cells in canonical order."""
    ordered = sorted(
        (_Cell(order, np.asarray(d, dtype=np.float64), first) for order, d, first, _ in rows),
        key=lambda c: c.order,
    )
    d = np.concatenate([c.d for c in ordered])
    first = sum(float(c.d[: c.first] @ c.d[: c.first]) for c in ordered)
    return PooledRegression(
        kind, metric, float(d.sum()) / len(rows), len(rows), int(d.size),
        sequential_p(d, first), level, count, rows[0][3],  # type: ignore[arg-type]
        test="e-process",
    )  # fmt: skip


def sequential_p(d: Array, first_squares: float) -> float:
    """``1 / max e`` of the mixture e-process along ``d`` (in canonical order), ``rho`` =
    :data:`RHO_SHARE` x ``first_squares``: an anytime-valid one-sided p-value."""
    if d.size == 0 or first_squares <= 0:
        return 1.0
    log_e = mixture_log_e(np.cumsum(d), np.cumsum(d * d), RHO_SHARE * first_squares)
    return float(min(1.0, math.exp(-float(log_e.max()))))
