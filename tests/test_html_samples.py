"""Samples behind the scores: the per-suite records, the page's blocks, caps and comparisons.

Hand-worked examples (a triage plan executed on paper, probes with known R_k), the
page's compressed blocks read back, the per-cell cap, the --compare ranking, the figure
fixes (whiskers inside the axes, the note for a pool the solver solved nothing of), and
a saved run and its merged shards rendering the same samples.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_budget._core.samples import clip, scrub, scrubber
from pytest_budget.awareness._evaluate import ProbeResult
from pytest_budget.awareness._replay.answers import Impossible, Interval, Invalid
from pytest_budget.awareness._replay.probes import Probe, ProbeTruth
from pytest_budget.awareness._samples import probe_samples
from pytest_budget.report._document import load_report_json
from pytest_budget.report._html.drill_data import cap_samples, changed_samples, pack, unpack
from pytest_budget.triage._samples import item_samples
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry
from tests.schemas import validate, validate_report


def _same(text: str) -> str:
    return text


# --------------------------------------------------------------------------- triage


def test_triage_items_hand_worked() -> None:
    # Pool: a (c=30, solved), b (c=50, solved), c (c=40, failed), d (c=20, unsolvable).
    # B = 100.  Plan: b:60, a:20, d:30, c:10.
    # Regime U (true costs): b 50 (left 50), a 30 (left 20), d 20 (left 0), c 40 > 0: stop.
    # Regime E (allocations): b 60 (left 40; 50 <= 60 scores), a 20 (left 20; 30 > 20: cut),
    #   d 30 > 20: stop.  Oracle (solved a, b; 80 <= 100) takes a and b.
    items = [
        Item("a", "2+2", answer="4"),
        Item("b", "3+3", answer="6"),
        Item("c", "hard", answer="?"),
        Item("d", "no answer", unsolvable=True),
    ]
    baselines = {
        "a": Baseline(True, 30), "b": Baseline(True, 50), "c": Baseline(False, 40),
        "d": Baseline(True, 20),
    }  # fmt: skip
    plan = Plan((PlanEntry("b", 60), PlanEntry("a", 20), PlanEntry("d", 30), PlanEntry("c", 10)))
    records = item_samples(
        items, baselines, {"c"}, plan, ["b", "a", "d"], ["b", "a"], ["b"], 100, _same
    )
    by = {r["id"]: r for r in records}
    assert [r["id"] for r in records] == ["a", "b", "c", "d"]
    assert by["b"]["u"] == "executed" and by["b"]["u_remaining"] == 100
    assert by["a"]["u_remaining"] == 50 and by["d"]["u_remaining"] == 20
    assert by["c"]["u"] == "budget ran out" and by["c"]["u_remaining"] == 0
    assert by["b"]["e"] == "scored" and by["a"]["e"] == "cut at a_i"
    assert by["a"]["e_remaining"] == 40
    assert by["d"]["e"] == "budget ran out" and by["d"]["e_remaining"] == 20
    assert by["c"]["e"] == "not reached" and by["c"]["e_remaining"] is None
    assert by["a"]["oracle"] and by["b"]["oracle"] and not by["c"]["oracle"]
    assert by["a"]["tags"] == ["truncated"]
    assert by["b"]["tags"] == ["earned"] and by["b"]["score"] == 1.0
    assert by["c"]["tags"] == ["over budget", "wrong answer", "phase 0 cut"]
    assert by["d"]["tags"] == ["over budget", "unsolvable planned"]
    assert by["d"]["score"] == 0.0 and by["d"]["solved"] is False  # unsolvable never pays
    assert (by["a"]["position"], by["a"]["allocation"]) == (2, 20)


def test_triage_item_left_out_of_the_plan() -> None:
    items = [Item("a", "x"), Item("b", "y")]
    baselines = {"a": Baseline(True, 10), "b": Baseline(True, 10)}
    records = item_samples(
        items, baselines, set(), Plan((PlanEntry("a", 10),)), ["a"], ["a"], ["a"], 10, _same
    )
    # B = 10: the oracle takes one item (the first, a tie), the plan took a
    assert records[1]["tags"] == ["not planned"] and records[1]["score"] is None


# --------------------------------------------------------------------------- awareness


def _result(k: int, estimate: Any, *, used: float, total: float, feasible: bool, raw: str):
    probe = Probe("r1", "sokoban", k, {"tokens": used}, {"tokens": 100.0}, ())
    truth = ProbeTruth(4, {"tokens": total}, {"tokens": total - used}, feasible, feasible)
    return ProbeResult(probe, truth, estimate, raw=raw)


def test_awareness_probes_hand_worked() -> None:
    results = [
        # R = 60, [40, 80] covers it: S_k = 1 - 40/60 = 1/3, reward 1.8/3 = 0.6
        _result(1, Interval(40.0, 80.0), used=20.0, total=80.0, feasible=True, raw="<a>"),
        # R = 40, [10, 30] misses: S_k = 0
        _result(2, Interval(10.0, 30.0), used=40.0, total=80.0, feasible=True, raw="b"),
        # impossible on a feasible probe: false abort
        _result(3, Impossible(), used=60.0, total=80.0, feasible=True, raw="c"),
        _result(1, Invalid("zzz", "missing tag"), used=10.0, total=90.0, feasible=True, raw="zzz"),
    ]
    failed = _result(2, None, used=1.0, total=2.0, feasible=True, raw="")
    results.append(ProbeResult(failed.probe, failed.truth, None, "boom"))
    records = probe_samples(results, ["tokens"], _same)
    assert [r["tags"] for r in records] == [
        ["hit"], ["miss"], ["false abort"], ["invalid"], ["error"],
    ]  # fmt: skip
    assert records[0]["score"] == pytest.approx(1 / 3, abs=1e-6)
    assert records[0]["reward"] == pytest.approx(0.6, abs=1e-6)
    assert records[1]["score"] == 0.0 and records[2]["score"] == 0.0
    assert records[0]["parsed"] == "[40, 80]" and records[0]["raw"] == "<a>"
    assert records[3]["reason"] == "missing tag" and records[3]["raw"] == "zzz"
    assert records[4]["error"] == "boom" and records[4]["score"] is None
    assert records[0]["remaining"] == {"tokens": 60} and records[0]["id"] == "r1#1"


# --------------------------------------------------------------------------- texts


def test_scrub_masks_credentials_and_keeps_other_text() -> None:
    text = (
        "Authorization: Bearer abcdefgh12345678 x-api-key=qwertyuiop https://u:p@h/v1 "
        "sk-ABCDEFGHIJKLMNOPQRST and MYSECRETVALUE; plain words stay"
    )
    out = scrub(text, ["MYSECRETVALUE"])
    for secret in ("abcdefgh12345678", "qwertyuiop", "u:p@", "sk-ABCDEF", "MYSECRETVALUE"):
        assert secret not in out
    assert out.endswith("plain words stay") and "Authorization: Bearer ***" in out
    assert scrub("nothing to hide <script>") == "nothing to hide <script>"


def test_clip_keeps_both_ends_and_says_how_much_is_left_out() -> None:
    text = "a" * 3000 + "b" * 3000
    out = clip(text, 1000)
    assert out.startswith("a" * 500) and out.endswith("b" * 500)
    assert "[... 5000 characters left out ...]" in out
    assert len(scrubber()("x" * 10_000)) < 4100


# --------------------------------------------------------------------------- page blocks


def test_pack_round_trips_and_is_deterministic() -> None:
    value = {"samples": [{"id": "</script><b>", "score": 0.5, "tags": ["miss"]}]}
    text = pack(value)
    assert pack(value) == text and unpack(text) == value
    assert "<" not in text and ">" not in text


def test_cap_keeps_failures_first_in_run_order() -> None:
    samples = [{"id": str(i), "tags": ["hit"] if i % 3 else ["miss"]} for i in range(10)]
    kept = cap_samples(samples, 5)
    # failures 0, 3, 6, 9 first, then the first good one (1), back in run order
    assert [s["id"] for s in kept] == ["0", "1", "3", "6", "9"]
    assert cap_samples(samples, 20) == samples


def test_page_notes_a_capped_cell() -> None:
    from pytest_budget.report._html import render_html

    cell = {
        "suite": "own", "cell": "c1", "agent": "a", "outcome": "ok", "scores": {"x": 1.0},
        "nodeid": "t::c1", "test_outcome": "passed",
        "samples": [{"id": str(i), "score": i / 10, "tags": ["ok"]} for i in range(10)],
    }  # fmt: skip
    report = {"cells": [cell], "suites": ["own"], "options": {"report_path": "/x/r.json"}}
    page = render_html([("r", report)], sample_cap=4)
    (block,) = re.findall(r'class="sample-block" id="\w+">([^<]*)<', page)
    data = unpack(block)
    assert (data["total"], data["left_out"], data["cap"]) == (10, 6, 4)
    assert [s["id"] for s in data["samples"]] == ["0", "1", "2", "3"]
    assert data["report_path"] == "/x/r.json"
    assert 'class="samples" data-block="sb1">10</button>' in page


def test_changed_samples_rank_by_the_size_of_the_change() -> None:
    from pytest_budget._core.record_json import cell_from_json
    from pytest_budget._core.records import CellRecord

    def cell(scores: dict[str, float | None], tags: dict[str, str]) -> CellRecord:
        return cell_from_json({
            "nodeid": "t.py::x", "suite": "mine", "cell": "x", "agent": "a",
            "samples": [{"id": k, "score": v, "tags": [tags[k]]} for k, v in scores.items()],
        })  # fmt: skip

    base = cell(
        {"q1": 1.0, "q2": 0.5, "q3": 0.2, "q4": None, "q5": 0.3},
        {"q1": "exact", "q2": "invalid", "q3": "invalid", "q4": "error", "q5": "x"},
    )
    new = cell(
        {"q1": 0.2, "q2": 0.6, "q3": 0.2, "q4": None, "q5": None},
        {"q1": "invalid", "q2": "invalid", "q3": "invalid", "q4": "exact", "q5": "x"},
    )
    entries = changed_samples([(base, new)], {}, {})
    assert [(e["id"], e["change"]) for e in entries] == [
        ("q1", pytest.approx(-0.8)), ("q2", pytest.approx(0.1)), ("q5", None), ("q4", None),
    ]  # fmt: skip
    assert entries[0]["base"]["score"] == 1.0 and entries[0]["new"]["score"] == 0.2


# --------------------------------------------------------------------------- figures


def _eta_axes(cells: list[Any]) -> Any:
    import matplotlib

    from pytest_budget.report._html.figures import RC
    from pytest_budget.triage._figures import _eta_bars

    with matplotlib.rc_context(RC):  # type: ignore[arg-type]
        fig = _eta_bars(cells, {"a": "#000000"}, 0.5, "A")
    assert not isinstance(fig, str)
    return fig.axes[0]


def _triage(pool: str, eta: float | None, ci: list[float] | None, note: str | None = None) -> Any:
    from pytest_budget._core.record_json import cell_from_json

    return cell_from_json({
        "suite": "triage", "cell": f"{pool}-u0-a0.5-A", "seed": 0, "outcome": "ok",
        "pool": pool, "alpha": 0.5, "unsolvable_ratio": 0.0, "variant": "A",
        "agent": "a", "scores": {"eta_u": eta, "eta_e": eta}, "eta_note": note,
        "ci": {"eta_u": ci, "eta_e": ci} if ci else {},
        "phase0": {"items": 10, "solved": 0 if note else 5},
    })  # fmt: skip


def test_eta_whiskers_fit_inside_the_axes() -> None:
    # a wide interval: the old limit (-1.6) cut the whisker at -3.2 off
    ax = _eta_axes([_triage("arith", -0.5, [-3.2, 1.4])])
    low, high = ax.get_ylim()
    assert low < -3.2 and high > 1.4


def test_pool_the_solver_solved_nothing_of_gets_a_note() -> None:
    from pytest_budget.triage._evaluate import NOTE_NOTHING_SOLVED

    ax = _eta_axes(
        [_triage("arith#1", 0.5, None), _triage("arith#2", None, None, NOTE_NOTHING_SOLVED)]
    )
    texts = [t.get_text() for t in ax.texts]
    assert any("1 of 2 chunks" in t and "arith#2" in t for t in texts), texts
    ax = _eta_axes([_triage("arith", None, None, NOTE_NOTHING_SOLVED)])
    assert any("solved none" in t.get_text() for t in ax.texts)


# --------------------------------------------------------------------------- saved runs

SMALL = [
    "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-q", "--budget-gate=off", "--budget-suite=triage,awareness,planning",
    "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-env=sokoban-6x6",
    "--budget-rollout-count=4", "--budget-task=dining", "--budget-scenario=static@1",
    "--budget-query-count=2",
]  # fmt: skip


def _blocks(page: str) -> list[Any]:
    return [unpack(text) for text in re.findall(r'class="sample-block" id="\w+">([^<]*)<', page)]


def test_saved_run_and_merged_shards_render_the_same_samples(tmp_path: Path) -> None:
    import jsonschema

    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    runs = [
        ["--budget-report=full.json", "--budget-html=full.html"],
        ["--budget-shard=1/2", "--budget-report=s1.json"],
        ["--budget-shard=2/2", "--budget-report=s2.json"],
    ]
    procs = [
        subprocess.Popen([sys.executable, "-m", "pytest", *SMALL, *args], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for args in runs
    ]  # fmt: skip
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]

    def report(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "pytest_budget", "report", *args],
                              cwd=tmp_path, capture_output=True, text=True, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr

    report("merge", "s1.json", "s2.json", "-o", "merged.json", "--html", "merged.html")
    report("render", "full.json", "-o", "rendered.html")
    for name in ("full.json", "merged.json"):  # the files as written (samples pooled)
        validate_report(json.loads((tmp_path / name).read_text(encoding="utf-8")))
    full = load_report_json(tmp_path / "full.json")  # samples decoded
    merged = load_report_json(tmp_path / "merged.json")
    for cell in full["cells"]:
        for sample in cell.get("samples") or []:
            validate(sample, "report.schema.json", "sample")
    suites = {c["suite"] for c in full["cells"] if c.get("samples")}
    assert suites == {"triage", "awareness", "planning"}
    assert merged["sample_rollouts"] == full["sample_rollouts"]
    pages = {name: (tmp_path / f"{name}.html").read_text(encoding="utf-8")
             for name in ("full", "rendered", "merged")}  # fmt: skip
    blocks = {name: _blocks(page) for name, page in pages.items()}
    assert len(blocks["full"]) == len(full["cells"]) + 1  # + one rollout set
    for name in ("rendered", "merged"):
        for a, b in zip(blocks["full"], blocks[name], strict=True):
            if isinstance(a, dict):  # the report path differs (full.json / merged.json)
                a, b = {**a, "report_path": None}, {**b, "report_path": None}
            assert a == b, name
    # a bad sample is caught by the schema
    broken = json.loads(json.dumps(full["cells"][0]["samples"][0]))
    del broken["tags"]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken, "report.schema.json", "sample")


def test_page_with_samples_is_self_contained() -> None:
    from html.parser import HTMLParser

    from pytest_budget.report._html import render_html

    class Scripts(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[dict[str, str | None]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in ("script", "link", "iframe", "object", "img"):
                self.found.append({"tag": tag, **dict(attrs)})

    cell = {
        "suite": "own", "cell": "c1", "agent": "a", "outcome": "ok", "scores": {"x": 1.0},
        "nodeid": "t::c1", "test_outcome": "passed",
        "samples": [{"id": "</script><script src='https://evil'>", "score": 1, "tags": ["ok"]}],
    }  # fmt: skip
    page = render_html([("r", {"cells": [cell], "suites": ["own"]})])
    parser = Scripts()
    parser.feed(page)
    scripts = [f for f in parser.found if f["tag"] == "script"]
    # one data block and the one inline script; nothing loaded from anywhere
    assert [s.get("type") for s in scripts] == ["application/octet-stream", None]
    # figures are inline data URLs (the frontier's); nothing else has a source or a link
    assert all(
        (s.get("src") or "data:").startswith("data:") and "href" not in s for s in parser.found
    )
    assert "https://" not in page and "evil" not in page
