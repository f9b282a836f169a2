"""The Markdown summary: parsed by a real Markdown parser (markdown-it-py, GFM tables), and
written by real runs to --budget-markdown and to GITHUB_STEP_SUMMARY (with and without
xdist)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_budget._core.written import with_written
from pytest_budget.report._markdown import code, escape_cell, render_markdown
from tests import inprocess

HOSTILE = "evil|agent `rm -rf` <script>alert(1)</script> *bold* [x](y)"


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell contents (inline source), header row first; asserts
    each row has as many cells as the header (a stray | would add one)."""
    tokens = _parser().parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            assert row is not None
            row.append(tokens[index + 1].content)
        elif token.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    for table in tables:
        width = len(table[0])
        assert all(len(r) == width for r in table), table
    return tables


def _cell(agent: str, outcome: str, cell: str = "c1", reason: str | None = None) -> dict[str, Any]:
    return {
        "nodeid": f"tests/test_mine.py::test_cell[{cell}-{agent}]",
        "suite": "mine",
        "cell": cell,
        "agent": agent,
        "seed": 42,
        "outcome": "ok",
        "reason": reason,
        "scores": {"acc": 0.5 if outcome == "failed" else 0.9},
        "ci": {"acc": [0.4, 0.6] if outcome == "failed" else [0.8, 1.0]},
        "test_outcome": outcome,
        "spend": with_written(None, {"solver": 1234}),
    }


def test_tables_are_well_formed_and_hostile_text_is_escaped() -> None:
    report = {
        "seed": 42,
        "suites": ["mine"],
        "cells": [
            _cell(HOSTILE, "passed"),
            _cell("plain", "failed", reason="output was `|` <b>bad</b>"),
        ],
    }
    nodeid = report["cells"][1]["nodeid"]
    text = render_markdown(report, rerun={nodeid: "pytest 'x|y' --budget-seed=42"})
    tables = _tables(text)
    # frontier, failed cells, passing cells (folded)
    assert len(tables) == 3
    frontier, failed, passing = tables
    # the table splits cells at unescaped | only (and drops the escaping backslash)
    assert [row[0] for row in frontier[1:]] == [escape_cell(HOSTILE).replace("\\|", "|"), "plain"]
    html = _parser().render(text)
    assert "<script>" not in html and "<b>bad</b>" not in html
    assert "&lt;script&gt;" in html
    # the hostile name is one table cell, shown as written
    cells = re.findall(r"<td>(.*?)</td>", html)
    shown = "evil|agent `rm -rf` &lt;script&gt;alert(1)&lt;/script&gt; *bold* [x](y)"
    assert shown in cells
    assert failed[1][0] == "❌ failed" and passing[1][0] == "✅ passed"
    # the test that decided is a code span with the node id
    assert f"<code>{nodeid}</code>" in html
    # the re-run command is a code block, as given
    assert "<pre><code class=\"language-sh\">pytest 'x|y' --budget-seed=42\n</code></pre>" in html
    # regressions before the per-kind sections; passing cells folded
    assert text.index("### Regressions") < text.index("### mine")
    assert "<details><summary>1 cells passed</summary>" in text


def test_code_span_with_backticks_and_pipes() -> None:
    html = _parser().render(f"| a |\n| --- |\n| {code('x`|`y')} |\n")
    assert "<td><code>x`|`y</code></td>" in html


def test_three_hundred_cells_stay_readable() -> None:
    cells = [_cell(f"agent{i % 3}", "passed", cell=f"c{i}") for i in range(300)]
    cells[7]["test_outcome"] = "failed"
    text = render_markdown({"cells": cells})
    before_fold = text.split("<details>", 1)[0]
    # what is open: the heading, the regression, the frontier and the one failed cell
    assert len(before_fold.splitlines()) < 40
    assert len(_tables(text)[-1]) == 300  # header + 299 passing rows, folded


SMALL_TRIAGE = (
    "-p", "no:cacheprovider", "--budget-suite=triage", "--budget-pool-size=6",
    "--budget-alpha=0.5", "--budget-agent=oracle,random",
)  # fmt: skip


def test_step_summary_appended_and_markdown_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain and under ``-n 2``.  The same two runs show that each reply is counted for the
    cell that asked for it, whichever process runs it (the reports' spend agrees)."""
    import json

    summary = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    spends = []
    for name, xdist in (("plain", []), ("n2", ["-n", "2"])):
        summary.write_text("earlier step\n", encoding="utf-8")
        args = [*SMALL_TRIAGE, "--budget-markdown=s.md", "--budget-gate=off", *xdist]
        result = inprocess.run(pytester, *args, f"--budget-report={name}.json")
        assert result.ret == 0, result.stdout.str()[-3000:]
        written = (pytester.path / "s.md").read_text(encoding="utf-8")
        appended = summary.read_text(encoding="utf-8")
        assert appended == "earlier step\n" + written  # appended once, by the controller
        assert written.startswith("## pytest-budget: ")
        tables = _tables(written)
        frontier = tables[0]
        assert [row[0] for row in frontier[1:]] == ["oracle", "random"]
        # reference agents are counted with the reference tokenizer: a spend axis offline
        assert all(row[2] not in ("0", "-") for row in frontier[1:]), frontier
        report = json.loads((pytester.path / f"{name}.json").read_text(encoding="utf-8"))
        spends.append({cell["nodeid"]: cell["spend"] for cell in report["cells"]})
    assert spends[0] == spends[1]
    assert all(spend["counted_tokens"] > 0 for spend in spends[0].values())
    assert all(set(spend["roles"]) == {"planner"} for spend in spends[0].values())


def test_step_summary_off(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = inprocess.run(
        pytester, *SMALL_TRIAGE, "--budget-gate=off", "--budget-step-summary=off"
    )
    assert result.ret == 0
    assert not summary.exists()


def test_markdown_to_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("out")
    result = pytester.runpytest(*SMALL_TRIAGE, "--budget-markdown=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --budget-markdown: * is a directory*"])


def test_failed_cell_has_its_rerun_command(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A real gate failure: a baseline recorded with one pool, then a run whose stored
    scores are made unreachable; the summary lists the cell first with its command."""
    base = [*SMALL_TRIAGE, "--budget-snapshot-dir=snaps", "--budget-gate=tolerance"]
    assert inprocess.run(pytester, *base, "--snapshot-update").ret == 0
    for path in (pytester.path / "snaps").rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            # every stored score far above reach: the new scores regress
            path.write_text(re.sub(r'("eta_u": )[-0-9.e]+', r"\g<1>5.0", text), encoding="utf-8")
    result = inprocess.run(pytester, *base, "--budget-markdown=s.md")
    assert result.ret == 1
    text = (pytester.path / "s.md").read_text(encoding="utf-8")
    regressions = text.split("### Regressions", 1)[1].split("\n### ", 1)[0]
    assert "Re-run the failed cells:" in regressions
    assert "--budget-snapshot-dir=snaps" in regressions
    assert "eta\\_u regressed: stored 5, new " in regressions  # the gate's own words
    assert "❌ failed" in text
