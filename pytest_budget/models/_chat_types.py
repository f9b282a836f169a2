"""The provider-neutral chat types: a tool the model may call, a tool call it made, and its
answer (text, tool calls, usage, finish reason).  Each client maps them to its provider's
JSON (:mod:`pytest_budget.models._client`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_budget.models._usage import TokenUsage

__all__ = ["ChatResult", "ToolCall", "ToolSpec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: a name, a description and a JSON Schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    def to_anthropic(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.parameters),
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for.

    ``arguments`` is the parsed argument object, or None when the model produced something that
    is not a JSON object (``raw_arguments`` keeps the text, so a parser can call it invalid).
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@dataclass(frozen=True, slots=True)
class ChatResult:
    """A model's answer: text, tool calls, reported usage and the provider's finish reason."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: TokenUsage
    raw_finish_reason: str | None
