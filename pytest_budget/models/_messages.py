"""Chat messages across wire formats: OpenAI tool specs and replies, OpenAI -> Anthropic.

The planning suite speaks OpenAI Chat Completions (its conversation, its tool list, the
assistant message with tool calls it reads back); these helpers map that to what the chat
clients take (:class:`~pytest_budget.models._chat_types.ToolSpec`) and to Anthropic Messages
content blocks, and a model's :class:`~pytest_budget.models._chat_types.ChatResult` back to an
OpenAI-style assistant message.  Nothing here knows a suite.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pytest_budget.models._client import (
    AnthropicChatClient,
    ChatResult,
    OpenAIChatClient,
    ToolSpec,
)

__all__ = [
    "MessageFormat",
    "assistant_message",
    "detect_message_format",
    "openai_messages_to_anthropic",
    "tool_spec_from_openai",
]

MessageFormat = Literal["openai", "anthropic"]


def detect_message_format(model: object) -> MessageFormat:
    """``"anthropic"`` for an Anthropic client (or a runtime whose ``client`` is one)."""
    for obj in (model, getattr(model, "client", None)):
        if isinstance(obj, AnthropicChatClient):
            return "anthropic"
        if isinstance(obj, OpenAIChatClient):
            return "openai"
        if getattr(obj, "provider", None) == "anthropic":
            return "anthropic"
    return "openai"


def tool_spec_from_openai(spec: Mapping[str, Any]) -> ToolSpec | None:
    """A :class:`ToolSpec` from an OpenAI function spec (None when it names no function)."""
    function = spec.get("function")
    source: Mapping[str, Any] = function if isinstance(function, Mapping) else spec
    name = source.get("name")
    if not isinstance(name, str) or not name:
        return None
    description = source.get("description")
    parameters = source.get("parameters")
    if not isinstance(parameters, Mapping):
        parameters = {"type": "object", "properties": {}}
    return ToolSpec(
        name=name,
        description=description if isinstance(description, str) else "",
        parameters=dict(parameters),
    )


def assistant_message(result: ChatResult) -> dict[str, Any]:
    """An OpenAI-style assistant message for a model's reply (what the planning loop reads).

    ``content`` is the text (None when empty); ``tool_calls`` lists the calls, present only
    when there are some.  Arguments that parsed as a JSON object are sent as that object's
    JSON text; anything else as the model wrote it (``raw_arguments``), so the loop can
    score the call as invalid.
    """
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": (
                        call.raw_arguments
                        if call.arguments is None
                        else json.dumps(call.arguments, ensure_ascii=False)
                    ),
                },
            }
            for call in result.tool_calls
        ]
    return message


# ------------------------------------------------------------- OpenAI -> Anthropic

_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _anthropic_id(value: object) -> str:
    """A tool-use id Anthropic accepts (``[A-Za-z0-9_-]+``); the same input, the same id."""
    text = _ID_CHARS.sub("_", value if isinstance(value, str) else "")
    return text or "call"


def _text_of(content: object) -> str:
    """Message content as one string: text, text parts joined, JSON for anything else."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


def _text_blocks(content: object) -> list[dict[str, Any]]:
    """One text block per non-empty text part (or for the whole string)."""
    if isinstance(content, Sequence) and not isinstance(content, str | bytes | bytearray):
        texts = [_text_of([part]) for part in content]
    else:
        texts = [_text_of(content)]
    return [{"type": "text", "text": text} for text in texts if text]


def _tool_input(arguments: object) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return {}  # the input must be an object; the tool result already says the call failed


def _tool_use(call: object, index: int) -> dict[str, Any] | None:
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    source: Mapping[str, Any] = function if isinstance(function, Mapping) else call
    name = source.get("name")
    return {
        "type": "tool_use",
        "id": _anthropic_id(call.get("id") or f"call_{index}"),
        "name": name if isinstance(name, str) and name else "unnamed",
        "input": _tool_input(source.get("arguments")),
    }


def openai_messages_to_anthropic(
    messages: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Convert an OpenAI Chat Completions history to Anthropic Messages content blocks.

    * ``system`` (and ``developer``) messages stay ``{"role": "system", "content": text}``:
      the Anthropic client lifts them into the top-level ``system`` field.
    * An assistant message becomes a text block (when it has text) followed by one
      ``tool_use`` block per tool call (``input`` = the parsed arguments, ``{}`` when they
      were not a JSON object); an assistant message with neither is dropped.
    * A ``tool`` message becomes a ``tool_result`` block (``tool_use_id`` = its
      ``tool_call_id``) in a user message.
    * Consecutive user-side messages (tool results, then a user message) merge into one user
      message, tool results first, as the Messages API requires.  A lone user message with
      string content keeps its string.

    Ids are mapped to Anthropic's alphabet (``[A-Za-z0-9_-]``) the same way on both sides, so
    every ``tool_result`` still names its ``tool_use``.
    """
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]], plain: str | None = None) -> None:
        if not blocks:
            return
        last = out[-1] if out else None
        if last is not None and last["role"] == role:
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"].extend(blocks)
            return
        out.append({"role": role, "content": plain if plain is not None else blocks})

    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            out.append({"role": "system", "content": _text_of(content)})
        elif role == "assistant":
            blocks = _text_blocks(content)
            calls = message.get("tool_calls")
            if isinstance(calls, Sequence) and not isinstance(calls, str | bytes):
                for index, call in enumerate(calls):
                    block = _tool_use(call, index)
                    if block is not None:
                        blocks.append(block)
            push("assistant", blocks)
        elif role == "tool":
            push(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": _anthropic_id(message.get("tool_call_id")),
                        "content": _text_of(content),
                    }
                ],
            )
        else:  # user, or an unknown role read as the user speaking
            blocks = _text_blocks(content)
            plain = content if isinstance(content, str) else None
            push("user", blocks, plain)
    return out
