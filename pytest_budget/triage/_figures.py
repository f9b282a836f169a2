"""The triage figures of the TRIAGE paper, drawn from the report's triage cells.

- eta_U vs eta_E bars per pool and agent at the main budget level, with the pool's base
  accuracy (Phase 0 solved share) as a dashed line (paper Fig. 1);
- eta and normalised regret across the alpha sweep (Fig. 2, 5 and 6 as lines);
- detection vs waste trajectories as the unsolvable ratio grows (Fig. 3).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_budget._core.records import CellRecord, of_type
from pytest_budget.report._html.figures import (
    Chart,
    agent_markers,
    draw_chart,
    finish,
    group_mean,
    hide_unused,
    interval_of,
    new_figure,
    number,
    panel_grid,
)
from pytest_budget.triage._cell_record import TriageCellRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["MAIN_ALPHA", "triage_charts"]

#: The paper's main report level; the nearest level in the run is used when it is absent.
MAIN_ALPHA = 0.5

#: What the helpers below read (triage_charts narrows the registry's records to it).
Cell = TriageCellRecord


def pool_family(name: object) -> str:
    """Chunks of one user pool file (``file#k``) are drawn as one pool (their mean)."""
    return str(name).split("#", 1)[0]


def _ratio(cell: Cell) -> float:
    return number(cell.unsolvable_ratio) or 0.0


def _main_alpha(cells: Sequence[Cell]) -> float | None:
    alphas = sorted({a for c in cells if (a := number(c.alpha)) is not None})
    if not alphas:
        return None
    return min(alphas, key=lambda a: (abs(a - MAIN_ALPHA), a))


def _first_variant(cells: Sequence[Cell]) -> str:
    variants = sorted({c.variant for c in cells if c.variant})
    return variants[0] if variants else "A"


def _agents(cells: Sequence[Cell]) -> list[str]:
    return sorted({c.agent for c in cells})


def _pools(cells: Sequence[Cell]) -> list[str]:
    return list(dict.fromkeys(pool_family(c.pool) for c in cells))


def _base_accuracy(cells: Sequence[Cell]) -> float | None:
    """Phase 0 solved share over the pool's items (mean over chunks)."""
    shares = []
    for cell in cells:
        phase0 = cell.phase0
        if phase0 is None:
            continue
        solved, items = number(phase0.get("solved")), number(phase0.get("items"))
        if solved is not None and items:
            shares.append(solved / items)
    return sum(shares) / len(shares) if shares else None


def triage_charts(
    cells: Sequence[CellRecord], colors: Mapping[str, str], prefix: str
) -> list[Chart]:
    """Every triage figure for these cells (one suite, one report)."""
    scored = [c for c in of_type(cells, TriageCellRecord) if c.outcome != "error"]
    alpha = _main_alpha(scored)
    variant = _first_variant(scored)
    alpha_text = "the main budget level" if alpha is None else f"\u03b1 = {alpha:g}"
    return [
        draw_chart(
            f"{prefix}triage-eta",
            f"Triage efficiency \u03b7_U vs \u03b7_E at {alpha_text}",
            "Solid bars: \u03b7_U (advisory allocations); hatched bars: \u03b7_E (allocations "
            "enforced as hard caps). \u03b7 = 1 is the oracle's plan, 0 the random ordering, "
            "below 0 worse than random. The red dashed line is the pool's base accuracy (share "
            "of items the solver got right in Phase 0); whiskers, when the report has them, "
            "are each cell's bootstrap confidence interval. Pools without injected unsolvable "
            f"items, prompt variant {variant}.",
            lambda: _eta_bars(scored, colors, alpha, variant),
        ),
        draw_chart(
            f"{prefix}triage-alpha",
            "\u03b7 and normalised regret across the budget sweep",
            "Each line is one agent: solid for the advisory regime (U), dashed for the "
            "enforced regime (E). Higher \u03b7 and lower regret are better; at \u03b1 = 1 the "
            "oracle and random often coincide, so \u03b7 says little there.",
            lambda: _alpha_sweep(scored, colors, variant),
        ),
        draw_chart(
            f"{prefix}triage-detection",
            "Detection vs waste as the unsolvable ratio grows",
            "Each agent's path through (waste, detection) as more of the pool is replaced "
            "by unsolvable items (bigger marker = higher ratio r). The star is the ideal "
            "corner: every unsolvable item left out, no tokens allocated to one. Add ratios "
            f"with --budget-unsolvable=0.25,0.5,0.75,1 for longer paths. Budget level: "
            f"{alpha_text}.",
            lambda: _detection_waste(scored, colors, alpha, variant),
        ),
    ]


def _eta_bars(
    cells: Sequence[Cell], colors: Mapping[str, str], alpha: float | None, variant: str
) -> Figure | str:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    lowest = min((_ratio(c) for c in cells), default=0.0)
    chosen = [
        c for c in cells
        if number(c.alpha) == alpha and _ratio(c) == lowest and c.variant == variant
    ]  # fmt: skip
    if not chosen:
        return "no scored triage cells"
    pools = _pools(chosen)
    agents = _agents(chosen)
    rows, cols = panel_grid(len(pools), 2)
    fig, axes = new_figure(rows, cols, max(3.6, 1.05 * len(agents) + 1.2), 3.4)
    for ax, pool in zip(axes, pools, strict=False):
        mine = [c for c in chosen if pool_family(c.pool) == pool]
        eta_u = group_mean((c.agent, number(c.scores.get("eta_u"))) for c in mine)
        eta_e = group_mean((c.agent, number(c.scores.get("eta_e"))) for c in mine)
        values = _eta_agent_bars(ax, agents, mine, eta_u, eta_e, colors)
        ax.axhline(0.0, color="#555555", linewidth=0.8)
        ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle=":")
        accuracy = _base_accuracy(mine)
        if accuracy is not None:
            ax.axhline(accuracy, color="#d62728", linewidth=1.4, linestyle="--")
        # the values go under the agent's name: whiskers leave no room for labels on bars
        ax.set_xticks(
            range(len(agents)),
            [_bar_label(agent, eta_u.get(agent), eta_e.get(agent)) for agent in agents],
            fontsize=7.5,
        )
        ax.set_title(f"pool {pool}")
        ax.set_ylabel("\u03b7")
        low, high = min([0.0, *values]), max([1.0, *values])
        pad = 0.06 * (high - low) + 0.04
        ax.set_ylim(low - pad, max(1.12, high + pad))
        nothing = _nothing_solved(mine)
        if nothing:
            # no eta where the solver solved none of the pool (V_oracle = 0, §3.2): say so
            ax.text(
                0.5, 0.97, nothing, transform=ax.transAxes, ha="center", va="top",
                fontsize=7.5, color="#8a5a00",
                bbox={"boxstyle": "round,pad=0.3", "fc": "#fff8e1", "ec": "#f0b400", "lw": 0.6},
            )  # fmt: skip
        ax.grid(axis="x", visible=False)
    hide_unused(axes, len(pools))
    return finish(
        fig,
        [
            Patch(facecolor="#666666"),
            Patch(facecolor="#bbbbbb", hatch="///", edgecolor="white"),
            Line2D([], [], color="#d62728", linestyle="--"),
            Line2D([], [], color="#999999", linestyle=":"),
        ],
        ["\u03b7_U (advisory)", "\u03b7_E (enforced)", "base accuracy", "oracle (\u03b7 = 1)"],
    )


