"""The planning suite's agent role: the multi-turn tool agent under test.

Any object with ``act``, or a plain callable, fills the role; the method may be sync or
async (:func:`pytest_budget._core.roles.call_role` calls it).  The suite declares the role in
:mod:`pytest_budget.planning._suite`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from pytest_budget.planning._episode import ToolAgentObservation

__all__ = ["SupportsModelDump", "ToolAgent", "ToolAgentReply"]


class SupportsModelDump(Protocol):
    """An SDK reply object (pydantic): its ``model_dump()`` has the OpenAI wire layout."""

    def model_dump(self) -> Any: ...


#: An OpenAI-style message (or whole completion) as a mapping, an SDK object, or raw text.
ToolAgentReply: TypeAlias = "Mapping[str, Any] | SupportsModelDump | str"


@runtime_checkable
class ToolAgent(Protocol):
    """Multi-turn tool caller for the travel-planning environment."""

    def act(
        self, observation: ToolAgentObservation
    ) -> ToolAgentReply | Awaitable[ToolAgentReply]: ...
