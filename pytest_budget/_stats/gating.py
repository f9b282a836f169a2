"""Directional score comparison: what counts as a regression against a stored baseline.

Every gated metric declares a direction (higher or lower is better) and an absolute
tolerance.  Two rules decide what a regression is:

* ``tolerance`` (:func:`compare`): a score may move in its better direction by any amount
  and in its worse direction by at most the tolerance;
* ``ci`` (:func:`compare_ci`): a score fails only when its whole confidence interval lies
  on the worse side of the stored value (and the score itself does too), so noise that
  the interval covers never fails, whatever its size;
* ``overlap`` (:func:`compare_overlap`): a score fails only when its whole interval lies on
  the worse side of the stored *interval*, so the noise of both runs is allowed for (the
  baseline, too, was one draw of a sampling agent);
* ``paired`` (:func:`compare_paired`, every suite's default): the baseline stores each
  unit's values (query, pool item, probe), and a score fails when it moved to the worse
  side by more than its tolerance *and* a sign-flip test on the same units
  (:mod:`pytest_budget._stats.run_gate`) finds the change significant at the cell's share of the
  run's 1% (:data:`PAIRED_ALPHA` when called without a level).

This module is plain Python: the syrupy extension in :mod:`pytest_budget._plugin.snapshot` and
user scripts both call these functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_budget._core.metric_spec import DEFAULT_TOLERANCE, Direction, MetricSpec

__all__ = [
    "DEFAULT_TOLERANCE",
    "PAIRED_ALPHA",
    "TINY_CELL",
    "MetricSpec",
    "Regression",
    "compare",
    "compare_ci",
    "compare_overlap",
    "compare_paired",
    "parse_tolerances",
]

#: One-sided significance level of the paired test, per gated metric.  A cell gates five
#: metrics, so a cell's false alarms are at most 5 x 0.0005 = 0.25% per stored baseline on
#: average (Bonferroni).  Measured with benchmarks/bench_planning_gate.py (50 baselines x 40
#: reruns per cell, 400 to 800 queries per task): false alarms 0.13% mean, 0.6% in the worst
#: cell; 0.001 gave 1.05% there (docs/how-to/gate-ci.md has the table).
PAIRED_ALPHA = 0.0005
#: Cells of at most this many units (a handful of hand-picked queries or items) that the
#: paired test can never decide fall back to another rule; the default sizes are larger.
TINY_CELL = 10


@dataclass(frozen=True)
class Regression:
    """One metric that got worse past its tolerance."""

    metric: str
    stored: float | None
    new: float | None
    tolerance: float
    direction: Direction
    #: ``ci`` when decided by the interval rule (then ``interval`` is the new value's).
    rule: str = "tolerance"
    interval: tuple[float, float] | None = None
    stored_interval: tuple[float, float] | None = None
    level: float | None = None
    #: Why another rule decided than the one asked for (e.g. no interval to use).
    note: str = ""
    #: ``paired``: the one-sided p-value, its threshold and the number of paired units.
    p_value: float | None = None
    alpha: float | None = None
    units: int | None = None
    #: ``paired``: what a unit is (``query``, ``item``, ``probe``).
    unit: str = "query"

    def message(self) -> str:
        text = self._text()
        return f"{text}; {self.note}" if self.note else text

    def _text(self) -> str:
        better = "higher" if self.direction == "higher" else "lower"
        if self.rule == "paired":
            return (
                f"{self.metric} regressed: stored {_fmt(self.stored)}, new {_fmt(self.new)} on "
                f"the same {self.units} {_plural(self.unit)}, paired sign-flip test "
                f"p={self.p_value:.2g} < {self.alpha:.2g} and past the tolerance "
                f"{self.tolerance:g} ({better} is better)"
            )
        if self.new is None:
            return (
                f"{self.metric}: stored {_fmt(self.stored)}, new value missing "
                f"({better} is better, tolerance {self.tolerance:g})"
            )
        if self.rule == "overlap" and self.interval is not None:
            side = "below" if self.direction == "higher" else "above"
            level = f"{self.level:.0%} " if self.level is not None else ""
            return (
                f"{self.metric} regressed: new {_fmt(self.new)} with {level}interval "
                f"{_fmt_interval(self.interval).strip()} entirely {side} the stored "
                f"{_fmt(self.stored)} with interval {_fmt_interval(self.stored_interval).strip()} "
                f"({better} is better)"
            )
        if self.rule == "ci" and self.interval is not None:
            side = "below" if self.direction == "higher" else "above"
            level = f"{self.level:.0%} " if self.level is not None else ""
            stored = _fmt(self.stored) + _fmt_interval(self.stored_interval)
            return (
                f"{self.metric} regressed: stored {stored}, new {_fmt(self.new)} with "
                f"{level}interval {_fmt_interval(self.interval).strip()} entirely {side} the "
                f"stored value ({better} is better)"
            )
        return (
            f"{self.metric} regressed: stored {_fmt(self.stored)}, new {_fmt(self.new)}, "
            f"tolerance {self.tolerance:g} ({better} is better)"
        )


def _plural(unit: str) -> str:
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _fmt_interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.6g}, {interval[1]:.6g}]"


def _interval(value: object) -> tuple[float, float] | None:
    """A stored ``[lo, hi]`` pair as floats, or ``None`` when absent or malformed."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    lo, hi = (_number(v) for v in value)
    if lo is None or hi is None:
        return None
    return (lo, hi)


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


