"""LLM-backed agents for every role, written against a minimal :class:`ChatModel` protocol.

Each agent sends one chat call per role call: a short system message from
:mod:`pytest_budget.models.prompts` and the prompt the suite already wrote (the planner
prompt, the problem text, the probe text, the observation text), or, for the tool agent, the
planning suite's conversation with its tools as native tool specs.  A :class:`ChatModel` is
anything with the chat clients' ``complete`` signature: a bare
:class:`~pytest_budget.models.client.OpenAIChatClient` /
:class:`~pytest_budget.models.client.AnthropicChatClient`, or a runtime wrapping one
(retries, caching, spend cap, metering).

The agents never judge what the model wrote: the planner and the estimator return the raw
text, the actor the raw text with the usage the provider reported, the tool agent an
OpenAI-style assistant message with the model's tool calls (arguments that are not a JSON
object are passed on as the model wrote them).  The suites' own parsers read it and score
anything unreadable as ``invalid`` with a reason.  A failed call (HTTP error, transport
failure, unusable response) raises :class:`~pytest_budget.models.client.ModelCallError`,
which the suites report as an agent error, not as an invalid answer.

Token caps: every call carries ``max_tokens``, the role's setting (:data:`DEFAULT_MAX_TOKENS`
unless configured), tightened where the suite gives a cap: the solver's ``max_tokens``
argument is the call's cap, and an actor's reply never exceeds its environment's token budget
(:func:`env_token_cap`).  Temperature is 0 unless configured.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pytest_budget.models.client import (
    AnthropicChatClient,
    ChatResult,
    OpenAIChatClient,
    ToolSpec,
)
from pytest_budget.models.prompts import (
    PLANNER_SYSTEM,
    TOOL_AGENT_SYSTEM,
    actor_system,
    env_family,
    estimator_system,
    solver_prompt_digest,
    solver_system,
)
from pytest_budget.textscan import remove_tag_blocks
from pytest_budget.tokens import count_tokens
from pytest_budget.triage.domains import recognise_domain
from pytest_budget.triage.graders import extract_answer, parse_moves
from pytest_budget.triage.prompts import render_plan_prompt, render_resolve_banner
from pytest_budget.triage.types import Solution

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "ROLES",
    "TRUNCATED_FINISH_REASONS",
    "ChatModel",
    "LLMActor",
    "LLMAgent",
    "LLMEstimator",
    "LLMPlanner",
    "LLMSolver",
    "LLMToolAgent",
    "MessageFormat",
    "ModelSolution",
    "PlanText",
    "assistant_message",
    "detect_message_format",
    "env_token_cap",
    "extract_solver_answer",
    "make_llm_agent",
    "openai_messages_to_anthropic",
    "tool_spec_from_openai",
]

MessageFormat = Literal["openai", "anthropic"]

#: The roles an LLM agent can fill (``pytest_budget.roles.ROLE_METHODS``).
ROLES: tuple[str, ...] = (
    "planner", "solver", "estimator", "actor", "tool_agent", "online_actor",
)  # fmt: skip

#: ``max_tokens`` of one call per role when the settings give none.  The triage planner
#: and solver get 16,384: reasoning models spend thousands of tokens thinking before they
#: answer, and a lower cap cuts them off mid-thought (counted as truncated, never scored as
#: a measured cost); it is also the output limit of common non-reasoning models
#: (gpt-4o-mini).  Lower it with the ``max_tokens`` setting for models whose limit is lower.
DEFAULT_MAX_TOKENS: dict[str, int] = {
    "planner": 16_384,
    "solver": 16_384,
    "estimator": 1024,
    "actor": 1024,
    "tool_agent": 16384,  # CostBench's --max_tokens default (and the paper's stated cap)
}

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


class PlanText(str):
    """A planner's raw reply (a ``str``) with the provider's finish reason attached."""

    finish_reason: str | None

    def __new__(cls, text: str, *, finish_reason: str | None = None) -> PlanText:
        value = super().__new__(cls, text)
        value.finish_reason = finish_reason
        return value

    @property
    def truncated(self) -> bool:
        """The reply was cut at ``max_tokens`` (finish reason ``length`` or equivalent)."""
        return self.finish_reason in TRUNCATED_FINISH_REASONS


@dataclass(frozen=True)
class ModelSolution(Solution):
    """A :class:`~pytest_budget.triage.Solution` from a model, with where ``tokens`` came from.

    ``tokens`` is the output-token count the provider reported; when the server reported no
    usage it is the reference tokenizer's count of the text and ``tokens_reported`` is False.
    ``finish_reason`` is the provider's own; a reply cut at the cap has no ``answer``.
    """

    tokens_reported: bool = True
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason in TRUNCATED_FINISH_REASONS


# --------------------------------------------------------------------------- helpers


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


@functools.cache
def _env_caps() -> dict[str, int]:
    # Imported on first use: the environment modules pull in numpy and the simulators.
    from pytest_budget.awareness.search_env import SEARCH_PRESET
    from pytest_budget.awareness.sokoban_env import SOKOBAN_PRESETS

    return {
        "sokoban": max(preset.token_cap for preset in SOKOBAN_PRESETS.values()),
        "search": SEARCH_PRESET.token_cap,
    }


def env_token_cap(env: str) -> int | None:
    """The token budget of a whole rollout in ``env`` (None when it has no token budget).

    Used as a ceiling on one actor reply: a reply longer than the rollout's budget makes the
    rollout infeasible whatever happens next, so generating more is only spending.
    """
    return _env_caps().get(env_family(env))


_THINK_TAGS = ("think", "thinking", "reasoning")
_LEADING_NUMBER = re.compile(
    r"^[+-]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)(?:\s*/\s*[+-]?\d+(?:,\d{3})*)?(?!\w)"
)
_MOVE_WORD = re.compile(r"\b(up|down|left|right)\b", re.IGNORECASE)


def extract_solver_answer(text: str, domain: str | None) -> str | None:
    """The final answer of a solver reply, read for its domain (None when it states none).

    Reasoning blocks (``<think>`` etc.) are skipped, then
    :func:`~pytest_budget.triage.graders.extract_answer` finds the last ``<answer>`` tag,
    ``\\boxed{}`` or ``Answer:`` line.  For ``arith`` the value is the part after a last
    ``=`` and, when it starts with a number or fraction, that number (``"7/2 (3.5)"`` ->
    ``"7/2"``).  For ``sokoban`` an answer that is not a plain move list keeps its move words
    in order (``"1. Up 2. Left"`` -> ``"Up Left"``).  Graders judge the result.
    """
    answer = extract_answer(remove_tag_blocks(text, _THINK_TAGS, "\n"))
    if answer is None:
        return None
    if domain == "arith":
        value = answer.rsplit("=", 1)[-1].strip().strip("$").strip()
        match = _LEADING_NUMBER.match(value)
        if match:
            value = re.sub(r"\s+", "", match.group(0))
        return value or None
    if domain == "sokoban" and parse_moves(answer) is None:
        words = _MOVE_WORD.findall(answer)
        if words:
            return " ".join(word.capitalize() for word in words)
    return answer


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


# --------------------------------------------------------------------------- agents


class LLMAgent:
    """Base of the LLM agents: the model, the name, the per-call cap and the temperature.

    ``aclose()`` (or ``async with agent:``) closes the model when it can be closed.
    """

    role: ClassVar[str] = ""

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
            DEFAULT_MAX_TOKENS[self.role] if max_tokens is None else max_tokens,
            f"{self.role} max_tokens",
        )
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise ValueError(f"temperature must be a number, got {temperature!r}")
        self.temperature = float(temperature)

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


class LLMPlanner(LLMAgent):
    """Triage planner: sends the suite's planning prompt and returns the model's raw text."""

    role: ClassVar[str] = "planner"

    def messages(self, request: Any) -> list[dict[str, Any]]:
        prompt = getattr(request, "prompt", "")
        if not isinstance(prompt, str) or not prompt:
            prompt = render_plan_prompt(
                request.items, request.budget, variant=getattr(request, "variant", "A") or "A"
            )
        return [
            {"role": "system", "content": PLANNER_SYSTEM},
            {"role": "user", "content": prompt},
        ]

    async def plan(self, request: Any) -> PlanText:
        result = await self._complete(self.messages(request), self.max_tokens)
        return PlanText(result.text, finish_reason=result.raw_finish_reason)


class LLMSolver(LLMAgent):
    """Triage solver: one call per problem; output tokens as the provider reported them.

    ``max_tokens`` (a hard cap passed by the suite) is the call's cap, else the setting.  A
    re-solve (``problem.stated_tokens`` set) prepends the allocation banner
    (:func:`~pytest_budget.triage.prompts.render_resolve_banner`) to the problem and keeps
    the baseline run's API-level ``max_tokens`` (TRIAGE App. C.1): the allocation is stated,
    never enforced, so compliance (output tokens <= a_i) is the model's own doing.
    """

    role: ClassVar[str] = "solver"

    def messages(self, problem: Any, domain: str | None) -> list[dict[str, Any]]:
        text = str(problem.text).strip()
        stated = getattr(problem, "stated_tokens", None)
        if isinstance(stated, int) and not isinstance(stated, bool):
            text = f"{render_resolve_banner(stated)}\n\n{text}"
        return [
            {"role": "system", "content": solver_system(domain)},
            {"role": "user", "content": text},
        ]

    def cache_identity(self) -> dict[str, Any]:
        """What can change this solver's answers, for the Phase 0 cache key."""
        client = getattr(self.model, "client", self.model)
        base_url = getattr(client, "base_url", None)
        return {
            "provider": getattr(client, "provider", None),
            "model": getattr(client, "model", None),
            "base_url": base_url if isinstance(base_url, str) else None,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "prompt": solver_prompt_digest(),
        }

    def call_cap(self, problem: Any, max_tokens: int | None) -> int:
        # A stated allocation never changes the cap: the re-solve keeps the baseline's.
        return self.max_tokens if max_tokens is None else max_tokens

    async def solve(self, problem: Any, max_tokens: int | None = None) -> ModelSolution:
        domain = recognise_domain(problem)
        cap = self.call_cap(problem, max_tokens)
        if cap < 1:  # nothing may be written: no call
            return ModelSolution(text="", tokens=0, answer=None, tokens_reported=False)
        result = await self._complete(self.messages(problem, domain), cap)
        text = result.text
        reported = result.usage.reported
        tokens = result.usage.output if reported else count_tokens(text)
        finish = result.raw_finish_reason
        answer = None if finish in TRUNCATED_FINISH_REASONS else extract_solver_answer(text, domain)
        return ModelSolution(
            text=text,
            tokens=tokens,
            answer=answer,
            tokens_reported=reported,
            finish_reason=finish,
        )


