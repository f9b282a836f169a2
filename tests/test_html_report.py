"""The HTML report: figure data, the page, comparisons, bad input, --budget-html end to end.

Reports used here are either written by a real run (pytester, in-process) or built by
hand with values chosen so that every expected number can be worked out on paper.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_budget.awareness._replay.answers import Impossible, Interval
from pytest_budget.awareness._scoring.metrics import (
    ProbeRecord,
    late_recognition_curve,
    progress_curves,
)

# --------------------------------------------------------------------------- figure data


def _probe(rollout: str, k: int, T: int, used: float, total: float, feasible: bool, est: Any):
    return ProbeRecord(rollout, k, T, used, total, 100.0, feasible, feasible, est)


# Rollout a (feasible, T = 4, C_T = 80, budget 100): k = 1, 2, 3 at progress .25, .5, .75
# (bins 1, 2, 3).  Rollout b (failed, T = 2): one interval at progress .5 (bin 2).
# Rollout c (failed, T = 3): interval at k = 1, impossible at k = 2 with C_2 = 60.
PROBES = [
    _probe("a", 1, 4, 20.0, 80.0, True, Interval(40.0, 80.0)),  # R = 60, mid 60, R_lin 60
    _probe("a", 2, 4, 40.0, 80.0, True, Interval(10.0, 30.0)),  # R = 40, mid 20, R_lin 40
    _probe("a", 3, 4, 60.0, 80.0, True, Impossible()),
    _probe("b", 1, 2, 50.0, 120.0, False, Interval(0.0, 100.0)),
    _probe("c", 1, 3, 30.0, 90.0, False, Interval(10.0, 20.0)),  # progress 1/3: bin 1
    _probe("c", 2, 3, 60.0, 90.0, False, Impossible()),
]


def test_progress_curves_hand_worked() -> None:
    curves = progress_curves(PROBES, bins=5)
    # interval answers: bin 1 = a@1 and c@1, bin 2 = a@2 and b@1
    assert curves["interval_answers"] == [0, 2, 2, 0, 0]
    # widths / 100: bin 1 (40 + 10) / 2 = 25 -> .25; bin 2 (20 + 100) / 2 = 60 -> .6
    assert curves["width"] == [None, 0.25, 0.6, None, None]
    # paired = feasible probes answered with an interval: a@1 (bin 1) and a@2 (bin 2)
    assert curves["paired"] == [0, 1, 1, 0, 0]
    # agent: |60 - 60| = 0, |20 - 40| = 20 -> .2; linear: R_lin = 20*4-20 = 60, 20*4-40 = 40
    assert curves["agent_error"] == [None, 0.0, 0.2, None, None]
    assert curves["linear_error"] == [None, 0.0, 0.0, None, None]


def test_late_recognition_curve_hand_worked() -> None:
    # failed rollouts: b (never impossible) and c (first impossible at C = 60 of 100)
    curve, failed = late_recognition_curve(PROBES, [0.0, 0.5, 0.6, 1.0])
    assert failed == 2
    assert curve == [1.0, 1.0, 0.5, 0.5]


def test_late_recognition_curve_without_failed_rollouts() -> None:
    curve, failed = late_recognition_curve(PROBES[:3], [0.0, 1.0])
    assert (curve, failed) == ([None, None], 0)


# --------------------------------------------------------------------------- hand-made reports


def _triage_cell(agent: str, alpha: float, ratio: float, **scores: float | None) -> dict[str, Any]:
    base = {
        "v_u": 10.0, "v_e": 8.0, "v_oracle": 12.0, "v_random": 6.0, "eta_u": 0.5, "eta_e": 0.25,
        "regret_u": 0.2, "regret_e": 0.3, "detection": None, "waste": None,
    }  # fmt: skip
    if ratio > 0:
        base.update(detection=0.5, waste=0.25)
    base.update(scores)
    cell = f"arith-u{ratio:g}-a{alpha:g}-A"
    return {
        "suite": "triage", "cell": cell, "pool": "arith", "unsolvable_ratio": ratio,
        "alpha": alpha, "variant": "A", "budget": 100, "agent": agent, "solver": "reference",
        "seed": 42, "outcome": "ok", "reason": None, "plan_status": "ok", "repairs": [],
        "over_budget": False, "scores": base, "v_random_stderr": 0.0, "planned_ids": [],
        "executed_ids": {"u": [], "e": []},
        "phase0": {"items": 10, "gradeable": 10, "solved": 7, "errors": {}},
        "nodeid": f"::test_triage[{cell}-{agent}]", "test_outcome": "passed", "duration_s": 0.01,
    }  # fmt: skip


def _curves(width: float) -> dict[str, Any]:
    return {
        "bin_edges": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
        "dimensions": {
            "tokens": {
                "interval_answers": [4, 4, 4, 4, 0],
                "width": [width, width / 2, width / 4, width / 8, None],
                "paired": [3, 3, 3, 3, 0],
                "agent_error": [0.2, 0.15, 0.1, 0.05, None],
                "linear_error": [0.3, 0.2, 0.1, 0.0, None],
            }
        },
        "late_recognition": {
            "dimension": "tokens",
            "budget_share": [0.0, 0.5, 1.0],
            "still_feasible": [1.0, 0.5, 0.25],
            "failed_rollouts": 4,
        },
    }


def _awareness_cell(agent: str, **scores: float | None) -> dict[str, Any]:
    base: dict[str, float | int | None] = {
        "n_probes": 40, "macro_f1_all": 0.6, "macro_f1_first": 0.5, "fail_f1": 0.4,
        "interval_score": 0.3, "hit_rate": 0.7, "mre_p50": 0.4, "mre_p90": 1.2,
        "invalid_rate": 0.0, "false_abort_rate": 0.1, "saved_token_share": 0.4,
        "reward": 0.5, "n_errors": 0,
    }  # fmt: skip
    for i in range(5):
        base[f"optimistic_bin{i}"] = 0.1 * i
        base[f"conservative_bin{i}"] = 0.05 * i
    base.update(scores)
    return {
        "suite": "awareness", "cell": "sokoban-6x6", "env": "sokoban-6x6", "agent": agent,
        "actor": "reference-actor", "seed": 42, "parse": "bagen",
        "budget_range": {"tokens": [2500.0, 2500.0]}, "budget": {"tokens": 2500.0},
        "outcome": "ok", "reason": "", "scores": base,
        "rollouts": {"rollouts": 8, "succeeded": 6, "feasible": 6, "mean_turns": 3.0},
        "invalid_reasons": {}, "notes": {}, "curves": _curves(0.8), "first_error": None,
        "nodeid": f"::test_awareness[sokoban-6x6-{agent}]", "test_outcome": "passed",
        "duration_s": 0.01,
    }  # fmt: skip


def _planning_cell(agent: str, mode: str, blocks: int, level: int, **scores: float | None):
    base: dict[str, float | int | None] = {
        "emr": 0.5, "aed": 1.0, "aned": 0.3, "cost_gap": 0.1 if mode == "static" else None,
        "cost_gap_clean": 0.05 if mode == "static" else None, "uihr": 1.0, "itur": 0.1,
        "n_episodes": 4, "excluded": 0, "blocks_applied": blocks, "blocks_dropped": 0,
        "total_calls": 20, "repeated_calls": 2, "extra_calls": 1, "wrong_parameter_calls": 1,
        "inaccessible_calls": 1, "unknown_tool_calls": 0, "bad_id_calls": 0,
        "banned_retry_calls": 0,
    }  # fmt: skip
    base.update(scores)
    scenario = f"static-L{level}" if mode == "static" else f"{mode}{blocks}-L{level}"
    return {
        "suite": "planning", "cell": f"dining-{scenario}", "task": "dining",
        "scenario": scenario, "mode": mode, "block_count": blocks, "refinement_level": level,
        "agent": agent, "seed": 42, "queries": 4, "outcome": "ok", "reason": "",
        "scores": base,
        "greedy": {"emr": 0.25, "cost_gap": 0.2, "aned": 0.5, "uihr": None, "itur": None},
        "first_error": None, "nodeid": f"::test_planning[dining-{scenario}-{agent}]",
        "test_outcome": "passed", "duration_s": 0.01,
    }  # fmt: skip


def _report(cells: list[dict[str, Any]], suites: list[str] | None = None) -> dict[str, Any]:
    from pytest_budget.report._document import build_report

    names = suites if suites is not None else sorted({str(c["suite"]) for c in cells})
    report = build_report(cells, options={}, suites=names, duration_s=1.0, seed=42)
    report["created"] = "2026-01-01T00:00:00+00:00"  # fixed: pages must be byte-identical
    return report


def _full_cells() -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = []
    for agent in ("mine", "oracle"):
        for alpha in (0.25, 0.5):
            for ratio in (0.0, 0.5):
                cells.append(_triage_cell(agent, alpha, ratio))
        cells.append(_awareness_cell(agent))
        for mode, blocks, level in (("static", 0, 1), ("static", 0, 3), ("ban_tool", 1, 3)):
            cells.append(_planning_cell(agent, mode, blocks, level))
    return cells


def _write(tmp_path: Path, name: str, report: dict[str, Any]) -> Path:
    from pytest_budget.report._document import write_report

    return write_report(tmp_path / name, report)


class _Elements(HTMLParser):
    """Every element's tag, attributes and own text (enough to check a page's structure)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if tag not in ("img", "meta", "br", "link", "input"):
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()["tag"] == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element["text"] += data