def _eta_agent_bars(
    ax: Axes,
    agents: Sequence[str],
    mine: Sequence[Cell],
    eta_u: Mapping[str, float],
    eta_e: Mapping[str, float],
    colors: Mapping[str, str],
) -> list[float]:
    """Each agent's eta_U and eta_E bars in one pool's panel, with the bootstrap whiskers
    of a single cell; the values drawn (the axis makes room for them)."""
    values = []
    for i, agent in enumerate(agents):
        own = [c for c in mine if c.agent == agent]
        for offset, metric, value, hatch in (
            (-0.2, "eta_u", eta_u.get(agent), None),
            (0.2, "eta_e", eta_e.get(agent), "///"),
        ):
            if value is None:
                continue
            values.append(value)
            ax.bar(
                i + offset, value, width=0.38, color=colors.get(agent, "#777777"),
                hatch=hatch, edgecolor="white" if hatch else colors.get(agent, "#777777"),
                alpha=0.55 if hatch else 1.0, linewidth=0.0 if not hatch else 0.8,
            )  # fmt: skip
            # whiskers: the cell's bootstrap interval (one cell per bar only; a mean
            # over chunks has no interval of its own)
            bounds = interval_of(own[0], metric) if len(own) == 1 else None
            if bounds is not None:
                lo, hi = bounds
                ax.errorbar(
                    [i + offset], [value],
                    yerr=[[max(value - lo, 0.0)], [max(hi - value, 0.0)]],
                    fmt="none", ecolor="#333333", elinewidth=0.9, capsize=2.5,
                )  # fmt: skip
                values.extend((lo, hi))  # the axis makes room for the whole whisker
    return values


def _nothing_solved(cells: Sequence[Cell]) -> str | None:
    """The note for a panel where some cells have no eta because the solver solved none
    of their pool's items (a bar there would otherwise be a mean over the other chunks)."""
    empty = {str(c.pool) for c in cells if c.eta_note is not None and "solved none" in c.eta_note}
    if not empty:
        return None
    pools = {str(c.pool) for c in cells}
    if empty == pools:
        return "no \u03b7: the solver solved none of the pool's items (V_oracle = 0)"
    return (
        f"\u03b7 over {len(pools) - len(empty)} of {len(pools)} chunks: the solver solved "
        f"nothing in {', '.join(sorted(empty))} (V_oracle = 0)"
    )


