"""What each agent buys with its budget: headline score against spend, per cell kind.

Per cell kind (the ``suite`` field of a record) each agent becomes one :class:`AgentPoint`:
its headline score (the kind's first gated metric, averaged over the agent's cells that
have it), the interval around it, and its spend per cell and in total.  An agent is
**dominated** when another agent of the kind is at least as good on both axes (score in
the metric's direction, spend lower or equal) and strictly better on one of them; the
agents no one dominates form the frontier.

Spend is USD when every agent of the kind has a priced model call, else tokens:
``input_tokens + output_tokens`` a model reported plus the ``counted_tokens`` that agents
no model meters wrote (the reference tokenizer).  The interval of a mean over several
cells is the mean of the cells' bounds: exact when their errors move together, wider than
the true interval otherwise (never falsely narrow).  Plain Python: nothing here imports
pytest or matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_budget._core.records import CellRecord

__all__ = [
    "AgentMove",
    "AgentPoint",
    "Frontier",
    "cell_tokens",
    "cell_usd",
    "frontier_lines",
    "frontiers",
    "headline_metric",
    "mark_dominated",
    "moves",
]

Direction = Literal["higher", "lower"]


def headline_metric(kind: str, cells: Sequence[CellRecord] = ()) -> tuple[str, Direction]:
    """The kind's headline score: its first gated metric (the first score its cells have,
    higher is better, for a kind with no gated metric)."""
    from pytest_budget._core.registry import cell_kind

    found = cell_kind(kind)
    if found is not None and found.metrics:
        spec = found.metrics[0]
        return spec.name, spec.direction
    for cell in cells:
        for name in cell.scores:
            return name, "higher"
    return "", "higher"


def cell_tokens(spend: Mapping[str, Any] | None) -> int:
    """Tokens a cell spent: what its models reported plus what its other agents wrote."""
    if not spend:
        return 0
    return int(
        spend.get("input_tokens", 0)
        + spend.get("output_tokens", 0)
        # reasoning tokens are within output_tokens
        + spend.get("counted_tokens", 0)
    )


def cell_usd(spend: Mapping[str, Any] | None) -> float | None:
    """USD a cell spent; None when it made no priced model call."""
    if not spend or not spend.get("calls"):
        return None
    usd = spend.get("usd")
    return float(usd) if isinstance(usd, int | float) and usd > 0 else None


@dataclass
class AgentPoint:
    """One agent on one kind's frontier."""

    agent: str
    cells: int
    scored: int  # cells with a headline score
    score: float | None
    interval: tuple[float, float] | None
    tokens_total: int
    usd_total: float | None  # None: some cell had no priced call
    dominated_by: list[str] = field(default_factory=list)

    @property
    def tokens_per_cell(self) -> float:
        return self.tokens_total / self.cells if self.cells else 0.0

    @property
    def usd_per_cell(self) -> float | None:
        return None if self.usd_total is None or not self.cells else self.usd_total / self.cells

    @property
    def dominated(self) -> bool:
        return bool(self.dominated_by)

    def spend(self, axis: str, per_cell: bool = True) -> float | None:
        if axis == "usd":
            return self.usd_per_cell if per_cell else self.usd_total
        return self.tokens_per_cell if per_cell else float(self.tokens_total)


@dataclass
class Frontier:
    """One kind's agents, with the headline metric and the spend axis they are drawn on."""

    kind: str
    metric: str
    direction: Direction
    axis: Literal["usd", "tokens"]
    points: list[AgentPoint]

    @property
    def axis_label(self) -> str:
        return "USD" if self.axis == "usd" else "tokens"

    def point(self, agent: str) -> AgentPoint | None:
        return next((p for p in self.points if p.agent == agent), None)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _point(agent: str, cells: Sequence[CellRecord], metric: str) -> AgentPoint:
    scores: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    for cell in cells:
        value = cell.scores.get(metric)
        if not isinstance(value, int | float) or not math.isfinite(value):
            continue
        scores.append(float(value))
        bounds = (cell.ci or {}).get(metric)
        if bounds is not None and len(bounds) == 2:
            lows.append(float(bounds[0]))
            highs.append(float(bounds[1]))
    usds = [cell_usd(cell.spend) for cell in cells]
    interval = None
    if scores and len(lows) == len(scores):
        low, high = _mean(lows), _mean(highs)
        if low is not None and high is not None:
            interval = (low, high)
    return AgentPoint(
        agent=agent,
        cells=len(cells),
        scored=len(scores),
        score=_mean(scores),
        interval=interval,
        tokens_total=sum(cell_tokens(cell.spend) for cell in cells),
        usd_total=None if any(u is None for u in usds) else sum(u for u in usds if u),
    )


def _better_or_equal(a: float, b: float, direction: Direction) -> bool:
    return a >= b if direction == "higher" else a <= b


