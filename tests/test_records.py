"""Typed cell records: one serializer, one reader, the schema generated from the types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_budget._core.record_json import cell_from_json, cell_to_json
from pytest_budget._core.records import (
    REPORT_SCHEMA_VERSION,
    CellRecord,
    RecordError,
    UserCell,
    field_value,
    of_type,
)
from pytest_budget._core.registry import cell_kinds
from pytest_budget.awareness._cell_records import AwarenessCellRecord, OnlineCellRecord
from pytest_budget.planning._cell_record import PlanningCellRecord
from pytest_budget.report._document import ReportFileError, load_report
from pytest_budget.report._schema import main as schema_main
from pytest_budget.report._schema import record_types, with_cell_schema
from pytest_budget.triage._cell_record import ResolveCellRecord, TriageCellRecord

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "reference" / "report.schema.json"


def _planning(**extra: Any) -> dict[str, Any]:
    """A planning cell as the JSON report writes it, worked out by hand."""
    return {
        "nodeid": "suites/test_planning.py::test_planning[dining-static-L2-greedy]",
        "suite": "planning",
        "cell": "dining-static-L2",
        "agent": "greedy",
        "seed": 7,
        "outcome": "ok",
        "reason": None,
        "scores": {"emr": 0.25, "cost_gap": None},
        "task": "dining",
        "scenario": "static-L2",
        "mode": "static",
        "block_count": 0,
        "refinement_level": 2,
        "queries": 4,
        "greedy": {"emr": 0.25},
        "first_error": None,
        **extra,
    }


def test_every_builtin_kind_has_its_record_type() -> None:
    kinds = cell_kinds()
    assert {name: kind.record_class() for name, kind in kinds.items()} == {
        "triage": TriageCellRecord,
        "triage-resolve": ResolveCellRecord,
        "awareness": AwarenessCellRecord,
        "awareness-online": OnlineCellRecord,
        "planning": PlanningCellRecord,
    }
    for name, kind in kinds.items():
        record = kind.record_class()
        assert record is not None and record.KIND == name


def test_a_planning_cell_reads_into_its_type_and_writes_back_the_same_object() -> None:
    data = _planning(test_outcome="passed", duration_s=1.5)
    record = cell_from_json(data)
    assert isinstance(record, PlanningCellRecord)
    assert (record.task, record.block_count, record.scores["emr"]) == ("dining", 0, 0.25)
    assert record.ci is None and record.partial is None
    # Same keys and values: None-valued header fields are left out, reason and
    # first_error are written as null (planning keeps them).
    assert cell_to_json(record) == data
    assert list(cell_to_json(record))[:3] == ["nodeid", "suite", "cell"]


def test_fields_a_kind_keeps_as_null_are_written_even_when_absent_on_input() -> None:
    data = _planning()
    del data["reason"], data["first_error"], data["queries"], data["greedy"]
    written = cell_to_json(cell_from_json(data))
    assert written["reason"] is None and written["first_error"] is None
    assert written["queries"] == 0 and written["greedy"] == {}  # the type's defaults
    assert "ci" not in written and "partial" not in written


def test_an_unknown_field_is_one_line_naming_it_and_the_schema_version() -> None:
    with pytest.raises(RecordError) as caught:
        cell_from_json(_planning(emr_typo=0.3))
    message = str(caught.value)
    assert "\n" not in message
    assert "'emr_typo'" in message and "'planning'" in message
    assert f"report schema version {REPORT_SCHEMA_VERSION}" in message
    assert "test_planning[dining-static-L2-greedy]" in message


def test_a_missing_field_names_the_field() -> None:
    data = _planning()
    del data["task"]
    with pytest.raises(RecordError, match=r"lacks the field 'task' \(report schema version 2\)"):
        cell_from_json(data)


def test_a_value_of_the_wrong_json_type_is_refused() -> None:
    with pytest.raises(RecordError, match=r"field 'block_count' .* is str, not integer"):
        cell_from_json(_planning(block_count="0"))
    with pytest.raises(RecordError, match=r"field 'seed' .* is bool"):
        cell_from_json(_planning(seed=True))
    # An integer where a number is declared is a number.
    assert cell_from_json(_planning(duration_s=2)).duration_s == 2


def test_a_cell_of_an_unregistered_kind_keeps_every_field_as_given() -> None:
    data = {"nodeid": "t.py::test_x", "suite": "mine", "scores": {"q": 1.0}, "color": "red"}
    record = cell_from_json(data)
    assert isinstance(record, UserCell)
    assert record.fields == {"color": "red"} and record.scores == {"q": 1.0}
    assert cell_to_json(record) == data
    assert field_value(record, "color") == "red" and field_value(record, "shape") is None
    bare = {"nodeid": "t.py::test_y", "test_outcome": "passed", "anything": [1, 2]}
    assert cell_to_json(cell_from_json(bare)) == bare


def test_field_value_fails_loudly_for_a_field_the_kind_does_not_have() -> None:
    record = cell_from_json(_planning())
    assert field_value(record, "scenario") == "static-L2"
    with pytest.raises(AttributeError, match="cell of kind 'planning' has no field 'pool'"):
        field_value(record, "pool")


def test_of_type_narrows_to_one_kind() -> None:
    planning = cell_from_json(_planning())
    user = cell_from_json({"nodeid": "t.py::test_x", "suite": "mine"})
    assert of_type([planning, user], PlanningCellRecord) == [planning]
    assert of_type([planning, user], CellRecord) == [planning, user]


def test_load_report_reads_cells_into_their_types(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    document = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": "pytest-budget",
        "cells": [_planning(test_outcome="passed")],
    }
    path.write_text(json.dumps(document))
    (cell,) = load_report(path)["cells"]
    assert isinstance(cell, PlanningCellRecord) and cell.test_outcome == "passed"

    document["cells"] = [_planning(test_outcome="passed", old_field=1)]
    path.write_text(json.dumps(document))
    with pytest.raises(ReportFileError) as caught:
        load_report(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "unknown field 'old_field'" in message and "report schema version 2" in message


def test_the_checked_in_schema_is_the_one_the_types_generate() -> None:
    document = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert with_cell_schema(document) == document
    assert schema_main(["--check", str(SCHEMA_PATH)]) == 0
    assert set(record_types()) == set(cell_kinds())


def test_the_check_fails_when_a_type_and_the_file_differ(tmp_path: Path) -> None:
    document = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    del document["$defs"]["cell_planning"]["properties"]["task"]
    stale = tmp_path / "schema.json"
    stale.write_text(json.dumps(document, indent=2) + "\n")
    assert schema_main(["--check", str(stale)]) == 1
    assert schema_main([str(stale)]) == 0  # regenerate
    assert schema_main(["--check", str(stale)]) == 0
    assert "task" in json.loads(stale.read_text())["$defs"]["cell_planning"]["properties"]


def _cell_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cell = {**schema["$defs"]["cell"], "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(cell)


def test_the_generated_schema_accepts_a_written_record_and_refuses_unknown_fields() -> None:
    validator = _cell_validator()
    written = cell_to_json(cell_from_json(_planning(test_outcome="passed")))
    assert list(validator.iter_errors(written)) == []
    errors = list(validator.iter_errors({**written, "emr_typo": 1}))
    assert errors and "emr_typo" in errors[0].message
    missing = {key: value for key, value in written.items() if key != "first_error"}
    assert any("first_error" in e.message for e in validator.iter_errors(missing))
    # A cell of your own kind: only node id and test outcome are required.
    assert list(validator.iter_errors({"nodeid": "t::x", "test_outcome": "passed", "z": 1})) == []
