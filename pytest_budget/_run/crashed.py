"""Cells that did not finish: a crash inside pytest-budget, or model calls that failed.

A cell whose test failed before it recorded anything (an exception in a fixture or in the
suite's own code) would otherwise vanish from the JSON and HTML reports.
:func:`error_cell` builds its record from what pytest knows (the node id, the cell's
parameters) with ``outcome: "error"``, the traceback and a one-line reason; a cell that
had recorded its scores before the crash keeps them (:func:`mark_crashed`).
:func:`bound_cell` caps per-item lists in a record.  Plain Python: no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pytest_budget._core.record_json import cell_from_json, fitting_fields
from pytest_budget._core.records import CellRecord
from pytest_budget._core.redact import redact_text
from pytest_budget._core.registry import cell_kind, kind_of_test_file

__all__ = [
    "LIST_LIMIT",
    "TRACEBACK_LIMIT",
    "bound_cell",
    "error_cell",
    "mark_crashed",
    "suite_of_module",
]

#: Characters of a traceback kept in a cell record (the end, where the error is).
TRACEBACK_LIMIT = 20_000
#: Entries kept of each per-item list or mapping in a cell record (``repairs``, ...).
LIST_LIMIT = 100
#: Characters kept of each string entry of such a list.
ENTRY_LIMIT = 1_000
#: The per-item lists and mappings :func:`bound_cell` caps, wherever they sit in a record.
BOUNDED_KEYS = frozenset({"repairs", "notes", "invalid_reasons", "errors", "planned_ids"})


def suite_of_module(module: str) -> str:
    """The cell kind recorded by a registered cell module (``test_triage`` -> ``triage``),
    ``user`` for any other module."""
    kind = kind_of_test_file(module.rsplit(".", 1)[-1] + ".py")
    return kind.name if kind is not None else "user"


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _identity(params: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """The cell's coordinates from its test parameters (the suites' cell dataclasses)."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if name == "budget_agent":
            out["agent"] = str(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            cell_id = getattr(value, "id", None)
            if isinstance(cell_id, str):
                out["cell"] = cell_id
            for field in dataclasses.fields(value):
                inner = getattr(value, field.name)
                if _plain(inner):
                    out[field.name] = inner
                elif dataclasses.is_dataclass(inner) and not isinstance(inner, type):
                    out[field.name] = str(getattr(inner, "id", inner))
                    for sub in dataclasses.fields(inner):
                        if _plain(getattr(inner, sub.name)):
                            out.setdefault(
                                renames.get(sub.name, sub.name), getattr(inner, sub.name)
                            )
        elif _plain(value):
            out.setdefault(name, value)
    return out


def _traceback(text: str) -> str:
    text = redact_text(text)
    if len(text) <= TRACEBACK_LIMIT:
        return text
    return f"[{len(text) - TRACEBACK_LIMIT} characters left out]\n" + text[-TRACEBACK_LIMIT:]


def error_cell(
    *,
    nodeid: str,
    module: str,
    params: Mapping[str, Any],
    phase: str,
    reason: str,
    traceback: str,
    seed: int,
) -> CellRecord:
    """The record of a cell that failed before it recorded anything."""
    suite = suite_of_module(module)
    record: dict[str, Any] = {
        "suite": suite,
        "cell": nodeid.rpartition("[")[2].rstrip("]") if "[" in nodeid else nodeid,
        "agent": "-",
        "seed": seed,
    }
    kind = cell_kind(suite)
    # The parameters its record type has fields for (the rest take the type's defaults).
    record.update(
        fitting_fields(suite, _identity(params, kind.param_renames if kind is not None else {}))
    )
    record.update(
        {
            "nodeid": nodeid,
            "outcome": "error",
            "reason": redact_text(reason),
            "scores": {},
            "scored": "nothing: the cell failed before it recorded its scores",
            "phase": phase,
            "traceback": _traceback(traceback),
        }
    )
    return cell_from_json(record)


def mark_crashed(record: CellRecord, *, reason: str, traceback: str) -> CellRecord:
    """A recorded cell whose test then crashed: ``error``, with what it had scored."""
    return dataclasses.replace(
        record,
        outcome="error",
        reason=redact_text(reason),
        scored=f"the scores recorded before the error (outcome then: {record.status})",
        phase="call",
        traceback=_traceback(traceback),
    )


def _bounded(value: Any) -> tuple[Any, int]:
    if isinstance(value, list) and len(value) > LIST_LIMIT:
        kept = [
            entry[:ENTRY_LIMIT] if isinstance(entry, str) else entry for entry in value[:LIST_LIMIT]
        ]
        return kept, len(value) - LIST_LIMIT
    if isinstance(value, list):
        return [e[:ENTRY_LIMIT] if isinstance(e, str) else e for e in value], 0
    if isinstance(value, Mapping) and len(value) > LIST_LIMIT:
        items = list(value.items())
        kept_map = {k: v[:ENTRY_LIMIT] if isinstance(v, str) else v for k, v in items[:LIST_LIMIT]}
        return kept_map, len(items) - LIST_LIMIT
    return value, 0


def bound_cell(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with each per-item list or mapping (:data:`BOUNDED_KEYS`, at any depth)
    cut to :data:`LIST_LIMIT` entries of at most :data:`ENTRY_LIMIT` characters, and a
    sibling ``<key>_omitted`` counting the entries left out (plans of 100k entries made
    reports of tens of megabytes)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in BOUNDED_KEYS:
            value, omitted = _bounded(value)
            if omitted:
                out[f"{key}_omitted"] = omitted
        if isinstance(value, Mapping):
            value = bound_cell(value)
        out[key] = value
    return out