def _parse(page: str) -> list[dict[str, Any]]:
    parser = _Elements()
    parser.feed(page)
    return parser.elements


def _render(reports: list[tuple[str, dict[str, Any]]], compare: bool = False) -> str:
    from pytest_budget.report._html import render_html

    return render_html(reports, compare=compare)


EXPECTED_FIGURES = {
    "triage": {"triage-eta", "triage-alpha", "triage-detection"},
    "awareness": {
        "awareness-misses", "awareness-late", "awareness-earlystop", "awareness-width",
        "awareness-linear",
    },
    "planning": {
        "planning-length", "planning-blocking", "planning-costgap", "planning-failures",
    },
}  # fmt: skip
# Every suite's section of a run page has its score-against-spend figure.
for _suite, _keys in EXPECTED_FIGURES.items():
    _keys.add(f"{_suite}-frontier")


@pytest.fixture(scope="module")
def full_page() -> str:
    return _render([("hand-made", _report(_full_cells()))])


def test_page_is_self_contained(full_page: str) -> None:
    elements = _parse(full_page)
    for element in elements:
        for name in ("src", "href", "action", "data"):
            value = element["attrs"].get(name) or ""
            assert not value.startswith(("http:", "https:", "//")), (element["tag"], value)
    assert not [e for e in elements if e["tag"] in ("script", "link", "iframe", "object")]
    assert "http://" not in full_page and "https://" not in full_page
    assert "@import" not in full_page and "url(" not in full_page
    images = [e for e in elements if e["tag"] == "img"]
    assert len(images) == sum(len(keys) for keys in EXPECTED_FIGURES.values())
    for image in images:
        src = image["attrs"]["src"]
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        # drawn at 1.5x the CSS size given in the tag
        assert width == round(int(image["attrs"]["width"]) * 1.5)
        assert height == round(int(image["attrs"]["height"]) * 1.5)


