"""The triage suite's agent roles: the planner under test and the solver it plans for.

Any object with the role's method, or a plain callable, fills the role; the method may be
sync or async (:func:`pytest_budget._core.roles.call_role` calls it).  The suite declares the
roles in :mod:`pytest_budget.triage._suite`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from pytest_budget.triage._types import Plan, PlanRequest, Problem, Solution

__all__ = ["PlanReply", "Planner", "SolveReply", "Solver"]

#: A :class:`~pytest_budget.triage.Plan`, ``{"plan": [{"id": ..., "tokens": ...}]}``, a
#: list of such entries, or raw text.
PlanReply: TypeAlias = "Plan | Mapping[str, Any] | Sequence[Any] | str"
#: A :class:`~pytest_budget.triage.Solution`, a mapping with ``text``/``tokens``/``answer``,
#: or raw text.
SolveReply: TypeAlias = "Solution | Mapping[str, Any] | str"


@runtime_checkable
class Planner(Protocol):
    """Triage planner: returns an ordered plan with per-item token allocations.

    May return a :class:`~pytest_budget.triage.Plan`, a mapping like
    ``{"plan": [{"id": "p1", "tokens": 300}]}``, or the raw text an LLM would write.
    """

    def plan(self, request: PlanRequest) -> PlanReply | Awaitable[PlanReply]: ...


@runtime_checkable
class Solver(Protocol):
    """Solves one problem, optionally under a hard output-token cap.

    Returns a :class:`~pytest_budget.triage.Solution`, a mapping with ``text``/``tokens``/
    ``answer``, or raw text (tokens are then counted with the reference tokenizer).
    """

    def solve(
        self, problem: Problem, max_tokens: int | None = None
    ) -> SolveReply | Awaitable[SolveReply]: ...
