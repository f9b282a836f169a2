"""The run as GitHub-flavoured Markdown: what a CI user reads on the run's summary page.

``--budget-markdown=PATH`` writes it, and a run with ``GITHUB_STEP_SUMMARY`` set appends
it there too (:mod:`pytest_budget._plugin.markdown`).  Regressions come first, with the
exact command that re-runs each failed cell; then per cell kind the agents' score against
spend (:mod:`pytest_budget.report._frontier`), the failed cells, and the passing cells folded in
``<details>`` so a run of 300 cells stays short.

Every text that comes from a run (agent names, cell ids, reasons) is escaped for a table
cell: HTML is written as entities, Markdown's own marks (``|``, backticks, ``*``, ``_``,
brackets) are backslash-escaped, line breaks become spaces.  Plain Python: nothing here
imports pytest.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_budget._core.record_json import as_record
from pytest_budget._core.records import CellRecord
from pytest_budget.report._frontier import (
    cell_tokens,
    cell_usd,
    frontier_headers,
    frontier_rows,
    frontiers,
)

__all__ = ["code", "escape_cell", "fenced", "render_markdown"]

_MARKS = re.compile(r"([\\`*_\[\]|#<>~])")
#: Cell columns before the folded passing cells are cut (the JSON report keeps them all).
MAX_SCORES = 4


def escape_cell(value: object) -> str:
    """Text safe in a table cell: HTML entities, Markdown marks escaped, one line."""
    text = " ".join(str(value).split())
    text = html.escape(text, quote=False)  # & < > as entities: no tag survives
    return _MARKS.sub(r"\\\1", text)


def code(value: object) -> str:
    """An inline code span for a table cell (node ids): a fence longer than any backtick
    run inside, ``|`` escaped (GFM splits cells before it reads code spans)."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, info: str = "sh") -> str:
    """A fenced code block holding ``text`` as it is (a fence longer than any inside)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _row(values: Sequence[str]) -> str:
    return "| " + " | ".join(values) + " |"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = [_row([escape_cell(h) for h in headers]), _row(["---"] * len(headers))]
    out.extend(_row(row) for row in rows)
    return out


def _score(cell: CellRecord, name: str) -> str:
    value = cell.scores.get(name)
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "\u2013"
    text = f"{value:.3f}"
    bounds = (cell.ci or {}).get(name)
    if bounds is not None and len(bounds) == 2:
        text += f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"
    return text


def _metrics(kind: str, cells: Sequence[CellRecord]) -> list[str]:
    from pytest_budget._core.registry import cell_kind

    found = cell_kind(kind)
    if found is not None and found.metrics:
        return [spec.name for spec in found.metrics][:MAX_SCORES]
    names: list[str] = []
    for cell in cells:
        names.extend(name for name in cell.scores if name not in names)
    return names[:MAX_SCORES]


def _verdict(cell: CellRecord) -> str:
    outcome = cell.test_outcome or "?"
    mark = {"failed": "❌ failed", "passed": "✅ passed", "skipped": "⏭ skipped"}.get(
        outcome, outcome
    )
    if cell.status in ("error", "incomplete", "invalid"):
        mark += f" ({cell.status})"
    return mark


def _spend_text(cell: CellRecord) -> tuple[str, str]:
    tokens = cell_tokens(cell.spend)
    usd = cell_usd(cell.spend)
    return (
        f"{tokens:,}" if cell.spend else "\u2013",
        f"${usd:.4f}" if usd is not None else "\u2013",
    )


def _cell_rows(cells: Sequence[CellRecord], metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for cell in cells:
        tokens, usd = _spend_text(cell)
        rows.append(
            [
                _verdict(cell),
                escape_cell(cell.cell),
                escape_cell(cell.agent),
                *(_score(cell, name) for name in metrics),
                tokens,
                usd,
                code(cell.nodeid),
            ]
        )
    return rows


def _cell_headers(metrics: Sequence[str]) -> list[str]:
    return ["verdict", "cell", "agent", *metrics, "tokens", "USD", "test that decided"]


def _rank(kind: str, suites: object) -> int:
    """A kind's place: its suite's in the run's ``--budget-suite`` order."""
    from pytest_budget._core.registry import suite_of_kind

    ranked = [str(name) for name in suites] if isinstance(suites, list) else []
    suite = suite_of_kind(kind)
    name = suite.name if suite is not None else kind
    return ranked.index(name) if name in ranked else len(ranked)


