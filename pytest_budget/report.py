"""The run's machine-readable report: one JSON document, schema in docs/.

Cells arrive as plain dicts (they travel from xdist workers as JSON) and are kept in a
stable order so the same seed writes the same ``cells`` array with or without ``-n``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget._version import __version__

__all__ = ["REPORT_SCHEMA_VERSION", "build_report", "cell_sort_key", "write_report"]

#: Bumped whenever a field changes meaning or disappears (additions keep the version).
REPORT_SCHEMA_VERSION = 1


def cell_sort_key(cell: Mapping[str, Any]) -> tuple[str, tuple[Any, ...], str]:
    """Stable order: suite, the suite's own sort key, then the node id."""
    key = cell.get("sort_key") or ()
    return (str(cell.get("suite", "")), tuple(key), str(cell.get("nodeid", "")))


def build_report(
    cells: Sequence[Mapping[str, Any]],
    *,
    options: Mapping[str, Any],
    suites: Sequence[str],
    duration_s: float,
    seed: int,
) -> dict[str, Any]:
    """Assemble the report document (see ``docs/reference/report.schema.json``)."""
    ordered = sorted(cells, key=cell_sort_key)
    outcomes: dict[str, int] = {}
    tests: dict[str, int] = {}
    for cell in ordered:
        outcome = str(cell.get("outcome", "ok"))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        test = str(cell.get("test_outcome", "unknown"))
        tests[test] = tests.get(test, 0) + 1
    return {
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
        "cells": [{k: v for k, v in cell.items() if k != "sort_key"} for cell in ordered],
    }


def write_report(path: str | os.PathLike[str], report: Mapping[str, Any]) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a report."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, sort_keys=False, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