def test_every_suite_has_its_figures_and_table(full_page: str) -> None:
    elements = _parse(full_page)
    sections = {e["attrs"]["data-suite"]: e for e in elements if "data-suite" in e["attrs"]}
    assert set(sections) == {"triage", "awareness", "planning"}
    figures = {e["attrs"]["data-figure"] for e in elements if "data-figure" in e["attrs"]}
    assert figures == set().union(*EXPECTED_FIGURES.values())
    assert "figure could not be drawn" not in full_page
    assert not [e for e in elements if "missing" in e["attrs"].get("class", "").split()]
    tables = [e for e in elements if e["tag"] == "table" and "scores" in e["attrs"]["class"]]
    assert len(tables) == 3
    headers = [e["text"] for e in elements if e["tag"] == "th"]
    for header in ("eta_u", "eta_e", "f1_all", "interval", "emr", "aned", "gap_clean"):
        assert header in headers


def test_same_report_renders_the_same_bytes() -> None:
    cells = [_triage_cell(agent, 0.5, ratio) for agent in ("a", "b") for ratio in (0.0, 0.5)]
    first = _render([("r", _report(cells))])
    assert "data:image/png;base64," in first
    assert _render([("r", _report(copy.deepcopy(cells)))]) == first


def test_figures_drawn_in_workers_or_here_give_the_same_page(full_page: str) -> None:
    from pytest_budget.report._html import render_html
    from pytest_budget.report._html.batch import default_workers

    # full_page was drawn the default way: here the other way (workers, or this process)
    other = 1 if default_workers(15) > 1 else 2
    assert render_html([("hand-made", _report(_full_cells()))], workers=other) == full_page
    assert "\x00" not in full_page  # every figure's placeholder filled


