"""Typed payloads of the triage suite: problems, pools, solutions and plans.

All are frozen dataclasses so they can be shared between threads, hashed into cache keys
and compared in tests.  Nothing here knows about pytest.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Baseline",
    "Item",
    "Plan",
    "PlanEntry",
    "PlanRequest",
    "PlanStatus",
    "Pool",
    "Problem",
    "Solution",
]


@dataclass(frozen=True)
class Problem:
    """What an agent may see of a pool item: never its answer or ground truth.

    ``stated_tokens`` is set only when the item is re-solved under the planner's own
    allocation (TRIAGE App. C.1): an LLM solver states it in its prompt.
    """

    id: str
    text: str
    value: float = 1.0
    domain: str = ""
    stated_tokens: int | None = None


@dataclass(frozen=True)
class Baseline:
    """Phase 0 outcome of one (solver, item) pair: solved y_i and output tokens c_i."""

    solved: bool
    tokens: int


@dataclass(frozen=True)
class Item:
    """One pool item with everything the scorer needs.

    ``answer`` is any JSON value; ``grader`` names a built-in grader
    (see :mod:`pytest_budget.triage._graders`).  ``unsolvable`` items never count as solved.
    ``baseline``, when given, replaces the Phase 0 solver call for this item.
    """

    id: str
    text: str
    value: float = 1.0
    answer: Any = None
    grader: str = "exact"
    unsolvable: bool = False
    domain: str = ""
    baseline: Baseline | None = None

    @property
    def problem(self) -> Problem:
        return Problem(id=self.id, text=self.text, value=self.value, domain=self.domain)


@dataclass(frozen=True)
class Pool:
    """A named set of items planned against one shared budget."""

    name: str
    items: tuple[Item, ...]
    domain: str = ""

    def __len__(self) -> int:
        return len(self.items)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.items)


@dataclass(frozen=True)
class Solution:
    """A solver's answer to one problem.

    ``text`` is everything the solver wrote; ``tokens`` its output-token count;
    ``answer`` the final answer extracted from the text (``None`` when it gave up).
    """

    text: str
    tokens: int
    answer: str | None = None


class PlanStatus(enum.StrEnum):
    """How a plan was obtained from the planner's output."""

    OK = "ok"
    REPAIRED = "repaired"
    UNPARSEABLE = "unparseable"


@dataclass(frozen=True, slots=True)
class PlanEntry:
    id: str
    tokens: int


@dataclass(frozen=True)
class Plan:
    """An ordered plan with per-item token allocations.

    Entries with 0 tokens are kept as the planner wrote them but are not part of the
    planned set S = {i : a_i > 0}.  ``repairs`` lists what the repair pass changed.
    """

    entries: tuple[PlanEntry, ...] = ()
    status: PlanStatus = PlanStatus.OK
    repairs: tuple[str, ...] = field(default=())

    @property
    def planned(self) -> tuple[PlanEntry, ...]:
        """Entries in plan order with a positive allocation (the planned set S)."""
        return tuple([entry for entry in self.entries if entry.tokens > 0])

    @property
    def total_tokens(self) -> int:
        return sum(entry.tokens for entry in self.entries)


@dataclass(frozen=True)
class PlanRequest:
    """What a planner receives: the pool's problems, the budget B in tokens, and a prompt.

    ``prompt`` is the full text an LLM planner would be sent (variant A, B or C);
    Python planners can ignore it and use ``items`` and ``budget`` directly.
    """

    items: tuple[Problem, ...]
    budget: int
    prompt: str = ""
    variant: str = "A"
    pool: str = ""
