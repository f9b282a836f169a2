"""The run's machine-readable report: one JSON document, schema in docs/.

Cells are typed records (:mod:`pytest_budget._core.records`), kept in a stable order so the same
seed writes the same ``cells`` array with or without ``-n``; the document holds them as
records, :func:`write_report` writes them with :func:`~pytest_budget._core.record_json.cell_to_json`
and :func:`load_report` reads them back into their types.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import json
import math
import os
import platform
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget._core.files import write_atomic
from pytest_budget._core.record_json import as_record, cell_from_json, cell_to_json
from pytest_budget._core.records import REPORT_SCHEMA_VERSION, CellRecord, RecordError
from pytest_budget._version import __version__
from pytest_budget.report._sample_pool import PoolError, decode_pool
from pytest_budget.report._sample_pool import encode as encode_pool

__all__ = [
    "GZIP_SUFFIX",
    "READABLE_VERSIONS",
    "REPORT_SCHEMA_VERSION",
    "ReportFileError",
    "build_report",
    "cell_sort_key",
    "finite_cell",
    "hoist_rollouts",
    "is_gzip",
    "load_report",
    "load_report_json",
    "pack_samples",
    "report_cells",
    "unpack_samples",
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
    from pytest_budget._core.fingerprint import fingerprint

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


#: A report path ending in this is written gzip-compressed (any report file is read
#: either way: :func:`load_report` looks at the file's first bytes).
GZIP_SUFFIX = ".gz"
_GZIP_MAGIC = b"\x1f\x8b"


def pack_samples(report: Mapping[str, Any]) -> dict[str, Any]:
    """The document as it is written: every cell's ``samples`` and the report's
    ``sample_rollouts`` encoded against one ``sample_pool``
    (:mod:`pytest_budget.report._sample_pool`)."""
    cells = [cell_to_json(c) if isinstance(c, CellRecord) else dict(c) for c in report["cells"]]
    rollouts = report.get("sample_rollouts")
    rollouts = dict(rollouts) if isinstance(rollouts, Mapping) else {}
    carrying = [cell for cell in cells if "samples" in cell]
    values = [cell["samples"] for cell in carrying] + list(rollouts.values())
    if not values:
        return {**report, "cells": cells}
    encoded, pool = encode_pool(values)
    for cell, value in zip(carrying, encoded, strict=False):
        cell["samples"] = value
    document = {**report, "cells": cells}
    if rollouts:
        document["sample_rollouts"] = dict(zip(rollouts, encoded[len(carrying) :], strict=True))
    document["sample_pool"] = pool
    return document


def unpack_samples(document: dict[str, Any]) -> None:
    """The inverse of :func:`pack_samples`, in place (``sample_pool`` removed); raises
    :class:`~pytest_budget.report._sample_pool.PoolError` for a pool that does not decode."""
    pool = document.pop("sample_pool", None)
    if pool is None:
        return
    read = decode_pool(pool)
    for cell in document.get("cells") or []:
        if isinstance(cell, dict) and "samples" in cell:
            cell["samples"] = read(cell["samples"])
    rollouts = document.get("sample_rollouts")
    if isinstance(rollouts, dict):
        document["sample_rollouts"] = {key: read(value) for key, value in rollouts.items()}


def write_report(path: str | os.PathLike[str], report: Mapping[str, Any]) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a report; the file
    gets the mode a new file gets (``0644`` under umask ``022``).

    Compact JSON (no indentation), samples pooled (:func:`pack_samples`); a path ending in
    ``.gz`` is written gzip-compressed (no timestamp: the same report, the same bytes).
    Non-ASCII text is written as ``\\u`` escapes, so a lone surrogate an agent returned
    survives as it is."""
    text = json.dumps(pack_samples(report), separators=(",", ":"), allow_nan=False, default=_encode)
    data = (text + "\n").encode("ascii")
    if os.fspath(path).endswith(GZIP_SUFFIX):
        data = gzip.compress(data, 6, mtime=0)
    return write_atomic(path, data)


class ReportFileError(ValueError):
    """A report file that cannot be used; the message is one line naming the file."""


#: Schema versions :func:`load_report` reads: 1 wrote samples in place, 2 pools them.
READABLE_VERSIONS = (1, REPORT_SCHEMA_VERSION)


def _read_text(source: Path) -> str:
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise ReportFileError(f"{source}: no such report file") from None
    except OSError as exc:
        raise ReportFileError(f"{source}: cannot read the report ({exc})") from None
    try:
        if data.startswith(_GZIP_MAGIC):
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ReportFileError(f"{source}: cannot read the report ({exc})") from None


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """True when the file starts as a gzip stream does (False when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == _GZIP_MAGIC
    except OSError:
        return False


def load_report_json(path: str | os.PathLike[str]) -> Any:
    """A report file's JSON (plain or gzip-compressed) with its samples expanded, cells
    left as JSON objects (:func:`load_report` reads and checks them)."""
    source = Path(path)
    try:
        document = json.loads(_read_text(source))
    except json.JSONDecodeError as exc:
        raise ReportFileError(
            f"{source}: not a JSON report (line {exc.lineno}: {exc.msg}); "
            "write one with pytest --budget-report=PATH"
        ) from None
    if isinstance(document, dict):
        try:
            unpack_samples(document)
        except PoolError as exc:
            raise ReportFileError(f"{source}: {exc} (file is corrupt)") from None
    return document


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a report written by :func:`write_report` (plain or gzip-compressed), refusing
    other tools and versions.

    Errors are one line: the file, what is wrong, and (for a version mismatch) the
    version found, so ``budget-report`` can print them as they are.
    """
    source = Path(path)
    document = load_report_json(source)
    if not isinstance(document, dict) or document.get("tool") != "pytest-budget":
        raise ReportFileError(f'{source}: not a pytest-budget report (no "tool": "pytest-budget")')
    version = document.get("schema_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ReportFileError(
            f"{source}: report schema version {version!r}, this pytest-budget "
            f"{__version__} reads versions {', '.join(map(str, READABLE_VERSIONS))}; re-run "
            "pytest with this version or render it with the version that wrote it"
        )
    if not isinstance(document.get("cells"), list):
        raise ReportFileError(f'{source}: report has no "cells" array (file is corrupt)')
    document["schema_version"] = REPORT_SCHEMA_VERSION
    try:
        document["cells"] = [cell_from_json(cell, version=version) for cell in document["cells"]]
    except RecordError as exc:
        raise ReportFileError(f"{source}: {exc}") from None
    return document