def test_null_scores_render_as_a_dash() -> None:
    cells = [_triage_cell("mine", 0.5, 0.0, eta_e=None, regret_e=None)]
    page = _render([("r", _report(cells))])
    row = next(
        e
        for e in _parse(page)
        if e["tag"] == "tr" and "mine" in e["text"] and "data-agent" not in e["attrs"]
    )  # the score table's row (the frontier table's rows carry data-agent)
    cells_text = [e["text"] for e in _parse(page) if e["tag"] == "td"]
    assert "\u2013" in row["text"]
    # eta_u is 0.500, eta_e is undefined: the dash, not 'None' or 'nan'
    assert "0.500" in cells_text and "None" not in page and ">nan<" not in page


def test_missing_and_empty_suites_get_a_note() -> None:
    report = _report([_triage_cell("mine", 0.5, 0.0)], suites=["triage", "planning"])
    elements = _parse(_render([("r", report)]))
    sections = {e["attrs"]["data-suite"]: e for e in elements if "data-suite" in e["attrs"]}
    assert "missing" not in sections["triage"]["attrs"]["class"]
    assert "missing" in sections["awareness"]["attrs"]["class"]
    assert "not in this run" in sections["awareness"]["text"]
    assert "--budget-suite=awareness" in sections["awareness"]["text"]
    assert "missing" in sections["planning"]["attrs"]["class"]
    assert "selected but recorded no cells" in sections["planning"]["text"]


def test_a_report_without_cells_renders_notes_only() -> None:
    page = _render([("empty", _report([], suites=[]))])
    elements = _parse(page)
    assert not [e for e in elements if e["tag"] == "img"]
    missing = [e for e in elements if "missing" in e["attrs"].get("class", "").split()]
    assert {e["attrs"]["data-suite"] for e in missing} == {"triage", "awareness", "planning"}


def test_figure_without_data_says_why() -> None:
    # no injected unsolvable items: the detection figure has nothing to draw
    page = _render([("r", _report([_triage_cell("mine", 0.5, 0.0)]))])
    figure = next(e for e in _parse(page) if e["attrs"].get("data-figure") == "triage-detection")
    assert "--budget-unsolvable" in figure["text"]


