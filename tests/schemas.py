"""The published JSON schemas (docs/reference/*.schema.json) as validators built once a process.

``jsonschema.validate(instance, schema)`` checks the schema itself against its meta-schema on
every call: ~1.3 s for report.schema.json, which was most of the time of the ~15 tests that
validated one report each (issue 33).  Here each schema is read, checked once and kept; a
validator then checks an instance in milliseconds.  What is checked is the same.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"


@functools.cache
def validator(name: str, definition: str | None = None) -> Any:
    """A checked validator of ``docs/reference/NAME`` (``definition``: only its
    ``$defs/DEFINITION``, e.g. ``"sample"``, with every definition it refers to)."""
    schema = json.loads((REFERENCE / name).read_text(encoding="utf-8"))
    if definition is not None:
        schema = {"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def validate_report(report: Any) -> None:
    """Raise ``jsonschema.ValidationError`` (the most relevant error, as
    ``jsonschema.validate`` picks it) unless ``report`` matches report.schema.json."""
    validate(report, "report.schema.json")


def validate(instance: Any, name: str, definition: str | None = None) -> None:
    error = jsonschema.exceptions.best_match(validator(name, definition).iter_errors(instance))
    if error is not None:
        raise error
