"""Matplotlib plumbing shared by every suite's figures: one fixed style, colours, PNG.

Figures are drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas (no
pyplot, so no global figure registry and no interactive backend), inside one fixed
``rc_context``: the same report gives the same pixels.  Each figure is returned as a
:class:`Chart` holding a base64 PNG, or a short note saying why it could not be drawn
(the type is data, :mod:`pytest_budget._core.page_parts`, so the registry can name it; re-exported
here).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import io
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pytest_budget._core.page_parts import Chart
from pytest_budget._core.records import CellRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "Chart",
    "agent_colors",
    "deferred",
    "draw_chart",
    "finish_pair",
    "new_figure",
    "number",
    "panel_grid",
]

#: CSS pixels per inch of figure size; the PNG is drawn at ``_SCALE`` times that for
#: sharp text on high-density screens.
_CSS_DPI = 100
_SCALE = 1.5

#: Everything that affects the pixels, fixed (the bundled DejaVu Sans, no user rc file).
RC: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.labelsize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.6,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "lines.linewidth": 1.8,
    "lines.markersize": 5.0,
    "hatch.linewidth": 0.8,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "path.simplify": False,
    "figure.autolayout": False,
    "figure.constrained_layout.use": False,
    "svg.hashsalt": "pytest-budget",
}

#: Colour-blind-safe palette (Okabe-Ito, then two greys); agents get colours in name order.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
    "#000000", "#7f7f7f", "#b3b3b3",
)  # fmt: skip
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<")


def number(value: object) -> float | None:
    """A finite float, or ``None`` for null, text, booleans, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    result = float(value)
    return result if math.isfinite(result) else None


def agent_colors(names: Iterable[str]) -> dict[str, str]:
    """A stable colour per name (sorted), cycling the palette past ten names."""
    ordered = sorted(set(names))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(ordered)}


def agent_markers(names: Iterable[str]) -> dict[str, str]:
    ordered = sorted(set(names))
    return {name: MARKERS[i % len(MARKERS)] for i, name in enumerate(ordered)}


def panel_grid(count: int, max_cols: int = 3) -> tuple[int, int]:
    """(rows, columns) for ``count`` small panels."""
    cols = max(1, min(count, max_cols))
    return math.ceil(max(count, 1) / cols), cols


def new_figure(rows: int, cols: int, panel_w: float, panel_h: float) -> tuple[Figure, list[Axes]]:
    """A figure of ``rows`` x ``cols`` panels (inches each), axes in reading order."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(panel_w * cols, panel_h * rows), dpi=_CSS_DPI * _SCALE)
    FigureCanvasAgg(fig)  # its renderer measures the layout (no throw-away print)
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = [ax for row in grid for ax in row]
    return fig, axes


def hide_unused(axes: Sequence[Axes], used: int) -> None:
    for ax in axes[used:]:
        ax.set_visible(False)


def finish(fig: Figure, handles: Sequence[Any] = (), labels: Sequence[str] = ()) -> Figure:
    """Add one legend for the whole figure above the panels, then lay the panels out.

    The figure grows by the legend's height, so the panels keep their size and the
    legend never covers a title.
    """
    if handles:
        # about 1.6 inch per entry keeps long agent names from running into each other
        widest = max(1, min(len(handles), int(fig.get_figwidth() // 1.6)))
        legend_rows = -(-len(handles) // widest)
        ncol = -(-len(handles) // legend_rows)  # balanced rows: 3 + 2, not 4 + 1
        band = 0.22 * legend_rows + 0.18
        fig.set_figheight(fig.get_figheight() + band)
        fig.legend(
            handles, labels, loc="upper center", ncol=ncol, bbox_to_anchor=(0.5, 1.0),
            handlelength=2.4, columnspacing=1.4,
        )  # fmt: skip
        top = 1.0 - band / fig.get_figheight()
    else:
        top = 1.0
    with _measured_once(fig):
        fig.tight_layout(rect=(0.0, 0.0, 1.0, top), h_pad=1.6, w_pad=1.4)
    # Laid out for good: without this, savefig would draw the whole figure once more
    # (rendering switched off) for the placeholder engine tight_layout leaves behind.
    fig.set_layout_engine(None)
    return fig


@contextlib.contextmanager
def _measured_once(fig: Figure) -> Iterator[None]:
    """Measure each panel once while laying the figure out.

    Given a ``rect``, tight_layout runs its fitting twice, measuring every panel (ticks,
    labels, titles: most of its time) both times with nothing moved in between; the
    second measurement is the first one again, so it is taken from here.  Only for the
    duration of the layout, on this figure's axes; the layout is the same to the pixel.
    """
    patched = []
    for ax in fig.axes:
        measure = ax.get_tightbbox
        seen: dict[tuple[Any, ...], Any] = {}

        def once(*args: Any, _measure: Any = measure, _seen: Any = seen, **kwargs: Any) -> Any:
            key = (*map(id, args), *((k, id(v)) for k, v in sorted(kwargs.items())))
            if key not in _seen:
                _seen[key] = _measure(*args, **kwargs)
            return _seen[key]

        setattr(ax, "get_tightbbox", once)  # noqa: B010 - this instance only
        patched.append(ax)
    try:
        yield
    finally:
        for ax in patched:
            delattr(ax, "get_tightbbox")


def encode(fig: Figure) -> tuple[str, int, int]:
    """PNG as base64 text, with the figure's CSS width and height in pixels."""
    buffer = io.BytesIO()
    # No "Software" text chunk: the bytes do not depend on the matplotlib version string.
    # Light compression: about a third faster than the default for 8% larger images.
    fig.savefig(
        buffer,
        format="png",
        dpi="figure",
        metadata={"Software": None},
        pil_kwargs={"compress_level": 1},
    )
    width = round(fig.get_figwidth() * _CSS_DPI)
    height = round(fig.get_figheight() * _CSS_DPI)
    return base64.b64encode(buffer.getvalue()).decode("ascii"), width, height


