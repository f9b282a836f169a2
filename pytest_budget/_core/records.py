"""Typed cell records: one dataclass per kind of cell and a common header.

A cell travels as JSON (from an xdist worker, in the report file) and is read back into
its kind's record type here, so every layer above reads attributes, never ``.get("...")``
on a dict: a renamed field fails where it is read or written, not silently.

* :class:`CellRecord` is the header every registered kind shares (node id, suite, cell,
  agent, seed, outcome, scores and their intervals, timings, crash fields).
* Each suite declares one subclass per cell kind in its own package and names it in its
  :class:`~pytest_budget._core.registry.CellKind` (``record_type``).
* :class:`UserCell` is a cell your own test recorded with ``budget_record`` under a suite
  name no suite registered: its own fields are kept as they were given.

The one serializer and the one reader (``cell_to_json``, ``cell_from_json``) are in
:mod:`pytest_budget._core.record_json`: reading a cell looks its kind's type up in the suite
registry, which names these types, so the JSON side sits above both.  The report schema's
cell definitions are generated from the types (:mod:`pytest_budget.report._schema`).
Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "CellRecord",
    "RecordError",
    "UserCell",
    "describe",
    "field_value",
    "must",
    "of_type",
    "record_fields",
]

#: Bumped whenever a field changes meaning or disappears (additions keep the version).
REPORT_SCHEMA_VERSION = 2


def describe(
    doc: str = "",
    *,
    default: Any = None,
    factory: Any = None,
    required: bool = False,
    **schema: Any,
) -> Any:
    """A record field with its description and schema details (``minimum``, ``enum``,
    nested ``properties``) beyond what its type says; ``required``: always in a written
    record although the dataclass gives a default (set before the report is built)."""
    metadata = {"doc": doc, "schema": schema, "required": required}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def must(doc: str = "", **schema: Any) -> Any:
    """A field every record of its kind holds: no default, so a record without it is
    refused when it is read."""
    return field(metadata={"doc": doc, "schema": schema, "required": True})


class RecordError(ValueError):
    """A cell that does not fit its record type; the message is one line."""


#: The counters of a cell's spend (in all, and per role).
_SPEND: dict[str, Any] = {
    "calls": {"type": "integer", "minimum": 0, "description": "Live (paid) calls."},
    "replayed": {
        "type": "integer",
        "minimum": 0,
        "description": "Calls answered from the record cache (free).",
    },
    "input_tokens": {"type": "integer", "minimum": 0},
    "output_tokens": {"type": "integer", "minimum": 0},
    "reasoning_tokens": {
        "type": "integer",
        "minimum": 0,
        "description": "Reasoning tokens the model reported (within output_tokens).",
    },
    "counted_tokens": {
        "type": "integer",
        "minimum": 0,
        "description": "Tokens that agents no model meters (the reference agents, agents "
        "of your own) wrote, counted with the reference tokenizer (pytest_budget.count_tokens).",
    },
    "usd": {
        "type": ["number", "null"],
        "minimum": 0,
        "description": "USD at the run's prices; null when no model call was made.",
    },
}


@dataclass(kw_only=True, slots=True)
class CellRecord:
    """The header of every cell record (``docs/reference/report.schema.json``)."""

    #: The ``suite`` field its records carry (the cell kind), set by each subclass.
    KIND: ClassVar[str] = ""
    #: Fields written as ``null`` when they are None (others are left out).
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset()

    nodeid: str = describe("pytest node id of the cell's test.", default="", required=True)
    suite: str = must("The cell kind: its suite's name, or a kind of its own.")
    cell: str = must("Cell id within its kind (see the suite's reference page).")
    agent: str = must("The agent under test (a reference agent's name, or its class name).")
    seed: int = must("--budget-seed of the run.")
    outcome: Literal["ok", "invalid", "error", "incomplete"] = must(
        "incomplete: model calls failed after the retries (the test fails unless "
        "--budget-allow-partial); error: the agent or pytest-budget itself failed (the "
        "test fails); invalid: the agent's output could not be read (scored as such)."
    )
    reason: str | None = describe("Why a cell is invalid, incomplete or an error.")
    scores: dict[str, float | None] = must(
        "The cell's scores by name (see the suite's metrics reference); null where a "
        "score is undefined."
    )
    ci: dict[str, list[float] | None] | None = describe(
        "Per key of scores: its percentile bootstrap confidence interval [lo, hi] at "
        "ci_meta.level, or null where the score is undefined. Absent with "
        "--budget-ci-resamples=0.",
        additionalProperties={
            "oneOf": [
                {"type": "null"},
                {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            ]
        },
    )
    ci_meta: dict[str, Any] | None = describe(
        "How to read ci: the units resampled and how often.",
        required_keys=["level", "resamples", "method", "unit", "n_units"],
        properties={
            "level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "resamples": {"type": "integer", "minimum": 1},
            "method": {"const": "percentile"},
            "unit": {
                "type": "string",
                "description": "What one resampled unit is (an item, a rollout, a query: "
                "the kind's metrics reference says).",
            },
            "n_units": {"type": "integer", "minimum": 0},
            "inner_samples": {
                "type": "integer",
                "minimum": 1,
                "description": "Random draws per resample, for a score that is itself a "
                "mean over random draws.",
            },
            "repeats": {
                "type": "integer",
                "minimum": 2,
                "description": "With --budget-repeat=K > 1: the interval is that of the "
                "mean over K repeats.",
            },
        },
    )
    repeat: dict[str, Any] | None = describe(
        "Only with --budget-repeat=K > 1: per-score spread over the repeats and pass^k "
        "consistency; scores then holds the means.",
        required_keys=["k", "seeds", "outcomes", "scores"],
        properties={
            "k": {"type": "integer", "minimum": 2},
            "seeds": {"type": "array", "items": {"type": "integer"}},
            "outcomes": {"type": "array", "items": {"type": "string"}},
            "scores": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["values", "mean", "std", "min", "max"],
                    "properties": {
                        "values": {"type": "array", "items": {"$ref": "#/$defs/score"}},
                        "mean": {"$ref": "#/$defs/score"},
                        "std": {"$ref": "#/$defs/score"},
                        "min": {"$ref": "#/$defs/score"},
                        "max": {"$ref": "#/$defs/score"},
                    },
                },
            },
            "consistency": {
                "type": "object",
                "required": ["unit", "success", "n", "pass_hat_k"],
                "properties": {
                    "unit": {
                        "type": "string",
                        "description": "What a task is (a probe, a query, the cell).",
                    },
                    "success": {"type": "string", "description": "What one trial's success means."},
                    "n": {"type": "integer", "minimum": 0},
                    "pass_hat_k": {
                        "type": "object",
                        "description": "k (1..K) -> mean over tasks of C(c, k) / C(K, k), "
                        "c = successful trials of the task.",
                        "additionalProperties": {
                            "type": ["number", "null"],
                            "minimum": 0,
                            "maximum": 1,
                        },
                    },
                },
            },
        },
    )
    sequential: dict[str, Any] | None = describe(
        "Only when the sequential gate was asked for (--budget-sequential): how the cell "
        "ended. decision: regressed, no regression (of the stated size, or at the maximum "
        "size), or ran whole (with the reason); look of looks, units run of max_units, the "
        "cell's level alpha, and per metric its decision, p-value, the look's level and "
        "the stated effect.",
        properties={
            "decision": {"enum": ["regressed", "no regression", "continue", "ran whole"]},
            "reason": {"type": "string"},
            "look": {"type": "integer", "minimum": 1},
            "looks": {"type": "integer", "minimum": 1},
            "units": {"type": "integer", "minimum": 0},
            "max_units": {"type": "integer", "minimum": 0},
            "alpha": {"type": "number"},
            "metrics": {"type": "object"},
        },
    )
    notes: dict[str, str] | None = describe(
        "Why a score is 0 or null by definition, per score name (an F1 with an empty "
        "class, a score that was infinite and is written as null)."
    )
    notes_omitted: int | None = describe(
        "Entries of notes left out (per-item lists and mappings are cut to 100 entries).",
        minimum=1,
    )
    samples: list[dict[str, Any]] | None = describe(
        "The samples behind the cell's scores (first repeat), for the HTML report's "
        "drill-down: one per item, probe or episode (#/$defs/sample). Written encoded "
        "against the report's sample_pool (#/$defs/encoded); read, an array.",
        type=["array", "integer"],
        items={},
    )
    sample_rollouts: str | dict[str, Any] | None = describe(
        "Data many cells share, stored once per report: the fingerprint of the cell's "
        "entry in the report's sample_rollouts (the data itself in a record before the "
        "report is built), such as the rollouts a kind's probes replayed."
    )
    sort_key: list[Any] | None = describe(
        "The cell's place within its kind; cells are ordered by suite, sort_key, nodeid, "
        "and budget-report merge restores that order from it."
    )
    test_outcome: Literal["passed", "failed", "skipped"] | None = describe(
        "The pytest outcome of the cell's test.", required=True
    )
    duration_s: float | None = describe("The test's duration in seconds.", minimum=0)
    traceback: str | None = describe(
        "error cells that crashed: the traceback (at most the last 20,000 characters, "
        "credentials masked)."
    )
    scored: str | None = describe(
        "error cells that crashed: what the cell had scored before (nothing, or the "
        "scores it recorded)."
    )
    phase: Literal["setup", "call"] | None = describe(
        "error cells that crashed: the test phase that failed."
    )
    incomplete: dict[str, Any] | None = describe(
        "Model calls that failed after the retries.",
        required_keys=["failed_calls", "reason"],
        properties={
            "failed_calls": {"type": "integer", "minimum": 1},
            "reason": {"type": "string"},
        },
    )
    partial: bool | None = describe(
        "true: an incomplete cell passed because of --budget-allow-partial."
    )
    spend: dict[str, Any] | None = describe(
        "What the cell's agents spent, in all and per role of the calling agent (planner, "
        "solver, estimator, actor, tool_agent): model agents' live calls with their input, "
        "output and reasoning tokens and USD at the run's prices (replayed calls are "
        "free); other agents' replies in counted_tokens (the reference tokenizer).",
        required_keys=["calls", "replayed", "input_tokens", "output_tokens", "usd", "roles"],
        properties={
            **_SPEND,
            "failed": {"type": "integer", "minimum": 0},
            "refused": {"type": "integer", "minimum": 0},
            "roles": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["calls", "replayed", "input_tokens", "output_tokens", "usd"],
                    "properties": _SPEND,
                },
            },
        },
    )

    @property
    def status(self) -> str:
        """The outcome (``ok`` for a user cell that gave none)."""
        return self.outcome or "ok"

    def drill_fields(self) -> dict[str, Any]:
        """Fields of its kind the HTML drill-down shows beside the samples (none here)."""
        return {}

    def junit_properties(self) -> dict[str, Any]:
        """What the cell adds to its test's JUnit properties besides its scores."""
        found = {"suite": self.suite, "agent": self.agent, "outcome": self.outcome}
        return {key: value for key, value in found.items() if value not in (None, "")}


