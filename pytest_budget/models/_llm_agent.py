"""The base of the LLM-backed agents, written against a minimal :class:`ChatModel` protocol.

A :class:`ChatModel` is anything with the chat clients' ``complete`` signature: a bare
:class:`~pytest_budget.models._client.OpenAIChatClient` /
:class:`~pytest_budget.models._client.AnthropicChatClient`, or a runtime wrapping one
(retries, caching, spend cap, metering).  :class:`LLMAgent` holds the model, the agent's
name, the per-call token cap and the temperature; each suite's adapters subclass it in the
suite's own package (``triage/llm.py``, ``awareness/llm.py``, ``awareness/online/llm.py``,
``planning/llm.py``) and :mod:`pytest_budget._run.model_agents` maps roles to them.  Nothing in
this module knows a suite.

The agents never judge what the model wrote: they return the raw text (or an OpenAI-style
assistant message with the model's tool calls) and the suites' own parsers read it, scoring
anything unreadable as ``invalid`` with a reason.  A failed call (HTTP error, transport
failure, unusable response) raises :class:`~pytest_budget.models._client.ModelCallError`,
which the suites report as an agent error, not as an invalid answer.

Token caps: every call carries ``max_tokens``, the role's setting (the adapter's
:attr:`LLMAgent.default_max_tokens` unless configured), tightened where the suite gives a
cap.  Temperature is 0 unless configured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

from pytest_budget.models._client import ChatResult, ToolSpec
from pytest_budget.models._messages import (
    MessageFormat,
    assistant_message,
    detect_message_format,
    openai_messages_to_anthropic,
    tool_spec_from_openai,
)

__all__ = [
    "TRUNCATED_FINISH_REASONS",
    "ChatModel",
    "LLMAgent",
    "MessageFormat",
    "assistant_message",
    "detect_message_format",
    "openai_messages_to_anthropic",
    "role_max_tokens",
    "tool_spec_from_openai",
]

#: Finish reasons meaning the reply was cut at ``max_tokens`` (OpenAI, Anthropic, some
#: local servers).
TRUNCATED_FINISH_REASONS: frozenset[str] = frozenset(
    {"length", "max_tokens", "model_length", "model_context_window_exceeded"}
)


@runtime_checkable
class ChatModel(Protocol):
    """What the agents need of a model: one async chat call (the chat clients' signature)."""

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> ChatResult: ...


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


def _model_label(model: object) -> str:
    """``provider:model`` read from a client (or a runtime's ``client``), else the class."""
    for obj in (model, getattr(model, "client", None)):
        provider, name = getattr(obj, "provider", None), getattr(obj, "model", None)
        if isinstance(provider, str) and isinstance(name, str) and provider and name:
            return f"{provider}:{name}"
    return type(model).__name__


def role_max_tokens(value: object, role: str) -> int | None:
    """The ``max_tokens`` setting for ``role``: an int for every role, or a mapping role ->
    int (None: not set).  Raises ``ValueError`` for anything but a positive integer."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get(role)
        if value is None:
            return None
    return _positive_int(value, f"settings max_tokens for {role}")


class LLMAgent:
    """Base of the LLM agents: the model, the name, the per-call cap and the temperature.

    Subclasses set :attr:`role` (the role they fill) and :attr:`default_max_tokens`.
    ``aclose()`` (or ``async with agent:``) closes the model when it can be closed.
    """

    role: ClassVar[str] = ""
    #: Its spend is what its model reports (the reference tokenizer does not count it).
    metered: ClassVar[bool] = True
    #: ``max_tokens`` of one call when the settings give none.
    default_max_tokens: ClassVar[int] = 1024
    #: The key of this role in a ``max_tokens`` settings mapping (the role, unless shared).
    settings_role: ClassVar[str | None] = None

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> None:
        if not callable(getattr(model, "complete", None)):
            raise TypeError(f"{type(model).__name__} has no complete() method")
        self.model = model
        self.name = name or _model_label(model)
        self.max_tokens = _positive_int(
            self.default_max_tokens if max_tokens is None else max_tokens,
            f"{self.role} max_tokens",
        )
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise ValueError(f"temperature must be a number, got {temperature!r}")
        self.temperature = float(temperature)

    @classmethod
    def from_settings(
        cls, model: ChatModel, *, name: str | None = None, settings: Mapping[str, Any]
    ) -> Self:
        """The agent on ``model`` configured by ``settings`` (``max_tokens``: an int, or a
        mapping role -> int; ``temperature``, default 0; other keys are ignored here)."""
        temperature = settings.get("temperature")
        return cls(
            model,
            name=name,
            max_tokens=role_max_tokens(settings.get("max_tokens"), cls.settings_role or cls.role),
            temperature=0.0 if temperature is None else temperature,
        )

    @property
    def limits_own_calls(self) -> bool:
        """Whether its model bounds its own calls in flight (a model behind the run's
        runtime, :class:`~pytest_budget.models._runtime.RuntimeChatModel`): a cell's
        limiter then need not hold a slot for the whole agent call."""
        return getattr(self.model, "limits_calls", False) is True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, max_tokens={self.max_tokens}, "
            f"temperature={self.temperature:g})"
        )

    async def _complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        tools: Sequence[ToolSpec] | None = None,
    ) -> ChatResult:
        return await self.model.complete(
            messages, max_tokens=max_tokens, temperature=self.temperature, tools=tools
        )

    async def aclose(self) -> None:
        """Close the model if it can be closed (a client's HTTP connections)."""
        close = getattr(self.model, "aclose", None)
        if callable(close):
            await close()

    async def __aenter__(self) -> LLMAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
