"""The report file (issue 33): samples pooled, compact JSON, ``.json.gz``, schema version 2.

The pooled encoding is checked against hand-encoded tiny cases and, as a property, to be
the exact inverse of the expanded form (key order, integer/float, ``-0.0``, lone
surrogates); a real run writes ``r.json.gz`` and every ``budget-report`` command reads it.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget._core.record_json import cell_to_json
from pytest_budget.report._cli import main
from pytest_budget.report._document import (
    REPORT_SCHEMA_VERSION,
    ReportFileError,
    build_report,
    load_report,
    write_report,
)
from pytest_budget.report._sample_pool import PoolError, decode_pool, encode
from tests import inprocess


def _roundtrip(values: list[Any]) -> list[Any]:
    encoded, table = encode(values)
    # Through JSON text, as the file holds it.
    encoded, table = json.loads(json.dumps([encoded, table]))
    read = decode_pool(table)
    return [read(value) for value in encoded]


def _typed(value: Any) -> Any:
    """``value`` with every scalar's type beside it (so 1, 1.0 and True differ)."""
    if isinstance(value, dict):
        return ["dict", [(key, _typed(item)) for key, item in value.items()]]
    if isinstance(value, list):
        return ["list", [_typed(item) for item in value]]
    if isinstance(value, float):
        return ["float", repr(value)]
    return [type(value).__name__, value]


# ------------------------------------------------------------------ hand-encoded cases


def test_a_tiny_case_encodes_as_worked_by_hand() -> None:
    samples = [
        {"id": "p1", "k": 3, "s": 0.5, "tags": ["hit"]},
        {"id": "p2", "k": 3, "s": 1.0, "tags": ["hit"]},
    ]
    encoded, table = encode([samples])
    # One shape; used twice: the integer 3 and the list ["hit"] ("hit", "p1", "p2" are
    # too short to be worth a reference; floats are always in place).
    assert table == {
        "encoding": "pool-1",
        "shapes": [["id", "k", "s", "tags"]],
        "values": [3, [0, "hit"]],
    }
    assert encoded == [[0, [1, "p1", 0, 0.5, 1], [1, "p2", 0, 1.0, 1]]]
    assert _roundtrip([samples]) == [samples]


def test_integers_are_always_references_and_a_shared_line_is_stored_once() -> None:
    prompt = "You are playing a game. " * 10 + "\n"  # 241 characters, one line
    texts = [prompt + "state A", prompt + "state B", "once"]
    encoded, table = encode([texts, 7])
    assert table["values"] == [prompt, 7]
    assert encoded == [[0, ["", 0, "state A"], ["", 0, "state B"], "once"], 1]
    assert decode_pool(table)(encoded[0]) == texts


def test_a_value_used_once_is_written_in_place() -> None:
    long = "x" * 50
    encoded, table = encode([{"a": long}, {"b": [long, 2.5]}])
    assert table["values"] == [long]  # the text twice; each object once
    assert table["shapes"] == [["a"], ["b"]]
    assert encoded == [[1, 0], [2, [0, 0, 2.5]]]


# ----------------------------------------------------------------------- property

_KEYS = st.one_of(st.sampled_from(["id", "score", "tags", "text", "k"]), st.text(max_size=6))
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e300, -2.5]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "x\udfff", "You are an agent.\n" * 14, "line\nline\n" * 30]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSON, max_size=5))
def test_the_encoding_is_the_exact_inverse_of_the_expanded_form(values: list[Any]) -> None:
    back = _roundtrip(values)
    assert _typed(back) == _typed(values)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"encoding": "zip-9", "shapes": [], "values": []}, "encoding 'zip-9'"),
        ({"encoding": "pool-1", "shapes": [[1]], "values": []}, "arrays of keys"),
        ({"encoding": "pool-1", "values": []}, "'shapes' and 'values'"),
    ],
)
def test_a_bad_pool_is_refused(table: dict[str, Any], message: str) -> None:
    with pytest.raises(PoolError, match=message):
        decode_pool(table)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (5, "reference 5 outside"),
        ([9, 2.5], "shape 9 does not fit"),
        (["", 3.5], "texts only"),
        ([], "must start with its kind"),
        (0, "refers to itself"),
    ],
)
def test_a_bad_reference_is_refused(value: Any, message: str) -> None:
    read = decode_pool({"encoding": "pool-1", "shapes": [], "values": [[0, 0]]})
    with pytest.raises(PoolError, match=message):
        read(value)