def test_several_reports_are_rendered_one_after_the_other(tmp_path: Path) -> None:
    first = _report([_triage_cell("mine", 0.5, 0.0)])
    second = _report([_planning_cell("mine", "static", 0, 2)])
    page = _render([("a.json", first), ("b.json", second)])
    elements = _parse(page)
    articles = [e for e in elements if e["tag"] == "article"]
    assert [a["attrs"]["id"] for a in articles] == ["report-1", "report-2"]
    ids = [e["attrs"]["id"] for e in elements if "id" in e["attrs"]]
    assert len(ids) == len(set(ids)), "element ids must be unique across reports"
    assert "r1-triage" in ids and "r2-planning" in ids


# --------------------------------------------------------------------------- comparison


def _compare_page(base: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    return _parse(_render([("base.json", base), ("new.json", new)], compare=True))


def _score_cell(elements: list[dict[str, Any]], row_text: str, column: str) -> dict[str, Any]:
    """The <td> under header ``column`` in the first table row containing ``row_text``."""
    for index, element in enumerate(elements):
        if element["tag"] != "tr" or row_text not in element["text"]:
            continue
        headers = _headers_before(elements, index)
        if column not in headers:
            continue
        tds = []
        for child in elements[index + 1 :]:
            if child["tag"] == "tr":
                break
            if child["tag"] == "td":
                tds.append(child)
        return tds[headers.index(column)]
    raise AssertionError(f"no row with {row_text!r} under a {column!r} column")


def _headers_before(elements: list[dict[str, Any]], row_index: int) -> list[str]:
    """The header cells of the table the row at ``row_index`` belongs to."""
    heads = [i for i in range(row_index) if elements[i]["tag"] == "thead"]
    if not heads:
        return []
    start = heads[-1]
    return [e["text"] for e in elements[start:row_index] if e["tag"] == "th"]


def test_compare_marks_better_and_worse_by_direction() -> None:
    base = _report(
        [
            _triage_cell("mine", 0.5, 0.0, eta_u=0.5, regret_u=0.4),
            _planning_cell("mine", "static", 0, 2, aned=0.3, emr=0.5),
        ]
    )
    new = _report(
        [
            _triage_cell("mine", 0.5, 0.0, eta_u=0.6, regret_u=0.3),
            _planning_cell("mine", "static", 0, 2, aned=0.4, emr=0.5),
        ]
    )
    elements = _compare_page(base, new)
    eta = _score_cell(elements, "mine", "eta_u")
    assert eta["attrs"]["class"].split() == ["num", "better"]
    assert eta["text"] == "0.600+0.100"
    assert eta["attrs"]["title"] == "baseline 0.500 (better)"
    regret = _score_cell(elements, "mine", "regret_u")  # lower is better: -0.1 is better
    assert (regret["attrs"]["class"], regret["text"]) == ("num better", "0.300-0.100")
    aned = _score_cell(elements, "dining", "aned")
    assert (aned["attrs"]["class"], aned["text"]) == ("num worse", "0.400+0.100")
    emr = _score_cell(elements, "dining", "emr")
    assert (emr["attrs"]["class"], emr["text"]) == ("num same", "0.500\u00b10")
    tallies = [e["text"] for e in elements if "legend" in e["attrs"].get("class", "")]
    # triage: eta_u and regret_u better; planning: aned worse, emr unchanged
    assert any("2 better 0 worse" in t for t in tallies)
    assert any("0 better 1 worse 5 unchanged, 0 changed" in t for t in tallies)


def test_compare_unknown_direction_is_neutral() -> None:
    def own(value: float) -> dict[str, Any]:
        scores = {"speed": value}
        return {"suite": "mine", "cell": "c1", "agent": "a", "seed": 42, "outcome": "ok",
                "scores": scores, "nodeid": "t::c1", "test_outcome": "passed"}  # fmt: skip

    elements = _compare_page(_report([own(1.0)]), _report([own(2.0)]))
    speed = _score_cell(elements, "c1", "speed")
    assert (speed["attrs"]["class"], speed["text"]) == ("num neutral", "2.000+1.000")


def test_compare_lists_cells_only_in_one_run() -> None:
    base = _report([_triage_cell("mine", 0.5, 0.0), _triage_cell("gone", 0.5, 0.0)])
    new = _report([_triage_cell("mine", 0.5, 0.0), _triage_cell("added", 0.25, 0.0)])
    elements = _compare_page(base, new)
    details = [e["text"] for e in elements if e["tag"] == "details"]
    assert any("1 cells only in the baseline (base.json)" in t and "arith-u0-a0.5-A / gone" in t
               for t in details)  # fmt: skip
    assert any("1 cells only in the new run (new.json)" in t and "arith-u0-a0.25-A / added" in t
               for t in details)  # fmt: skip
    rows = [e["text"] for e in elements if e["tag"] == "tr"]
    assert not [r for r in rows if "gone" in r or "added" in r]


def test_compare_puts_figures_side_by_side() -> None:
    triage = [c for c in _full_cells() if c["suite"] == "triage"]
    elements = _compare_page(_report(triage), _report(triage))
    keys = [e["attrs"]["data-figure"] for e in elements if "data-figure" in e["attrs"]]
    # the comparison shows the agents' moves as a table, not the frontier figure
    expected = EXPECTED_FIGURES["triage"] - {"triage-frontier"}
    assert sorted(keys) == sorted(list(expected) * 2)
    pairs = [e for e in elements if e["attrs"].get("class") == "pair"]
    assert len(pairs) == len(expected)
    ids = [e["attrs"]["id"] for e in elements if "id" in e["attrs"]]
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------- command line


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_budget", "report", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_render_command_writes_the_page(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    out = tmp_path / "sub" / "r.html"
    done = _cli("render", str(path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"budget-report: wrote {out} (1 report(s))"
    from pytest_budget.report._document import load_report

    assert out.read_text(encoding="utf-8") == _render([(str(path), load_report(path))])


def test_render_compare_with_two_reports(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.json", _report([_triage_cell("mine", 0.5, 0.0, eta_u=0.5)]))
    b = _write(tmp_path, "b.json", _report([_triage_cell("mine", 0.5, 0.0, eta_u=0.6)]))
    out = tmp_path / "cmp.html"
    from pytest_budget.report._cli import main

    assert main(["render", str(a), str(b), "-o", str(out), "--compare"]) == 0
    eta = _score_cell(_parse(out.read_text(encoding="utf-8")), "mine", "eta_u")
    assert eta["text"] == "0.600+0.100"


def test_compare_needs_exactly_two_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "a.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    from pytest_budget.report._cli import main

    assert main(["render", str(path), "-o", str(tmp_path / "x.html"), "--compare"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--compare takes exactly two reports" in err and "got 1" in err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"tool": "pytest-budget", "schema_version": 1, "cells": [', "not a JSON report (line 1"),
        (
            json.dumps({"tool": "pytest-budget", "schema_version": 3, "cells": []}),
            "report schema version 3",
        ),
        (json.dumps({"tool": "other", "cells": []}), "not a pytest-budget report"),
    ],
    ids=["corrupt", "other-version", "other-tool"],
)
def test_bad_report_files_are_one_line_errors(tmp_path: Path, content: str, expected: str) -> None:
    good = _write(tmp_path, "good.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / "out.html"
    done = _cli("render", str(good), str(bad), "-o", str(out), "--compare")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"budget-report: error: {bad}: ")
    assert expected in lines[0]
    assert not out.exists()


# A meta path finder that makes every ``matplotlib`` import fail, as on a machine
# without the report extra (the real import machinery, not a patched function).
_HIDE_MATPLOTLIB = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
"""


def test_render_without_matplotlib_says_how_to_install(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    code = _HIDE_MATPLOTLIB + (
        "from pytest_budget.report._cli import main\n"
        f"raise SystemExit(main(['render', {str(path)!r}, '-o', {str(tmp_path / 'o.html')!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("budget-report: error: the HTML report needs matplotlib")
    assert lines[0].endswith('install it with: pip install "pytest-budget[report]"')
    assert not (tmp_path / "o.html").exists()


def test_budget_html_without_matplotlib_fails_up_front(tmp_path: Path) -> None:
    code = _HIDE_MATPLOTLIB + (
        "import pytest\n"
        "raise SystemExit(pytest.main(['-p', 'no:cacheprovider', '--budget-suite=triage', "
        f"'--budget-html={tmp_path / 'o.html'}']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: --budget-html: the HTML report needs matplotlib (No module named 'matplotlib'); "
        'install it with: pip install "pytest-budget[report]"'
    ]
    assert "passed" not in done.stdout and not (tmp_path / "o.html").exists()


# --------------------------------------------------------------------------- --budget-html


SMALL_TRIAGE = (
    "-p", "no:cacheprovider", "--budget-gate=off", "--budget-suite=triage",
    "--budget-pool-size=6", "--budget-alpha=0.5",
)  # fmt: skip


@pytest.mark.parametrize("workers", [None, "2"], ids=["no-xdist", "n2"])
def test_budget_html_end_to_end(pytester: pytest.Pytester, workers: str | None) -> None:
    (pytester.path / "out").mkdir()  # a missing directory is a usage error
    args = [*SMALL_TRIAGE, "--budget-report=r.json", "--budget-html=out/page.html"]
    if workers:
        args += ["-n", workers]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=16)
    page_path = pytester.path / "out" / "page.html"
    result.stdout.fnmatch_lines([f"budget html: {page_path}"])
    page = page_path.read_text(encoding="utf-8")
    from pytest_budget.report._document import load_report

    report = load_report(pytester.path / "r.json")
    if not workers:  # the page is drawn from the same document the JSON report holds
        assert page == _render([("this run", report)])
    elements = _parse(page)
    figures = {e["attrs"]["data-figure"] for e in elements if e["tag"] == "figure"}
    assert figures == EXPECTED_FIGURES["triage"]
    assert "figure could not be drawn" not in page
    charts = [e for e in elements if e["tag"] == "figure"]
    assert all("missing" not in e["attrs"]["class"] for e in charts)
    rows = [
        e
        for e in elements
        if e["tag"] == "tr" and "arith" in e["text"] and "data-cell" not in e["attrs"]
    ]
    assert len(rows) == 8  # 2 ratios x 4 agents on the arith pool
    # the spend table: one row per cell and role, the reference planners' counted tokens
    spent = [e for e in elements if e["tag"] == "tr" and "data-cell" in e["attrs"]]
    assert len(spent) == len(report["cells"])
    phase0 = report["cells"][0].phase0  # a report reads back as typed records
    assert phase0 is not None
    assert 0 <= phase0["solved"] <= phase0["gradeable"] <= phase0["items"] == 6


def test_how_to_python_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python example of docs/how-to/read-the-html-report.md, run as written."""
    doc = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "read-the-html-report.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    _write(tmp_path, "report.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], str(doc), "exec"), {"__name__": "how_to_example"})
    page = (tmp_path / "nightly.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "source: nightly" in page


def test_bootstrap_intervals_are_shown_on_hover() -> None:
    def with_ci(value: float, lo: float, hi: float) -> dict[str, Any]:
        cell = _triage_cell("mine", 0.5, 0.0, eta_u=value)
        cell["ci"] = {"eta_u": [lo, hi], "eta_e": None}
        cell["ci_meta"] = {"level": 0.9, "resamples": 1000}
        return cell

    page = _parse(_render([("r", _report([with_ci(0.5, 0.4, 0.6)]))]))
    eta = _score_cell(page, "mine", "eta_u")
    assert (eta["text"], eta["attrs"]["title"]) == ("0.500", "90% CI [0.400, 0.600]")
    assert "title" not in _score_cell(page, "mine", "eta_e")["attrs"]  # no interval: none
    compared = _compare_page(_report([with_ci(0.5, 0.4, 0.6)]), _report([with_ci(0.7, 0.65, 0.75)]))
    eta = _score_cell(compared, "mine", "eta_u")
    assert eta["attrs"]["title"] == (
        "baseline 0.500 (better); baseline 90% CI [0.400, 0.600], new 90% CI [0.650, 0.750]"
    )


def test_compared_figures_share_their_axis_ranges() -> None:
    from pytest_budget._core.record_json import cell_from_json
    from pytest_budget.report._html.figures import agent_colors, deferred, finish_pair
    from pytest_budget.triage._figures import triage_charts

    low = [cell_from_json(_triage_cell(a, 0.5, 0.0, eta_u=0.2, eta_e=0.1)) for a in ("p", "q")]
    high = [cell_from_json(_triage_cell(a, 0.5, 0.0, eta_u=-1.2, eta_e=0.9)) for a in ("p", "q")]
    colors = agent_colors(["p", "q"])
    with deferred():
        base, new = triage_charts(low, colors, "b-")[0], triage_charts(high, colors, "n-")[0]
    assert base.png is None and base.figure is not None
    before = (base.figure.axes[0].get_ylim(), new.figure.axes[0].get_ylim())
    assert before[0] != before[1]
    done = finish_pair(base, new)
    after = (base.figure.axes[0].get_ylim(), new.figure.axes[0].get_ylim())
    assert after[0] == after[1]
    assert after[0][0] == min(before[0][0], before[1][0])
    assert after[0][1] == max(before[0][1], before[1][1])
    assert all(c is not None and c.png and c.figure is None for c in done)


def test_html_package_is_core_code(tmp_path: Path) -> None:
    """Importing the package pulls in neither pytest nor matplotlib; drawing a page
    imports matplotlib but still not pytest."""
    path = _write(tmp_path, "r.json", _report([_triage_cell("mine", 0.5, 0.0)]))
    code = (
        "import sys\n"
        "import pytest_budget.report._html, pytest_budget.report._html.page,"
        " pytest_budget.report._cli\n"
        "print(sorted(m for m in ('pytest', 'matplotlib') if m in sys.modules))\n"
        "from pytest_budget.report._cli import main\n"
        f"main(['render', {str(path)!r}, '-o', {str(tmp_path / 'o.html')!r}])\n"
        "print(sorted(m for m in ('pytest', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "[]"
    assert lines[-1] == "['matplotlib']"


def test_budget_html_to_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("pages")
    result = pytester.runpytest(*SMALL_TRIAGE, "--budget-html=pages")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --budget-html: {pytester.path / 'pages'} is a directory*"]
    )
    assert "passed" not in result.stdout.str()


def test_model_spend_per_cell_and_role_is_a_table() -> None:
    cell = _triage_cell("openai:m", 0.5, 0.0)
    role = {"calls": 2, "replayed": 1, "input_tokens": 1234, "output_tokens": 56, "usd": 0.0125}
    cell["spend"] = {
        "calls": 3, "replayed": 1, "input_tokens": 1300, "output_tokens": 60, "usd": 0.013,
        "failed": 0, "refused": 0,
        "roles": {"planner": {**role, "calls": 1, "replayed": 0, "input_tokens": 66,
                              "output_tokens": 4, "usd": 0.0005}, "solver": role},
    }  # fmt: skip
    page = _render([("spend", _report([cell, _triage_cell("oracle", 0.5, 0.0)]))])
    rest = page.partition("<h3>Spend per cell</h3>")[2]
    table = rest.partition("</table>")[0]
    rows = re.findall(r"<tr data-cell=[^>]*>(.*?)</tr>", table)
    assert len(rows) == 2  # one per role of the model cell; the reference cell spent nothing
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in rows]
    assert cells[1] == [
        "arith-u0-a0.5-A", "openai:m", "solver", "2", "1", "1,234", "56", "0", "0", "$0.0125",
    ]  # fmt: skip
    assert cells[0][2:] == ["planner", "1", "0", "66", "4", "0", "0", "$0.0005"]
