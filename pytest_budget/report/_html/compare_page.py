"""The comparison page: two runs side by side, each score's change marked by direction.

The building blocks (tables, figures, run facts) are the single-run page's
(:mod:`pytest_budget.report._html.page`); this module adds the matched table with deltas, the
lists of cells only in one run, and the figure pairs drawn on shared axis ranges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pytest_budget._core.records import CellRecord
from pytest_budget.report._html.columns import (
    Column,
    columns_for,
    footer_lines,
    format_cell_value,
    interval_text,
    section_title,
)
from pytest_budget.report._html.compare import cell_key, delta, match_cells
from pytest_budget.report._html.drill_data import SampleStore, changed_samples, changed_table
from pytest_budget.report._html.figures import deferred, finish_pair
from pytest_budget.report._html.layout import (
    chart_html,
    chart_maker,
    document,
    facts_table,
    is_number,
    missing_note,
    nav,
    num_class,
    suite_colors,
    suite_order,
    suites_of,
)

__all__ = ["compare_page"]

Cell = CellRecord
Report = Mapping[str, Any]


def _compare_cell(column: Column, base: Cell, new: Cell) -> str:
    old_value, new_value = column.read(base), column.read(new)
    shown = escape(column.text(new))
    numeric = is_number(new_value) or new_value is None
    if column.metric is None:
        cls = "num" if numeric else ""
        return f'<td class="{cls}">{shown}</td>' if cls else f"<td>{shown}</td>"
    change = delta(column.metric, old_value, new_value)
    tip = f"baseline {format_cell_value(old_value)}"
    if change.verdict in ("better", "worse"):
        tip += f" ({change.verdict})"
    # the bootstrap intervals tell a real change from noise (see --budget-gate=ci)
    old_ci, new_ci = interval_text(base, column.metric), interval_text(new, column.metric)
    if old_ci or new_ci:
        tip += f"; baseline {old_ci or 'no CI'}, new {new_ci or 'no CI'}"
    mark = f'<span class="d">{escape(change.text)}</span>' if change.text else ""
    return f'<td class="num {change.verdict}" title="{escape(tip)}">{shown}{mark}</td>'


def _compare_table(columns: Sequence[Column], pairs: Sequence[tuple[Cell, Cell]]) -> str:
    news = [new for _, new in pairs]
    head = "".join(
        f'<th{num_class(columns, news, i)} title="{escape(c.tooltip)}">{escape(c.header)}</th>'
        for i, c in enumerate(columns)
    )
    rows = [
        "<tr>" + "".join(_compare_cell(column, base, new) for column in columns) + "</tr>"
        for base, new in pairs
    ]
    return (
        '<div class="table-wrap"><table class="scores compare"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def _tally(columns: Sequence[Column], pairs: Sequence[tuple[Cell, Cell]]) -> dict[str, int]:
    tally = {"better": 0, "worse": 0, "same": 0, "neutral": 0}
    for base, new in pairs:
        for column in columns:
            if column.metric is not None:
                tally[delta(column.metric, column.read(base), column.read(new)).verdict] += 1
    return tally


def _only_list(title: str, cells: Sequence[Cell]) -> str:
    if not cells:
        return ""
    items = "".join(f"<li>{escape(' / '.join(cell_key(cell)[1:]))}</li>" for cell in cells)
    return (
        f"<details open><summary>{len(cells)} {escape(title)}</summary><ul>{items}</ul></details>"
    )


def _compare_section(
    suite: str,
    base: tuple[str, Report, list[Cell]],
    new: tuple[str, Report, list[Cell]],
    colors: Mapping[str, str],
    store: SampleStore | None = None,
) -> str:
    title = section_title(suite)
    (base_label, base_report, base_cells), (new_label, new_report, new_cells) = base, new
    parts = [f'<section class="suite compare" id="{escape(suite)}" data-suite="{escape(suite)}">']
    parts.append(f"<h2>{escape(title)}</h2>")
    if not base_cells and not new_cells:
        parts.append(f"<p>{escape(missing_note(suite, new_report))} (in neither run)</p></section>")
        return "".join(parts)
    for label, report, cells in (
        (base_label, base_report, base_cells),
        (new_label, new_report, new_cells),
    ):
        if not cells:
            parts.append(
                f'<p class="note">{escape(label)}: {escape(missing_note(suite, report))}</p>'
            )
    matched = match_cells(base_cells, new_cells)
    columns = columns_for(suite, new_cells or base_cells)
    if matched.pairs:
        tally = _tally(columns, matched.pairs)
        parts.append(
            f'<p class="lede legend">{len(matched.pairs)} cells in both runs; scores against the '
            f'baseline: <span class="better">{tally["better"]} better</span> '
            f'<span class="worse">{tally["worse"]} worse</span> {tally["same"]} unchanged, '
            f"{tally['neutral']} changed without a direction (grey). Each score shows the new "
            "value and its change; hover for the baseline value.</p>"
        )
        parts.append(_compare_table(columns, matched.pairs))
    if store is not None and matched.pairs:
        parts.append(_changed(matched.pairs, base_report, new_report, store))
    from pytest_budget.report._html.frontier_chart import moves_section

    parts.append(moves_section(suite, base_cells, new_cells))
    parts.append(_only_list(f"cells only in the baseline ({base_label})", matched.only_base))
    parts.append(_only_list(f"cells only in the new run ({new_label})", matched.only_new))
    maker = chart_maker(suite)
    if maker is not None:
        with deferred():  # drawn first, encoded in pairs with shared axis ranges
            base_charts = maker(base_cells, colors, "base-") if base_cells else []
            new_charts = maker(new_cells, colors, "new-") if new_cells else []
        parts.append("<h3>Figures, baseline left, new run right, on the same scales</h3>")
        for index in range(max(len(base_charts), len(new_charts))):
            pair = finish_pair(
                base_charts[index] if index < len(base_charts) else None,
                new_charts[index] if index < len(new_charts) else None,
            )
            parts.append('<div class="pair">')
            for chart, tag, label in zip(
                pair, ("base", "new"), (f"baseline: {base_label}", f"new: {new_label}"),
                strict=True,
            ):  # fmt: skip
                parts.append(f"<div><h4>{escape(label)}</h4>")
                if chart is not None:
                    parts.append(chart_html(chart, f"{tag}-"))
                else:
                    parts.append('<p class="note">no cells of this suite in this run</p>')
                parts.append("</div>")
            parts.append("</div>")
    lines = footer_lines(suite, new_cells)
    if lines:
        parts.append(
            '<ul class="footer">' + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>"
        )
    parts.append("</section>")
    return "".join(parts)


def _changed(
    pairs: Sequence[tuple[Cell, Cell]], base: Report, new: Report, store: SampleStore
) -> str:
    """The samples whose score moved most, with a button that shows both sides."""
    if not any(b.samples is not None for b, _ in pairs):
        return ""
    entries = changed_samples(pairs, base, new)
    title = "<h3>Samples whose score changed most</h3>"
    if not entries:
        return (
            title + '<p class="sub">No sample of a matched cell changed its score or outcome '
            "(samples are compared only when both runs asked the same: another seed draws "
            "other pools, queries and rollouts).</p>"
        )
    return (
        title
        + f'<p class="sub">The {len(entries)} largest changes of a sample\'s score between the '
        "runs (matched by cell and sample id; a changed outcome with no score last). Open a "
        "row to see the baseline and the new run side by side.</p>"
        + changed_table(entries, store.add_value(entries))
    )


def compare_page(
    base: tuple[str, Report], new: tuple[str, Report], store: SampleStore | None = None
) -> str:
    """The page comparing ``new`` against ``base`` (each a ``(label, report)`` pair)."""
    groups = [suites_of(base[1]), suites_of(new[1])]
    order = suite_order(groups)
    body = [
        "<h1>pytest-budget comparison</h1>",
        f'<p class="sub">baseline: {escape(base[0])} \u2192 new: {escape(new[0])}</p>',
        nav([(suite, suite) for suite in order]),
        facts_table([(f"baseline: {base[0]}", base[1]), (f"new: {new[0]}", new[1])]),
    ]
    for suite in order:
        body.append(
            _compare_section(
                suite,
                (base[0], base[1], groups[0].get(suite, [])),
                (new[0], new[1], groups[1].get(suite, [])),
                suite_colors(suite, groups),
                store,
            )
        )
    blocks = store.html() if store is not None else ""
    return document("pytest-budget comparison", "".join(body), wide=True, blocks=blocks)