class LLMEstimator(LLMAgent):
    """Awareness estimator: sends the probe's chat and returns the model's raw text.

    The chat is ``probe.messages`` (BAGEN's replay: the actor's system prompt, the actor's
    turns, then the estimation question; :mod:`pytest_budget.awareness.dialogue`).  A probe
    object without ``messages`` (a user's own) is sent as the estimator's system prompt and
    ``probe.text``.
    """

    role: ClassVar[str] = "estimator"

    def messages(self, probe: Any) -> list[dict[str, Any]]:
        chat = getattr(probe, "messages", None)
        if isinstance(chat, Sequence) and chat and all(isinstance(m, Mapping) for m in chat):
            return [dict(message) for message in chat]
        dimensions = tuple(getattr(probe, "dimensions", ("tokens",)))
        return [
            {"role": "system", "content": estimator_system(dimensions)},
            {"role": "user", "content": str(probe.text)},
        ]

    async def estimate(self, probe: Any) -> str:
        result = await self._complete(self.messages(probe), self.max_tokens)
        return result.text


class LLMActor(LLMAgent):
    """Awareness actor: one call per turn on the observation's self-contained prompt.

    Returns ``{"text": reply, "usage": {"tokens": input + output, "input_tokens": input,
    "output_tokens": output}}`` with the provider's counts (the split lets the search
    environment take re-sent history out exactly), or ``{"text": reply}`` when it reported
    none (the environment then counts).
    """

    role: ClassVar[str] = "actor"

    def messages(self, observation: Any) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": actor_system(str(observation.env))},
            {"role": "user", "content": str(observation.text)},
        ]

    def call_cap(self, observation: Any) -> int:
        cap = env_token_cap(str(observation.env))
        return self.max_tokens if cap is None else min(self.max_tokens, cap)

    async def act(self, observation: Any) -> dict[str, Any]:
        result = await self._complete(self.messages(observation), self.call_cap(observation))
        reply: dict[str, Any] = {"text": result.text}
        if result.usage.reported:
            usage = result.usage
            reply["usage"] = {
                "tokens": usage.total,
                "input_tokens": usage.input,
                "output_tokens": usage.output,
            }
        return reply


