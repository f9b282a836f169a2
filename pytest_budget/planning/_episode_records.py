"""What one planning episode leaves behind: queries, calls, segments and the outcome.

These are the plain records the agent loop (``episode.py``) writes and the metrics
(``metrics.py``) read, so the two never depend on each other's internals.  Plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CALL_ERROR_KINDS",
    "CallErrorKind",
    "EpisodeRecord",
    "Query",
    "Segment",
    "ToolCallRecord",
]


@dataclass(frozen=True)
class Query:
    """One CostBench user request for one task (test split, fact sheet §1).

    ``preferences`` maps each of the four dimensions (category, tier, style,
    feature_package) to one of the task's enum values; ``location_preference`` is ``None``
    for the location task; ``text`` is the first user message the agent reads.
    """

    query_id: str
    task: str
    preferences: dict[str, str]
    time_info: str  # CostBench's ``TimeInfo`` token, e.g. ``<TimeInfo00006>``
    location_preference: str | None  # ``<LocationPreference#####>``; None for location
    text: str  # ``query.input``: the first user message, exactly as sent
    user_requirements: str = ""  # the natural-language requirements inside ``text``


#: Why a call was invalid (the failure classes of CostBench plus parse problems).
CallErrorKind = Literal[
    "unknown_tool",  # name not in the (current) tool list, including removed tools
    "bad_arguments",  # arguments not JSON / not an object
    "wrong_parameters",  # missing or unexpected parameter names, or a value not allowed
    "bad_id",  # an id argument that was never issued or has the wrong format
    "inaccessible",  # inputs not yet held
    "banned",  # the tool was banned by a blocking event at this call (still charged)
]
CALL_ERROR_KINDS: tuple[str, ...] = (
    "unknown_tool",
    "bad_arguments",
    "wrong_parameters",
    "bad_id",
    "inaccessible",
    "banned",
)


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call the agent made, in order (``step`` counts from 1 over the episode)."""

    step: int
    name: str
    arguments: str  # the arguments as the agent sent them (JSON text)
    ok: bool
    cost: float  # what was charged (a banned call still charges)
    segment: int  # index of the ground-truth segment the call belongs to
    error_kind: str | None = None  # one of CALL_ERROR_KINDS when not ok
    output_type: str | None = None  # the type produced when ok
    repeated: bool = False  # same tool already succeeded earlier in this segment
    after_goal: bool = False  # made after the segment's goal was already reached
    executed: bool = True  # False: a call in the answer message (never run; CostBench's
    # evaluation still counts it as a valid step with cost 0)


@dataclass(frozen=True)
class Segment:
    """A stretch of the episode between blocking events, with its own ground truth.

    ``optimal_paths`` holds every optimal tool-name sequence (exact ties on cost and call
    count); ``optimal_cost`` their shared cost; ``greedy_path``/``greedy_cost`` the greedy
    baseline from the same starting state.
    """

    index: int
    start_step: int
    event: str | None  # None for the first segment, else the blocking mode that opened it
    optimal_paths: tuple[tuple[str, ...], ...]
    optimal_cost: float
    greedy_path: tuple[str, ...]
    greedy_cost: float
    greedy_reached: bool = True  # the greedy baseline reached the goal


@dataclass(frozen=True)
class EpisodeRecord:
    """One agent run on one query: every call, the segments, the answer and the outcome."""

    query_id: str
    task: str
    refinement_level: int
    mode: str  # "static", "ban_tool", "preference_change", "cost_change", "remove_tools"
    block_count: int
    calls: tuple[ToolCallRecord, ...]
    segments: tuple[Segment, ...]
    answer: str | None  # the 5 digits of the final answer (CostBench's parser), if any
    expected_answer: str  # the final <TCandidate#####> id the (last) preferences lead to
    reached_goal: bool  # the goal type was produced in the last segment
    steps_exhausted: bool  # stopped at the 20-turn limit
    blocks_applied: int = 0
    blocks_dropped: int = 0  # scheduled too late to matter (ineffective)
    error: str | None = None  # the agent raised or returned garbage: the reason
    notes: tuple[str, ...] = field(default_factory=tuple)
    turns: int = 0  # LLM turns, the answer turn included (CostBench's total_steps)
    tool_turns: int = 0  # turns whose reply carried at least one tool call
    block_steps: tuple[int, ...] = ()  # the turn each applied block fired at

    @property
    def total_cost(self) -> float:
        return round(sum(call.cost for call in self.calls), 2)