# ---------------------------------------------------------------------- the file


def _cell(agent: str, texts: list[str]) -> dict[str, Any]:
    return {
        "nodeid": f"t.py::test_own[{agent}]",
        "suite": "own",
        "cell": "c1",
        "agent": agent,
        "test_outcome": "passed",
        "scores": {"acc": 0.5},
        "samples": [
            {"id": f"s{i}", "score": 1.0, "tags": ["hit"], "raw": text}
            for i, text in enumerate(texts)
        ],
    }


HOSTILE_TEXTS = ["\ud800 lone", "ok", "\udfff" * 3 + "é√", "long " * 100]


def _document() -> dict[str, Any]:
    report = build_report(
        [_cell("a", HOSTILE_TEXTS), _cell("b", HOSTILE_TEXTS[::-1])],
        options={},
        suites=[],
        duration_s=1.0,
        seed=1,
    )
    report["created"] = "2026-01-01T00:00:00+00:00"
    return report


def _expanded(document: dict[str, Any]) -> list[Any]:
    return [cell_to_json(cell) for cell in document["cells"]]


@pytest.mark.parametrize("name", ["r.json", "r.json.gz"])
def test_a_written_report_reads_back_the_same_samples(tmp_path: Path, name: str) -> None:
    report = _document()
    path = write_report(tmp_path / name, report)
    data = path.read_bytes()
    if name.endswith(".gz"):
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    text = data.decode("ascii")  # every non-ASCII character (a lone surrogate too) escaped
    assert "\n" not in text.rstrip("\n")  # compact: no indentation
    raw = json.loads(text)
    assert raw["schema_version"] == REPORT_SCHEMA_VERSION == 2
    assert isinstance(raw["sample_pool"], dict)
    assert isinstance(raw["cells"][0]["samples"], int | list)
    back = load_report(path)
    assert "sample_pool" not in back
    assert _expanded(back) == _expanded(report)
    assert back["cells"][0].samples[0]["raw"] == "\ud800 lone"
    # The same report, the same bytes (gzip without a timestamp).
    again = write_report(tmp_path / ("again-" + name), report)
    assert again.read_bytes() == path.read_bytes()


