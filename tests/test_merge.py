"""``budget-report merge``: shard reports combined into the report of the unsharded run.

The end-to-end test runs the installed suites for real (an unsharded run and three
shards, one of them on two xdist workers, as separate processes like separate machines)
and merges the shards with the real ``budget-report`` command.  The refusal tests build
shard reports with the real report builder and options and feed them to the command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_budget._core.record_json import cell_to_json
from pytest_budget._run.options import BudgetOptions
from pytest_budget._run.shard import Shard
from pytest_budget.report._cli import main as budget_report
from pytest_budget.report._document import build_report, write_report
from pytest_budget.report._merge import MergeError, merge_reports
from pytest_budget.triage._options import TriageOptions
from tests.schemas import validate_report

# Every suite, small: triage 2 pools x 2 ratios x 2 alphas x 4 agents = 32 cells,
# awareness 1 env x 6 estimators = 6, planning 2 tasks x 2 scenarios x 4 agents = 16.
SMALL_RUN = [
    "--budget-suite=all",
    "--budget-pool-size=6",
    "--budget-alpha=0.5,1.0",
    "--budget-env=sokoban-6x6",
    "--budget-rollout-count=4",
    "--budget-task=dining,location",
    "--budget-scenario=static@1,ban_tool:1@3",
    "--budget-query-count=2",
    "--budget-gate=off",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",  # its plugin imports all of hypothesis at the end of a run (~1 s)
]
CELLS = 54


def _pytest(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *SMALL_RUN, *args],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )


def _budget_report(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("budget-report", path=str(Path(sys.executable).parent))
    assert command is not None, "the budget-report console script is not installed"
    return subprocess.run([command, *args], cwd=folder, capture_output=True, text=True, check=False)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _tables(lines: list[str]) -> list[str]:
    """Score-table lines of a pytest run or of budget-report merge: titles (without the
    ``=`` rule around them) and rows, up to the ``budget report:`` line."""
    start = next(i for i, line in enumerate(lines) if "triage: triage efficiency" in line)
    out: list[str] = []
    for line in lines[start:]:
        if line.startswith("budget report:"):
            break
        out.append(line.strip("= ") if line.startswith("=") else line)
    return out


def _without(cell: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in cell.items() if k not in keys}


def test_sharded_runs_merged_equal_the_unsharded_run(tmp_path: Path) -> None:
    runs = {
        "full": _pytest(tmp_path, "--budget-report=full.json"),
        "1": _pytest(tmp_path, "--budget-shard=1/3", "--budget-report=shard-1.json"),
        "2": _pytest(tmp_path, "--budget-shard=2/3", "--budget-report=shard-2.json", "-n", "2"),
        "3": _pytest(tmp_path, "--budget-shard=3/3", "--budget-report=shard-3.json"),
    }
    output = {name: run.communicate(timeout=300)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0, output[name]
    full = _load(tmp_path / "full.json")
    shards = [_load(tmp_path / f"shard-{i}.json") for i in (1, 2, 3)]
    assert full["summary"]["cells"] == CELLS and full["shard"] is None
    assert [s["shard"] for s in shards] == [{"index": i, "count": 3} for i in (1, 2, 3)]
    assert all(0 < len(s["cells"]) < CELLS for s in shards)
    # The shards without xdist say how many tests they left to the others.
    for name, shard in (("1", shards[0]), ("3", shards[2])):
        kept = len(shard["cells"])
        assert f"{kept} passed, {CELLS - kept} deselected" in output[name]

    merge = _budget_report(
        tmp_path, "merge", "shard-3.json", "shard-1.json", "shard-2.json", "-o", "merged.json"
    )
    assert merge.returncode == 0, merge.stderr
    merged = _load(tmp_path / "merged.json")
    validate_report(merged)

    # Same cells in the same order; only the test call's duration differs.
    assert [_without(c, "duration_s") for c in merged["cells"]] == [
        _without(c, "duration_s") for c in full["cells"]
    ]
    assert merged["summary"] == full["summary"]
    for key in ("schema_version", "tool", "version", "seed", "suites", "python"):
        assert merged[key] == full[key], key
    assert _without(merged["options"], "report_path") == _without(full["options"], "report_path")
    assert merged["options"]["report_path"] == str(tmp_path / "merged.json")
    assert merged["shard"] is None
    assert merged["merged_from"] == [
        {
            "source": f"shard-{i}.json",
            "shard": {"index": i, "count": 3},
            "cells": len(shards[i - 1]["cells"]),
            "duration_s": shards[i - 1]["duration_s"],
            "created": shards[i - 1]["created"],
        }
        for i in (1, 2, 3)
    ]
    assert merged["duration_s"] == max(s["duration_s"] for s in shards)
    # The tables the unsharded run printed, printed again by the merge.
    assert _tables(merge.stdout.splitlines()) == _tables(output["full"].splitlines())
    assert merge.stdout.splitlines()[-1] == (
        f"budget report: {tmp_path / 'merged.json'} ({CELLS} cells from 3 of 3 shards)"
    )

    # A shard run with another seed is refused by name, with both values.
    other = _load(tmp_path / "shard-2.json")
    other["seed"] = 7
    write_report(tmp_path / "shard-2-seed7.json", other)
    refused = _budget_report(
        tmp_path, "merge", "shard-1.json", "shard-2-seed7.json", "shard-3.json", "-o", "x.json"
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "budget-report: error: shard-1.json and shard-2-seed7.json differ in seed: 42 vs 7; "
        "merge only the shard reports of one run (same version, seed and options)"
    ]
    assert not (tmp_path / "x.json").exists()

    # One HTML page for the merged run.
    html = _budget_report(
        tmp_path, "merge", "shard-1.json", "shard-2.json", "shard-3.json",
        "-o", "again.json", "--html", "merged.html",
    )  # fmt: skip
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "merged.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html")
    assert all(suite in page for suite in ("triage", "awareness", "planning"))


# -- refusals and field rules, on reports built like the plugin builds them -------------


def _cell(suite: str, key: list[Any], agent: str) -> dict[str, Any]:
    own: dict[str, Any] = {}
    if suite == "planning":  # the fields every planning record has
        task, level = key
        own = {
            "task": task,
            "scenario": f"static-L{level}",
            "mode": "static",
            "block_count": 0,
            "refinement_level": level,
        }
    return {
        **own,
        "suite": suite,
        "cell": "-".join(str(part) for part in key),
        "agent": agent,
        "seed": 42,
        "outcome": "ok",
        "scores": {"emr": 1.0},
        "sort_key": [*key, agent],
        "nodeid": f"::test_{suite}[{'-'.join(str(p) for p in key)}-{agent}]",
        "test_outcome": "passed",
        "duration_s": 0.01,
    }


ALL_CELLS = [
    _cell(suite, key, agent)
    for suite, keys in (
        ("planning", [["dining", 1], ["location", 3]]),
        ("triage", [["arith", 0.5]]),
    )
    for key in keys
    for agent in ("greedy", "oracle", "random")
]


def _options(**values: Any) -> BudgetOptions:
    """A planning + triage run's options with some of the run's or triage's values set."""
    triage_fields = {f.name for f in fields(TriageOptions)}
    triage = {k: v for k, v in values.items() if k in triage_fields}
    run = {k: v for k, v in values.items() if k not in triage_fields}
    return BudgetOptions(
        suites=("planning", "triage"),
        gate="off",
        per_suite={"triage": TriageOptions(**triage)},
        **run,
    )


