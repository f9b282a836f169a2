"""The planning suite's LLM agent: the tool agent on a chat model with native tool calls.

One call per turn: the suite's conversation (OpenAI Chat Completions format; it carries its
own system message, CostBench's setting, see
:func:`pytest_budget.planning._prompts.system_prompt`, so the agent adds none) and the task's
tools as :class:`~pytest_budget.models._client.ToolSpec`.  The reply is an OpenAI-style
assistant message with the model's tool calls (arguments that are not a JSON object are
passed on as the model wrote them); the episode loop scores it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

from pytest_budget.models._client import ToolSpec
from pytest_budget.models._llm_agent import (
    ChatModel,
    LLMAgent,
    MessageFormat,
    assistant_message,
    detect_message_format,
    openai_messages_to_anthropic,
    role_max_tokens,
    tool_spec_from_openai,
)
from pytest_budget.planning._episode import read_tools
from pytest_budget.planning._tool_specs import copy_json

__all__ = ["LLM_ROLES", "TOOL_AGENT_SYSTEM", "LLMToolAgent"]

#: The tool agent sends the planning suite's conversation as it is (it has its own system
#: message), so nothing is added.
TOOL_AGENT_SYSTEM: str | None = None


class LLMToolAgent(LLMAgent):
    """Planning tool agent: the suite's conversation and tools, called with native tools.

    ``message_format`` is the wire format of the model behind the :class:`ChatModel`
    (detected from the client when not given): for ``"anthropic"`` the OpenAI-format history
    is converted with :func:`~pytest_budget.models._messages.openai_messages_to_anthropic`;
    the tools are always given as :class:`ToolSpec` (each client maps them).  Returns an
    OpenAI-style assistant message (:func:`~pytest_budget.models._messages.assistant_message`).
    """

    role: ClassVar[str] = "tool_agent"
    default_max_tokens: ClassVar[int] = 16384  # CostBench's --max_tokens (the paper's cap)

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        message_format: MessageFormat | None = None,
    ) -> None:
        super().__init__(model, name=name, max_tokens=max_tokens, temperature=temperature)
        if message_format not in (None, "openai", "anthropic"):
            raise ValueError(
                f"message_format must be 'openai' or 'anthropic', got {message_format!r}"
            )
        self.message_format: MessageFormat = message_format or detect_message_format(model)

    @classmethod
    def from_settings(
        cls, model: ChatModel, *, name: str | None = None, settings: Mapping[str, Any]
    ) -> Self:
        """As :meth:`LLMAgent.from_settings`, and ``message_format`` (``"openai"`` /
        ``"anthropic"``; detected from the model when absent)."""
        temperature = settings.get("temperature")
        return cls(
            model,
            name=name,
            max_tokens=role_max_tokens(settings.get("max_tokens"), cls.role),
            temperature=0.0 if temperature is None else temperature,
            message_format=settings.get("message_format"),
        )

    def messages(self, observation: Any) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [dict(m) for m in observation.messages]
        if TOOL_AGENT_SYSTEM is not None:
            history.insert(0, {"role": "system", "content": TOOL_AGENT_SYSTEM})
        if self.message_format == "anthropic":
            return openai_messages_to_anthropic(history)
        return history

    @staticmethod
    def tools(observation: Any) -> list[ToolSpec]:
        return list(_tool_specs(observation))

    async def act(self, observation: Any) -> dict[str, Any]:
        # The same tuple every turn the tool list is unchanged: the runtime then encodes it
        # once (RuntimeChatModel.complete), not on every call.
        tools = _tool_specs(observation)
        result = await self._complete(self.messages(observation), self.max_tokens, tools or None)
        return assistant_message(result)


def _convert(source: Sequence[Any]) -> tuple[ToolSpec, ...]:
    specs = (tool_spec_from_openai(spec) for spec in source if isinstance(spec, Mapping))
    return tuple(spec for spec in specs if spec is not None)


def _tool_specs(observation: Any) -> tuple[ToolSpec, ...]:
    """The observation's tools as :class:`ToolSpec`; for the loop's shared tool list (a tuple
    the planning loop memoizes and never modifies) converted once and memoized by its
    identity, so a turn costs neither a copy nor a conversion of every tool."""
    source = read_tools(observation) or ()
    if type(source) is not tuple:  # an agent's own list: it may change, convert it now
        return _convert(source)
    found = _SPECS.get(id(source))
    if found is not None and found[0] is source:
        return found[1]
    # Copied once, so no ToolSpec shares a dict with the loop's shared list.
    specs = _convert(copy_json(list(source)))
    if len(_SPECS) >= _SPECS_SIZE:
        _SPECS.clear()
    # The entry holds the tuple itself, so its id cannot be reused while it is here.
    _SPECS[id(source)] = (source, specs)
    return specs


# id(shared tool list) -> (that list, its ToolSpecs).  Plain dict operations only: a race
# between two threads at worst converts a list twice.
_SPECS: dict[int, tuple[tuple[Any, ...], tuple[ToolSpec, ...]]] = {}
_SPECS_SIZE = 1_024


#: The role the planning suite's LLM agent fills (read by :mod:`pytest_budget._run.model_agents`).
LLM_ROLES: dict[str, type[LLMAgent]] = {"tool_agent": LLMToolAgent}
