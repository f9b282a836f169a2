"""``budget-report merge``: combine the JSON reports of ``--budget-shard=i/N`` runs.

The merged report is the report the unsharded run would have written: the same cells in
the same order (each cell keeps its ``sort_key``), the summary recounted, and the score
tables the run would have printed.  What only a run can know is combined per field:
``duration_s`` is the slowest shard's (the wall time of shards run side by side; each
shard's own time stays in ``merged_from``), ``models`` counters are summed.

Shards of different runs never mix: a different package or schema version, seed, suite
list, shard count, or option that changes what is scored is a one-line error naming the
two files and both values.  Only options that say where files go (``*_path``, ``*_dir``)
and the shard itself may differ; input files (pools, rollouts, queries, demand panel,
price file) are compared by file name, since each machine checks the project out in its
own directory.  Plain Python (no pytest).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget._core.records import CellRecord
from pytest_budget.report._document import (
    REPORT_SCHEMA_VERSION,
    ReportFileError,
    build_report,
    hoist_rollouts,
    load_report,
    report_cells,
    write_report,
)

__all__ = ["MergeError", "merge_command", "merge_reports"]

#: Top-level fields this module knows how to merge; any other (added by a later version)
#: is kept when every shard has the same value.
_KNOWN_FIELDS = frozenset(
    {
        "schema_version", "tool", "version", "created", "python", "seed", "suites",
        "options", "duration_s", "summary", "cells", "models", "shard", "merged_from",
        "sample_rollouts",
    }
)  # fmt: skip
#: Options naming input files: compared by file name, not by absolute path.
_FILE_OPTIONS = frozenset({"pools", "rollouts", "queries", "warehouse_demand", "price_file"})
#: ``models`` fields that are true for the merge when true for every shard.
_ALL_TRUE = frozenset({"usage_reported"})
_HINT = "merge only the shard reports of one run (same version, seed and options)"


class MergeError(ReportFileError):
    """Shard reports that cannot be merged; the message is one line naming the files."""


def _is_location(key: str) -> bool:
    """Options that only say where output or caches go (never what is scored)."""
    return key == "shard" or key.endswith(("_path", "_dir"))


def _file_names(value: Any) -> Any:
    if isinstance(value, str):
        return Path(value).name
    if isinstance(value, list | tuple):
        return [Path(str(item)).name for item in value]
    return value


def _scored_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that can change a score or a test outcome, comparable across machines."""
    return {
        key: _file_names(value) if key in _FILE_OPTIONS else value
        for key, value in options.items()
        if not _is_location(key)
    }


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _shard_of(document: Mapping[str, Any], source: str) -> tuple[int, int]:
    shard = document.get("shard")
    if not isinstance(shard, Mapping):
        found = "is null" if "shard" in document else "is missing"
        raise MergeError(
            f'{source}: not a shard report (its "shard" {found}: the run had no '
            "--budget-shard); write shard reports with pytest --budget-shard=I/N "
            "--budget-report=PATH"
        )
    index, count = shard.get("index"), shard.get("count")
    if not isinstance(index, int) or not isinstance(count, int) or not 1 <= index <= count:
        raise MergeError(f'{source}: "shard" is not {{"index": I, "count": N}} (corrupt)')
    return index, count


def _check_same_run(
    first: Mapping[str, Any], first_source: str, other: Mapping[str, Any], other_source: str
) -> None:
    checks: list[tuple[str, Any, Any]] = [
        ("schema_version", first.get("schema_version"), other.get("schema_version")),
        ("pytest-budget version", first.get("version"), other.get("version")),
        ("seed", first.get("seed"), other.get("seed")),
        ("shard count", _shard_of(first, first_source)[1], _shard_of(other, other_source)[1]),
        ("suites", first.get("suites"), other.get("suites")),
    ]
    mine = _scored_options(first.get("options") or {})
    theirs = _scored_options(other.get("options") or {})
    for key in sorted(set(mine) | set(theirs)):
        checks.append((f"option {key}", mine.get(key), theirs.get(key)))
    for what, a, b in checks:
        if a != b:
            raise MergeError(
                f"{first_source} and {other_source} differ in {what}: {_show(a)} vs "
                f"{_show(b)}; {_HINT}"
            )