def test_a_version_1_report_with_samples_in_place_is_still_read(tmp_path: Path) -> None:
    report = _document()
    old = {**report, "schema_version": 1, "cells": _expanded(report)}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old, indent=2), encoding="utf-8")
    back = load_report(path)
    assert back["schema_version"] == REPORT_SCHEMA_VERSION
    assert _expanded(back) == _expanded(report)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda data: gzip.compress(data)[:40], "cannot read the report"),
        (lambda data: data.replace(b'"encoding":"pool-1"', b'"encoding":"pool-0"'), "pool-0"),
        (lambda data: b"\x1f\x8b" + b"not gzip", "cannot read the report"),
    ],
    ids=["cut-gzip", "unknown-pool", "bad-gzip"],
)
def test_a_damaged_file_is_one_line(tmp_path: Path, mangle: Any, message: str) -> None:
    path = write_report(tmp_path / "r.json", _document())
    path.write_bytes(mangle(path.read_bytes()))
    with pytest.raises(ReportFileError) as caught:
        load_report(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
    assert message in str(caught.value)


# ------------------------------------------------------------------- a real run

PLANNER = """
import json

def pytest_budget_planner(config):
    def plan(request):
        ids = [p.id for p in request.items][:4]
        plan = {"plan": [{"id": i, "tokens": request.budget // 4} for i in ids]}
        return json.dumps(plan) + " \\ud800"
    return plan
"""


def _blocks(page: Path) -> list[Any]:
    from pytest_budget.report._html.drill_data import unpack

    found = re.findall(r'class="sample-block" id="[^"]+">([^<]*)</script>', page.read_text("utf-8"))
    return [unpack(text) for text in found]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``budget-report ARGS`` in this process (its ``main``; a process of its own cost ~1.5 s
    a command, and the console script and ``python -m`` have their own tests)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def test_a_real_run_writes_json_gz_and_every_command_reads_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PLANNER)
    common = ("-p", "no:cacheprovider", "--budget-gate=off", "--budget-ci-resamples=0")
    result = inprocess.run(
        pytester, "--budget-suite=triage,awareness", "--budget-pool-size=6", "--budget-alpha=0.5",
        "--budget-unsolvable=0", "--budget-env=sokoban-6x6", "--budget-rollout-count=4",
        "--budget-shard=1/1", "--budget-report=r.json.gz", "--budget-html=run.html", *common,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    path = pytester.path / "r.json.gz"
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    report = load_report(path)
    cells = report["cells"]
    awareness = [c for c in cells if c.suite == "awareness"]
    assert awareness and all(c.samples for c in cells)
    assert isinstance(report["sample_rollouts"], dict) and report["sample_rollouts"]
    # The planner's reply, lone surrogate and all, survives JSON and gzip.
    assert any(c.suite == "triage" and "\ud800" in (c.plan_raw or "") for c in cells)

    page = pytester.path / "page.html"
    done = _cli("render", str(path), "-o", str(page))
    assert done.returncode == 0, done.stderr
    blocks = _blocks(page)
    assert len(blocks) >= len(cells)  # every cell's samples (and the rollouts) on the page
    assert blocks == _blocks(pytester.path / "run.html")  # same as the run's own page
    assert any("\ud800" in json.dumps(block, ensure_ascii=False) for block in blocks)
    merged = pytester.path / "merged.json.gz"
    done = _cli("merge", str(path), "-o", str(merged))
    assert done.returncode == 0, done.stderr
    assert merged.read_bytes()[:2] == b"\x1f\x8b"
    assert _expanded(load_report(merged)) == _expanded(report)
    assert load_report(merged)["sample_rollouts"] == report["sample_rollouts"]
    done = _cli("render", "--compare", str(path), str(merged), "-o", str(page))
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------- the reference page

REPORT_MD = Path(__file__).resolve().parent.parent / "docs" / "reference" / "report.md"


def _section(title: str) -> str:
    text = REPORT_MD.read_text(encoding="utf-8")
    start = text.index(f"#### {title}")
    return text[start : text.index("\n### ", start)]


def test_the_pages_encoded_example_decodes_to_the_samples_it_shows() -> None:
    (block,) = re.findall(r"```json\n(.*?)```", _section("How samples are stored"), flags=re.S)
    example = json.loads(block)
    samples = decode_pool(example["sample_pool"])(example["cells"][0]["samples"])
    assert samples == [
        {"id": "p1", "k": 3, "s": 0.5, "tags": ["hit"]},
        {"id": "p2", "k": 3, "s": 1.0, "tags": ["hit"]},
    ]
    assert encode([samples]) == ([example["cells"][0]["samples"]], example["sample_pool"])


def test_the_pages_python_snippet_prints_an_expanded_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", _section("How samples are stored"), flags=re.S)
    write_report(tmp_path / "r.json.gz", _document())
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(REPORT_MD), "exec"), {"__name__": "report_md_example"})
    shown = json.loads(capsys.readouterr().out)
    assert shown == {"id": "s0", "score": 1.0, "tags": ["hit"], "raw": "\ud800 lone"}
