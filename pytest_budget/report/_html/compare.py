"""Two runs side by side: match cells, compute each score's delta and say which way is better.

Cells are matched by suite, cell id and agent.  A score's direction comes from the gated
metrics (:func:`pytest_budget._stats.gated_metrics.suite_metrics`, the same specs the snapshot gate
uses), then from the few ungated scores whose direction the metric reference states;
any other score's delta is shown without a verdict.  Plain Python (no matplotlib).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_budget._core.records import CellRecord
from pytest_budget._stats.gated_metrics import suite_metrics

__all__ = ["CellMatch", "Delta", "cell_key", "delta", "direction", "match_cells"]

Cell = CellRecord
Verdict = Literal["better", "worse", "same", "neutral"]

#: Ungated scores with a documented direction (docs/reference/metrics*.md); colour only,
#: they never fail a run.
_UNGATED_DIRECTIONS: dict[str, Literal["higher", "lower"]] = {
    "macro_f1_first": "higher",
    "hit_rate": "higher",
    "mre_p50": "lower",
    "mre_p90": "lower",
    "false_abort_rate": "lower",
    "saved_token_share": "higher",
    "reward": "higher",
    "aed": "lower",
    "cost_gap_clean": "lower",
}

#: Differences smaller than this are rounding noise in the reports' 9-decimal floats.
_SAME = 1e-9


def direction(metric: str) -> Literal["higher", "lower"] | None:
    """``higher`` or ``lower`` is better, or ``None`` when the score has no direction."""
    for specs in suite_metrics().values():
        for spec in specs:
            if spec.name == metric:
                return spec.direction
    return _UNGATED_DIRECTIONS.get(metric)


@dataclass(frozen=True)
class Delta:
    """``new - base`` for one score, its text (``+0.100``) and its verdict."""

    value: float | None
    text: str
    verdict: Verdict


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def delta(metric: str | None, base: object, new: object) -> Delta:
    """The change of one score between the baseline and the new run.

    Both undefined or equal: ``same``.  Only one defined: no number, ``neutral``.
    Otherwise better/worse by the metric's direction, ``neutral`` without one.
    """
    before, after = _number(base), _number(new)
    if before is None and after is None:
        return Delta(None, "", "same")
    if before is None or after is None:
        return Delta(None, "was \u2013" if before is None else "now \u2013", "neutral")
    change = after - before
    if abs(change) <= _SAME:
        return Delta(0.0, "\u00b10", "same")
    # counts stay whole numbers; scores get the tables' three decimals
    integral = isinstance(base, int) and isinstance(new, int)
    text = f"{round(change):+d}" if integral else f"{change:+.3f}"
    if text in ("+0.000", "-0.000"):
        text = f"{change:+.1e}"
    way = direction(metric) if metric else None
    if way is None:
        return Delta(change, text, "neutral")
    improved = change > 0 if way == "higher" else change < 0
    return Delta(change, text, "better" if improved else "worse")


def cell_key(cell: Cell) -> tuple[str, str, str]:
    """What identifies a cell across runs: suite, cell id (node id if none), agent."""
    return cell.suite, cell.cell or cell.nodeid, cell.agent


@dataclass(frozen=True)
class CellMatch:
    """Cells of one suite paired by :func:`cell_key`, in the new run's order."""

    pairs: list[tuple[Cell, Cell]]
    only_base: list[Cell]
    only_new: list[Cell]


def match_cells(base: Sequence[Cell], new: Sequence[Cell]) -> CellMatch:
    base_by_key: dict[tuple[str, str, str], Cell] = {}
    for cell in base:
        base_by_key.setdefault(cell_key(cell), cell)
    new_keys = {cell_key(cell) for cell in new}
    pairs: list[tuple[Cell, Cell]] = []
    only_new: list[Cell] = []
    seen: set[tuple[str, str, str]] = set()
    for cell in new:
        key = cell_key(cell)
        if key in seen:
            continue
        seen.add(key)
        if key in base_by_key:
            pairs.append((base_by_key[key], cell))
        else:
            only_new.append(cell)
    only_base = [cell for key, cell in base_by_key.items() if key not in new_keys]
    return CellMatch(pairs, only_base, only_new)
