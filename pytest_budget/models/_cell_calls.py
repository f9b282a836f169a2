"""What one cell's model calls did and cost, and which repeat is running.

Cells of a process run concurrently on one event loop, so their counters live in context
variables (:data:`CELL_CALLS`, :data:`CALL_REPEAT`) that the tasks a cell starts inherit.
The runtime (:mod:`pytest_budget.models._runtime`) counts each call here.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any

from pytest_budget.models._usage import TokenUsage

__all__ = ["CALL_REPEAT", "CELL_CALLS", "CellCalls", "RoleCalls"]


@dataclass
class RoleCalls:
    """Live and replayed calls, their live tokens and USD (replays are free): a cell's in
    all (:class:`CellCalls`) and one role's within it."""

    calls: int = 0
    replayed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0  # within output_tokens (billed as output)
    usd: float = 0.0

    def add(self, other: RoleCalls) -> None:
        self.calls += other.calls
        self.replayed += other.replayed
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.usd += other.usd

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "replayed": self.replayed,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "usd": round(self.usd, 6),
        }


@dataclass
class CellCalls(RoleCalls):
    """The calls of one cell that were refused (spend cap) or failed after the retries,
    and what its calls did and cost (its progress line, its record's ``spend``), in all and
    per role of the calling agent.

    Cells of a process run concurrently on one event loop, so the process's counters cannot
    say which cell a failure belongs to; each cell's work runs with its own
    :data:`CELL_CALLS` (a context variable, inherited by the tasks it starts).
    """

    refused: int = 0
    failed: int = 0
    roles: dict[str, RoleCalls] = field(default_factory=dict)

    def add(self, other: RoleCalls) -> None:
        super().add(other)
        if isinstance(other, CellCalls):
            self.refused += other.refused
            self.failed += other.failed
            for role, calls in other.roles.items():
                self.roles.setdefault(role, RoleCalls()).add(calls)

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "failed": self.failed,
            "refused": self.refused,
            "roles": {role: self.roles[role].as_dict() for role in sorted(self.roles)},
        }


#: The counters of the cell whose work is running (None outside a cell).
CELL_CALLS: contextvars.ContextVar[CellCalls | None] = contextvars.ContextVar(
    "pytest_budget_cell_calls", default=None
)


#: The index of the ``--budget-repeat`` whose work is running (0: the first, and outside a
#: cell).  Part of every call's record key: a repeat of a model agent calls the model and
#: replays as its own answers.  Set by the suites around each repeat, inherited by its tasks.
CALL_REPEAT: contextvars.ContextVar[int] = contextvars.ContextVar(
    "pytest_budget_call_repeat", default=0
)


def _cell_failed(refused: bool = False) -> None:
    counts = CELL_CALLS.get()
    if counts is not None:
        if refused:
            counts.refused += 1
        else:
            counts.failed += 1


def _cell_spent(role: str | None, usage: TokenUsage | None = None, cost: float = 0.0) -> None:
    """Count a live call (``usage``) or a replayed one (None) for the running cell, in all
    and for ``role`` (the calling agent's role; ``model`` when it is not known)."""
    counts = CELL_CALLS.get()
    if counts is None:
        return
    own = counts.roles.setdefault(role or "model", RoleCalls())
    for target in (counts, own):
        if usage is None:
            target.replayed += 1
            continue
        target.calls += 1
        target.input_tokens += usage.input
        target.output_tokens += usage.output
        target.reasoning_tokens += usage.reasoning
        target.usd += cost