def _bar_label(agent: str, eta_u: float | None, eta_e: float | None) -> str:
    name = "\n".join(textwrap.wrap(agent, 16, break_on_hyphens=True)) or agent
    u = "\u2013" if eta_u is None else f"{eta_u:.2f}"
    e = "\u2013" if eta_e is None else f"{eta_e:.2f}"
    return f"{name}\nU {u} \u00b7 E {e}"


def _alpha_sweep(cells: Sequence[Cell], colors: Mapping[str, str], variant: str) -> Figure | str:
    from matplotlib.lines import Line2D

    lowest = min((_ratio(c) for c in cells), default=0.0)
    chosen = [c for c in cells if _ratio(c) == lowest and c.variant == variant]
    alphas = sorted({a for c in chosen if (a := number(c.alpha)) is not None})
    if not chosen or not alphas:
        return "no scored triage cells"
    pools = _pools(chosen)
    agents = _agents(chosen)
    fig, axes = new_figure(2, len(pools), 3.9, 2.7)
    for col, pool in enumerate(pools):
        mine = [c for c in chosen if pool_family(c.pool) == pool]
        for row, (metric, label) in enumerate((("eta", "\u03b7"), ("regret", "normalised regret"))):
            ax = axes[row * len(pools) + col]
            for agent in agents:
                for regime, style in (("u", "-"), ("e", "--")):
                    means = group_mean(
                        (number(c.alpha), number(c.scores.get(f"{metric}_{regime}")))
                        for c in mine
                        if c.agent == agent
                    )
                    xs = [a for a in alphas if means.get(a) is not None]
                    ys = [means[a] for a in xs]
                    if xs:
                        ax.plot(xs, ys, style, marker="o", color=colors.get(agent, "#777777"))
            ax.set_xticks(alphas, [f"{a:g}" for a in alphas])
            ax.set_xlabel("budget level \u03b1")
            ax.set_ylabel(label)
            if metric == "eta":
                ax.axhline(0.0, color="#555555", linewidth=0.8)
            ax.set_title(f"pool {pool}: {label}")
    handles = [Line2D([], [], color=colors.get(a, "#777777"), marker="o") for a in agents]
    handles += [
        Line2D([], [], color="#444444", linestyle="-"),
        Line2D([], [], color="#444444", linestyle="--"),
    ]
    return finish(fig, handles, [*agents, "advisory (U)", "enforced (E)"])


def _detection_waste(
    cells: Sequence[Cell], colors: Mapping[str, str], alpha: float | None, variant: str
) -> Figure | str:
    from matplotlib.lines import Line2D

    chosen = [
        c for c in cells
        if number(c.alpha) == alpha and c.variant == variant and _ratio(c) > 0
    ]  # fmt: skip
    if not chosen:
        return (
            "no cells with injected unsolvable items at this budget level; run with "
            "--budget-unsolvable=0.25,0.5,0.75,1"
        )
    pools = _pools(chosen)
    agents = _agents(chosen)
    markers = agent_markers(agents)
    rows, cols = panel_grid(len(pools), 2)
    fig, axes = new_figure(rows, cols, 4.2, 3.4)
    for ax, pool in zip(axes, pools, strict=False):
        mine = [c for c in chosen if pool_family(c.pool) == pool]
        ax.scatter(
            [0.0], [1.0], marker="*", s=520, facecolor="#f3f3f3", edgecolor="#a0a0a0",
            linewidth=0.8, zorder=1,
        )  # fmt: skip
        ax.annotate("ideal", (0.0, 1.0), xytext=(10, -14), textcoords="offset points", fontsize=7)
        for agent in agents:
            ratios = sorted({_ratio(c) for c in mine if c.agent == agent})
            det = group_mean(
                (_ratio(c), number(c.scores.get("detection"))) for c in mine if c.agent == agent
            )
            waste = group_mean(
                (_ratio(c), number(c.scores.get("waste"))) for c in mine if c.agent == agent
            )
            points = [
                (waste[r], det[r], r)
                for r in ratios
                if waste.get(r) is not None and det.get(r) is not None
            ]
            if not points:
                continue
            color = colors.get(agent, "#777777")
            ax.plot([p[0] for p in points], [p[1] for p in points], color=color, linewidth=1.2)
            ax.scatter(
                [p[0] for p in points], [p[1] for p in points],
                s=[50 + 110 * p[2] for p in points], marker=markers[agent],
                facecolor="none", edgecolor=color, linewidth=1.6, zorder=3,
            )  # fmt: skip
        ax.set_xlim(-0.06, 1.06)
        ax.set_ylim(-0.06, 1.1)
        ax.set_xlabel("waste W (share of allocation on unsolvable items)")
        ax.set_ylabel("detection D")
        present = sorted({_ratio(c) for c in mine})
        ratios_text = ", ".join(f"{r:g}" for r in present)
        ax.set_title(f"pool {pool} (r = {ratios_text})")
    hide_unused(axes, len(pools))
    handles = [
        Line2D([], [], color=colors.get(a, "#777777"), marker=markers[a], markerfacecolor="none")
        for a in agents
    ]
    return finish(fig, handles, agents)
