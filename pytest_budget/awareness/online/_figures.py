"""The awareness online mode's figure: success and estimate error against the cap level.

One panel pair per environment (and protocol when several ran): for each agent, the share
of runs that succeed within the cap (solid; dotted: the same agent in replay mode) and the
median midpoint error of its online estimates (MRE P50), each against the cap multiplier.
Read from the ``awareness-online`` cells' ``cap_multiplier`` and ``scores``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.awareness._cell_records import OnlineCellRecord
from pytest_budget.report._html.figures import (
    Chart,
    draw_chart,
    finish,
    new_figure,
    number,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["online_charts"]


def online_charts(
    cells: Sequence[CellRecord], colors: Mapping[str, str], prefix: str
) -> list[Chart]:
    scored = [c for c in of_type(cells, OnlineCellRecord) if c.outcome != "error" and c.scores]
    return [
        draw_chart(
            f"{prefix}awareness-online-caps",
            "Success and estimate error vs cap (online mode)",
            "Per environment, for each agent: the share of runs that succeed within the cap "
            "(left; solid online, dotted the same agent acting in replay mode with no budget "
            "shown) and the median relative error of its online interval midpoints against "
            "the realized remaining budget (right), at each cap level (multiples of the "
            "environment's cap). A budget-aware agent keeps its estimates consistent across "
            "levels and trades little success for the tokens it saves by stopping.",
            lambda: _caps(scored, colors),
        )
    ]


def _groups(cells: Sequence[OnlineCellRecord]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((c.env, str(c.protocol)) for c in cells))


def _caps(cells: Sequence[OnlineCellRecord], colors: Mapping[str, str]) -> Figure | str:
    if not cells:
        return "no scored online cells"
    groups = _groups(cells)
    several = len({protocol for _, protocol in groups}) > 1
    agents = sorted({c.agent for c in cells})
    fig, axes = new_figure(len(groups), 2, 3.6, 2.6)
    for row, (env, protocol) in enumerate(groups):
        success_ax, error_ax = axes[2 * row], axes[2 * row + 1]
        for agent in agents:
            mine = sorted(
                (
                    c
                    for c in cells
                    if (c.env, str(c.protocol)) == (env, protocol) and c.agent == agent
                ),
                key=lambda c: number(c.cap_multiplier) or 0.0,
            )
            xs = [number(c.cap_multiplier) for c in mine]
            color = colors.get(agent, "#777777")
            for ax, key, style in (
                (success_ax, "success_rate", "-"),
                (success_ax, "replay_success_rate", ":"),
                (error_ax, "mre_p50", "-"),
            ):
                points = [
                    (x, y)
                    for x, c in zip(xs, mine, strict=True)
                    if x is not None and (y := number(c.scores.get(key))) is not None
                ]
                if points:
                    ax.plot(*zip(*points, strict=True), style, color=color, marker="o")
        title = f"{env} ({protocol})" if several else env
        success_ax.set_title(f"{title}: success")
        success_ax.set_ylim(-0.03, 1.03)
        error_ax.set_title(f"{title}: estimate error")
        levels = sorted({x for c in cells if (x := number(c.cap_multiplier))})
        for ax in (success_ax, error_ax):
            ax.set_xscale("log", base=2)
            ax.set_xticks(levels, [f"{x:g}x" for x in levels])
            ax.minorticks_off()
            ax.set_xlabel("cap (x environment cap)")
        success_ax.set_ylabel("share of runs")
        error_ax.set_ylabel("MRE P50")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors.get(a, "#777777"), marker="o") for a in agents]
    return finish(fig, handles, agents)