def mark_dominated(frontier: Frontier) -> None:
    """Fill each point's ``dominated_by``: the agents at least as good on score and spend
    (per cell) and strictly better on one.  Agents without a score are not compared."""
    ranked = [
        (p, p.score, p.spend(frontier.axis))
        for p in frontier.points
        if p.score is not None and p.spend(frontier.axis) is not None
    ]
    for point in frontier.points:
        point.dominated_by = []
    for point, score, cost in ranked:
        for other, other_score, other_cost in ranked:
            if other is point:
                continue
            assert score is not None and other_score is not None  # narrowed above
            assert cost is not None and other_cost is not None
            no_worse = _better_or_equal(other_score, score, frontier.direction) and (
                other_cost <= cost
            )
            strictly = other_score != score or other_cost < cost
            if no_worse and strictly:
                point.dominated_by.append(other.agent)


def frontiers(cells: Iterable[CellRecord]) -> list[Frontier]:
    """One frontier per cell kind that has cells, agents in name order, dominance marked."""
    by_kind: dict[str, dict[str, list[CellRecord]]] = {}
    for cell in cells:
        if cell.suite and cell.agent:
            by_kind.setdefault(cell.suite, {}).setdefault(cell.agent, []).append(cell)
    out: list[Frontier] = []
    for kind, agents in by_kind.items():
        every = [cell for group in agents.values() for cell in group]
        metric, direction = headline_metric(kind, every)
        points = [_point(agent, agents[agent], metric) for agent in sorted(agents)]
        axis: Literal["usd", "tokens"] = (
            "usd" if points and all(p.usd_total is not None for p in points) else "tokens"
        )
        frontier = Frontier(kind, metric, direction, axis, points)
        mark_dominated(frontier)
        out.append(frontier)
    return out


def format_spend(value: float | None, axis: str) -> str:
    if value is None:
        return "-"
    if axis == "usd":
        return f"${value:.4f}"
    return f"{value:,.0f}"


def format_score(point: AgentPoint) -> str:
    if point.score is None:
        return "-"
    text = f"{point.score:.3f}"
    if point.interval is not None:
        text += f" [{point.interval[0]:.3f}, {point.interval[1]:.3f}]"
    return text


def verdict(point: AgentPoint) -> str:
    if point.score is None:
        return "no score"
    if point.dominated:
        return "dominated by " + ", ".join(point.dominated_by)
    return "frontier"


def frontier_rows(frontier: Frontier) -> list[list[str]]:
    """Agent, score [interval], spend per cell and in total, place: one row per agent."""
    return [
        [
            point.agent,
            format_score(point),
            format_spend(point.spend(frontier.axis), frontier.axis),
            format_spend(point.spend(frontier.axis, per_cell=False), frontier.axis),
            str(point.cells),
            verdict(point),
        ]
        for point in frontier.points
    ]


def frontier_headers(frontier: Frontier) -> list[str]:
    arrow = "higher" if frontier.direction == "higher" else "lower"
    return [
        "agent",
        f"{frontier.metric} ({arrow} is better)",
        f"{frontier.axis_label}/cell",
        f"{frontier.axis_label} total",
        "cells",
        "place",
    ]


def frontier_lines(cells: Iterable[CellRecord]) -> list[tuple[str, list[str]]]:
    """(title, lines) of the terminal's frontier table per kind."""
    from pytest_budget.report._text_table import render_table

    return [
        (
            f"budget: score against spend: {frontier.kind}",
            render_table(frontier_headers(frontier), frontier_rows(frontier)),
        )
        for frontier in frontiers(cells)
    ]


@dataclass(frozen=True)
class AgentMove:
    """How one agent moved on both axes between two runs of one kind."""

    kind: str
    agent: str
    metric: str
    axis: str
    base_score: float | None
    new_score: float | None
    base_spend: float | None
    new_spend: float | None
    base_place: str
    new_place: str

    @property
    def score_change(self) -> float | None:
        if self.base_score is None or self.new_score is None:
            return None
        return self.new_score - self.base_score

    @property
    def spend_change(self) -> float | None:
        if self.base_spend is None or self.new_spend is None:
            return None
        return self.new_spend - self.base_spend


def moves(base: Iterable[CellRecord], new: Iterable[CellRecord]) -> list[AgentMove]:
    """Each agent of a kind in both runs, with its score and spend per cell in each (spend
    on the axis both runs share: USD when both have it, else tokens)."""
    base_by = {f.kind: f for f in frontiers(base)}
    out: list[AgentMove] = []
    for after in frontiers(new):
        before = base_by.get(after.kind)
        if before is None:
            continue
        axis = "usd" if before.axis == after.axis == "usd" else "tokens"
        for point in after.points:
            old = before.point(point.agent)
            if old is None:
                continue
            out.append(
                AgentMove(
                    kind=after.kind,
                    agent=point.agent,
                    metric=after.metric,
                    axis=axis,
                    base_score=old.score,
                    new_score=point.score,
                    base_spend=old.spend(axis),
                    new_spend=point.spend(axis),
                    base_place=verdict(old),
                    new_place=verdict(point),
                )
            )
    return out
