"""The sequential gate: a cell runs its units in batches and stops when the decision is made.

Issue 30, must-have 4.  A cell of a metered agent (every call costs money) runs its units
(planning queries; awareness probes) in :data:`LOOKS` batches.  After each batch the cell
compares the units it ran with the *same* units of its baseline and decides, per gated
metric, ``regressed``, ``no regression`` (of the stated size) or go on; it stops at the
first ``regressed`` metric, or when every metric says ``no regression``, or at its maximum
size.  Plain Python and numpy: nothing here imports pytest.

**Per cell** (:func:`cell_look`): the group-sequential rule of
:class:`pytest_budget._stats.run_gate.SequentialRule` at the cell's Bonferroni level (half the
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
``d_i`` computed on the cell's batches ``1..b`` and scaled by ``hi_b / total`` (the prefix's
share of the cell's units: every unit then weighs what it weighs in the fixed gate's test;
:func:`batch_changes`), whose magnitude does not change when any unit's stored and new
values are swapped.  Under the null the sign of each ``d_i`` is a fair coin given the
magnitudes and everything earlier in the order, and whether a batch is run at all depends
only on earlier batches of its cell.  So for every ``lam >= 0`` fixed under the null,
``exp(lam * S_t - lam**2 * V_t / 2)`` (``S_t``, ``V_t``: the sum and the sum of squares of
the changes so far) is a non-negative supermartingale (``E[exp(lam s a)] = cosh(lam a) <=
exp(lam**2 a**2 / 2)``).  By Ville's inequality it ever reaches ``1 / alpha`` with
probability at most ``alpha``, whatever each cell's stopping rule did; the test's p-value is
``1 / max e``.  ``lam`` is matched to the test's level (:func:`pooled_lambda`):
``sqrt(2 log(1 / alpha) / V*)``, ``V*`` the squares the run would sum if every cell ran
whole, predicted from the cells' first batches (which always run: a quantity fixed under
the null).  At ``V_t = V*`` it rejects exactly where the fixed gate's Hoeffding bound
does, and at ``V_t = r V*`` its threshold on ``S`` is ``(1 + r) / (2 sqrt(r))`` times the
fixed one (1.06 at r = 0.5 or 2).  The previous half-normal mixture over ``lam`` on unscaled
changes (a 9-query cell's first batch weighed 3x its last) caught planning EMR -0.20 in
94.8% of the bench's runs; this one in 99.7% (docs/how-to/gate-ci.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_budget._core.metric_spec import MetricSpec
from pytest_budget._stats.run_gate import RUN_ALPHA, PooledRegression, SequentialRule, unit_changes

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
    "log_e_path",
    "pooled_lambda",
    "pooled_sequential_tests",
    "sequential_applies",
    "sequential_p",
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
#: ``interval_score`` 0.05: the stated "S_k -0.15" (each probe's S_k shifted, clipped to
#: [0, 1]) lowers the score by 0.11, and a futility stop at 0.10 / 0.075 / 0.05 kept
#: 90.5% / 97.3% / 99.7% of runs catching it (fixed gate: 99.4%; benchmarks/
#: bench_gate_runs.py --only awareness --baselines 40 --futility-effect ...).
STATED_EFFECTS: dict[str, float] = {
    "emr": 0.20,
    "eta_u": 0.50,
    "macro_f1_all": 0.10,
    "interval_score": 0.05,
}
#: The futility effect of a metric of a suite with none of the above (your own cells).
DEFAULT_EFFECT = 0.10
#: The first look that may stop a cell for futility: a batch of a quarter of a small cell
#: (3 of 9 planning queries) often has no changed unit under a regression too, and an early
#: futility stop takes its units out of the suite's pooled test.  Measured (bench, 1,200
#: runs, interval_score futility then at 0.15): from look 3 planning EMR -0.15 is caught in
#: 84% of runs instead of 78% (-0.20: 100% / 99.8%), but an unchanged agent spent 2,751
#: calls instead of 2,393 (fixed 3,207).
FUTILITY_FROM = 2


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
    stored: PerUnit, new: PerUnit, spec: MetricSpec, bounds: Sequence[int], total: int
) -> Array | None:
    """Every unit run, its change computed on its own batch's prefix (batch ``b``'s units
    with the ratio of batches ``1..b``) and scaled by ``hi_b / total`` (a unit then weighs
    about what it weighs in the whole cell's change): the pooled e-process's increments, in
    batch order.  ``bounds`` are the looks run (the last one: the units run), ``total`` the
    cell's full size (a constant of the design: the scale must not depend on the stop)."""
    names = _names(spec, stored)
    if not names or _names(spec, new) != names:
        return None
    out: list[Array] = []
    lo = 0
    for hi in bounds:
        d = unit_changes(_terms(stored, names, 0, hi), _terms(new, names, 0, hi), spec.direction)
        out.append(np.zeros(hi - lo) if d is None else d[lo:hi] * (hi / total))
        lo = hi
    return np.concatenate(out) if out else np.zeros(0)


def pooled_lambda(predicted_squares: float | Array, level: float) -> Array:
    """The pooled e-process's ``lam`` for a test at ``level``: ``sqrt(2 log(1 / level) /
    V*)``, ``V*`` the summed squares predicted for the whole run (module docstring)."""
    v = np.asarray(predicted_squares, dtype=np.float64)
    out: Array = np.sqrt(2.0 * math.log(1.0 / level) / np.maximum(v, 1e-300))
    return out


def log_e_path(d: Array, lam: float | Array) -> Array:
    """``log e_t = lam * S_t - lam**2 * V_t / 2`` along the last axis of ``d`` (the
    canonical order); ``lam`` broadcasts over the leading axes."""
    lam = np.asarray(lam, dtype=np.float64)
    out: Array = lam * np.cumsum(d, axis=-1) - lam * lam * np.cumsum(d * d, axis=-1) / 2
    return out


@dataclass(frozen=True)
class _Cell:
    order: str
    d: Array
    first: int
    total: int

    @property
    def predicted(self) -> float:
        """The summed squares this cell would give run whole, from its first batch."""
        head = self.d[: self.first]
        return float(head @ head) * self.total / max(1, self.first)


Row = tuple[str, Sequence[float], int, str] | tuple[str, Sequence[float], int, str, int]


def pooled_sequential_tests(
    cells: Mapping[tuple[str, str], Sequence[Row]],
    *,
    pairs: int | None = None,
    run_alpha: float = RUN_ALPHA,
) -> list[PooledRegression]:
    """The run's pooled tests as anytime-valid e-processes: ``cells[(kind, metric)]`` lists
    each cell's ``(test id, per-unit changes in batch order, units of its first batch,
    direction[, full size])``; a cell that ran whole is one batch (``first`` = all its
    units; full size: the units given).  Failed when ``1 / max e < alpha``, ``alpha`` half
    the run's level split over ``pairs``."""
    from pytest_budget._stats.run_gate import pooled_alpha

    count = pairs if pairs is not None else len(cells)
    level = pooled_alpha(count, run_alpha)
    return [
        _pooled(kind, metric, rows, level, count)
        for (kind, metric), rows in sorted(cells.items())
        if rows
    ]


def _pooled(
    kind: str, metric: str, rows: Sequence[Row], level: float, count: int
) -> PooledRegression:
    """One kind and metric's e-process over its cells in canonical order."""
    ordered = sorted(
        (
            _Cell(
                row[0], np.asarray(row[1], dtype=np.float64), row[2],
                int(row[4]) if len(row) > 4 else len(row[1]),
            )
            for row in rows
        ),
        key=lambda c: c.order,
    )  # fmt: skip
    d = np.concatenate([c.d for c in ordered])
    p, at = sequential_p(d, sum(c.predicted for c in ordered), level)
    return PooledRegression(
        kind, metric, float(d.sum()) / len(rows), len(rows), int(d.size), p, level, count,
        rows[0][3],  # type: ignore[arg-type]
        test="e-process", crossed=_where(ordered, at, int(d.size)) if at is not None else "",
    )  # fmt: skip


def _where(ordered: Sequence[_Cell], at: int, units: int) -> str:
    """Where the e-process first crossed: the unit in canonical order, its cell and look."""
    lo = 0
    for cell in ordered:
        if at < lo + cell.d.size:
            index = at - lo
            if cell.first >= cell.total:  # a cell that ran whole: one batch
                return (
                    f"unit {at + 1} of the {units} run in canonical order (cells by test id, "
                    f"then batch): {cell.order}, which ran whole ({cell.total} units)"
                )
            bounds = batch_bounds(cell.total)
            look = next(k for k, hi in enumerate(bounds, start=1) if index < hi)
            return (
                f"unit {at + 1} of the {units} run in canonical order (cells by test id, then "
                f"batch): {cell.order}, look {look} of {len(bounds)} ({bounds[look - 1]} of "
                f"{cell.total} units)"
            )
        lo += cell.d.size
    raise ValueError(f"unit {at} past the {units} units run")


def sequential_p(d: Array, predicted_squares: float, level: float) -> tuple[float, int | None]:
    """``1 / max e`` of the e-process along ``d`` (canonical order) with ``lam`` matched to
    ``level`` and ``predicted_squares`` (:func:`pooled_lambda`): an anytime-valid one-sided
    p-value, and the first unit (0-based) at which ``e`` passed ``1 / level`` (``None``:
    it never did).  No change in any first batch (nothing to predict from): 1.0."""
    if d.size == 0 or predicted_squares <= 0:
        return 1.0, None
    log_e = log_e_path(d, pooled_lambda(predicted_squares, level))
    over = np.nonzero(log_e > math.log(1.0 / level))[0]
    p = float(min(1.0, math.exp(-float(log_e.max()))))
    return p, int(over[0]) if over.size else None
