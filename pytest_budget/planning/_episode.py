"""The multi-turn tool-calling loop of the planning suite: CostBench's agent protocol.

Each turn the agent is handed a :class:`ToolAgentObservation` - an OpenAI Chat Completions
``messages`` list (system prompt, the user's request, then every assistant and tool message so
far) and the tools of the task in registry order, in OpenAI function format - and answers with
an assistant message: a dict ``{"content": str | None, "tool_calls": [{"id", "type":
"function", "function": {"name", "arguments": "<json>"}}]}`` (a full chat-completion body, an
object with ``text``/``content`` and ``tool_calls`` such as the model client's
``ChatResult``, or plain text are accepted too).

Per turn, as CostBench's run.py does it (fact sheet §4.3; a *step* is one turn):

1. the turn counts (at most :data:`MAX_TOOL_STEPS` = 20 turns, every turn counted);
2. a reply whose first ``<answer>...</answer>`` holds a candidate id with exactly 5 digits
   ends the episode; tool calls in that message are not run (CostBench's evaluation still
   counts the first one as a valid step with cost 0, so it is recorded with
   ``executed=False``);
3. otherwise only the *first* tool call runs (a ban armed for this turn first); every extra
   call gets an ``[ERROR]`` tool message asking for one tool per turn;
4. a turn without tool calls ends the episode, answer or not.  A wrong or malformed answer
   gets no feedback (``answer_feedback=True``, our addition, sends an ``[ERROR]`` user
   message instead and goes on; off by default).

An unreadable reply ends the episode like a turn without tool calls (noted); an agent that
raises ends it with ``error`` set.  The final answer is read with CostBench's
``get_agent_final_answer``: the last assistant message whose content mentions ``<answer>`` or
``Candidate`` (stopping at one with no content).

Blocking events come from :class:`~pytest_budget.planning._blocking.Blocker`.  A preference
change appends a new user turn; cost changes and tool removals are silent: the next
observation simply carries the new tool list.

**Reference channel.**  An agent that sets ``wants_reference = True`` declares itself a
reference agent and gets ``observation.reference``, a :class:`ReferenceView` with the query's
exact preferences, the held types, the tool specs, costs and bans, and - only if it also sets
``wants_optimal_next = True`` - the next call of the current ground-truth path.  For every
other agent ``reference`` is ``None``, and the view never appears in ``messages``, so a model
behind an HTTP adapter never sees it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget._core.offline import offline, offline_submit, settled
from pytest_budget._core.roles import AgentError, InvalidOutput, call_role
from pytest_budget._core.samples import shown
from pytest_budget.planning._blocking import MAX_TOOL_STEPS, Blocker, check_mode
from pytest_budget.planning._env import TravelEnv, expected_answer
from pytest_budget.planning._episode_records import EpisodeRecord, Query, ToolCallRecord
from pytest_budget.planning._ids import parse_answer
from pytest_budget.planning._prompts import example_paths, system_prompt, user_prompt
from pytest_budget.planning._tool_specs import copy_json, tool_list_for
from pytest_budget.planning._tools import Tool, task_label

__all__ = [
    "ANSWER_CALL_NAME", "ONE_TOOL_MESSAGE", "ParsedCall", "ParsedReply", "ReferenceView",
    "ToolAgentObservation", "example_paths", "final_answer", "parse_reply", "read_messages",
    "read_tools", "run_episode", "system_prompt", "user_prompt"
]  # fmt: skip

#: ``ToolCallRecord.name`` of a rejected answer (no tool name can contain ``<``).
ANSWER_CALL_NAME = "<answer>"
#: The tool message an extra call of a turn gets (only the first call of a turn runs).
ONE_TOOL_MESSAGE = (
    "[ERROR] Only one tool can be called per turn; this call was not executed. "
    "Call one tool at a time."
)


@dataclass(frozen=True)
class ReferenceView:
    """What the loop tells a reference agent beyond the conversation (see the module doc).

    ``query`` is the query in force (after any preference change); ``held`` the types held
    now; ``tools`` the listed tools (banned ones included, see ``banned``); ``previous_output``
    the output type of the last successful call since the segment began (None at its start);
    ``optimal_next`` the first call of the current optimal plan, only for agents that set
    ``wants_optimal_next``.
    """

    query: Query
    goal: str
    held: frozenset[str]
    tools: tuple[Tool, ...]
    costs: Mapping[str, float]
    banned: frozenset[str]
    segment: int
    previous_output: str | None
    optimal_next: str | None = None


@dataclass(frozen=True)
class ToolAgentObservation:
    """One turn's input for a tool agent.

    ``messages`` is an OpenAI Chat Completions message list and ``tools`` the current tool
    list in OpenAI function format; both are fresh copies the agent may keep or modify.
    ``step`` counts the tool steps already used, out of ``max_steps``; ``turn`` counts from 1.
    """

    query_id: str
    task: str
    refinement_level: int
    goal: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    step: int
    max_steps: int
    turn: int
    reference: ReferenceView | None = None


class _TurnObservation(ToolAgentObservation):
    """The loop's observation: ``messages`` and ``tools`` are copied from the turn's snapshot
    the first time they are read (then kept), so an agent that never reads them costs
    nothing, and what it reads is the same fresh copy an eager copy would have given."""

    def __init__(
        self,
        *,
        messages: Sequence[dict[str, Any]],
        tools: Callable[[], Sequence[dict[str, Any]]],
        **fields: Any,
    ) -> None:
        super().__init__(messages=[], tools=[], **fields)
        state = self.__dict__
        del state["messages"], state["tools"]
        state["_sources"] = {"messages": messages, "tools": tools}

    def __getattr__(self, name: str) -> Any:
        # Only called for what is not set yet: the first read of messages or tools.
        sources = self.__dict__.get("_sources")
        if sources is None or name not in sources:
            raise AttributeError(name)
        if name == "messages":
            value = [_copy_message(message) for message in sources[name]]
        else:
            value = [copy_json(spec) for spec in sources[name]()]
        return self.__dict__.setdefault(name, value)  # two threads reading: one copy wins


def read_messages(observation: ToolAgentObservation) -> Sequence[Mapping[str, Any]]:
    """The turn's messages for a reader that never modifies them (the reference agents):
    the loop's own snapshot when the agent has not read ``messages`` yet, so a turn costs
    no copy of the whole conversation; otherwise ``observation.messages``."""
    sources = observation.__dict__.get("_sources")
    if "messages" not in observation.__dict__ and sources is not None:
        return sources["messages"]  # type: ignore[no-any-return]
    return observation.messages


def read_tools(observation: ToolAgentObservation) -> Sequence[Mapping[str, Any]]:
    """The turn's tool list for a reader that never modifies it (the LLM tool agent): the
    loop's shared, memoized list (:func:`~pytest_budget.planning._tool_specs.tool_list_for`,
    a tuple, the same object every turn the list is unchanged) when the agent has not read
    ``tools`` yet, so a turn costs no copy of every tool; otherwise ``observation.tools``."""
    state = getattr(observation, "__dict__", {})  # any object with ``tools`` will do
    sources = state.get("_sources")
    if "tools" not in state and sources is not None:
        return sources["tools"]()  # type: ignore[no-any-return]
    return observation.tools


def _copy_message(message: dict[str, Any]) -> dict[str, Any]:
    # The loop builds every message: only an assistant's tool_calls nest, every other
    # value is a string or None, so a flat copy is a deep one.
    return copy_json(message) if "tool_calls" in message else dict(message)


@dataclass(frozen=True)
class ParsedCall:
    """One tool call of a reply, normalised for the environment and the transcript."""

    call_id: str | None
    name: str  # "" when the call carried no usable name
    arguments: str  # the arguments as JSON text (as sent when they were text)
    payload: Any  # what the environment is given


@dataclass(frozen=True)
class ParsedReply:
    """A reply normalised: its text, its tool calls, the answer, or why it is unreadable."""

    content: str | None
    calls: tuple[ParsedCall, ...] = ()
    answer: str | None = None  # the 5 digits of a well-formed <answer>, if any
    problem: str | None = None


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # not JSON; a huge integer, deep nesting, a str() that raises
        try:
            return repr(value)
        except Exception:  # a repr that raises or recurses: the bounded rendering
            return shown(value)


def _parse_call(entry: Any) -> ParsedCall:
    if isinstance(entry, Mapping):
        function = entry.get("function")
        source: Mapping[str, Any] = function if isinstance(function, Mapping) else entry
        name = source.get("name")
        arguments = source.get("arguments", "{}")
        call_id = entry.get("id")
    elif hasattr(entry, "name"):  # e.g. the model client's ToolCall
        name = getattr(entry, "name", None)
        arguments = getattr(entry, "raw_arguments", getattr(entry, "arguments", "{}"))
        call_id = getattr(entry, "id", None)
    else:
        return ParsedCall(None, "", _json_text(entry), entry)
    if arguments is None:
        arguments = "{}"
    return ParsedCall(
        call_id if isinstance(call_id, str) and call_id else None,
        name if isinstance(name, str) else "",
        _json_text(arguments),
        {"name": name, "arguments": arguments},
    )


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # content parts: [{"type": "text", "text": ...}]
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        if all(isinstance(p, str) for p in parts) and len(parts) == len(content):
            return "".join(p for p in parts if isinstance(p, str))
    raise TypeError(f"content of type {type(content).__name__} is not text")


def parse_reply(reply: Any) -> ParsedReply:
    """Normalise whatever an agent returned (see the module doc)."""
    dump = getattr(reply, "model_dump", None)
    if not isinstance(reply, str | Mapping) and callable(dump):
        # An SDK object (pydantic): its dict form has the OpenAI wire layout.
        try:
            reply = dump()
        except Exception as exc:  # a broken object is a bad reply, not a crash
            return ParsedReply(None, problem=f"model_dump() failed: {type(exc).__name__}")
    if isinstance(reply, str):
        content: str | None = reply
        raw_calls: Any = ()
    elif isinstance(reply, Mapping):
        choices = reply.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            message = choices[0].get("message")
            reply = message if isinstance(message, Mapping) else {}
        try:
            content = _content_text(reply.get("content", reply.get("text")))
        except TypeError as exc:
            return ParsedReply(None, problem=str(exc))
        raw_calls = reply.get("tool_calls") or ()
    elif hasattr(reply, "tool_calls"):
        try:
            content = _content_text(getattr(reply, "content", getattr(reply, "text", None)))
        except TypeError as exc:
            return ParsedReply(None, problem=str(exc))
        raw_calls = reply.tool_calls or ()
    else:
        return ParsedReply(
            None,
            problem=f"a reply of type {type(reply).__name__} is neither text nor a message",
        )
    if isinstance(raw_calls, str | bytes) or not isinstance(raw_calls, Sequence):
        return ParsedReply(content, problem="tool_calls must be a list")
    return ParsedReply(
        content,
        tuple(_parse_call(entry) for entry in raw_calls),
        parse_answer(content),
    )


def final_answer(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """CostBench's ``get_agent_final_answer``: scan the assistant messages from the last one
    back; one without content gives ``None``; the first whose content mentions ``<answer>``
    or ``Candidate`` is parsed (:func:`~pytest_budget.planning._ids.parse_answer`)."""
    for message in reversed(messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, str) or not content:
            return None
        if "<answer>" in content or "Candidate" in content:
            return parse_answer(content)
    return None


@dataclass
class _Loop:
    """Mutable state of one episode (kept off the public observation)."""

    env: TravelEnv
    blocker: Blocker
    max_steps: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    step: int = 0  # turns so far
    tool_turns: int = 0
    succeeded: set[str] = field(default_factory=set)  # tools that succeeded this segment
    previous_output: str | None = None
    steps_exhausted: bool = False  # stopped at max_steps
    error: str | None = None  # the agent's, which ended the episode
    # A block's re-solve, on the offline thread while the next call is on the wire.
    job: asyncio.Future[None] | concurrent.futures.Future[None] | None = None

    async def settle(self) -> None:
        """Wait (the event loop serving the wire meanwhile) for the re-solve, if any."""
        job, self.job = self.job, None
        if job is not None:
            await settled(job)

    def observe(self, agent: object) -> ToolAgentObservation:
        env = self.env
        view = None
        if getattr(agent, "wants_reference", False) is True:
            blocker = self.blocker
            optimal_next = None
            if getattr(agent, "wants_optimal_next", False) is True and not env.done:
                if env.reachable():
                    optimal_next = env.optimal_path(env.state)[0][0]
            view = ReferenceView(
                query=blocker.query,
                goal=env.goal,
                held=env.state,
                tools=tuple(env.tool_specs),
                costs=dict(env.costs),
                banned=env.banned,
                segment=blocker.segment,
                previous_output=self.previous_output,
                optimal_next=optimal_next,
            )
        # The messages already sent are never edited (only appended to), so the turn's
        # snapshot is a tuple of them; the tool list is shared until the agent reads it.
        return _TurnObservation(
            query_id=env.query_id,
            task=env.task,
            refinement_level=env.refinement_level,
            goal=env.goal,
            messages=tuple(self.messages),
            tools=functools.partial(tool_list_for, *env.tool_source()),
            step=self.step,
            max_steps=self.max_steps,
            turn=self.step + 1,
            reference=view,
        )

    def assistant(self, parsed: ParsedReply) -> list[str]:
        """Append the assistant message; the tool-call ids (unique within the message)."""
        ids = [c.call_id or f"call_{self.step}_{i + 1}" for i, c in enumerate(parsed.calls)]
        seen: set[str] = set()
        for i, call_id in enumerate(ids):
            if call_id in seen:
                ids[i] = f"{call_id}_{i}"
            seen.add(ids[i])
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call_id, call in zip(ids, parsed.calls, strict=True)
            ]
        self.messages.append(message)
        return ids

    def record_unexecuted(self, call: ParsedCall) -> None:
        """The first call of the answer message: never run, but a valid 0-cost step in
        CostBench's evaluation."""
        self.tool_turns += 1
        self.calls.append(
            ToolCallRecord(
                step=self.step,
                name=call.name,
                arguments=call.arguments,
                ok=True,
                cost=0.0,
                segment=self.blocker.segment,
                after_goal=self.env.done,
                executed=False,
            )
        )

    def run_first(self, ids: list[str], calls: Sequence[ParsedCall]) -> None:
        """Run the first call of the turn; every extra call gets :data:`ONE_TOOL_MESSAGE`."""
        env, step = self.env, self.step
        self.tool_turns += 1
        call = calls[0]
        self.blocker.before_call(step, call.name)
        segment = self.blocker.segment
        after_goal = env.done
        repeated = call.name in self.succeeded
        result = env.step_detailed(call.payload)
        self.calls.append(
            ToolCallRecord(
                step=step,
                name=call.name,
                arguments=call.arguments,
                ok=result.ok,
                cost=result.cost,
                segment=segment,
                error_kind=result.error_kind,
                output_type=result.output_type,
                repeated=repeated,
                after_goal=after_goal,
            )
        )
        self._tool_message(ids[0], result.observation)
        for call_id in ids[1:]:
            self._tool_message(call_id, ONE_TOOL_MESSAGE)
        if result.ok:
            self.succeeded.add(call.name)
            self.previous_output = result.output_type
        event = self.blocker.after_call(step, result.ok)
        if event is not None:
            self.succeeded = set()
            if event.mode == "preference_change":
                self.previous_output = None  # the state restarts from Decide
            if event.user_message is not None:
                self.messages.append({"role": "user", "content": event.user_message})
            if self.blocker.unsettled:  # first needed by the next turn's tool call
                self.job = offline_submit(self.blocker.settle)

    def out_of_steps(self) -> bool:
        """Whether the episode stops at the turn limit (noted)."""
        if self.step >= self.max_steps:
            self.steps_exhausted = True
            self.notes.append(f"stopped at the {self.max_steps}-turn limit")
        return self.steps_exhausted

    def unreadable(self, why: str) -> None:
        """Like any reply without a tool call, an unreadable one ends the episode."""
        self.messages.append({"role": "assistant", "content": None})
        self.notes.append(f"turn {self.step}: unreadable reply ({why}); ended")

    def read(self, reply: Any) -> ParsedReply | None:
        """The reply read; None (the episode ends) when it cannot be."""
        try:
            parsed = parse_reply(reply)
        except Exception as exc:  # a reply object whose attributes raise
            parsed = ParsedReply(None, problem=f"reading it raised {type(exc).__name__}")
        if parsed.problem is None:
            return parsed
        self.unreadable(parsed.problem)
        return None

    def ask_for_answer(self, task: str) -> None:
        """``answer_feedback``: a reply with no call and no answer gets an error message."""
        self.messages.append(
            {
                "role": "user",
                "content": "[ERROR] No tool call and no well-formed answer: call a tool, "
                f"or reply <answer> <{task_label(task)}Candidate{{Candidate_ID}}> "
                "</answer> with the 5-digit id.",
            }
        )
        self.notes.append(f"turn {self.step}: no call and no answer; feedback sent")

    def record(self, query: Query, level: int, mode: str, block_count: int) -> EpisodeRecord:
        """The finished episode's record (the Blocker closes its last segment first)."""
        blocker = self.blocker
        blocker.finish(self.step)
        final = blocker.query
        return EpisodeRecord(
            query_id=query.query_id,
            task=query.task,
            refinement_level=level,
            mode=mode,
            block_count=block_count,
            calls=tuple(self.calls),
            segments=tuple(blocker.segments),
            answer=final_answer(self.messages),
            expected_answer=expected_answer(
                final.task, final.preferences, final.time_info, final.location_preference
            ),
            reached_goal=self.env.done,
            steps_exhausted=self.steps_exhausted,
            blocks_applied=blocker.blocks_applied,
            blocks_dropped=blocker.blocks_dropped,
            error=self.error,
            notes=(*blocker.notes, *self.notes),
            turns=self.step,
            tool_turns=self.tool_turns,
            block_steps=tuple(event.step for event in blocker.events),
        )

    def _tool_message(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


def _start(
    query: Query, level: int, mode: str, block_count: int, env: TravelEnv | None,
    *, seed: int, ban_longest: bool, max_steps: int, pool: Sequence[Query],
) -> _Loop:  # fmt: skip
    """The episode's loop before its first turn: environment, Blocker, prompts."""
    env = env or TravelEnv(query.task, level, query.query_id, ban_longest=ban_longest, seed=seed)
    blocker = Blocker(
        env, query, mode, block_count,
        seed=seed, max_steps=max_steps, pool=pool, defer_solves=True,
    )  # fmt: skip
    loop = _Loop(env, blocker, max_steps)
    loop.messages = [
        {"role": "system", "content": system_prompt(query.task, level, max_steps)},
        {"role": "user", "content": user_prompt(query)},
    ]
    return loop


async def run_episode(
    query: Query,
    refinement_level: int,
    mode: str,
    block_count: int,
    agent: object,
    *,
    seed: int = 42,
    limiter: anyio.CapacityLimiter | None = None,
    ban_longest: bool = True,
    max_steps: int = MAX_TOOL_STEPS,
    answer_feedback: bool = False,
    env: TravelEnv | None = None,
    pool: Sequence[Query] = (),
) -> EpisodeRecord:
    """Run ``agent`` on ``query`` at ``refinement_level`` under ``mode`` with ``block_count``
    blocks (``"static"`` with 0, or a blocking mode with 1..3) and record everything.

    ``seed`` is CostBench's global seed (costs and block parameters); ``limiter`` bounds
    concurrent agent calls; ``ban_longest`` (on, as in every CostBench paper script) drops
    the single tool that does the whole task; ``max_steps`` caps the turns;
    ``answer_feedback`` (off: CostBench gives none) answers a reply without a well-formed
    ``<answer>`` and without tool calls with an ``[ERROR]`` user message and goes on, instead
    of ending the episode; ``env`` is a prepared, fresh environment for the same query and
    level (e.g. with hand-set costs) used instead of building one; ``pool`` is the query set
    a preference change draws its source query from (CostBench: the whole query file).
    """
    check_mode(mode, block_count)
    if env is not None and (env.task, env.refinement_level) != (query.task, refinement_level):
        raise ValueError("env does not match the query's task and refinement level")
    # Environment and ground truth built when the event loop idles (it serves calls first).
    start = functools.partial(
        _start, query, refinement_level, mode, block_count, env,
        seed=seed, ban_longest=ban_longest, max_steps=max_steps, pool=pool,
    )  # fmt: skip
    loop = await offline(start)
    if limiter is not None and getattr(agent, "limits_own_calls", False) is True:
        # Its model bounds its live calls (the run's runtime, ranked like this limiter): a
        # slot held for the whole turn would sit idle while the request is built, and while
        # it waits for another cell's identical request to be answered, then replays it.
        from pytest_budget.models._loop import turns_limiter

        limiter = turns_limiter(limiter)
    while not loop.out_of_steps():
        observation = loop.observe(agent)
        loop.step += 1
        try:
            reply = await call_role(agent, "tool_agent", observation, limiter=limiter)
        except InvalidOutput as exc:  # None, a number, a dict of no known shape, megabytes
            loop.unreadable(f"the agent {exc.reason}")
            break
        except AgentError as exc:
            loop.error = exc.reason
            break
        await loop.settle()
        parsed = loop.read(reply)
        if parsed is None:
            break
        ids = loop.assistant(parsed)
        if parsed.answer is not None:
            if parsed.calls:
                loop.record_unexecuted(parsed.calls[0])
                loop.notes.append(f"turn {loop.step}: tool calls beside the answer not run")
            break
        if parsed.calls:
            loop.run_first(ids, parsed.calls)
            continue
        if answer_feedback and loop.step < max_steps:
            loop.ask_for_answer(query.task)
            continue
        loop.notes.append(f"turn {loop.step}: no tool call; episode ended")
        break
    await loop.settle()
    return await offline(loop.record, query, refinement_level, mode, block_count)
