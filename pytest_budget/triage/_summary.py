"""Terminal tables for triage cells (one row per pool x ratio x alpha x variant x agent)."""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.report._text_table import render_table
from pytest_budget.triage._cell_record import ResolveCellRecord, TriageCellRecord
from pytest_budget.triage._scoring import kendall_tau_b

__all__ = [
    "cell_note",
    "eta_cell",
    "phase0_lines",
    "plan_status",
    "resolve_table",
    "triage_table",
    "variant_agreement",
]

#: Shown instead of a number where eta is undefined (the note column says why).
UNDEFINED = "\u2014"


def eta_cell(cell: TriageCellRecord, key: str) -> object:
    """An eta score for a table: the number, or an em dash when the cell explains why none."""
    value = cell.scores.get(key)
    if value is None and (cell.eta_note or cell.outcome != "ok"):
        return UNDEFINED
    return value


def plan_status(cell: TriageCellRecord) -> str:
    """How the plan was read (ok, repaired, unparseable); ``-`` when the cell has none."""
    return cell.plan_status or "-"


def cell_note(cell: TriageCellRecord) -> str:
    """A short note for the table: why eta is missing or conventional, and exclusions.

    When some plans were excluded as unparseable, the alternative figure that counts them
    as empty plans is shown beside it (``as empty: eta_u=..., eta_e=...``).
    """
    parts: list[str] = []
    note = cell.eta_note
    if isinstance(note, str):
        if "solved none" in note:
            parts.append("V_oracle=0: solver solved 0 items")
        elif "V_oracle = 0" in note:
            parts.append("V_oracle=0: no solved item fits B")
        elif note.startswith("all "):
            parts.append("every plan unparseable")
        elif "convention" in note:
            parts.append("eta by convention (V_oracle=V_random, D.2)")
    excluded = cell.excluded
    if excluded is not None and excluded.get("unparseable"):
        scores = cell.scores
        alt = ", ".join(
            f"{key[:5]}={value:.3f}" if isinstance(value, int | float) else f"{key[:5]}=-"
            for key in ("eta_u_as_empty", "eta_e_as_empty")
            for value in [scores.get(key)]
        )
        parts.append(
            f"{excluded['unparseable']}/{excluded.get('plans')} unparseable excluded"
            f" (as empty: {alt})"
        )
    return "; ".join(parts)


def triage_table(cells: Sequence[CellRecord]) -> list[str]:
    """The triage score table and a line of plan-status counts."""
    triage = of_type(cells, TriageCellRecord)
    headers = [
        "pool", "unsolv", "alpha", "var", "agent", "B", "eta_u", "eta_e",
        "regret_u", "regret_e", "detect", "waste", "plan", "note",
    ]  # fmt: skip
    rows = []
    statuses: Counter[str] = Counter()
    over_budget = 0
    for cell in triage:
        scores = cell.scores
        status = plan_status(cell)
        statuses[status] += 1
        over_budget += bool(cell.over_budget)
        rows.append([
            cell.pool, cell.unsolvable_ratio, cell.alpha, cell.variant, cell.agent, cell.budget,
            eta_cell(cell, "eta_u"), eta_cell(cell, "eta_e"), scores.get("regret_u"),
            scores.get("regret_e"), scores.get("detection"), scores.get("waste"),
            status if cell.outcome == "ok" else f"{status} ({cell.outcome})",
            cell_note(cell),
        ])  # fmt: skip
    if not any(row[-1] for row in rows):  # the note column only when a cell has a note
        headers.pop()
        rows = [row[:-1] for row in rows]
    lines = render_table(headers, rows)
    counts = ", ".join(f"{statuses.get(key, 0)} {key}" for key in ("ok", "repaired", "unparseable"))
    line = f"plans: {counts}; {over_budget} with allocations over B"
    if statuses.get("unparseable"):
        line += "; unparseable plans are excluded from eta (TRIAGE App. B)"
    lines.append(line)
    lines.extend(phase0_lines(triage))
    lines.extend(variant_agreement(triage))
    return lines


def phase0_lines(cells: Sequence[TriageCellRecord]) -> list[str]:
    """How many Phase 0 results came from the cache, the solver and pool files.

    Counted once per pool (and injection ratio and solver), however many cells share it.
    """
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for cell in cells:
        phase0 = cell.phase0
        if phase0 is not None and "from_cache" in phase0:
            key = (str(cell.pool), str(cell.unsolvable_ratio), str(cell.solver))
            seen.setdefault(key, phase0)
    if not seen:
        return []
    total = {name: sum(int(p.get(name, 0)) for p in seen.values()) for name in (
        "from_cache", "measured", "from_file")}  # fmt: skip
    return [
        f"Phase 0: {total['from_cache']} results from the cache, {total['measured']} measured "
        f"by the solver, {total['from_file']} from pool files"
    ]


def variant_agreement(cells: Sequence[TriageCellRecord]) -> list[str]:
    """Kendall tau-b between the agent rankings under each variant pair, per regime and
    alpha, as TRIAGE Table 3 computes it (never pooled across alphas).

    Within one (regime, alpha), each agent's value under a variant is its mean eta over
    that variant's cells (pools and injection ratios); excluded cells (eta undefined) are
    left out.  Agents present under both variants are ranked (at least two needed).
    """
    groups: dict[tuple[str, float], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for cell in cells:
        for regime in ("eta_u", "eta_e"):
            eta = cell.scores.get(regime)
            # A cell of your own test may lack its coordinates: it has no place here.
            if isinstance(eta, int | float) and cell.alpha is not None and cell.variant:
                by_variant = groups[(regime, float(cell.alpha))]
                by_variant[cell.variant][cell.agent].append(float(eta))
    lines = []
    # eta_u first, then eta_e (as TRIAGE Table 3), each by increasing alpha.
    for regime, alpha in sorted(groups, key=lambda key: (key[0] != "eta_u", key[1])):
        by_variant = groups[(regime, alpha)]
        for first, second in itertools.combinations(sorted(by_variant), 2):
            agents = sorted(set(by_variant[first]) & set(by_variant[second]))
            if len(agents) < 2:
                continue
            x = [math.fsum(by_variant[first][a]) / len(by_variant[first][a]) for a in agents]
            y = [math.fsum(by_variant[second][a]) / len(by_variant[second][a]) for a in agents]
            tau = kendall_tau_b(x, y)
            lines.append(
                f"ranking agreement {regime} alpha={alpha:g} {first} vs {second}: "
                f"Kendall tau-b = {tau:.3f} over {len(agents)} agents"
            )
    return lines


def resolve_table(cells: Sequence[CellRecord]) -> list[str]:
    """The re-solve table: compliance with the stated allocation and what it changed."""
    headers = [
        "pool",
        "alpha",
        "agent",
        "n",
        "compliance",
        "kept",
        "lost",
        "newly",
        "wrong",
        "acc_base",
        "acc_stated",
    ]
    rows = []
    for cell in of_type(cells, ResolveCellRecord):
        s = cell.scores
        rows.append([
            cell.pool, cell.alpha, cell.agent, s.get("n"), s.get("compliance"),
            s.get("kept"), s.get("lost"), s.get("newly_correct"), s.get("still_wrong"),
            s.get("acc_baseline"), s.get("acc_budget_aware"),
        ])  # fmt: skip
    return render_table(headers, rows)
