"""The run's machine-readable report: one JSON document, schema in docs/.

Cells are typed records (:mod:`pytest_budget.records`), kept in a stable order so the same
seed writes the same ``cells`` array with or without ``-n``; the document holds them as
records, :func:`write_report` writes them with :func:`~pytest_budget.records.cell_to_json`
and :func:`load_report` reads them back into their types.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget._version import __version__
from pytest_budget.files import write_atomic
from pytest_budget.records import (
    REPORT_SCHEMA_VERSION,
    CellRecord,
    RecordError,
    as_record,
    cell_from_json,
    cell_to_json,
)

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "ReportFileError",
    "build_report",
    "cell_sort_key",
    "finite_cell",
    "hoist_rollouts",
    "load_report",
    "report_cells",
    "write_report",
]


def cell_sort_key(cell: CellRecord) -> tuple[str, tuple[Any, ...], str]:
    """Stable order: suite, the suite's own sort key, then the node id."""
    return (cell.suite, tuple(cell.sort_key or ()), cell.nodeid)


def report_cells(report: Mapping[str, Any]) -> list[CellRecord]:
    """The cells of a report document (built by :func:`build_report` or read by
    :func:`load_report`), as records."""
    return [as_record(cell) for cell in report.get("cells") or []]


# Leaves returned as they are (exact types: a subclass takes the general path).
_PLAIN = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    kind = type(value)
    return kind in _PLAIN or (kind is float and math.isfinite(value))


def _finite(value: Any, path: str, found: list[tuple[str, float]]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        found.append((path, value))
        return None
    # Leaves are kept inline (a report holds millions): only containers and non-finite
    # numbers recurse, so only they build their path.
    if isinstance(value, Mapping):
        return {
            k: v if _plain(v) else _finite(v, f"{path}.{k}" if path else str(k), found)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [v if _plain(v) else _finite(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def finite_cell(cell: Mapping[str, Any]) -> dict[str, Any]:
    """``cell`` with every infinite or NaN number replaced by ``null`` (JSON has neither).

    A replaced score gets a note (``notes[<score>]``) saying what it was, so a ``null``
    that is "infinitely bad" is not mistaken for "not defined".
    """
    found: list[tuple[str, float]] = []
    out: dict[str, Any] = _finite(dict(cell), "", found)
    if found:
        notes = out.get("notes")
        notes = dict(notes) if isinstance(notes, Mapping) else {}
        for path, value in found:
            if path.startswith("scores."):
                name = path.removeprefix("scores.")
                notes[name] = (
                    f"the score was {value} (not representable in JSON), so it is reported as null"
                )
        out["notes"] = notes
    return out


def build_report(
    cells: Sequence[CellRecord | Mapping[str, Any]],
    *,
    options: Mapping[str, Any],
    suites: Sequence[str],
    duration_s: float,
    seed: int,
) -> dict[str, Any]:
    """Assemble the report document (see ``docs/reference/report.schema.json``)."""
    ordered = sorted((as_record(cell) for cell in cells), key=cell_sort_key)
    outcomes: dict[str, int] = {}
    tests: dict[str, int] = {}
    for cell in ordered:
        outcomes[cell.status] = outcomes.get(cell.status, 0) + 1
        test = cell.test_outcome or "unknown"
        tests[test] = tests.get(test, 0) + 1
    hoisted, rollouts = hoist_rollouts(ordered)
    document: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": "pytest-budget",
        "version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "seed": seed,
        "suites": list(suites),
        "options": dict(options),
        "duration_s": round(duration_s, 3),
        "summary": {"cells": len(ordered), "outcomes": outcomes, "tests": tests},
        # Cells keep their ``sort_key``: budget-report merge restores this order from it.
        "cells": hoisted,
    }
    if rollouts:
        document["sample_rollouts"] = rollouts
    return document


def hoist_rollouts(
    cells: Sequence[CellRecord],
    known: Mapping[str, Any] | None = None,
) -> tuple[list[CellRecord], dict[str, Any]]:
    """Awareness cells' replayed rollouts, stored once per report.

    Every estimator of an environment replays the same rollouts, so a cell's
    ``sample_rollouts`` object moves to the report's ``sample_rollouts`` under its
    fingerprint and the cell keeps the fingerprint (a string).  Cells that already hold a
    fingerprint keep it; ``known`` (a merged shard's store) is carried over.
    """
    from pytest_budget.fingerprint import fingerprint

    store: dict[str, Any] = dict(known or {})
    out: list[CellRecord] = []
    for cell in cells:
        value = cell.sample_rollouts
        if isinstance(value, Mapping):
            key = fingerprint(value)
            store.setdefault(key, dict(value))
            cell = dataclasses.replace(cell, sample_rollouts=key)
        out.append(cell)
    used = {c.sample_rollouts for c in out if isinstance(c.sample_rollouts, str)}
    return out, {key: value for key, value in store.items() if key in used}


def _encode(value: Any) -> Any:
    if isinstance(value, CellRecord):
        return cell_to_json(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_report(path: str | os.PathLike[str], report: Mapping[str, Any]) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a report; the file
    gets the mode a new file gets (``0644`` under umask ``022``)."""
    text = json.dumps(report, indent=2, sort_keys=False, allow_nan=False, default=_encode) + "\n"
    return write_atomic(path, text)


class ReportFileError(ValueError):
    """A report file that cannot be used; the message is one line naming the file."""


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a report written by :func:`write_report`, refusing other tools and versions.

    Errors are one line: the file, what is wrong, and (for a version mismatch) the
    version found, so ``budget-report`` can print them as they are.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFileError(f"{source}: no such report file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFileError(f"{source}: cannot read the report ({exc})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFileError(
            f"{source}: not a JSON report (line {exc.lineno}: {exc.msg}); "
            "write one with pytest --budget-report=PATH"
        ) from None
    if not isinstance(document, dict) or document.get("tool") != "pytest-budget":
        raise ReportFileError(f'{source}: not a pytest-budget report (no "tool": "pytest-budget")')
    version = document.get("schema_version")
    if version != REPORT_SCHEMA_VERSION:
        raise ReportFileError(
            f"{source}: report schema version {version!r}, this pytest-budget "
            f"{__version__} reads version {REPORT_SCHEMA_VERSION}; re-run pytest with "
            "this version or render it with the version that wrote it"
        )
    if not isinstance(document.get("cells"), list):
        raise ReportFileError(f'{source}: report has no "cells" array (file is corrupt)')
    try:
        document["cells"] = [cell_from_json(cell, version=version) for cell in document["cells"]]
    except RecordError as exc:
        raise ReportFileError(f"{source}: {exc}") from None
    return document
