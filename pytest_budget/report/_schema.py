"""The report's JSON schema, with its cell definitions generated from the record types.

``docs/reference/report.schema.json`` holds the run-level document by hand and the
``cell*`` definitions as :func:`~pytest_budget._core.records.cell_schema` generates them from
the registered record types; ``python -m pytest_budget.report._schema PATH`` rewrites
them after a record type changes, and ``--check`` fails when the file is out of date
(a test runs it).  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pytest_budget._core.files import write_atomic
from pytest_budget._core.record_json import field_hints
from pytest_budget._core.records import CellRecord, UserCell, record_fields
from pytest_budget._core.registry import cell_kinds

__all__ = ["cell_schema", "main", "record_schema", "record_types", "with_cell_schema"]


_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _type_schema(hint: Any) -> dict[str, Any]:
    """JSON schema of a field's annotation."""
    if hint is Any:
        return {}
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        parts = [_type_schema(arg) for arg in typing.get_args(hint)]
        if all(set(p) == {"type"} for p in parts):
            kinds: list[str] = []
            for part in parts:
                kind = part["type"]
                kinds.extend(kind if isinstance(kind, list) else [kind])
            return {"type": kinds}
        enums = [p for p in parts if "enum" in p]
        if enums and all(set(p) == {"type"} or "enum" in p for p in parts):
            values = [v for p in enums for v in p["enum"]]
            if any(p.get("type") == "null" for p in parts):
                values.append(None)
            return {"enum": values}
        return {"oneOf": parts}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if origin in (dict, Mapping):
        _, value = typing.get_args(hint)
        inner = _type_schema(value)
        return {"type": "object", **({"additionalProperties": inner} if inner else {})}
    if origin in (list, tuple):
        args = typing.get_args(hint)
        inner = _type_schema(args[0]) if args else {}
        return {"type": "array", **({"items": inner} if inner else {})}
    return {}


def _field_schema(hint: Any, spec: dataclasses.Field[Any], nullable: bool) -> dict[str, Any]:
    schema = _type_schema(hint)
    extra = dict(spec.metadata.get("schema", {}))
    if "required_keys" in extra:
        extra["required"] = extra.pop("required_keys")
    if not nullable:  # a field left out when None: its written value is never null
        schema = _without_null(schema)
    doc = spec.metadata.get("doc")
    out: dict[str, Any] = {}
    if doc:
        out["description"] = doc
    out.update(schema)
    if "items" in extra and "items" in out:
        out["items"] = extra.pop("items")
    if "additionalProperties" in extra and "additionalProperties" in out:
        out["additionalProperties"] = extra.pop("additionalProperties")
    out.update(extra)
    return out


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [k for k in kinds if k != "null"]
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    if "enum" in schema and None in schema["enum"]:
        return {**schema, "enum": [v for v in schema["enum"] if v is not None]}
    if "oneOf" in schema:
        parts = [p for p in schema["oneOf"] if p != {"type": "null"}]
        return parts[0] if len(parts) == 1 else {**schema, "oneOf": parts}
    return schema


def record_schema(cls: type[CellRecord]) -> dict[str, Any]:
    """The JSON schema of one record type's written form."""
    hints = field_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec in record_fields(cls):
        nullable = spec.name in cls.KEEP_NULL
        properties[spec.name] = _field_schema(hints[spec.name], spec, nullable)
        if spec.metadata.get("required") or nullable:
            required.append(spec.name)
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": properties}
    if cls.__doc__:
        schema = {"description": " ".join(cls.__doc__.split()), **schema}
    if cls is not UserCell:
        schema["additionalProperties"] = False
    return schema


def cell_schema(kinds: Mapping[str, type[CellRecord]]) -> dict[str, dict[str, Any]]:
    """``$defs`` entries: ``cell`` (which kind's definition a cell follows, by its
    ``suite``) and one ``cell_<kind>`` per record type, generated from the types."""
    defs: dict[str, dict[str, Any]] = {}
    branches: list[dict[str, Any]] = []
    for name, cls in kinds.items():
        key = "cell_" + name.replace("-", "_")
        defs[key] = record_schema(cls)
        branches.append(
            {
                "if": {"properties": {"suite": {"const": name}}, "required": ["suite"]},
                "then": {"$ref": f"#/$defs/{key}"},
            }
        )
    user = record_schema(UserCell)
    defs["cell_user"] = {
        "description": "A cell recorded by your own test with budget_record: whatever "
        "fields it gave, plus nodeid, test_outcome and duration_s.",
        "type": "object",
        "required": ["nodeid", "test_outcome"],
        "properties": {k: user["properties"][k] for k in ("nodeid", "test_outcome", "duration_s")},
    }
    names = list(kinds)
    defs["cell"] = {
        "type": "object",
        "required": ["nodeid", "test_outcome"],
        "allOf": [
            *branches,
            {
                "if": {
                    "not": {
                        "properties": {"suite": {"enum": names}},
                        "required": ["suite"],
                    }
                },
                "then": {"$ref": "#/$defs/cell_user"},
            },
        ],
    }
    return dict(sorted(defs.items()))


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
        print("usage: python -m pytest_budget.report._schema [--check] PATH", file=sys.stderr)
        return 2
    path = Path(paths[0])
    current = path.read_text(encoding="utf-8")
    wanted = _text(with_cell_schema(json.loads(current)))
    if check:
        if current != wanted:
            print(
                f"{path}: the cell definitions differ from the record types; regenerate "
                f"with python -m pytest_budget.report._schema {path}",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != wanted:
        write_atomic(path, wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