Drawing = Callable[[], "Figure | str"]

_DEFER: contextvars.ContextVar[bool] = contextvars.ContextVar("defer_encoding", default=False)
#: The page's :class:`~pytest_budget.report._html.batch.Batch` while one is being assembled.
BATCH: contextvars.ContextVar[Any] = contextvars.ContextVar("figure_batch", default=None)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Charts drawn inside keep their figure unencoded, for :func:`finish_pair`."""
    token = _DEFER.set(True)
    try:
        yield
    finally:
        _DEFER.reset(token)


def _note(exc: Exception) -> str:
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"figure could not be drawn: {type(exc).__name__}: {message}"


def draw_chart(key: str, title: str, caption: str, draw: Drawing) -> Chart:
    """The figure ``draw`` draws (see :func:`drawn_chart`); inside a page's batch only
    recorded, to be drawn with the page's other figures."""
    batch = BATCH.get()
    if batch is not None and not _DEFER.get():
        chart: Chart = batch.add(key, title, caption, draw)
        return chart
    return drawn_chart(key, title, caption, draw)


def drawn_chart(key: str, title: str, caption: str, draw: Drawing) -> Chart:
    """Run ``draw`` in the fixed style; a string result or an exception becomes a note.

    A figure that fails to draw must not lose the rest of the page (the tables and the
    other figures still carry the scores), so the error is shown in place of the image.
    """
    import matplotlib

    try:
        with matplotlib.rc_context(RC):  # type: ignore[arg-type]
            result = draw()
            if isinstance(result, str):
                return Chart(key, title, caption, note=result)
            if _DEFER.get():
                return Chart(key, title, caption, figure=result)
            png, width, height = encode(result)
    except Exception as exc:  # shown on the page instead of the figure
        return Chart(key, title, caption, note=_note(exc))
    return Chart(key, title, caption, png=png, width=width, height=height)


def _union(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The span of both limits, in the first's direction (an inverted axis stays so)."""
    low = min(*first, *second)
    high = max(*first, *second)
    return (high, low) if first[0] > first[1] else (low, high)


def _share_limits(first: Figure, second: Figure) -> None:
    """Give matching panels of two runs' figures the same axis ranges.

    Panels match by position when both figures have the same visible panels with the
    same titles; any other panel keeps its own ranges.
    """
    panels = [[ax for ax in fig.axes if ax.get_visible()] for fig in (first, second)]
    if len(panels[0]) != len(panels[1]):
        return
    for a, b in zip(panels[0], panels[1], strict=True):
        if a.get_title() != b.get_title():
            continue
        for get, set_ in (("get_xlim", "set_xlim"), ("get_ylim", "set_ylim")):
            shared = _union(getattr(a, get)(), getattr(b, get)())
            getattr(a, set_)(shared)
            getattr(b, set_)(shared)


def _encoded(chart: Chart | None) -> Chart | None:
    if chart is None or chart.figure is None:
        return chart
    try:
        png, width, height = encode(chart.figure)
    except Exception as exc:  # shown on the page instead of the figure
        return replace(chart, figure=None, note=_note(exc))
    return replace(chart, figure=None, png=png, width=width, height=height)


def finish_pair(base: Chart | None, new: Chart | None) -> tuple[Chart | None, Chart | None]:
    """Encode two runs' versions of one figure with shared axis ranges (side by side, equal
    heights then mean equal values)."""
    import matplotlib

    with matplotlib.rc_context(RC):  # type: ignore[arg-type]
        if base is not None and new is not None:
            if base.figure is not None and new.figure is not None:
                # cosmetic only: if it fails, each figure is still right on its own scale
                with contextlib.suppress(Exception):
                    _share_limits(base.figure, new.figure)
        return _encoded(base), _encoded(new)


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def group_mean(rows: Iterable[tuple[Any, float | None]]) -> dict[Any, float]:
    """Mean of the non-null values per key, keys in first-seen order; a key whose values
    are all null is left out (so ``.get(key)`` is ``None`` for it)."""
    buckets: dict[Any, list[float]] = {}
    for key, value in rows:
        if value is not None:
            buckets.setdefault(key, []).append(value)
    return {key: sum(values) / len(values) for key, values in buckets.items()}


def interval_of(cell: CellRecord, metric: str) -> tuple[float, float] | None:
    """The cell's bootstrap interval ``ci[metric]`` as two finite numbers, if it has one."""
    bounds = (cell.ci or {}).get(metric)
    if not isinstance(bounds, list | tuple) or len(bounds) != 2:
        return None
    lo, hi = number(bounds[0]), number(bounds[1])
    return None if lo is None or hi is None else (lo, hi)


def scores_of(cell: CellRecord) -> Mapping[str, Any]:
    return cell.scores