_R = TypeVar("_R", bound=CellRecord)


@dataclass(kw_only=True, slots=True)
class UserCell(CellRecord):
    """A cell of a kind no suite registered (your own test's ``budget_record``): the header
    fields it gave, and the rest as given in ``fields``."""

    suite: str = describe("Any string: the kind your test gave (or none).", default="")
    cell: str = describe(default="")
    agent: str = describe(default="")
    seed: int | None = describe(default=None)  # type: ignore[assignment]
    outcome: str | None = describe(default=None)  # type: ignore[assignment]
    scores: dict[str, float | None] = describe(factory=dict)
    #: Fields of its own, written back as they were given.
    fields: dict[str, Any] = field(default_factory=dict)


def of_type(cells: Iterable[CellRecord], cls: type[_R]) -> list[_R]:
    """The records of ``cells`` that are ``cls`` records (a suite's table or figures get
    every cell of their kind; this narrows them to the kind's type)."""
    return [cell for cell in cells if isinstance(cell, cls)]


def field_value(cell: CellRecord, name: str) -> Any:
    """The field ``name`` of ``cell`` (a column declared by its field name): an attribute
    of its type, or one of a user cell's own fields; a name its type lacks is an error
    naming the kind (a renamed field fails here, not as an empty column)."""
    if name in _names(type(cell)):
        return getattr(cell, name)
    if isinstance(cell, UserCell):
        return cell.fields.get(name)
    raise AttributeError(f"a cell of kind {cell.suite!r} has no field {name!r}")


# --- serializing -------------------------------------------------------------------------

_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


def record_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.name != "fields")
    return found


def _names(cls: type) -> frozenset[str]:
    return frozenset(spec.name for spec in record_fields(cls))
