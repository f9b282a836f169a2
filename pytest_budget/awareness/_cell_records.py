"""The awareness suite's cell records: ``awareness`` (rollout replay) and
``awareness-online``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pytest_budget._core.records import CellRecord, describe, must

__all__ = ["AwarenessCellRecord", "OnlineCellRecord"]

_CAPS: dict[str, Any] = {"additionalProperties": {"type": "number", "exclusiveMinimum": 0}}


@dataclass(kw_only=True, slots=True)
class AwarenessCellRecord(CellRecord):
    """An ``awareness`` cell: an estimator asked, at probes along replayed rollouts, how
    much budget the rest needs or whether the task has become impossible (BAGEN)."""

    KIND: ClassVar[str] = "awareness"
    KEEP_NULL: ClassVar[frozenset[str]] = frozenset({"first_error"})

    env: str = must("The cell's environment or env label.")
    actor: str | None = describe(
        "The actor that produced the rollouts (its name), or logged for --budget-rollouts "
        "files and the bundled swe-synthetic logs."
    )
    parse: Literal["bagen", "strict"] | None = describe("The answer parser (--budget-parse).")
    budget_range: dict[str, list[float]] | None = describe(
        "[min, max] of each dimension's cap over the cell's rollouts.",
        additionalProperties={
            "type": "array",
            "items": {"type": "number"},
            "minItems": 2,
            "maxItems": 2,
        },
    )
    budget: dict[str, float] | None = describe(
        "The cap per budget dimension when all of the cell's rollouts share it, e.g. "
        '{"tokens": 2500}.',
        **_CAPS,
    )
    rollouts: dict[str, float] | None = describe(
        "The rollout set the cell replayed.",
        properties={
            "rollouts": {"type": "integer", "minimum": 0},
            "succeeded": {"type": "integer", "minimum": 0},
            "feasible": {"type": "integer", "minimum": 0},
            "mean_turns": {"type": "number", "minimum": 0},
            "success_unverified": {
                "type": "integer",
                "minimum": 1,
                "description": "Imported coding-agent logs whose success is only the "
                "agent's exit status 'Submitted' (no SWE-bench harness verdict, "
                "--budget-swe-report); absent when none.",
            },
        },
    )
    trivial_floor: dict[str, Any] | None = describe(
        "The probe set's trivial-estimator floor: the best all-turn macro-F1 of a "
        "one-number threshold rule on what the estimator sees (caps, turn, usage so far, "
        "remaining cap, numeric task fields), the rule, the class balance, and warn "
        "(floor > 0.75).",
        required_keys=["macro_f1", "feature", "feasible_probes", "impossible_probes", "warn"],
        properties={
            "macro_f1": {"type": "number", "minimum": 0, "maximum": 1},
            "feature": {"type": "string"},
            "threshold": {"type": ["number", "null"]},
            "impossible_if": {"type": "string", "enum": ["above", "at_or_below"]},
            "feasible_probes": {"type": "integer", "minimum": 0},
            "impossible_probes": {"type": "integer", "minimum": 0},
            "warn": {"type": "boolean"},
            "leaking_preset": {
                "type": "string",
                "description": "a Warehouse challenge preset known to leak the label (paper).",
            },
        },
    )
    invalid_reasons: dict[str, int] | None = describe(
        "Unreadable answers per reason, most frequent first."
    )
    invalid_reasons_omitted: int | None = describe(
        "Entries of invalid_reasons left out.", minimum=1
    )
    curves: dict[str, Any] | None = describe(
        "Figure data for the HTML report (never gated): per rollout-progress bin and "
        "budget dimension, interval width and agent vs linear-extrapolation error, "
        "normalised by the cap; the late-recognition curve.",
        required_keys=["bin_edges", "dimensions", "late_recognition"],
        properties={
            "bin_edges": {"type": "array", "items": {"type": "number"}, "minItems": 2},
            "dimensions": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": [
                        "interval_answers",
                        "width",
                        "paired",
                        "agent_error",
                        "linear_error",
                    ],
                    "properties": {
                        "interval_answers": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 0},
                        },
                        "width": {"type": "array", "items": {"$ref": "#/$defs/score"}},
                        "paired": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                        "agent_error": {"type": "array", "items": {"$ref": "#/$defs/score"}},
                        "linear_error": {"type": "array", "items": {"$ref": "#/$defs/score"}},
                    },
                },
            },
            "late_recognition": {
                "type": "object",
                "required": ["dimension", "budget_share", "still_feasible", "failed_rollouts"],
                "properties": {
                    "dimension": {"type": "string"},
                    "budget_share": {"type": "array", "items": {"type": "number"}},
                    "still_feasible": {"type": "array", "items": {"$ref": "#/$defs/score"}},
                    "failed_rollouts": {"type": "integer", "minimum": 0},
                },
            },
        },
    )
    first_error: str | None = describe(
        "The first estimator error (a probe the estimator raised on); null when none."
    )


@dataclass(kw_only=True, slots=True)
class OnlineCellRecord(CellRecord):
    """An ``awareness-online`` cell: the agent acts and estimates its remaining budget in
    one live episode, and may stop early (``--budget-awareness-mode=online``)."""

    KIND: ClassVar[str] = "awareness-online"

    env: str = must("The cell's environment.")
    awareness_mode: Literal["online"] | None = describe(
        "The mode of the cell (--budget-awareness-mode)."
    )
    protocol: Literal["single-call", "two-call"] | None = describe(
        "Action and estimate in one reply, or a separate estimate call after each action."
    )
    charge: Literal["acting", "both"] | None = describe(
        "What the cap is charged with (--budget-online-charge)."
    )
    cap_multiplier: float | None = describe(
        "The cap as a multiple of the environment's cap; the caps themselves are in budget.",
        exclusiveMinimum=0,
    )
    budget: dict[str, float] | None = describe("The cap per budget dimension.", **_CAPS)
    parse: Literal["bagen", "strict"] | None = describe("The answer parser (--budget-parse).")
    episodes: int | None = describe("Episodes run (--budget-online-episodes).", minimum=1)
    cost_model: str | None = describe("The early-stop net value's cost model, in words.")
    runs: list[dict[str, Any]] | None = describe(
        "Per-run entries (id, success, end, turns, acting_tokens, estimation_tokens; a "
        "stopped run adds stopped_at, continuation_success, continuation_acting_tokens), "
        "at most 64.",
        items={
            "type": "object",
            "required": ["id", "success", "end", "acting_tokens", "estimation_tokens"],
            "properties": {
                "acting_tokens": {"type": "number", "minimum": 0},
                "estimation_tokens": {"type": "number", "minimum": 0},
            },
        },
    )
    runs_left_out: int | None = describe("Per-run entries not kept in runs.", minimum=0)
    invalid_reasons: dict[str, int] | None = describe("Unreadable estimates per reason.")
    invalid_reasons_omitted: int | None = describe(
        "Entries of invalid_reasons left out.", minimum=1
    )
