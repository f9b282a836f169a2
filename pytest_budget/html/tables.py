"""Score table columns per suite, and the footer lines the terminal tables also print.

The columns follow the terminal tables (:mod:`pytest_budget.triage.summary`,
:mod:`pytest_budget.awareness.summary`, :mod:`pytest_budget.planning.summary`), read
from the cell records directly so the page can mark a delta per score.  Plain Python.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_budget.awareness.summary import floor_value, rollout_lines

__all__ = [
    "SUITE_TITLES",
    "Column",
    "columns_for",
    "footer_lines",
    "format_cell_value",
    "interval_text",
]

Cell = Mapping[str, Any]

#: Section titles, in page order; suites a run did not record are listed with a note.
SUITE_TITLES: dict[str, str] = {
    "triage": "triage: which problems to attempt under a shared budget (TRIAGE)",
    "triage-resolve": "triage: budget-aware re-solve (stated allocation)",
    "awareness": "awareness: mid-rollout budget estimation (BAGEN)",
    "planning": "planning: cost-optimal tool use (CostBench)",
    "awareness-online": "awareness, online mode: acting under a cap while estimating",
}
#: Suites every page mentions (``triage-resolve`` only appears when it has cells).
CORE_SUITES = ("triage", "awareness", "planning")


@dataclass(frozen=True)
class Column:
    """One table column: its header, how to read it from a cell, and whether it is a
    score whose change between two runs is marked (``metric`` = the score's name)."""

    header: str
    read: Callable[[Cell], object]
    metric: str | None = None
    tooltip: str = ""
    #: A coordinate (alpha, ratio), not a score: numbers shown as written (0.5, not 0.500).
    plain: bool = False

    def text(self, cell: Cell) -> str:
        return format_cell_value(self.read(cell), plain=self.plain)


def _scores(cell: Cell) -> Mapping[str, Any]:
    scores = cell.get("scores")
    return scores if isinstance(scores, Mapping) else {}


def _field(name: str, header: str | None = None) -> Column:
    return Column(header or name, lambda cell: cell.get(name), plain=True)


def _score(name: str, header: str | None = None, *, delta: bool = True) -> Column:
    return Column(
        header or name, lambda cell: _scores(cell).get(name), name if delta else None, name
    )


def _agent(cell: Cell) -> object:
    agent = str(cell.get("agent"))
    outcome = cell.get("outcome", "ok")
    return agent if outcome == "ok" else f"{agent} ({outcome})"


def _plan(cell: Cell) -> object:
    return cell.get("plan_status", "-")


def _triage_note(cell: Cell) -> object:
    from pytest_budget.triage.summary import cell_note

    return cell_note(cell)


def _blocks(cell: Cell) -> object:
    scores = _scores(cell)
    return f"{scores.get('blocks_applied', 0)}/{scores.get('blocks_dropped', 0)}"


def _greedy(name: str, header: str) -> Column:
    def read(cell: Cell) -> object:
        greedy = cell.get("greedy")
        return greedy.get(name) if isinstance(greedy, Mapping) else None

    return Column(header, read, None, f"greedy baseline's {name} on the same episodes")


_AGENT = Column("agent", _agent)

_COLUMNS: dict[str, tuple[Column, ...]] = {
    "triage": (
        _field("pool"), _field("unsolvable_ratio", "unsolv"), _field("alpha"),
        _field("variant", "var"), _AGENT, _field("budget", "B"),
        _score("eta_u"), _score("eta_e"), _score("regret_u"), _score("regret_e"),
        _score("detection", "detect"), _score("waste"), Column("plan", _plan),
        Column("note", _triage_note, None, "why eta is undefined or set by convention"),
    ),
    "triage-resolve": (
        _field("pool"), _field("alpha"), _AGENT, _score("n", delta=False),
        _score("compliance"), _score("kept", delta=False), _score("lost", delta=False),
        _score("newly_correct", "newly", delta=False), _score("still_wrong", "wrong", delta=False),
        _score("acc_baseline", "acc_base"), _score("acc_budget_aware", "acc_stated"),
    ),
    "awareness": (
        _field("env"), Column("estimator", _agent), _score("n_probes", "probes", delta=False),
        _score("macro_f1_all", "f1_all"),
        Column("floor", floor_value, None, "trivial floor: best macro-F1 of a one-number "
               "threshold rule on what the estimator sees (! above 0.75)"),
        _score("macro_f1_first", "f1_first"),
        _score("fail_f1"), _score("interval_score", "interval"), _score("hit_rate", "hit"),
        _score("mre_p50"), _score("invalid_rate", "invalid"),
        _score("false_abort_rate", "false_abort"), _score("saved_token_share", "saved"),
        _score("reward"), _score("n_errors", "errors", delta=False),
    ),
    "planning": (
        _field("task"), _field("scenario"), _AGENT, _score("n_episodes", "n", delta=False),
        _score("emr"), _score("aned"), _score("cost_gap"), _score("cost_gap_clean", "gap_clean"),
        _score("uihr"), _score("itur"), _score("excluded", "excl", delta=False),
        Column("blocks", _blocks, None, "blocking events applied/dropped"),
        _greedy("emr", "greedy_emr"), _greedy("cost_gap", "greedy_gap"),
    ),
}  # fmt: skip


def columns_for(suite: str, cells: Sequence[Cell]) -> tuple[Column, ...]:
    """The suite's columns; cells of your own suites get their numeric scores."""
    if suite in _COLUMNS:
        return _COLUMNS[suite]
    names: list[str] = []
    for cell in cells:
        for key, value in _scores(cell).items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key not in names:
                names.append(key)
    return (_field("cell"), _AGENT, *(_score(name) for name in names))


def format_cell_value(value: object, *, plain: bool = False) -> str:
    """Like the terminal tables (three decimals), but an undefined score is an en dash;
    ``plain`` numbers (coordinates such as alpha) are shown as short as they are."""
    if value is None:
        return "\u2013"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:g}" if plain else f"{value:.3f}"
    return str(value)


def interval_text(cell: Cell, metric: str) -> str:
    """``95% CI [0.420, 0.580]`` from the cell's bootstrap interval of ``metric``, or ""."""
    from pytest_budget.html.figures import interval_of

    bounds = interval_of(cell, metric)
    if bounds is None:
        return ""
    lo, hi = bounds
    meta = cell.get("ci_meta")
    level = meta.get("level") if isinstance(meta, Mapping) else None
    prefix = f"{level:.0%} CI" if isinstance(level, float) else "CI"
    return f"{prefix} [{lo:.3f}, {hi:.3f}]"


def footer_lines(suite: str, cells: Sequence[Cell]) -> list[str]:
    """The lines printed under the terminal tables: plan counts, rankings, rollout sets."""
    if suite == "triage":
        from pytest_budget.triage.summary import phase0_lines, variant_agreement

        statuses = Counter(str(c.get("plan_status", "-")) for c in cells)
        over = sum(bool(c.get("over_budget")) for c in cells)
        counts = ", ".join(f"{statuses.get(k, 0)} {k}" for k in ("ok", "repaired", "unparseable"))
        return [
            f"plans: {counts}; {over} with allocations over B",
            *phase0_lines(cells),
            *variant_agreement(cells),
        ]
    if suite == "awareness":
        return rollout_lines(cells)
    if suite == "planning":
        return [
            "blocks = blocking events applied/dropped (dropped: too late to matter); excl = "
            "episodes left out of path and cost metrics (goal not reached, error, or fewer "
            "blocks than asked); cost gaps are measured without blocking only, as CostBench "
            "does; greedy_* = the greedy baseline on the same episodes"
        ]
    return []
