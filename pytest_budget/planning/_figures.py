"""The planning figures of the CostBench paper, drawn from the report's planning cells.

- EMR and ANED vs task length (refinement level; static scenarios; paper Fig. 2);
- EMR and ANED per blocking type and count (Fig. 5);
- cost gap with and without redundant calls (static; App. D.2.1);
- failure-class counts (App. D.2).

Scores are averaged over the tasks (and, per blocking type, over refinement levels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.planning._cell_record import PlanningCellRecord
from pytest_budget.report._html.figures import (
    Chart,
    draw_chart,
    finish,
    group_mean,
    new_figure,
    number,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FAILURE_CLASSES", "planning_charts"]

#: Blocking modes in the order CostBench discusses them.
MODES = ("static", "ban_tool", "preference_change", "cost_change", "remove_tools")
#: (score key, label, colour): CostBench's four failure classes, then the finer invalid kinds.
FAILURE_CLASSES = (
    ("repeated_calls", "repeated", "#0072B2"),
    ("extra_calls", "extra (after goal)", "#56B4E9"),
    ("wrong_parameter_calls", "wrong parameters", "#D55E00"),
    ("inaccessible_calls", "inaccessible inputs", "#E69F00"),
    ("unknown_tool_calls", "unknown tool", "#CC79A7"),
    ("bad_id_calls", "bad answer id", "#009E73"),
    ("banned_retry_calls", "banned tool retried", "#7f7f7f"),
)


def _agents(cells: Sequence[PlanningCellRecord]) -> list[str]:
    return sorted({c.agent for c in cells})


def planning_charts(
    cells: Sequence[CellRecord], colors: Mapping[str, str], prefix: str
) -> list[Chart]:
    scored = [c for c in of_type(cells, PlanningCellRecord) if c.outcome != "error" and c.scores]
    levels = sorted({c.refinement_level for c in scored if c.mode == "static"})
    sweep_hint = (
        " This run has one static level only; sweep it with "
        "--budget-scenario=static@0,static@1,static@2,static@3,static@4,static@5."
        if len(levels) == 1
        else ""
    )
    return [
        draw_chart(
            f"{prefix}planning-length",
            "EMR and ANED vs task length",
            "Static scenarios (no blocking), mean over tasks. A task at refinement level L "
            "takes L + 3 atomic steps. EMR: share of episodes whose tool sequence is an "
            "optimal one (higher is better); ANED: edit distance to the nearest optimal "
            f"sequence, normalised (lower is better).{sweep_hint}",
            lambda: _by_length(scored, colors),
        ),
        draw_chart(
            f"{prefix}planning-blocking",
            "EMR and ANED per blocking type and count",
            "Mean over tasks and refinement levels for each scenario family (\u00d7N = N "
            "blocking events per episode). Blocking forces a re-plan mid-episode.",
            lambda: _by_blocking(scored, colors),
        ),
        draw_chart(
            f"{prefix}planning-costgap",
            "Cost gap with and without redundant calls",
            "Relative extra cost over the optimal path on static scenarios, mean over tasks: "
            "solid counts every call, hatched leaves out repeated calls and calls after the "
            "goal. The difference is what redundant calls cost. Lower is better.",
            lambda: _cost_gap(scored, colors),
        ),
        draw_chart(
            f"{prefix}planning-failures",
            "Failure classes",
            "Calls per failure class, summed over every cell of the agent (CostBench's four "
            "classes first: repeated, extra, wrong parameters, inaccessible). The number at "
            "the end of a bar is its total out of all calls the agent made.",
            lambda: _failures(scored),
        ),
    ]


def _agent_lines(
    ax: Any, cells: Sequence[PlanningCellRecord], agents: Sequence[str], colors: Mapping[str, str],
    xs: Sequence[int], metric: str,
) -> None:  # fmt: skip
    for agent in agents:
        means = group_mean(
            (c.refinement_level, number(c.scores.get(metric)))
            for c in cells if c.agent == agent
        )  # fmt: skip
        points = [(x, means[x]) for x in xs if means.get(x) is not None]
        if points:
            ax.plot(
                [p[0] for p in points], [p[1] for p in points], marker="o",
                color=colors.get(agent, "#777777"),
            )  # fmt: skip


def _by_length(cells: Sequence[PlanningCellRecord], colors: Mapping[str, str]) -> Figure | str:
    from matplotlib.lines import Line2D

    static = [c for c in cells if c.mode == "static"]
    if not static:
        return (
            "no static planning scenarios in this run; add some with "
            "--budget-scenario=static@1,static@3,static@5"
        )
    levels = sorted({c.refinement_level for c in static})
    agents = _agents(static)
    fig, axes = new_figure(1, 2, 4.6, 3.1)
    for ax, (metric, label) in zip(axes, (("emr", "EMR"), ("aned", "ANED")), strict=True):
        _agent_lines(ax, static, agents, colors, levels, metric)
        ax.set_xticks(levels, [f"L{lv}\n({lv + 3} steps)" for lv in levels])
        if len(levels) == 1:
            ax.set_xlim(levels[0] - 1, levels[0] + 1)
        ax.set_ylim(-0.04, 1.06)
        ax.set_xlabel("refinement level (task length)")
        ax.set_ylabel(label)
        ax.set_title(f"{label} vs task length")
    handles = [Line2D([], [], color=colors.get(a, "#777777"), marker="o") for a in agents]
    return finish(fig, handles, agents)


def _family(cell: PlanningCellRecord) -> tuple[int, int]:
    order = MODES.index(cell.mode) if cell.mode in MODES else len(MODES)
    return order, cell.block_count


def _family_label(cell: PlanningCellRecord) -> str:
    if cell.mode == "static":
        return "static"
    return f"{cell.mode.replace('_', ' ')} \u00d7{cell.block_count}"


def _by_blocking(cells: Sequence[PlanningCellRecord], colors: Mapping[str, str]) -> Figure | str:
    from matplotlib.patches import Patch

    if not cells:
        return "no scored planning cells"
    families = sorted({_family(c) for c in cells})
    labels = {(_family(c)): _family_label(c) for c in cells}
    agents = _agents(cells)
    width = 0.8 / max(len(agents), 1)
    fig, axes = new_figure(2, 1, max(6.0, 1.35 * len(families) + 2.0), 2.6)
    for ax, (metric, label) in zip(axes, (("emr", "EMR"), ("aned", "ANED")), strict=True):
        for i, agent in enumerate(agents):
            means = group_mean(
                (_family(c), number(c.scores.get(metric)))
                for c in cells if c.agent == agent
            )  # fmt: skip
            xs = [j for j, f in enumerate(families) if means.get(f) is not None]
            ys = [means[families[j]] for j in xs]
            offset = (i - (len(agents) - 1) / 2) * width
            ax.bar(
                [x + offset for x in xs], ys, width=width * 0.92,
                color=colors.get(agent, "#777777"),
            )  # fmt: skip
            for x, y in zip(xs, ys, strict=True):
                # a value label keeps a zero bar from looking like a missing one
                ax.annotate(
                    f"{y:.2f}", (x + offset, y), xytext=(0, 2), textcoords="offset points",
                    ha="center", fontsize=6, color="#333333",
                )  # fmt: skip
        ax.set_xticks(range(len(families)), [labels[f] for f in families])
        ax.set_ylim(0.0, 1.14)
        ax.set_ylabel(label)
        ax.set_title(f"{label} ({'higher' if metric == 'emr' else 'lower'} is better)")
        ax.grid(axis="x", visible=False)
    handles = [Patch(facecolor=colors.get(a, "#777777")) for a in agents]
    return finish(fig, handles, agents)


def _cost_gap(cells: Sequence[PlanningCellRecord], colors: Mapping[str, str]) -> Figure | str:
    from matplotlib.patches import Patch

    static = [c for c in cells if c.mode == "static"]
    agents = _agents(static)
    gap = group_mean((c.agent, number(c.scores.get("cost_gap"))) for c in static)
    clean = group_mean((c.agent, number(c.scores.get("cost_gap_clean"))) for c in static)
    agents = [a for a in agents if gap.get(a) is not None or clean.get(a) is not None]
    if not agents:
        return (
            "no cost gap in this run: it is measured on static scenarios only "
            "(--budget-scenario=static@2)"
        )
    fig, axes = new_figure(1, 1, 7.0, 0.55 * len(agents) + 0.9)
    ax = axes[0]
    peak = max([v for a in agents for v in (gap.get(a), clean.get(a)) if v is not None] + [0.01])
    for i, agent in enumerate(agents):
        color = colors.get(agent, "#777777")
        for offset, value, hatch in ((-0.2, gap.get(agent), None), (0.2, clean.get(agent), "///")):
            if value is None:
                continue
            ax.barh(
                i + offset, value, height=0.38, color=color, hatch=hatch,
                edgecolor="white" if hatch else color, alpha=0.55 if hatch else 1.0,
            )  # fmt: skip
            ax.annotate(
                f"{value:.3f}", (value, i + offset), xytext=(3, 0), textcoords="offset points",
                va="center", fontsize=7,
            )  # fmt: skip
    ax.set_yticks(range(len(agents)), agents)
    ax.set_ylim(len(agents) - 0.5, -0.5)
    ax.set_xlim(0.0, peak * 1.18)
    ax.set_xlabel("cost gap (extra cost / optimal cost)")
    ax.grid(axis="y", visible=False)
    handles = [
        Patch(facecolor="#666666"),
        Patch(facecolor="#bbbbbb", hatch="///", edgecolor="white"),
    ]
    return finish(fig, handles, ["with redundant calls", "without redundant calls"])


def _integer_ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _failures(cells: Sequence[PlanningCellRecord]) -> Figure | str:
    from matplotlib.patches import Patch

    agents = _agents(cells)
    if not agents:
        return "no scored planning cells"
    totals: dict[str, dict[str, float]] = {a: {} for a in agents}
    calls: dict[str, float] = dict.fromkeys(agents, 0.0)
    for cell in cells:
        agent = cell.agent
        scores = cell.scores
        calls[agent] += number(scores.get("total_calls")) or 0.0
        for key, _label, _color in FAILURE_CLASSES:
            totals[agent][key] = totals[agent].get(key, 0.0) + (number(scores.get(key)) or 0.0)
    fig, axes = new_figure(1, 1, 8.0, 0.5 * len(agents) + 1.0)
    ax = axes[0]
    peak = 1.0
    for i, agent in enumerate(agents):
        left = 0.0
        for key, _label, color in FAILURE_CLASSES:
            value = totals[agent].get(key, 0.0)
            if value:
                ax.barh(i, value, left=left, height=0.6, color=color)
            left += value
        peak = max(peak, left)
        ax.annotate(
            f"{left:g} of {calls[agent]:g} calls", (left, i), xytext=(4, 0),
            textcoords="offset points", va="center", fontsize=7.5,
        )  # fmt: skip
    ax.set_yticks(range(len(agents)), agents)
    ax.set_ylim(len(agents) - 0.5, -0.5)
    ax.set_xlim(0.0, peak * 1.3)
    ax.set_xlabel("calls")
    if peak == 1.0 and all(sum(totals[a].values()) == 0 for a in agents):
        ax.text(
            0.5, 0.5, "no failed or redundant calls in this run", transform=ax.transAxes,
            ha="center", va="center", color="#555555", fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "#cccccc", "boxstyle": "round,pad=0.4"},
        )  # fmt: skip
    ax.xaxis.set_major_locator(_integer_ticks())
    ax.grid(axis="y", visible=False)
    handles = [Patch(facecolor=color) for _key, _label, color in FAILURE_CLASSES]
    return finish(fig, handles, [label for _key, label, _color in FAILURE_CLASSES])
