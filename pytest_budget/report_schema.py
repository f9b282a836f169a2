"""The report's JSON schema, with its cell definitions generated from the record types.

``docs/reference/report.schema.json`` holds the run-level document by hand and the
``cell*`` definitions as :func:`~pytest_budget.records.cell_schema` generates them from
the registered record types; ``python -m pytest_budget.report_schema PATH`` rewrites
them after a record type changes, and ``--check`` fails when the file is out of date
(a test runs it).  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget.files import write_atomic
from pytest_budget.records import CellRecord, cell_schema
from pytest_budget.suite_registry import cell_kinds

__all__ = ["main", "record_types", "with_cell_schema"]


def record_types() -> dict[str, type[CellRecord]]:
    """Every registered cell kind that declares a record type, by kind name."""
    found = {name: kind.record_class() for name, kind in cell_kinds().items()}
    return {name: cls for name, cls in found.items() if cls is not None}


def with_cell_schema(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` (the report schema) with its ``cell*`` definitions generated anew."""
    defs = {
        key: value
        for key, value in dict(document.get("$defs") or {}).items()
        if not key.startswith("cell")
    }
    defs.update(cell_schema(record_types()))
    return {**document, "$defs": dict(sorted(defs.items()))}


def _text(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [arg for arg in args if arg != "--check"]
    if len(paths) != 1:
        print("usage: python -m pytest_budget.report_schema [--check] PATH", file=sys.stderr)
        return 2
    path = Path(paths[0])
    current = path.read_text(encoding="utf-8")
    wanted = _text(with_cell_schema(json.loads(current)))
    if check:
        if current != wanted:
            print(
                f"{path}: the cell definitions differ from the record types; regenerate "
                f"with python -m pytest_budget.report_schema {path}",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != wanted:
        write_atomic(path, wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
