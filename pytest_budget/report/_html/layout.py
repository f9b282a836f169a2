"""The page shell every HTML page shares: CSS, run facts, score tables, chart placement,
navigation and the document around a body.  :mod:`~pytest_budget.report._html.page` (one report
after the other) and :mod:`~pytest_budget.report._html.compare_page` (two side by side) both build
on it; neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from pytest_budget._core.records import CellRecord
from pytest_budget._core.registry import cell_kind, cell_kinds
from pytest_budget.report._document import report_cells
from pytest_budget.report._html.columns import Column
from pytest_budget.report._html.drill_script import DRILL_CSS, page_script
from pytest_budget.report._html.figures import Chart, agent_colors

__all__ = [
    "CSS",
    "Cell",
    "Report",
    "chart_html",
    "chart_maker",
    "document",
    "facts_table",
    "is_number",
    "missing_note",
    "nav",
    "num_class",
    "suite_colors",
    "suite_order",
    "suites_of",
]

Cell = CellRecord
Report = Mapping[str, Any]
ChartMaker = Callable[[Sequence[Cell], Mapping[str, str], str], list[Chart]]


def chart_maker(suite: str) -> ChartMaker | None:
    """The charts of a cell kind (the suite's figures module), None when it has none."""
    kind = cell_kind(suite)
    return kind.charts if kind is not None else None


CSS = """
:root { --ink: #1d232a; --muted: #5b6570; --line: #d8dde3; --soft: #f4f6f8;
  --better: #0b7a3b; --better-bg: #e3f4e8; --worse: #b3261e; --worse-bg: #fbe6e4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1880px; margin: 0 auto; padding: 24px 28px 64px; }
main.wide { max-width: 2300px; }
h1 { font-size: 1.7rem; margin: 0 0 4px; }
h2 { font-size: 1.3rem; margin: 40px 0 6px; padding-top: 12px; border-top: 2px solid var(--line); }
h3 { font-size: 1.05rem; margin: 26px 0 8px; }
p.sub, p.lede { color: var(--muted); margin: 2px 0 12px; }
nav { background: var(--soft); padding: 10px 14px; border-radius: 6px; margin: 16px 0; }
nav a { margin-right: 16px; color: #0b5cad; text-decoration: none; }
nav a:hover { text-decoration: underline; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--line); text-align: left;
  white-space: nowrap; vertical-align: top; }
th { background: var(--soft); position: sticky; top: 0; z-index: 2; font-weight: 600;
  white-space: normal; box-shadow: inset 0 -1px 0 var(--line); }
td.num, th.num { text-align: right; }
tbody tr:nth-child(even) td { background: #fafbfc; }
table.facts th { position: static; }
/* no scroll box: the table takes the page width and its header sticks to the window */
.table-wrap { border: 1px solid var(--line); border-radius: 6px; }
.table-wrap table { width: 100%; }
figure.chart { margin: 18px 0 26px; }
figure.chart img { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 13.5px; color: var(--muted); margin: 0 0 8px; max-width: 62rem; }
figcaption strong { display: block; color: var(--ink); font-size: 15px; margin-bottom: 2px; }
p.note, .missing p { background: #fff8e1; border-left: 4px solid #f0b400; padding: 8px 12px;
  margin: 10px 0; color: #4a3b00; }
ul.footer { color: var(--muted); font-size: 13px; padding-left: 20px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; align-items: start; }
.pair > div > h4 { margin: 6px 0; font-size: 13px; color: var(--muted); font-weight: 600; }
table.scores tbody td.better { background: var(--better-bg); }
table.scores tbody td.worse { background: var(--worse-bg); }
span.d { font-size: 11.5px; margin-left: 6px; }
td.better span.d { color: var(--better); font-weight: 700; }
td.worse span.d { color: var(--worse); font-weight: 700; }
td.neutral span.d, td.same span.d { color: var(--muted); }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 8px; border-radius: 3px; }
.legend .better { background: var(--better-bg); color: var(--better); }
.legend .worse { background: var(--worse-bg); color: var(--worse); }
details { margin: 10px 0; }
summary { cursor: pointer; font-weight: 600; }
"""


def suites_of(report: Report) -> dict[str, list[Cell]]:
    grouped: dict[str, list[Cell]] = {}
    for cell in report_cells(report):
        grouped.setdefault(cell.suite, []).append(cell)
    return grouped


def suite_order(groups: Sequence[Mapping[str, list[Cell]]]) -> list[str]:
    present = {name for group in groups for name in group}
    # Kinds marked always_on_page get a section (a note when absent); others when present.
    order = [n for n, kind in cell_kinds().items() if kind.always_on_page or n in present]
    return order + sorted(present - set(order))


def missing_note(suite: str, report: Report) -> str:
    selected = [str(s) for s in report.get("suites", []) or []]
    if suite in selected:
        return (
            f"The {suite} suite was selected but recorded no cells (every cell was "
            "deselected, skipped or failed before scoring)."
        )
    return f"The {suite} suite is not in this run; run it with pytest --budget-suite={suite}."


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def num_class(columns: Sequence[Column], cells: Sequence[Cell], index: int) -> str:
    values = [columns[index].read(c) for c in cells]
    numeric = values and all(is_number(v) or v is None for v in values)
    return ' class="num"' if numeric else ""


def chart_html(chart: Chart, prefix: str) -> str:
    if chart.pending is not None:  # drawn with the page's other figures, then put here
        from pytest_budget.report._html.batch import placeholder

        return placeholder(chart, prefix)
    key = chart.key[len(prefix) :] if chart.key.startswith(prefix) else chart.key
    caption = (
        f"<figcaption><strong>{escape(chart.title)}</strong>{escape(chart.caption)}</figcaption>"
    )
    if chart.png is None:
        return (
            f'<figure class="chart missing" id="{escape(chart.key)}" data-figure="{escape(key)}">'
            f'{caption}<p class="note">{escape(chart.note or "no data")}</p></figure>'
        )
    return (
        f'<figure class="chart" id="{escape(chart.key)}" data-figure="{escape(key)}">{caption}'
        f'<img alt="{escape(chart.title)}" width="{chart.width}" height="{chart.height}" '
        f'src="data:image/png;base64,{chart.png}"></figure>'
    )


def _facts(report: Report) -> list[tuple[str, str]]:
    raw_summary = report.get("summary")
    summary: Mapping[str, Any] = raw_summary if isinstance(raw_summary, Mapping) else {}
    dash = "\u2013"

    def counts(value: object) -> str:
        if not isinstance(value, Mapping) or not value:
            return "\u2013"
        return ", ".join(f"{v} {k}" for k, v in value.items())

    facts = [
        ("pytest-budget", str(report.get("version", "\u2013"))),
        ("created", str(report.get("created", "\u2013"))),
        ("seed", str(report.get("seed", "\u2013"))),
        ("suites", ", ".join(str(s) for s in report.get("suites", []) or []) or "\u2013"),
        ("cells", str(summary.get("cells", len(report.get("cells", []))))),
        ("cell outcomes", counts(summary.get("outcomes"))),
        ("tests", counts(summary.get("tests"))),
        ("duration", f"{report.get('duration_s', dash)} s"),
        ("python", str(report.get("python", "\u2013"))),
    ]
    models = report.get("models")
    if isinstance(models, Mapping) and models.get("spent_usd") is not None:
        facts.append(("model spend", f"${models.get('spent_usd')}"))
    return facts


def facts_table(reports: Sequence[tuple[str, Report]]) -> str:
    head = "<th>run</th>" + "".join(f"<th>{escape(label)}</th>" for label, _ in reports)
    rows = []
    columns = [_facts(report) for _, report in reports]
    for index, (name, _value) in enumerate(columns[0]):
        values = "".join(
            f"<td>{escape(facts[index][1]) if index < len(facts) else ''}</td>" for facts in columns
        )
        rows.append(f"<tr><th>{escape(name)}</th>{values}</tr>")
    return (
        f'<table class="facts"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def suite_colors(suite: str, groups: Sequence[Mapping[str, list[Cell]]]) -> dict[str, str]:
    return agent_colors(c.agent for g in groups for c in g.get(suite, []))


def nav(links: Sequence[tuple[str, str]]) -> str:
    items = "".join(f'<a href="#{escape(anchor)}">{escape(text)}</a>' for anchor, text in links)
    return f"<nav>{items}</nav>"


def document(title: str, body: str, *, wide: bool = False, blocks: str = "") -> str:
    """The page around ``body``; ``blocks`` (sample data) and the script come last, so the
    tables and figures are drawn before the browser reaches them."""
    main_class = ' class="wide"' if wide else ""
    script = page_script() if blocks else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{DRILL_CSS}</style></head>"
        f"<body><main{main_class}>{body}</main>{blocks}{script}</body></html>\n"
    )