class LLMToolAgent(LLMAgent):
    """Planning tool agent: the suite's conversation and tools, called with native tools.

    ``message_format`` is the wire format of the model behind the :class:`ChatModel`
    (detected from the client when not given): for ``"anthropic"`` the OpenAI-format history
    is converted with :func:`openai_messages_to_anthropic`; the tools are always given as
    :class:`ToolSpec` (each client maps them).  Returns an OpenAI-style assistant message
    (:func:`assistant_message`).
    """

    role: ClassVar[str] = "tool_agent"

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

    def messages(self, observation: Any) -> list[dict[str, Any]]:
        history: list[dict[str, Any]] = [dict(m) for m in observation.messages]
        if TOOL_AGENT_SYSTEM is not None:
            history.insert(0, {"role": "system", "content": TOOL_AGENT_SYSTEM})
        if self.message_format == "anthropic":
            return openai_messages_to_anthropic(history)
        return history

    @staticmethod
    def tools(observation: Any) -> list[ToolSpec]:
        specs = (
            tool_spec_from_openai(spec)
            for spec in observation.tools or ()
            if isinstance(spec, Mapping)
        )
        return [spec for spec in specs if spec is not None]

    async def act(self, observation: Any) -> dict[str, Any]:
        tools = self.tools(observation)
        result = await self._complete(self.messages(observation), self.max_tokens, tools or None)
        return assistant_message(result)


