"""The awareness figures of the BAGEN paper, drawn from the report's awareness cells.

- optimistic vs conservative misses by rollout-progress bin (paper Fig. 5 / 11);
- share of failed rollouts still predicted feasible vs budget consumed (Fig. 7);
- early-stop savings vs false-abort rate per estimator (Table 6);
- interval width over progress, per budget dimension (Fig. 12);
- agent vs linear-extrapolation error by progress bin (Fig. 3).

The last three curves come from each cell's ``curves`` object; the miss bins from its
``scores`` (``optimistic_bin<i>``, ``conservative_bin<i>``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.awareness._cell_records import AwarenessCellRecord
from pytest_budget.report._html.figures import (
    Chart,
    agent_markers,
    draw_chart,
    finish,
    hide_unused,
    new_figure,
    number,
    panel_grid,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["awareness_charts"]

#: Linewidths from thick to thin, so estimators whose curves coincide all stay visible.
_WIDTHS = (4.0, 3.2, 2.5, 1.9, 1.4, 1.2, 1.1, 1.0, 0.9, 0.8)


def _envs(cells: Sequence[AwarenessCellRecord]) -> list[str]:
    return list(dict.fromkeys(c.env for c in cells))


def _agents(cells: Sequence[AwarenessCellRecord]) -> list[str]:
    return sorted({c.agent for c in cells})


def _curves(cell: AwarenessCellRecord) -> Mapping[str, Any]:
    return cell.curves if cell.curves is not None else {}


def _series(values: object) -> list[float | None]:
    return [number(v) for v in values] if isinstance(values, list) else []


def _bin_labels(edges: Sequence[float]) -> list[str]:
    """Short tick labels, ``0-20`` ... (the axis label says they are percent of k / T)."""
    return [f"{lo * 100:.0f}\u2013{hi * 100:.0f}" for lo, hi in itertools.pairwise(edges)]


def _edges(cells: Sequence[AwarenessCellRecord], bins: int) -> list[float]:
    for cell in cells:
        edges = _series(_curves(cell).get("bin_edges"))
        if len(edges) == bins + 1 and all(e is not None for e in edges):
            return [float(e) for e in edges if e is not None]
    return [i / bins for i in range(bins + 1)]


def _legend(agents: Sequence[str], colors: Mapping[str, str]) -> list[Any]:
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=colors.get(a, "#777777"), marker="o") for a in agents]


def awareness_charts(
    cells: Sequence[CellRecord], colors: Mapping[str, str], prefix: str
) -> list[Chart]:
    scored = [c for c in of_type(cells, AwarenessCellRecord) if c.outcome != "error" and c.scores]
    return [
        draw_chart(
            f"{prefix}awareness-misses",
            "Optimistic vs conservative misses by rollout progress",
            "Share of interval answers (on probes that are truly feasible) whose interval "
            "misses the true remaining budget: above the zero line the interval was too low "
            "(optimistic, solid), below it too high (conservative, dashed). BAGEN finds "
            "optimistic misses dominate at every stage. Estimators that never answer with an "
            "interval have no line.",
            lambda: _misses(scored, colors),
        ),
        draw_chart(
            f"{prefix}awareness-late",
            "Late recognition: failed rollouts still predicted feasible",
            "For rollouts that fail (or finish over budget), the share the estimator has not "
            "yet called impossible once a given share of the budget is consumed. A curve "
            "that drops early recognises failure early; a flat line at 1 never does.",
            lambda: _late(scored, colors),
        ),
        draw_chart(
            f"{prefix}awareness-earlystop",
            "Early stop: tokens saved vs false aborts",
            "Stopping each rollout at the first 'impossible' answer: share of the failed "
            "rollouts' tokens saved (up is better) against the share of probes of "
            "successful rollouts wrongly called impossible (left is better).",
            lambda: _early_stop(scored, colors),
        ),
        draw_chart(
            f"{prefix}awareness-width",
            "Interval width over rollout progress",
            "Mean predicted interval width divided by the budget cap, per progress bin "
            "(Warehouse: one panel per budget dimension). A budget-aware estimator narrows "
            "its interval as the rollout reveals its cost.",
            lambda: _per_dimension(scored, colors, "width", "width / budget"),
        ),
        draw_chart(
            f"{prefix}awareness-linear",
            "Agent vs linear extrapolation",
            "Mean absolute error of linear extrapolation (C_k / k \u00b7 T \u2212 C_k) minus the "
            "estimator's midpoint error, divided by the budget cap, on the same probes. Above "
            "zero the estimator is closer to the true remaining budget than extrapolation.",
            lambda: _per_dimension(
                scored, colors, "reduction", "error reduction / budget", zero_line=True
            ),
        ),
    ]


def _miss_bins(scores: Mapping[str, Any]) -> int:
    count = 0
    while f"optimistic_bin{count}" in scores:
        count += 1
    return count


def _misses(cells: Sequence[AwarenessCellRecord], colors: Mapping[str, str]) -> Figure | str:
    bins = max((_miss_bins(c.scores) for c in cells), default=0)
    if not cells or bins == 0:
        return "no scored awareness cells with miss bins"
    envs = _envs(cells)
    agents = _agents(cells)
    edges = _edges(cells, bins)
    rows, cols = panel_grid(len(envs), 3)
    fig, axes = new_figure(rows, cols, 3.8, 2.9)
    xs = list(range(bins))
    for ax, env in zip(axes, envs, strict=False):
        peak = 0.1
        for index, agent in enumerate(agents):
            cell = next((c for c in cells if c.env == env and c.agent == agent), None)
            if cell is None:
                continue
            scores = cell.scores
            low = [number(scores.get(f"optimistic_bin{i}")) for i in xs]
            high = [number(scores.get(f"conservative_bin{i}")) for i in xs]
            color = colors.get(agent, "#777777")
            width = _WIDTHS[index % len(_WIDTHS)]
            _plot_gappy(ax, xs, low, color, "-", sign=1.0, width=width)
            _plot_gappy(ax, xs, high, color, "--", sign=-1.0, width=width)
            peak = max([peak, *(v for v in low + high if v is not None)])
        limit = min(1.05, peak * 1.15)
        ax.axhspan(0.0, limit, color="#E69F00", alpha=0.07, linewidth=0)
        ax.axhspan(-limit, 0.0, color="#56B4E9", alpha=0.07, linewidth=0)
        ax.axhline(0.0, color="#555555", linewidth=0.8)
        ax.set_ylim(-limit, limit)
        ax.set_xticks(xs, _bin_labels(edges), rotation=0)
        ax.set_xlabel("rollout progress k / T (%)")
        ax.set_ylabel("share of intervals missing")
        ax.yaxis.set_major_formatter(_abs_percent())
        for y, text in ((0.75, "optimistic"), (0.25, "conservative")):
            ax.text(
                1.02, y, text, transform=ax.transAxes, rotation=270, va="center",
                ha="left", fontsize=7.5, color="#555555",
            )  # fmt: skip
        ax.set_title(env)
    hide_unused(axes, len(envs))
    return finish(fig, _legend(agents, colors), agents)


def _abs_percent() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _pos: f"{abs(value):.0%}")


def _plot_gappy(
    ax: Axes,
    xs: Sequence[int],
    ys: Sequence[float | None],
    color: str,
    style: str,
    sign: float,
    *,
    width: float = 1.8,
) -> None:
    """A line through the present values (bins without probes are skipped, not zero).

    Estimators drawn first get thicker lines, so curves that coincide stay visible.
    """
    points = [(x, sign * y) for x, y in zip(xs, ys, strict=False) if y is not None]
    if points:
        ax.plot(
            [p[0] for p in points], [p[1] for p in points], style, marker="o", color=color,
            linewidth=width, markersize=max(3.0, width + 2.2),
        )  # fmt: skip


def _late(cells: Sequence[AwarenessCellRecord], colors: Mapping[str, str]) -> Figure | str:
    envs = _envs(cells)
    agents = _agents(cells)
    if not envs:
        return "no scored awareness cells"
    rows, cols = panel_grid(len(envs), 3)
    fig, axes = new_figure(rows, cols, 3.8, 2.9)
    drawn = 0
    for ax, env in zip(axes, envs, strict=False):
        failed = 0
        for index, agent in enumerate(agents):
            cell = next((c for c in cells if c.env == env and c.agent == agent), None)
            late = _curves(cell).get("late_recognition") if cell is not None else None
            if not isinstance(late, Mapping):
                continue
            failed = int(number(late.get("failed_rollouts")) or 0)
            xs = _series(late.get("budget_share"))
            ys = _series(late.get("still_feasible"))
            points = [
                (x, y) for x, y in zip(xs, ys, strict=False) if x is not None and y is not None
            ]
            if not points:
                continue
            ax.step(
                [p[0] for p in points], [p[1] for p in points], where="post",
                color=colors.get(agent, "#777777"), linewidth=_WIDTHS[index % len(_WIDTHS)],
            )  # fmt: skip
            drawn += 1
        if failed == 0:
            ax.text(0.5, 0.5, "no failed rollouts", ha="center", va="center",
                    transform=ax.transAxes, color="#777777")  # fmt: skip
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(-0.04, 1.06)
        ax.set_xlabel("share of budget consumed")
        ax.set_ylabel("still predicted feasible")
        ax.xaxis.set_major_formatter(_abs_percent())
        ax.yaxis.set_major_formatter(_abs_percent())
        ax.set_title(f"{env} ({failed} failed)")
    hide_unused(axes, len(envs))
    if drawn == 0:
        return "no late-recognition curves in these cells (reports before this field existed)"
    return finish(fig, _legend(agents, colors), agents)


def _early_stop(cells: Sequence[AwarenessCellRecord], colors: Mapping[str, str]) -> Figure | str:
    envs = _envs(cells)
    agents = _agents(cells)
    markers = agent_markers(agents)
    if not envs:
        return "no scored awareness cells"
    rows, cols = panel_grid(len(envs), 3)
    fig, axes = new_figure(rows, cols, 3.5, 2.9)
    for ax, env in zip(axes, envs, strict=False):
        ax.scatter(
            [0.0], [1.0], marker="*", s=480, facecolor="#f3f3f3", edgecolor="#a0a0a0",
            linewidth=0.8, zorder=1,
        )  # fmt: skip
        ax.annotate("ideal", (0.0, 1.0), xytext=(10, -14), textcoords="offset points", fontsize=7)
        for agent in agents:
            cell = next((c for c in cells if c.env == env and c.agent == agent), None)
            if cell is None:
                continue
            scores = cell.scores
            x, y = number(scores.get("false_abort_rate")), number(scores.get("saved_token_share"))
            if x is None or y is None:
                continue
            ax.scatter(
                [x], [y], s=70, marker=markers[agent], facecolor="none",
                edgecolor=colors.get(agent, "#777777"), linewidth=1.8, zorder=3,
            )  # fmt: skip
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("false-abort rate")
        ax.set_ylabel("failed-rollout tokens saved")
        ax.xaxis.set_major_formatter(_abs_percent())
        ax.yaxis.set_major_formatter(_abs_percent())
        ax.set_title(env)
    hide_unused(axes, len(envs))
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], linestyle="", marker=markers[a], markerfacecolor="none",
               markeredgecolor=colors.get(a, "#777777"), markeredgewidth=1.8, markersize=8)
        for a in agents
    ]  # fmt: skip
    return finish(fig, handles, agents)


def _dimension_panels(cells: Sequence[AwarenessCellRecord]) -> list[tuple[str, str]]:
    """(env, dimension) per panel, in the cells' order; an env's dimensions as recorded."""
    panels: list[tuple[str, str]] = []
    for cell in cells:
        dims = _curves(cell).get("dimensions")
        if not isinstance(dims, Mapping):
            continue
        for dim in dims:
            key = (cell.env, str(dim))
            if key not in panels:
                panels.append(key)
    return panels


def _per_dimension(
    cells: Sequence[AwarenessCellRecord],
    colors: Mapping[str, str],
    kind: str,
    ylabel: str,
    *,
    zero_line: bool = False,
) -> Figure | str:
    panels = _dimension_panels(cells)
    if not panels:
        return "no progress curves in these cells (reports before this field existed)"
    agents = _agents(cells)
    multi = {env for env, _ in panels if sum(1 for e, _ in panels if e == env) > 1}
    rows, cols = panel_grid(len(panels), 4)
    fig, axes = new_figure(rows, cols, 3.1, 2.7)
    bins = 0
    for ax, (env, dim) in zip(axes, panels, strict=False):
        for index, agent in enumerate(agents):
            cell = next((c for c in cells if c.env == env and c.agent == agent), None)
            dims = _curves(cell).get("dimensions") if cell is not None else None
            curve = dims.get(dim) if isinstance(dims, Mapping) else None
            if not isinstance(curve, Mapping):
                continue
            if kind == "width":
                ys = _series(curve.get("width"))
            else:
                agent_err = _series(curve.get("agent_error"))
                linear_err = _series(curve.get("linear_error"))
                ys = [
                    None if a is None or b is None else b - a
                    for a, b in zip(agent_err, linear_err, strict=False)
                ]
            bins = max(bins, len(ys))
            _plot_gappy(
                ax, list(range(len(ys))), ys, colors.get(agent, "#777777"), "-", 1.0,
                width=_WIDTHS[index % len(_WIDTHS)],
            )  # fmt: skip
        if zero_line:
            ax.axhline(0.0, color="#555555", linewidth=0.8)
        ax.set_title(f"{env}: {dim}" if env in multi else env)
        ax.set_xlabel("rollout progress k / T (%)")
        ax.set_ylabel(ylabel)
    edges = _edges(cells, bins)
    for ax in axes[: len(panels)]:
        ax.set_xticks(range(bins), _bin_labels(edges))
    hide_unused(axes, len(panels))
    return finish(fig, _legend(agents, colors), agents)
