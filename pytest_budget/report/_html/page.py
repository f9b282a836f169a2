"""Assemble the HTML page: run facts, one section per suite with figures and score tables.

Everything the page needs is inline (CSS in a ``<style>`` element, figures as
``data:image/png;base64`` images, no script), so the file opens offline and can be
attached to a CI run as it is.  Nothing here depends on the time of rendering: the same
reports give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from pytest_budget.report._html.batch import batched
from pytest_budget.report._html.columns import (
    Column,
    columns_for,
    footer_lines,
    interval_text,
    section_title,
)
from pytest_budget.report._html.compare_page import compare_page
from pytest_budget.report._html.drill_data import SAMPLE_CAP, SampleStore
from pytest_budget.report._html.layout import (
    Cell,
    Report,
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

__all__ = ["render_page"]


def _table(
    columns: Sequence[Column],
    cells: Sequence[Cell],
    buttons: Sequence[tuple[str, int] | None] | None = None,
) -> str:
    """The score table; ``buttons`` (one per cell) adds the column that opens samples."""
    head = '<th title="open the cell\'s samples">samples</th>' if buttons is not None else ""
    head += "".join(
        f'<th{num_class(columns, cells, i)} title="{escape(c.tooltip)}">{escape(c.header)}</th>'
        for i, c in enumerate(columns)
    )
    rows = []
    for index, cell in enumerate(cells):
        tds = []
        if buttons is not None:
            button = buttons[index]
            tds.append(
                "<td>\u2013</td>"
                if button is None
                else f'<td><button type="button" class="samples" data-block="{button[0]}">'
                f"{button[1]:,}</button></td>"
            )
        for column in columns:
            value = column.read(cell)
            cls = ' class="num"' if is_number(value) or value is None else ""
            ci = interval_text(cell, column.metric) if column.metric else ""
            tip = f' title="{escape(ci)}"' if ci else ""
            tds.append(f"<td{cls}{tip}>{escape(column.text(cell))}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (
        '<div class="table-wrap"><table class="scores"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def _suite_section(
    suite: str,
    cells: Sequence[Cell],
    report: Report,
    colors: Mapping[str, str],
    prefix: str,
    store: SampleStore | None = None,
) -> str:
    anchor = f"{prefix}{suite}"
    title = section_title(suite)
    if not cells:
        return (
            f'<section class="suite missing" id="{anchor}" data-suite="{escape(suite)}">'
            f"<h2>{escape(title)}</h2><p>{escape(missing_note(suite, report))}</p></section>"
        )
    agents = sorted({c.agent for c in cells})
    parts = [
        f'<section class="suite" id="{escape(anchor)}" data-suite="{escape(suite)}">',
        f"<h2>{escape(title)}</h2>",
        f'<p class="lede">{len(cells)} cells; agents: {escape(", ".join(agents))}</p>',
    ]
    maker = chart_maker(suite)
    if maker is not None:
        parts.extend(chart_html(chart, prefix) for chart in maker(cells, colors, prefix))
    from pytest_budget.report._html.frontier_chart import frontier_section

    parts.append(frontier_section(suite, cells, colors, prefix))
    parts.append("<h3>Scores</h3>")
    buttons = [store.add_cell(cell, report) for cell in cells] if store is not None else None
    if buttons is not None and any(buttons):
        parts.append(
            '<p class="sub">Open a row\'s samples (the items, probes or episodes behind its '
            "scores): filter by outcome, sort by score, search their text, click one to see "
            "it.</p>"
        )
    else:
        buttons = None
    parts.append(_table(columns_for(suite, cells), cells, buttons))
    lines = footer_lines(suite, cells)
    if lines:
        parts.append(
            '<ul class="footer">' + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>"
        )
    parts.append(_unfinished(cells))
    parts.append(_spend(cells))
    parts.append("</section>")
    return "".join(parts)


_UNFINISHED = ("error", "incomplete")


def _unfinished(cells: Sequence[Cell]) -> str:
    """Cells that crashed or lost model calls: outcome, reason, what was scored, and the
    traceback (folded), so none is only a row of dashes."""
    items = []
    for cell in cells:
        outcome = cell.status
        if outcome not in _UNFINISHED and not cell.partial:
            continue
        head = f"{cell.cell or '?'} / {cell.agent or '?'}: {outcome}"
        if cell.partial:
            head += " (partial, allowed)"
        parts = [f"<strong>{escape(head)}</strong>"]
        if cell.reason:
            parts.append(f" {escape(cell.reason)}")
        if cell.scored:
            parts.append(f'<br><span class="note">scored: {escape(cell.scored)}</span>')
        if cell.traceback:
            parts.append(
                "<details><summary>traceback</summary>"
                f"<pre>{escape(cell.traceback)}</pre></details>"
            )
        items.append(
            f'<li data-cell="{escape(cell.nodeid)}" '
            f'data-outcome="{escape(outcome)}">{"".join(parts)}</li>'
        )
    if not items:
        return ""
    return '<h3>Cells that did not finish</h3><ul class="unfinished">' + "".join(items) + "</ul>"


def _usd(value: object) -> str:
    return f"${float(value):,.4f}" if isinstance(value, int | float) else "\u2013"


def _spend(cells: Sequence[Cell]) -> str:
    """What each cell's agents spent, per role: model calls and their tokens and USD, and
    the tokens unmetered agents wrote (reference tokenizer)."""
    rows = []
    for cell in cells:
        spend = cell.spend
        if not isinstance(spend, dict):
            continue
        roles = spend.get("roles") or {"all": spend}
        for role, used in roles.items():
            rows.append(
                f'<tr data-cell="{escape(cell.nodeid)}"><td>{escape(cell.cell or "?")}</td>'
                f"<td>{escape(cell.agent or '?')}</td><td>{escape(role)}</td>"
                f"<td>{int(used.get('calls', 0)):,}</td><td>{int(used.get('replayed', 0)):,}</td>"
                f"<td>{int(used.get('input_tokens', 0)):,}</td>"
                f"<td>{int(used.get('output_tokens', 0)):,}</td>"
                f"<td>{int(used.get('reasoning_tokens', 0)):,}</td>"
                f"<td>{int(used.get('counted_tokens', 0)):,}</td>"
                f"<td>{_usd(used.get('usd'))}</td></tr>"
            )
    if not rows:
        return ""
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "cell", "agent", "role", "live calls", "replayed", "input tokens",
            "output tokens", "reasoning tokens", "counted tokens", "USD",
        )
    )  # fmt: skip
    return (
        '<h3>Spend per cell</h3><table class="spend"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def render_page(
    reports: Sequence[tuple[str, Report]],
    *,
    compare: bool = False,
    sample_cap: int = SAMPLE_CAP,
    workers: int | None = None,
) -> str:
    """The whole page for ``(label, report)`` pairs: one after the other, or (``compare``,
    exactly two) side by side with the deltas of the second against the first.
    ``sample_cap``: samples per cell drawn into the page (the rest are left out, with a
    note pointing at the JSON report); ``workers``: processes drawing the figures
    (default: :func:`~pytest_budget.report._html.batch.default_workers`; the page is the same)."""
    store = SampleStore(cap=sample_cap)
    if compare:
        if len(reports) != 2:
            raise ValueError(f"--compare takes exactly two reports, got {len(reports)}")
        return compare_page(reports[0], reports[1], store)
    with batched(workers) as batch:
        page = _reports_page(reports, store)
    return batch.fill(page, chart_html)


def _reports_page(reports: Sequence[tuple[str, Report]], store: SampleStore) -> str:
    groups = [suites_of(report) for _, report in reports]
    order = suite_order(groups)
    body: list[str] = ["<h1>pytest-budget report</h1>"]
    several = len(reports) > 1
    if several:
        body.append(f'<p class="sub">{len(reports)} reports, one after the other.</p>')
    links = []
    for index, (label, _report) in enumerate(reports, start=1):
        prefix = f"r{index}-" if several else ""
        for suite in order:
            text = f"{label}: {suite}" if several else suite
            links.append((f"{prefix}{suite}", text))
    body.append(nav(links))
    for index, (label, report) in enumerate(reports, start=1):
        prefix = f"r{index}-" if several else ""
        body.append(f'<article class="report" id="report-{index}">')
        if several:
            body.append(f"<h2>Report {index}: {escape(label)}</h2>")
        else:
            body.append(f'<p class="sub">source: {escape(label)}</p>')
        body.append(facts_table([(label, report)]))
        for suite in order:
            colors = suite_colors(suite, groups)
            cells = groups[index - 1].get(suite, [])
            body.append(_suite_section(suite, cells, report, colors, prefix, store))
        body.append("</article>")
    return document("pytest-budget report", "".join(body), blocks=store.html())