_CLASSES: dict[str, type[LLMAgent]] = {
    "planner": LLMPlanner,
    "solver": LLMSolver,
    "estimator": LLMEstimator,
    "actor": LLMActor,
    "tool_agent": LLMToolAgent,
}


def _role_max_tokens(value: object, role: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get(role)
        if value is None:
            return None
    return _positive_int(value, f"settings max_tokens for {role}")


def make_llm_agent(
    role: str,
    model: ChatModel,
    *,
    name: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> LLMAgent:
    """The LLM agent filling ``role`` on ``model``.

    ``settings`` keys read (others are ignored): ``max_tokens`` (an int for every role, or a
    mapping role -> int), ``temperature`` (default 0) and, for the tool agent,
    ``message_format`` (``"openai"``/``"anthropic"``; detected from the model when absent).
    """
    if role == "online_actor":  # the awareness suite's online mode (its own module)
        from pytest_budget.awareness.online.llm import LLMOnlineActor

        settings = settings or {}
        temperature = settings.get("temperature")
        return LLMOnlineActor(
            model,
            name=name,
            max_tokens=_role_max_tokens(settings.get("max_tokens"), "actor"),
            temperature=0.0 if temperature is None else temperature,
        )
    try:
        cls = _CLASSES[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}") from None
    settings = settings or {}
    max_tokens = _role_max_tokens(settings.get("max_tokens"), role)
    temperature = settings.get("temperature")
    temperature = 0.0 if temperature is None else temperature
    if cls is LLMToolAgent:
        return LLMToolAgent(
            model,
            name=name,
            max_tokens=max_tokens,
            temperature=temperature,
            message_format=settings.get("message_format"),
        )
    return cls(model, name=name, max_tokens=max_tokens, temperature=temperature)
