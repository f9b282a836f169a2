"""The planning gate on many runs at once: array versions of the suite's rules.

Used by ``bench_planning_gate.py`` (which checks them against the suite's own functions on
every run).  A run is each query's numerator and denominator of the five gated planning
metrics; scores and bootstrap intervals come with it (:class:`Runs`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_budget._stats.gated_metrics import MetricSpec
from pytest_budget._stats.paired import DRAWS, EXACT_LIMIT, _column, paired_p_value

Array = npt.NDArray[np.float64]
#: Normal-approximation screen of the paired test (see bench_planning_gate.py).
Z_LOW, Z_HIGH = 1.5, 7.0


def _ratio(num: Array, den: Array) -> Array:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


@dataclass
class Runs:
    """``size`` runs of a cell: per-query values (5, size, n), scores (5, size), intervals
    (5, size, 2; NaN when undefined)."""

    num: Array
    den: Array
    scores: Array
    ci: Array

    def take(self, rows: npt.NDArray[np.int64]) -> Runs:
        """These runs, repeated/reordered along the run axis."""
        return Runs(self.num[:, rows], self.den[:, rows], self.scores[:, rows], self.ci[:, rows])


def _worse(specs: Sequence[MetricSpec]) -> Array:
    """+1 where lower is better, -1 where higher is: ``sign * (new - old) > 0`` is worse."""
    return np.asarray([1.0 if s.direction == "lower" else -1.0 for s in specs])[:, None]


def interval_rules(
    base: Runs, new: Runs, specs: Sequence[MetricSpec]
) -> dict[str, npt.NDArray[np.bool_]]:
    """Per metric and run (5, size): did ``tolerance``, ``ci``, ``overlap`` fail it; ``lost``
    and ``past`` (defined, past the tolerance), which the paired rule needs."""
    sign, tol = _worse(specs), np.asarray([s.tolerance for s in specs])[:, None]
    old, after = base.scores, new.scores
    gated = np.isfinite(old)
    lost = gated & ~np.isfinite(after)
    with np.errstate(invalid="ignore"):
        past = gated & np.isfinite(after) & (sign * (after - old) > tol + 1e-12)
        worse = sign * (after - old) > 1e-12
        lo, hi = new.ci[..., 0], new.ci[..., 1]
        far = np.where(sign > 0, lo, hi)  # the new interval's better end
        has = np.isfinite(far)
        ci_fail = np.where(has, (sign * (far - old) > 1e-12) & worse, past)
        kept = base.ci
        edge = np.where(sign > 0, kept[..., 1], kept[..., 0])  # the stored interval's worse end
        over = (sign * (far - edge) > 1e-12) & (sign * (after - edge) > 1e-12)
        overlap = np.where(has & np.isfinite(edge), over, ci_fail)
    return {
        "tolerance": lost | past,
        "ci": lost | (gated & ci_fail),
        "overlap": lost | (gated & overlap),
        "lost": lost,
        "past": past,
    }


def paired_p(
    base: Runs, new: Runs, past: npt.NDArray[np.bool_], specs: Sequence[MetricSpec]
) -> tuple[Array, npt.NDArray[np.int64], list[tuple[int, int, float]]]:
    """The suite's paired p-value (5, size) where ``past`` (else 1), the number of changed
    queries ``m``, and the screened items ``(metric, run, z)``."""
    p = np.ones(past.shape)
    m_all = np.zeros(past.shape, dtype=np.int64)
    screened: list[tuple[int, int, float]] = []
    batch: list[tuple[int, int]] = []
    for k, spec in enumerate(specs):
        dn, dd = new.num[k] - base.num[k], new.den[k] - base.den[k]
        differ = (dn != 0) | (dd != 0)
        m_all[k] = differ.sum(-1)
        on, od = base.num[k].sum(-1), base.den[k].sum(-1)
        nn, nd = new.num[k].sum(-1), new.den[k].sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r, half = (on + nn) / (od + nd), (od + nd) / 2
            a = (dn - r[:, None] * dd) / half[:, None]
            z = (
                (1 if spec.direction == "lower" else -1)
                * (nn / nd - on / od)
                / np.sqrt((a * a).sum(-1))
            )
        for j in np.flatnonzero(past[k]):
            m = int(m_all[k, j])
            if m <= EXACT_LIMIT:
                kept = (base.num[k, j], base.den[k, j])
                got = (new.num[k, j], new.den[k, j])
                p[k, j] = paired_p_value(kept, got, spec.direction) or 1.0
            elif z[j] < Z_LOW:
                screened.append((k, int(j), float(z[j])))
            elif z[j] > Z_HIGH:
                p[k, j] = 1 / (1 + DRAWS)
                screened.append((k, int(j), float(z[j])))
            else:
                batch.append((k, int(j)))
    _batched_p(base, new, batch, specs, p)
    return p, m_all, screened


@functools.lru_cache(maxsize=1)
def _patterns(width: int) -> Array:
    return np.stack([_column(j) for j in range(width)], axis=1).astype(np.float64)


def _batched_p(
    base: Runs, new: Runs, items: list[tuple[int, int]], specs: Sequence[MetricSpec], p: Array
) -> None:
    """:func:`paired_p_value` (Monte Carlo branch) for many (metric, run) items at once."""
    if not items:
        return
    patterns = _patterns(base.num.shape[-1])
    chunk = 48
    for lo in range(0, len(items), chunk):
        part = items[lo : lo + chunk]
        vals = []
        for k, j in part:
            dn, dd = new.num[k, j] - base.num[k, j], new.den[k, j] - base.den[k, j]
            keep = (dn != 0) | (dd != 0)
            vals.append((dn[keep], dd[keep]))
        width = max(len(v[0]) for v in vals)
        vn, vd = np.zeros((width, len(part))), np.zeros((width, len(part)))
        for i, (a, b) in enumerate(vals):
            vn[: len(a), i], vd[: len(b), i] = a, b
        s_num, s_den = patterns[:, :width] @ vn, patterns[:, :width] @ vd
        for i, (k, j) in enumerate(part):
            on, od = float(base.num[k, j].sum()), float(base.den[k, j].sum())
            nn, nd = float(new.num[k, j].sum()), float(new.den[k, j].sum())
            new_d, old_d = nd - s_den[:, i], od + s_den[:, i]
            ok = (new_d != 0) & (old_d != 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                change = (nn - s_num[:, i]) / new_d - (on + s_num[:, i]) / old_d
            sign = -1.0 if specs[k].direction == "higher" else 1.0
            hits = int(np.count_nonzero(ok & (sign * change >= sign * (nn / nd - on / od) - 1e-12)))
            p[k, j] = (1 + hits) / (1 + int(np.count_nonzero(ok)))


def decide(
    base: Runs, new: Runs, specs: Sequence[MetricSpec], alphas: Sequence[float]
) -> tuple[dict[str, npt.NDArray[np.bool_]], list[tuple[int, int, float]], Array]:
    """Per rule, whether each run fails the cell (any gated metric fails)."""
    rules = interval_rules(base, new, specs)
    p, m, screened = paired_p(base, new, rules["past"], specs)
    out = {name: rules[name].any(axis=0) for name in ("tolerance", "ci", "overlap")}
    for alpha in alphas:
        fallback = rules["past"] & (2.0 ** (-m.astype(float)) >= alpha)
        tested = rules["past"] & ~fallback & (p < alpha)
        fails = rules["lost"] | (fallback & rules["overlap"]) | tested
        out[f"paired@{alpha:g}"] = fails.any(axis=0)
    return out, screened, p