def compare_ci(
    stored: Mapping[str, object],
    new: Mapping[str, object],
    new_ci: Mapping[str, object],
    specs: Iterable[MetricSpec],
    *,
    stored_ci: Mapping[str, object] | None = None,
    level: float | None = None,
) -> list[Regression]:
    """Regressions under the interval rule (``--budget-gate=ci``).

    A metric fails when the new value's interval (``new_ci[name]``, ``[lo, hi]``) lies
    entirely on the worse side of the stored value, and the new value does too.  The
    stored interval (``stored_ci``) is only reported.  As in :func:`compare`, a metric the
    baseline leaves undefined is not gated and one the new run lost fails.  A metric with
    a value but no interval (e.g. cells of your own tests that record none) falls back to
    the tolerance rule, and its message says so.
    """
    regressions: list[Regression] = []
    for spec in specs:
        before = _number(stored.get(spec.name))
        if before is None:
            continue
        after = _number(new.get(spec.name))
        interval = _interval(new_ci.get(spec.name))
        kept = _interval((stored_ci or {}).get(spec.name))
        if after is None:
            regressions.append(Regression(spec.name, before, after, spec.tolerance, spec.direction))
        elif interval is None:
            if spec.fails(before, after):
                regressions.append(
                    Regression(
                        spec.name, before, after, spec.tolerance, spec.direction,
                        note="no interval for the new value, so compared with the tolerance",
                    )
                )  # fmt: skip
        elif spec.ci_fails(before, after, interval):
            regressions.append(
                Regression(
                    spec.name, before, after, spec.tolerance, spec.direction, rule="ci",
                    interval=interval, stored_interval=kept, level=level,
                )
            )  # fmt: skip
    return regressions


def compare_overlap(
    stored: Mapping[str, object],
    new: Mapping[str, object],
    new_ci: Mapping[str, object],
    stored_ci: Mapping[str, object] | None,
    specs: Iterable[MetricSpec],
    *,
    level: float | None = None,
) -> list[Regression]:
    """Regressions under the interval-overlap rule (``--budget-gate=overlap``).

    A metric fails when the new interval (``new_ci[name]``) lies entirely on the worse side
    of the stored interval (``stored_ci[name]``), and the new value does too.  A metric
    whose stored interval is missing is compared as :func:`compare_ci` does (new interval
    against the stored value); one without a new interval falls back to the tolerance
    rule; a metric the baseline leaves undefined is not gated, one the new run lost fails.
    """
    regressions: list[Regression] = []
    for spec in specs:
        kept = _interval((stored_ci or {}).get(spec.name))
        before = _number(stored.get(spec.name))
        after = _number(new.get(spec.name))
        interval = _interval(new_ci.get(spec.name))
        if kept is None or before is None or after is None or interval is None:
            regressions += compare_ci(
                stored, new, new_ci, (spec,), stored_ci=stored_ci, level=level
            )
        elif spec.overlap_fails(kept, after, interval):
            regressions.append(
                Regression(
                    spec.name, before, after, spec.tolerance, spec.direction, rule="overlap",
                    interval=interval, stored_interval=kept, level=level,
                )
            )  # fmt: skip
    return regressions


