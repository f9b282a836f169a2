"""The one writer and the one reader of cell records as JSON (``cell_to_json``,
``cell_from_json``).

A cell travels as JSON (from an xdist worker, in the report file) and is read back into its
kind's record type (:mod:`pytest_budget._core.records`), looked up in the suite registry by the
cell's ``suite`` field; an unknown or missing field, or a value of the wrong JSON type, is a
one-line :class:`~pytest_budget._core.records.RecordError` naming the cell, the field and the
report schema version.  Apart from the records so that they, below the registry, never look
it up.  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pytest_budget._core.records import (
    REPORT_SCHEMA_VERSION,
    CellRecord,
    RecordError,
    UserCell,
    record_fields,
)
from pytest_budget._core.registry import cell_kind

__all__ = [
    "as_record",
    "cell_from_json",
    "cell_to_json",
    "field_hints",
    "fitting_fields",
    "record_type",
]


def record_type(suite: str) -> type[CellRecord]:
    """The record type of cell kind ``suite`` (:class:`UserCell` for an unregistered one)."""
    kind = cell_kind(suite) if suite else None
    found = kind.record_class() if kind is not None else None
    return found if found is not None else UserCell


# --- writing -----------------------------------------------------------------------------


def cell_to_json(record: CellRecord) -> dict[str, Any]:
    """The record as the JSON report writes it: fields in declaration order, a field that
    is None left out (unless its kind writes it as ``null``)."""
    keep = type(record).KEEP_NULL
    out: dict[str, Any] = {}
    for spec in record_fields(type(record)):
        value = getattr(record, spec.name)
        if value is not None or spec.name in keep:
            out[spec.name] = value
    if isinstance(record, UserCell):
        for key, value in record.fields.items():
            out.setdefault(key, value)
        if not record.suite:
            out.pop("suite", None)
        for name in ("cell", "agent"):
            if not out.get(name):
                out.pop(name, None)
        if not record.scores and "scores" not in record.fields:
            out.pop("scores", None)
    if not out.get("nodeid"):
        out.pop("nodeid", None)
    return out


# --- reading -----------------------------------------------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        import sys

        namespace: dict[str, Any] = {}
        for base in reversed(cls.__mro__):
            module = sys.modules.get(base.__module__)
            if module is not None:
                namespace.update(vars(module))
        found = _HINTS[cls] = typing.get_type_hints(cls, globalns=namespace)
    return found


def _json_kinds(hint: Any) -> tuple[type, ...] | None:
    """The JSON value types a field of type ``hint`` accepts (None: anything)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin in (types.UnionType, typing.Union):
        out: list[type] = []
        for arg in typing.get_args(hint):
            inner = _json_kinds(arg)
            if inner is None:
                return None
            out.extend(inner)
        return tuple(out)
    if origin is Literal:
        return tuple({type(v) for v in typing.get_args(hint)})
    if hint is type(None):
        return (type(None),)
    if hint is float:
        return (float, int)
    if hint is int:
        return (int,)
    base = origin or hint
    if base in (dict, Mapping):
        return (dict,)
    if base in (list, tuple):
        return (list, tuple)
    if isinstance(base, type):
        return (base,)
    return None


_Schema = tuple[
    dict[str, "dataclasses.Field[Any]"], dict[str, tuple[type, ...] | None], tuple[str, ...]
]
_SCHEMAS: dict[type, _Schema] = {}


def _schema(cls: type) -> _Schema:
    """A record type's fields by name, the JSON types each accepts and the names without a
    default: worked out once per type (the xdist controller reads a cell per test)."""
    found = _SCHEMAS.get(cls)
    if found is None:
        hints = field_hints(cls)
        known = {spec.name: spec for spec in record_fields(cls)}
        kinds = {name: _json_kinds(hints[name]) for name in known}
        required = tuple(
            name
            for name, spec in known.items()
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        )
        found = _SCHEMAS[cls] = (known, kinds, required)
    return found


def _where(data: Mapping[str, Any]) -> str:
    nodeid = data.get("nodeid")
    return f"cell {nodeid}" if isinstance(nodeid, str) and nodeid else "a cell"


def cell_from_json(data: Mapping[str, Any], *, version: int = REPORT_SCHEMA_VERSION) -> CellRecord:
    """Read one cell (a JSON object) into its kind's record type.

    Raises :class:`RecordError` (one line: the cell, the field, the schema version) for a
    field its kind does not have, one it must have and lacks, or a value of the wrong
    JSON type.
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a cell is {type(data).__name__}, not a JSON object")
    suite = data.get("suite")
    cls = record_type(suite if isinstance(suite, str) else "")
    known, kinds, required = _schema(cls)
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        spec = known.get(key)
        if spec is None:
            if cls is UserCell:
                extra[key] = value
                continue
            raise RecordError(
                f"{_where(data)}: unknown field {key!r} for a cell of kind {suite!r} "
                f"(report schema version {version})"
            )
        accepted = kinds[key]
        ok = accepted is None or isinstance(value, accepted)
        if ok and isinstance(value, bool) and bool not in (accepted or (bool,)):
            ok = False  # JSON true is not a number
        if not ok:
            if cls is UserCell:
                extra[key] = value
                continue
            raise RecordError(
                f"{_where(data)}: field {key!r} of a cell of kind {suite!r} is "
                f"{type(value).__name__}, not {_type_words(field_hints(cls)[key])} "
                f"(report schema version {version})"
            )
        values[key] = value
    for name in required:
        if name not in values:
            raise RecordError(
                f"{_where(data)}: a cell of kind {suite!r} lacks the field {name!r} "
                f"(report schema version {version})"
            )
    if cls is UserCell:
        values["fields"] = extra
    return cls(**values)


def as_record(cell: CellRecord | Mapping[str, Any]) -> CellRecord:
    """``cell`` as its record type (a JSON object is read with :func:`cell_from_json`)."""
    return cell if isinstance(cell, CellRecord) else cell_from_json(cell)


def fitting_fields(suite: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` that kind ``suite``'s record has a field for, with a value
    of that field's type (all of them for a :class:`UserCell`)."""
    cls = record_type(suite)
    if cls is UserCell:
        return dict(values)
    hints = field_hints(cls)
    names = {spec.name for spec in record_fields(cls)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in names:
            accepted = _json_kinds(hints[key])
            if accepted is None or isinstance(value, accepted):
                out[key] = value
    return out


_JSON_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
    dict: "object",
    list: "array",
    tuple: "array",
}


def _type_words(hint: Any) -> str:
    if typing.get_origin(hint) is Literal or (
        typing.get_origin(hint) in (types.UnionType, typing.Union)
        and any(typing.get_origin(arg) is Literal for arg in typing.get_args(hint))
    ):
        values = [
            v
            for arg in typing.get_args(hint)
            for v in (typing.get_args(arg) if typing.get_origin(arg) is Literal else (arg,))
        ]
        return "one of " + ", ".join("null" if v is type(None) else repr(v) for v in values)
    names: list[str] = []
    for kind in _json_kinds(hint) or ():
        name = _JSON_NAMES.get(kind, kind.__name__)
        if name not in names:
            names.append(name)
    return " or ".join(names) or "the declared type"