def _failed(cell: CellRecord) -> bool:
    return cell.test_outcome == "failed"


def render_markdown(
    report: Mapping[str, Any],
    *,
    rerun: Mapping[str, str] | None = None,
    why: Mapping[str, Sequence[str]] | None = None,
    pooled: Sequence[str] = (),
    title: str = "pytest-budget",
) -> str:
    """The summary of a JSON report (``report``, as written or as the session builds it).

    ``rerun``: node id -> the exact command that re-runs that failed cell; ``why``: node id
    -> the lines its test failed with (the metrics that regressed); ``pooled``: the run's
    pooled gate regressions, one line each.
    """
    cells = [as_record(cell) for cell in report.get("cells") or ()]
    rerun = rerun or {}
    why = why or {}
    failed = [cell for cell in cells if _failed(cell)]
    lines = [f"## {escape_cell(title)}: {len(cells)} cells, {len(failed)} failed"]
    seed = report.get("seed")
    facts = [f"seed {seed}"] if seed is not None else []
    suites = report.get("suites")
    if suites:
        facts.append("suites " + ", ".join(escape_cell(s) for s in suites))
    if facts:
        lines += ["", "; ".join(facts)]
    if failed or pooled:
        lines += ["", "### Regressions", ""]
        for line in pooled:
            lines.append(f"- pooled gate: {escape_cell(line)}")
        for cell in failed:
            reason = f": {escape_cell(cell.reason)}" if cell.reason else ""
            lines.append(
                f"- **{escape_cell(cell.suite)}** {escape_cell(cell.cell)} / "
                f"{escape_cell(cell.agent)}{reason}"
            )
            lines.extend(f"  - {escape_cell(line)}" for line in why.get(cell.nodeid, ()))
        commands = [rerun[cell.nodeid] for cell in failed if cell.nodeid in rerun]
        if commands:
            lines += ["", "Re-run the failed cells:", "", fenced("\n".join(commands))]
    else:
        lines += ["", "No regressions: every cell passed its gate."]
    by_kind: dict[str, list[CellRecord]] = {}
    for cell in cells:
        by_kind.setdefault(cell.suite or "(no suite)", []).append(cell)
    fronts = {f.kind: f for f in frontiers(cells)}
    # Kinds with a failure first, then in the report's order.
    order = sorted(
        by_kind, key=lambda kind: (not any(map(_failed, by_kind[kind])), _rank(kind, suites))
    )
    for kind in order:
        group = by_kind[kind]
        bad = [cell for cell in group if _failed(cell)]
        good = [cell for cell in group if not _failed(cell)]
        metrics = _metrics(kind, group)
        lines += ["", f"### {escape_cell(kind)}: {len(group)} cells, {len(bad)} failed"]
        frontier = fronts.get(kind)
        if frontier is not None and frontier.metric:
            lines += ["", "Score against spend per agent (dominated: another agent is at least "
                      "as good on both and better on one):", ""]  # fmt: skip
            rows = [[escape_cell(v) for v in row] for row in frontier_rows(frontier)]
            lines += _table(frontier_headers(frontier), rows)
        if bad:
            lines += ["", "Failed cells:", ""]
            lines += _table(_cell_headers(metrics), _cell_rows(bad, metrics))
        if good:
            lines += ["", f"<details><summary>{len(good)} cells passed</summary>", ""]
            lines += _table(_cell_headers(metrics), _cell_rows(good, metrics))
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