def compare_paired(
    stored: Mapping[str, object],
    new: Mapping[str, object],
    stored_units: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    new_units: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    specs: Iterable[MetricSpec],
    *,
    alpha: float = PAIRED_ALPHA,
    fallback: Callable[[MetricSpec], list[Regression]] | None = None,
    fallback_name: str = "tolerance",
    unit: str = "query",
    family: str = "",
) -> list[Regression]:
    """Regressions under the paired rule (``--budget-gate=paired``, every suite's default).

    ``stored_units`` and ``new_units`` hold, per metric, each unit's numerator and
    denominator on the *same* units in the same order (the score is sum / sum; a second
    term under ``<metric>.2`` makes it the mean of two ratios, as macro-F1).  A metric fails
    when its new score is worse than the stored one by more than the tolerance and the
    sign-flip test on the units' changes (:func:`pytest_budget._stats.run_gate.signflip_p`) is below
    ``alpha``.  As in :func:`compare`, a metric the baseline leaves undefined is not gated
    and one the new run lost fails.  ``family`` says what ``alpha`` was split from.

    A metric without per-unit values on either side is decided by ``fallback`` (the rule
    named ``fallback_name``; default: the tolerance rule), and its failure says so; so is a
    hand-made cell of at most :data:`TINY_CELL` units on which too few changed for the test
    to reach ``alpha``.  In a larger cell, too few changed units cannot fail here: that is
    no evidence of a regression (the run's pooled test still counts its units).
    """
    import numpy as np

    from pytest_budget._stats.run_gate import signflip_p, unit_changes

    def decide(spec: MetricSpec, why: str) -> list[Regression]:
        found = fallback(spec) if fallback else compare(stored, new, (spec,))
        return [replace(r, note=f"{why}, so compared by the {fallback_name} rule") for r in found]

    regressions: list[Regression] = []
    for spec in specs:
        before = _number(stored.get(spec.name))
        if before is None:
            continue
        after = _number(new.get(spec.name))
        names = [n for n in (spec.name, f"{spec.name}.2") if n in stored_units or n in new_units]
        kept = [stored_units[n] for n in names if n in stored_units]
        got = [new_units[n] for n in names if n in new_units]
        if after is None:
            regressions.append(Regression(spec.name, before, after, spec.tolerance, spec.direction))
        elif (
            not kept
            or len(kept) != len(got)
            or any(len(a[0]) != len(b[0]) for a, b in zip(kept, got, strict=True))
        ):
            regressions += decide(spec, f"no per-{unit} values to pair")
        elif not spec.fails(before, after):
            continue
        else:
            d = unit_changes(kept, got, spec.direction)
            n = len(got[0][0])
            m = int(np.count_nonzero(d)) if d is not None else 0
            if n <= TINY_CELL and 2.0**-m >= alpha:
                # A hand-made cell of a handful of units: the test can never decide it.
                why = f"only {m} of {n} {_plural(unit)} changed, too few for the paired test"
                regressions += decide(spec, why)
                continue
            p = signflip_p(d) if d is not None else None
            if p is not None and p < alpha:
                regressions.append(
                    Regression(
                        spec.name, before, after, spec.tolerance, spec.direction,
                        rule="paired", p_value=p, alpha=alpha, units=len(got[0][0]),
                        note=family, unit=unit,
                    )
                )  # fmt: skip
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
