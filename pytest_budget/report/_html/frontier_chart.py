"""The score-against-spend figure and table of one cell kind
(:mod:`pytest_budget.report._frontier`).

Two panels share the score axis: spend per cell (left) and in total (right).  Each agent
is one marker in its colour with its interval as a vertical bar; agents on the frontier
are filled and joined by a dashed step line, dominated agents are hollow and labelled
"dominated".  The table beside it says the same in numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from pytest_budget.report._frontier import (
    Frontier,
    frontier_headers,
    frontier_rows,
    frontiers,
)
from pytest_budget.report._html.figures import agent_markers, draw_chart, finish, new_figure
from pytest_budget.report._html.layout import Cell, chart_html

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["frontier_section"]


def _panel(ax: Axes, frontier: Frontier, colors: Mapping[str, str], per_cell: bool) -> None:
    markers = agent_markers(p.agent for p in frontier.points)
    shown = [p for p in frontier.points if p.score is not None]
    for point in shown:
        x = point.spend(frontier.axis, per_cell)
        if x is None or point.score is None:
            continue
        color = colors.get(point.agent, "#000000")
        if point.interval is not None:
            low, high = point.interval
            ax.errorbar(
                [x], [point.score], yerr=[[point.score - low], [high - point.score]],
                fmt="none", ecolor=color, elinewidth=1.2, capsize=3, alpha=0.8,
            )  # fmt: skip
        ax.plot(
            [x], [point.score], linestyle="none", marker=markers[point.agent], markersize=8,
            markeredgecolor=color, markeredgewidth=1.6,
            markerfacecolor="white" if point.dominated else color,
        )  # fmt: skip
        if point.dominated:
            ax.annotate(
                "dominated", (x, point.score), textcoords="offset points", xytext=(6, -10),
                fontsize=7.5, color="#555555",
            )  # fmt: skip
    best = sorted(
        (p.spend(frontier.axis, per_cell), p.score)
        for p in shown
        if not p.dominated and p.spend(frontier.axis, per_cell) is not None
    )
    if len(best) > 1:
        xs = [float(x) for x, _ in best if x is not None]
        ys = [float(y) for _, y in best if y is not None]
        ax.step(xs, ys, where="post", linestyle="--", color="#7f7f7f", linewidth=1.0)
    ax.margins(x=0.18, y=0.08)  # room for the "dominated" labels inside the axes
    where = "per cell" if per_cell else "in total"
    ax.set_xlabel(f"{frontier.axis_label} {where}")
    ax.set_ylabel(f"{frontier.metric} ({frontier.direction} is better)")
    ax.set_title(f"score against {frontier.axis_label} {where}")
    spends = [x for p in shown if (x := p.spend(frontier.axis, per_cell)) is not None and x > 0]
    if spends and max(spends) > 20 * min(spends):  # one agent far dearer: a log axis
        ax.set_xscale("log")
    elif frontier.axis == "tokens":
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)


def _draw(frontier: Frontier, colors: Mapping[str, str]) -> Figure | str:
    if not any(p.score is not None for p in frontier.points):
        return f"no agent has a {frontier.metric} score"
    from matplotlib.lines import Line2D

    fig, axes = new_figure(1, 2, 4.2, 3.0)
    _panel(axes[0], frontier, colors, per_cell=True)
    _panel(axes[1], frontier, colors, per_cell=False)
    markers = agent_markers(p.agent for p in frontier.points)
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=markers[p.agent],
            markersize=7,
            markeredgecolor=colors.get(p.agent, "#000000"),
            markerfacecolor="white" if p.dominated else colors.get(p.agent, "#000000"),
        )
        for p in frontier.points
    ]
    labels = [p.agent + (" (dominated)" if p.dominated else "") for p in frontier.points]
    return finish(fig, handles, labels)


def _table(frontier: Frontier) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in frontier_headers(frontier))
    rows = []
    for point, row in zip(frontier.points, frontier_rows(frontier), strict=True):
        place = "dominated" if point.dominated else ("frontier" if point.score is not None else "")
        tds = "".join(
            f'<td class="num">{escape(v)}</td>' if 0 < i < 5 else f"<td>{escape(v)}</td>"
            for i, v in enumerate(row)
        )
        rows.append(f'<tr data-agent="{escape(point.agent)}" data-place="{place}">{tds}</tr>')
    return (
        '<div class="table-wrap"><table class="frontier"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def frontier_section(
    kind: str, cells: Sequence[Cell], colors: Mapping[str, str], prefix: str
) -> str:
    """The kind's figure and table of score against spend ('' without cells)."""
    found = [f for f in frontiers(cells) if f.kind == kind]
    if not found or not found[0].metric:
        return ""
    frontier = found[0]
    chart = draw_chart(
        f"{prefix}{kind}-frontier",
        "Score against spend",
        f" Each agent's mean {frontier.metric} (bar: its interval) against its "
        f"{frontier.axis_label} per cell and in total. Filled markers and the dashed line: "
        "the frontier; hollow: dominated (another agent is at least as good on both axes and "
        "better on one, spend per cell).",
        lambda: _draw(frontier, colors),
    )
    return (
        f'<div class="frontier" data-kind="{escape(kind)}"><h3>What each agent buys</h3>'
        + chart_html(chart, prefix)
        + _table(frontier)
        + "</div>"
    )


def _signed(value: float | None, axis: str | None = None) -> str:
    if value is None:
        return "\u2013"
    if axis == "usd":
        return f"{value:+.4f} $"
    if axis == "tokens":
        return f"{value:+,.0f}"
    return f"{value:+.3f}"


def moves_section(kind: str, base_cells: Sequence[Cell], new_cells: Sequence[Cell]) -> str:
    """How each agent of ``kind`` moved on score and spend per cell between two runs."""
    from pytest_budget.report._frontier import format_spend, moves

    found = [m for m in moves(base_cells, new_cells) if m.kind == kind]
    if not found:
        return ""
    axis = found[0].axis
    label = "USD" if axis == "usd" else "tokens"
    head = "".join(
        f"<th>{escape(h)}</th>"
        for h in (
            "agent", f"{found[0].metric} baseline", "new", "change", f"{label}/cell baseline",
            "new", "change", "place baseline", "place new",
        )
    )  # fmt: skip
    rows = []
    for move in found:
        score_change = move.score_change
        better = score_change is not None and (score_change > 0) == (_direction(kind) == "higher")
        tone = "" if not score_change else (' class="better"' if better else ' class="worse"')
        values = [
            f"<td>{escape(move.agent)}</td>",
            f'<td class="num">{_plain(move.base_score)}</td>',
            f'<td class="num">{_plain(move.new_score)}</td>',
            f"<td{tone}>{escape(_signed(score_change))}</td>",
            f'<td class="num">{escape(format_spend(move.base_spend, axis))}</td>',
            f'<td class="num">{escape(format_spend(move.new_spend, axis))}</td>',
            f'<td class="num">{escape(_signed(move.spend_change, axis))}</td>',
            f"<td>{escape(move.base_place)}</td>",
            f"<td>{escape(move.new_place)}</td>",
        ]
        rows.append(f'<tr data-agent="{escape(move.agent)}">{"".join(values)}</tr>')
    return (
        "<h3>How each agent moved: score and spend</h3>"
        '<div class="table-wrap"><table class="frontier-moves"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _plain(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.3f}"


def _direction(kind: str) -> str:
    from pytest_budget.report._frontier import headline_metric

    return headline_metric(kind)[1]