def _shard_report(
    index: int,
    count: int = 3,
    *,
    options: BudgetOptions | None = None,
    cells: list[dict[str, Any]] | None = None,
    duration: float = 1.0,
) -> dict[str, Any]:
    """A shard's report as the plugin writes it: the shard's cells of ``ALL_CELLS``."""
    from pytest_budget._run.shard import shard_of

    base = options or BudgetOptions(suites=("planning", "triage"), gate="off")
    shard_options = replace(
        base, shard=Shard(index, count), report_path=f"/runner/{index}/report.json"
    )
    if cells is None:
        cells = [c for c in ALL_CELLS if shard_of(c["nodeid"], count) == index]
    report = build_report(
        cells, options=shard_options.as_dict(), suites=base.suites, duration_s=duration, seed=42
    )
    report["shard"] = {"index": index, "count": count}
    return report


def _merge_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]], *extra: str
) -> tuple[int, str, str]:
    names = []
    for n, doc in enumerate(docs):
        name = f"r{n + 1}.json"
        write_report(tmp_path / name, doc)
        names.append(str(tmp_path / name))
    code = budget_report(["merge", *names, "-o", str(tmp_path / "out.json"), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_error(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("budget-report: error: ")
    return lines[0].removeprefix("budget-report: error: ")


def test_every_cell_lands_in_one_of_the_synthetic_shards() -> None:
    """The fixture reports below really are shards (each non-empty, together all cells)."""
    parts = [_shard_report(i)["cells"] for i in (1, 2, 3)]
    assert all(parts)
    assert sorted(c.nodeid for p in parts for c in p) == sorted(c["nodeid"] for c in ALL_CELLS)


def test_merge_restores_the_unsharded_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [_shard_report(i, duration=d) for i, d in ((2, 3.5), (3, 1.25), (1, 2.0))]
    code, out, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 0, err
    merged = _load(tmp_path / "out.json")
    unsharded = build_report(ALL_CELLS, options={}, suites=(), duration_s=0, seed=42)
    assert merged["cells"] == [cell_to_json(cell) for cell in unsharded["cells"]]
    # suite first, then the suite's key (location L3 after dining L1), then the node id
    assert [c["nodeid"] for c in merged["cells"]][:4] == [
        "::test_planning[dining-1-greedy]",
        "::test_planning[dining-1-oracle]",
        "::test_planning[dining-1-random]",
        "::test_planning[location-3-greedy]",
    ]
    assert merged["summary"] == {"cells": 9, "outcomes": {"ok": 9}, "tests": {"passed": 9}}
    assert merged["duration_s"] == 3.5  # the slowest shard: they ran side by side
    assert [m["shard"]["index"] for m in merged["merged_from"]] == [1, 2, 3]
    assert merged["options"]["shard"] is None
    assert "planning: cost-optimal tool use" in out


@pytest.mark.parametrize(
    ("change", "what", "values"),
    [
        ({"seed": 7}, "seed", "42 vs 7"),
        ({"version": "0.0.1"}, "pytest-budget version", None),
        ({"suites": ["planning"]}, "suites", '["planning", "triage"] vs ["planning"]'),
    ],
)
def test_mixed_runs_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    what: str,
    values: str | None,
) -> None:
    docs = [_shard_report(i) for i in (1, 2, 3)]
    docs[2].update(change)
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    message = _one_error(err)
    assert message.startswith(
        f"{tmp_path / 'r1.json'} and {tmp_path / 'r3.json'} differ in {what}: "
    )
    if values is None:
        values = f'"{docs[0]["version"]}" vs "0.0.1"'
    assert values in message
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(
    ("field", "mine", "theirs"),
    [
        ("agents", ("greedy",), ("greedy", "oracle")),
        ("pool_size", 30, 12),
        ("alphas", (0.5,), (0.5, 1.0)),
        ("concurrency", 8, 2),
        ("pools", ("/a/pools/mine.jsonl",), ("/a/pools/other.jsonl",)),
    ],
)
def test_options_that_change_scores_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, mine: Any, theirs: Any
) -> None:
    docs = [
        _shard_report(1, options=_options(**{field: mine})),
        _shard_report(2, options=_options(**{field: mine})),
        _shard_report(3, options=_options(**{field: theirs})),
    ]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    message = _one_error(err)
    assert f"r1.json and {tmp_path / 'r3.json'} differ in option {field}: " in message


def test_paths_that_differ_between_machines_are_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where files go (report, cache, snapshots, HTML) and the folder an input file sits
    in differ from machine to machine; the file's name must not."""
    docs = [
        _shard_report(
            i,
            options=_options(
                cache_dir=f"/runner/{i}/cache",
                snapshot_dir=f"/runner/{i}/__budget_snapshots__",
                pools=(f"/runner/{i}/checkout/pools/mine.jsonl",),
            ),
        )
        for i in (1, 2, 3)
    ]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 0, err
    options = _load(tmp_path / "out.json")["options"]
    assert options["cache_dir"] is None and options["snapshot_dir"] is None
    assert options["pools"] == ["/runner/1/checkout/pools/mine.jsonl"]
    assert options["report_path"] == str(tmp_path / "out.json")


def test_another_shard_count_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = [_shard_report(1, 2), _shard_report(2, 3)]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    assert "differ in shard count: 2 vs 3" in _one_error(err)


def test_the_same_shard_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [_shard_report(1), _shard_report(2), _shard_report(2), _shard_report(3)]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    assert _one_error(err) == (
        f"{tmp_path / 'r2.json'} and {tmp_path / 'r3.json'} are both shard 2/3; give each "
        "shard's report once"
    )


def test_a_missing_shard_is_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [_shard_report(3), _shard_report(1)]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    assert _one_error(err) == (
        f"incomplete set: shard(s) 2/3 missing (have 1/3 ({tmp_path / 'r2.json'}), "
        f"3/3 ({tmp_path / 'r1.json'})); give every shard's report, or pass --allow-partial"
    )
    code, out, err = _merge_cli(tmp_path, capsys, docs, "--allow-partial")
    assert code == 0, err
    merged = _load(tmp_path / "out.json")
    expected = len(docs[0]["cells"]) + len(docs[1]["cells"])
    assert merged["summary"]["cells"] == len(merged["cells"]) == expected < len(ALL_CELLS)
    assert [m["shard"] for m in merged["merged_from"]] == [
        {"index": 1, "count": 3},
        {"index": 3, "count": 3},
    ]
    assert f"({expected} cells from 2 of 3 shards)" in out


def test_a_cell_in_two_shards_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = ALL_CELLS[4]
    docs = [
        _shard_report(1, 2, cells=[ALL_CELLS[0], twice]),
        _shard_report(2, 2, cells=[twice, ALL_CELLS[8]]),
    ]
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    assert _one_error(err) == (
        f"cell '{twice['nodeid']}' is in both {tmp_path / 'r1.json'} and "
        f"{tmp_path / 'r2.json'}; shards never share a cell, so these are not shards of one run"
    )


def test_an_unsharded_report_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _shard_report(1)
    whole["shard"] = None
    code, _, err = _merge_cli(tmp_path, capsys, [_shard_report(2), whole])
    assert code == 2
    assert _one_error(err) == (
        f'{tmp_path / "r2.json"}: not a shard report (its "shard" is null: the run had no '
        "--budget-shard); write shard reports with pytest --budget-shard=I/N --budget-report=PATH"
    )


def test_another_schema_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [_shard_report(i) for i in (1, 2, 3)]
    docs[1]["schema_version"] = 3
    code, _, err = _merge_cli(tmp_path, capsys, docs)
    assert code == 2
    assert _one_error(err).startswith(f"{tmp_path / 'r2.json'}: report schema version 3, ")
    # Documents handed over directly (not read from files) are checked the same way.
    with pytest.raises(MergeError, match=r"^a\.json and b\.json differ in schema_version: 2 vs 3;"):
        merge_reports(docs[:2], ["a.json", "b.json"], allow_partial=True)


def test_models_blocks_are_summed() -> None:
    block = {
        "record_mode": "new",
        "cache_dir": "/runner/1/cache/models",
        "max_usd": 2.0,
        "spent_usd": 0.25,
        "spent_usd_priced": 0.25,
        "cap_reached": False,
        "cells_skipped_for_spend": 0,
        "usage_reported": True,
        "calls": 10,
        "replayed": 3,
        "input_tokens": 1000,
        "output_tokens": 100,
    }
    other = {
        **block,
        "cache_dir": "/runner/2/cache/models",
        "spent_usd": None,  # a call without a price in this shard
        "spent_usd_priced": 0.5,
        "cap_reached": True,
        "cells_skipped_for_spend": 2,
        "usage_reported": False,
        "calls": 5,
        "replayed": 0,
        "input_tokens": 700,
        "output_tokens": 50,
    }
    docs = [_shard_report(1, 2), _shard_report(2, 2)]
    docs[0]["models"], docs[1]["models"] = block, other
    merged = merge_reports(docs, ["a.json", "b.json"])["models"]
    assert merged == {
        "record_mode": "new",
        "cache_dir": None,  # differs per machine
        "max_usd": 4.0,  # each shard had its own cap
        "spent_usd": None,  # unknown for the whole when unknown for a shard
        "spent_usd_priced": 0.75,
        "cap_reached": True,
        "cells_skipped_for_spend": 2,
        "usage_reported": False,
        "calls": 15,
        "replayed": 3,
        "input_tokens": 1700,
        "output_tokens": 150,
    }
    docs[1]["models"] = {**other, "spent_usd": 0.5, "usage_reported": True, "max_usd": None}
    again = merge_reports(docs, ["a.json", "b.json"])["models"]
    assert again["spent_usd"] == 0.75 and again["usage_reported"] is True
    assert again["max_usd"] is None  # one shard had no cap: no cap for the whole


def test_fields_of_later_versions_are_kept_when_the_shards_agree() -> None:
    docs = [_shard_report(1, 2), _shard_report(2, 2)]
    for doc in docs:
        doc["gate_summary"] = {"mode": "off"}
    docs[0]["host"], docs[1]["host"] = "runner-1", "runner-2"
    notes: list[str] = []
    merged = merge_reports(docs, ["a.json", "b.json"], notes=notes)
    assert merged["gate_summary"] == {"mode": "off"}
    assert "host" not in merged
    assert notes == ["field 'host' differs between the shards and is left out"]


def test_merged_cells_keep_their_sort_key() -> None:
    merged = merge_reports(
        [_shard_report(1, 2), _shard_report(2, 2)], ["a.json", "b.json"], allow_partial=False
    )
    assert all(cell.sort_key for cell in merged["cells"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT.*", merged["created"])