def _merge_models(blocks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counters and spend summed; spend caps summed (each shard had its own ledger)."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(key for block in blocks for key in block):
        values = [block[key] for block in blocks if key in block]
        if key in ("spent_usd", "max_usd"):
            # Unknown (or uncapped) for the whole when unknown for any shard.
            known = [v for v in values if isinstance(v, int | float)]
            missing = len(known) < len(blocks)
            merged[key] = None if missing else round(sum(known), 6)
        elif all(isinstance(v, bool) for v in values):
            merged[key] = all(values) if key in _ALL_TRUE else any(values)
        elif all(isinstance(v, int | float) for v in values):
            total = sum(values)
            merged[key] = round(total, 6) if isinstance(total, float) else total
        else:
            # Settings such as record_mode or cache_dir: kept when the shards agree.
            merged[key] = values[0] if all(v == values[0] for v in values) else None
    return merged


def merge_reports(
    documents: Sequence[Mapping[str, Any]],
    sources: Sequence[str],
    *,
    allow_partial: bool = False,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """One report from the reports of shards 1..N of one run (``sources`` name them).

    Raises :class:`MergeError` (one line) for reports of different runs, a shard given
    twice, a missing shard (unless ``allow_partial``) or a cell found in two shards.
    Lines worth telling the user (dropped fields) are appended to ``notes``.
    """
    if len(documents) != len(sources) or not documents:
        raise ValueError("merge_reports needs one source name per document, and at least one")
    shards = [_shard_of(doc, src) for doc, src in zip(documents, sources, strict=True)]
    first, first_source = documents[0], sources[0]
    for doc, src in zip(documents[1:], sources[1:], strict=True):
        _check_same_run(first, first_source, doc, src)
    count = _check_shard_set(shards, sources, allow_partial)
    order = sorted(range(len(documents)), key=lambda k: shards[k][0])
    cells = _cells_once(documents, sources, order)
    durations = [float(documents[k].get("duration_s") or 0.0) for k in order]
    merged = build_report(
        cells,
        options=_merged_options(documents),
        suites=list(first.get("suites") or []),
        duration_s=max(durations),
        seed=int(first.get("seed") or 0),
    )
    # The shards' rollout stores (awareness samples), united; build_report kept the refs.
    store: dict[str, Any] = {}
    for doc in documents:
        if isinstance(doc.get("sample_rollouts"), Mapping):
            store.update(doc["sample_rollouts"])
    _, used = hoist_rollouts(merged["cells"], store)
    if used:
        merged["sample_rollouts"] = used
    _merge_run_fields(merged, documents, notes)
    merged["shard"] = None
    merged["merged_from"] = [
        {
            "source": sources[k],
            "shard": {"index": shards[k][0], "count": count},
            "cells": len(documents[k].get("cells") or []),
            "duration_s": durations[n],
            "created": documents[k].get("created"),
        }
        for n, k in enumerate(order)
    ]
    if merged.get("schema_version") != REPORT_SCHEMA_VERSION:  # pragma: no cover - guard
        raise MergeError(f"merged report has schema version {merged.get('schema_version')!r}")
    return merged


def _check_shard_set(
    shards: Sequence[tuple[int, int]], sources: Sequence[str], allow_partial: bool
) -> int:
    """The shard count, once each shard is known given once and (unless
    ``allow_partial``) every shard is there."""
    count = shards[0][1]
    seen: dict[int, str] = {}
    for (index, _), src in zip(shards, sources, strict=True):
        if index in seen:
            raise MergeError(
                f"{seen[index]} and {src} are both shard {index}/{count}; give each shard's "
                "report once"
            )
        seen[index] = src
    missing = [index for index in range(1, count + 1) if index not in seen]
    if missing and not allow_partial:
        have = ", ".join(f"{i}/{count} ({seen[i]})" for i in sorted(seen))
        raise MergeError(
            f"incomplete set: shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing "
            f"(have {have}); give every shard's report, or pass --allow-partial"
        )
    return count


def _cells_once(
    documents: Sequence[Mapping[str, Any]], sources: Sequence[str], order: list[int]
) -> list[CellRecord]:
    """The shards' cells in shard order; a cell in two shards is an error."""
    owner: dict[str, str] = {}
    cells: list[CellRecord] = []
    for k in order:
        for cell in report_cells(documents[k]):
            nodeid = cell.nodeid
            if nodeid in owner:
                raise MergeError(
                    f"cell {nodeid!r} is in both {owner[nodeid]} and {sources[k]}; shards "
                    "never share a cell, so these are not shards of one run"
                )
            owner[nodeid] = sources[k]
            cells.append(cell)
    return cells


def _merged_options(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first shard's options, without the shard and the paths that differ."""
    options = dict(documents[0].get("options") or {})
    options["shard"] = None
    for key in [key for key in options if _is_location(key) and key != "shard"]:
        # Paths that differ between machines mean nothing for the whole.
        if any((doc.get("options") or {}).get(key) != options[key] for doc in documents):
            options[key] = None
    return options


def _merge_run_fields(
    merged: dict[str, Any], documents: Sequence[Mapping[str, Any]], notes: list[str] | None
) -> None:
    """The run-level fields: the first shard's version, the Pythons, the models block
    summed, and every other field the shards agree on (one that differs is noted)."""
    merged["version"] = documents[0].get("version")  # the version that scored the cells
    pythons = sorted({str(doc.get("python")) for doc in documents if doc.get("python")})
    if pythons:
        merged["python"] = ", ".join(pythons)
    blocks = [doc["models"] for doc in documents if isinstance(doc.get("models"), Mapping)]
    if blocks:
        merged["models"] = _merge_models(blocks)
    for key in dict.fromkeys(key for doc in documents for key in doc):
        if key in _KNOWN_FIELDS:
            continue
        values = [doc.get(key) for doc in documents]
        if all(value == values[0] for value in values):
            merged[key] = values[0]
        elif notes is not None:
            notes.append(f"field {key!r} differs between the shards and is left out")


def _table_lines(report: Mapping[str, Any]) -> list[str]:
    """The score tables the unsharded run prints, from the merged cells."""
    from pytest_budget.report._terminal_tables import tables

    grouped: dict[str, list[CellRecord]] = {}
    for cell in report_cells(report):
        grouped.setdefault(cell.suite, []).append(cell)
    lines: list[str] = []
    for suite, (title, render) in tables().items():
        if suite in grouped:
            lines.append(f"{f' {title} ':=^78}")
            lines.extend(render(grouped[suite]))
    from pytest_budget.report._frontier import frontier_lines

    # Then the run's score-against-spend tables, ruled as pytest's write_sep rules them at
    # 80 columns.
    for title, frontier in frontier_lines(report_cells(report)):
        side = "-" * max((80 - len(title) - 2) // 2, 1)
        rule = f"{side} {title} {side}"
        lines.append(rule + "-" if len(rule) < 80 else rule)
        lines.extend(frontier)
    return lines


def merge_command(
    reports: Sequence[str],
    output: str,
    *,
    html: str | None = None,
    allow_partial: bool = False,
) -> int:
    """``budget-report merge REPORTS... -o OUT [--html HTML] [--allow-partial]``.

    Errors are :class:`~pytest_budget.report._document.ReportFileError` (one line; the CLI prints
    it and exits 2).
    """
    documents = [load_report(path) for path in reports]
    notes: list[str] = []
    merged = merge_reports(
        documents, [str(path) for path in reports], allow_partial=allow_partial, notes=notes
    )
    # The merged file is this run's report now (shards' own paths differ anyway).
    target = Path(output).resolve()
    merged["options"]["report_path"] = str(target)
    for note in notes:
        print(f"budget-report: note: {note}", file=sys.stderr)
    for line in _table_lines(merged):
        print(line)
    write_report(target, merged)
    count = merged["merged_from"][0]["shard"]["count"]
    print(
        f"budget report: {target} ({merged['summary']['cells']} cells from "
        f"{len(documents)} of {count} shards)"
    )
    if html is None:
        return 0
    from pytest_budget.report._html import render_command

    return render_command([str(target)], html, compare=False)
