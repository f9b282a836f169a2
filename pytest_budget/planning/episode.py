"""The multi-turn tool-calling loop of the planning suite (CostBench §3.2).

Each turn the agent is handed a :class:`ToolAgentObservation` - an OpenAI Chat Completions
``messages`` list (system prompt, the user's request, then every assistant and tool message so
far) and the current tool list in OpenAI function format - and answers with an assistant
message: a dict ``{"content": str | None, "tool_calls": [{"id", "type": "function",
"function": {"name", "arguments": "<json>"}}]}`` (a full chat-completion body, an object with
``text``/``content`` and ``tool_calls`` such as the model client's ``ChatResult``, or plain text
are accepted too).  Every tool call is one step and the calls of a turn run in order.  The text
inside the last ``<answer>...</answer>`` of the content is the final answer.

The episode ends at an accepted answer (after the calls of that turn), at a turn with neither
tool calls nor an answer, at the step limit (20), or when the agent raises (``error`` then holds
the one-line reason).  Nothing the agent returns can crash the loop: a bad call gets an
``[ERROR]`` tool message and an error kind from ``CALL_ERROR_KINDS``; an unreadable reply costs
a step, is recorded as an invalid call (``bad_arguments``, empty name) and answered with an
``[ERROR]`` user message.  An answer is accepted when it is a final (goal-type) id a tool
returned since the requirements last changed (:meth:`TravelEnv.answer_problem`; a returned id
for the wrong preferences is accepted and scored as a user-intent miss); any other answer (a
malformed id, an id of another type, an id no tool returned) is rejected the same way as an
unreadable reply: it costs a step, is recorded as an invalid call (``bad_id``, name
:data:`ANSWER_CALL_NAME`) and gets an ``[ERROR]`` user message, and the episode goes on.  A
bad answer arriving with no step left ends the episode at the step limit, unrecorded.

Blocking events come from :class:`~pytest_budget.planning.blocking.Blocker`.  A preference
change appends a new user turn; calls later in the same turn are not run (they get an
``[ERROR] Not run`` tool message and are not steps).  Cost changes and tool removals are silent:
the next observation simply carries the new tool list.

**Reference channel.**  An agent that sets ``wants_reference = True`` declares itself a
reference agent and gets ``observation.reference``, a :class:`ReferenceView` with the query's
exact preferences (the request text is deliberately vague), the held types, the tool specs,
costs and bans, and - only if it also sets ``wants_optimal_next = True`` - the next call of the
current optimal plan.  For every other agent ``reference`` is ``None``, and the view never
appears in ``messages``, so a model behind an HTTP adapter never sees it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget.planning.blocking import MAX_TOOL_STEPS, Blocker, check_mode
from pytest_budget.planning.env import TravelEnv, expected_answer
from pytest_budget.planning.records import EpisodeRecord, Query, ToolCallRecord
from pytest_budget.planning.tools import Tool, goal_type
from pytest_budget.roles import AgentError, InvalidOutput, call_role
from pytest_budget.textscan import last_tag_content

__all__ = [
    "ANSWER_CALL_NAME",
    "ParsedCall",
    "ParsedReply",
    "ReferenceView",
    "ToolAgentObservation",
    "parse_reply",
    "run_episode",
    "system_prompt",
    "user_prompt",
]

#: ``ToolCallRecord.name`` of a rejected answer (no tool name can contain ``<``).
ANSWER_CALL_NAME = "<answer>"


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
    answer: str | None = None
    problem: str | None = None


def system_prompt(task: str, max_steps: int = MAX_TOOL_STEPS) -> str:
    """The system message (our own wording of CostBench's setting)."""
    goal = goal_type(task)
    location = (
        ""
        if task == "location"
        else " and the location the trip is about (pass it as LocationPreference)"
    )
    return (
        f"You are a travel-planning assistant working for a user through tools. Your job is "
        f"to obtain the user's final {task} choice: a result of type {goal}.\n\n"
        "How the tools work:\n"
        "- Every tool has a price, written as 'Cost: X' in its description. Each call you "
        "make is charged that price. Prices differ from tool to tool.\n"
        "- A tool takes typed inputs and returns one typed output identified by an id such as "
        f"'{goal}-1a2b3c4d'. Pass ids exactly as a tool returned them. An output, once "
        "obtained, stays available for the rest of the conversation.\n"
        "- Atomic tools do one step of the workflow; composite tools run several atomic steps "
        "in a single call. A composite's price may be above or below the sum of its parts.\n"
        f"- From the start you hold the user's four {task} preferences (pick the matching "
        f"allowed values from the user's words), the travel time (pass it as TimeInfo)"
        f"{location}.\n\n"
        f"Your objective: reach {goal} for the smallest possible total cost. Before calling "
        "anything, compare the different sequences of tools that lead to the goal and their "
        "total cost; re-plan whenever something changes. Avoid calls that are not needed. "
        f"You may make at most {max_steps} tool calls.\n\n"
        f"When you hold the final {goal} id, reply with <answer>THE_ID</answer>."
    )


def user_prompt(query: Query) -> str:
    """The first user message: the request plus the exact free-text values the tools take."""
    lines = [query.text.strip(), "", f"Travel time (TimeInfo): {query.time_info}"]
    if query.task != "location" and query.location_preference is not None:
        lines.append(f"Location (LocationPreference): {query.location_preference}")
    return "\n".join(lines)


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


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
    # As re.findall(r"<answer>\s*(.*?)\s*</answer>", DOTALL | IGNORECASE), in linear time.
    answer = last_tag_content(content or "", "<answer>", "</answer>")
    return ParsedReply(
        content,
        tuple(_parse_call(entry) for entry in raw_calls),
        None if answer is None else answer.strip(),
    )


@dataclass
class _Loop:
    """Mutable state of one episode (kept off the public observation)."""

    env: TravelEnv
    blocker: Blocker
    max_steps: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    step: int = 0
    succeeded: set[str] = field(default_factory=set)  # tools that succeeded this segment
    previous_output: str | None = None

    def observe(self, agent: object, turn: int) -> ToolAgentObservation:
        env, blocker = self.env, self.blocker
        view = None
        if getattr(agent, "wants_reference", False) is True:
            optimal_next = None
            if getattr(agent, "wants_optimal_next", False) is True and not env.done:
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
        return ToolAgentObservation(
            query_id=env.query_id,
            task=env.task,
            refinement_level=env.refinement_level,
            goal=env.goal,
            messages=copy.deepcopy(self.messages),
            tools=env.tools,
            step=self.step,
            max_steps=self.max_steps,
            turn=turn,
            reference=view,
        )

    def unreadable(self, problem: str) -> None:
        self._invalid_step(
            "",
            "",
            "bad_arguments",
            f"unreadable reply ({problem})",
            f"[ERROR] Your last reply could not be read: {problem}. Reply with tool calls, "
            "or with <answer>THE_ID</answer> when you are done.",
        )

    def bad_answer(self, answer: str, problem: str) -> None:
        """An ``<answer>`` that is not a final id a tool returned: an invalid step."""
        self._invalid_step(
            ANSWER_CALL_NAME,
            json.dumps({"answer": answer}, ensure_ascii=False),
            "bad_id",
            f"answer {answer!r} rejected",
            f"{problem} Continue with tool calls, or answer with the {self.env.goal} id a "
            "tool returned.",
        )

    def _invalid_step(
        self, name: str, arguments: str, kind: str, note: str, observation: str
    ) -> None:
        # Not a tool call, but an invalid action: it costs a step (so an agent cannot loop
        # forever) and counts as an invalid call.
        self.step += 1
        self.blocker.before_call(self.step, None)
        self.calls.append(
            ToolCallRecord(
                step=self.step,
                name=name,
                arguments=arguments,
                ok=False,
                cost=0.0,
                segment=self.blocker.segment,
                error_kind=kind,
                after_goal=self.env.done,
            )
        )
        self.notes.append(f"step {self.step}: {note}")
        self.messages.append({"role": "user", "content": observation})
        message = self._after(self.step, False)
        if message is not None:
            self.messages.append({"role": "user", "content": message})

    def run_turn(self, parsed: ParsedReply) -> None:
        ids = [c.call_id or f"call_{self.step + i + 1}" for i, c in enumerate(parsed.calls)]
        seen: set[str] = set()
        for i, call_id in enumerate(ids):  # ids must be unique within the message
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
        pending_user: str | None = None
        for call_id, call in zip(ids, parsed.calls, strict=True):
            if pending_user is not None or self.step >= self.max_steps:
                why = (
                    "the user changed the requirements before this call (see the next message)"
                    if pending_user is not None
                    else f"the {self.max_steps}-call limit was reached"
                )
                self._tool_message(call_id, f"[ERROR] Not run: {why}.")
                self.notes.append(f"call {call.name or '(unnamed)'} not run: {why}")
                continue
            pending_user = self._call(call_id, call) or pending_user
        if pending_user is not None:
            self.messages.append({"role": "user", "content": pending_user})

    def _call(self, call_id: str, call: ParsedCall) -> str | None:
        env = self.env
        self.step += 1
        step = self.step
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
        self._tool_message(call_id, result.observation)
        if result.ok:
            self.succeeded.add(call.name)
            self.previous_output = result.output_type
        return self._after(step, result.ok)

    def _after(self, step: int, ok: bool) -> str | None:
        event = self.blocker.after_call(step, ok)
        if event is None:
            return None
        self.succeeded = set()
        self.previous_output = None
        return event.user_message

    def _tool_message(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


async def run_episode(
    query: Query,
    refinement_level: int,
    mode: str,
    block_count: int,
    agent: object,
    *,
    seed: int = 42,
    limiter: anyio.CapacityLimiter | None = None,
    ban_longest: bool = False,
    max_steps: int = MAX_TOOL_STEPS,
    env: TravelEnv | None = None,
) -> EpisodeRecord:
    """Run ``agent`` on ``query`` at ``refinement_level`` under ``mode`` with ``block_count``
    blocks (``"static"`` with 0, or a blocking mode with 1..3) and record everything.

    ``seed`` is CostBench's global seed (costs and block parameters); ``limiter`` bounds
    concurrent agent calls; ``ban_longest`` drops the single tool that does the whole task;
    ``env`` is a prepared, fresh environment for the same query and level (e.g. with hand-set
    costs) used instead of building one.
    """
    check_mode(mode, block_count)
    if env is not None and (env.task, env.refinement_level) != (query.task, refinement_level):
        raise ValueError("env does not match the query's task and refinement level")
    env = env or TravelEnv(
        query.task, refinement_level, query.query_id, ban_longest=ban_longest, seed=seed
    )
    blocker = Blocker(env, query, mode, block_count, seed=seed, max_steps=max_steps)
    loop = _Loop(env, blocker, max_steps)
    loop.messages = [
        {"role": "system", "content": system_prompt(query.task, max_steps)},
        {"role": "user", "content": user_prompt(query)},
    ]
    answer: str | None = None
    error: str | None = None
    steps_exhausted = False
    turn = 0
    while True:
        if loop.step >= max_steps:
            steps_exhausted = True
            loop.notes.append(f"stopped at the {max_steps}-step limit")
            break
        turn += 1
        try:
            reply = await call_role(agent, "tool_agent", loop.observe(agent, turn), limiter=limiter)
        except InvalidOutput as exc:  # None, a number, a dict of no known shape, megabytes
            loop.unreadable(f"the agent {exc.reason}")
            continue
        except AgentError as exc:
            error = exc.reason
            break
        try:
            parsed = parse_reply(reply)
        except Exception as exc:  # a reply object whose attributes raise
            parsed = ParsedReply(None, problem=f"reading it raised {type(exc).__name__}")
        if parsed.problem is not None:
            loop.unreadable(parsed.problem)
            continue
        loop.run_turn(parsed)
        if parsed.answer is not None:
            problem = env.answer_problem(parsed.answer)
            if problem is None:
                answer = parsed.answer
                break
            if loop.step >= max_steps:
                loop.notes.append(f"answer {parsed.answer!r} rejected with no step left: {problem}")
                steps_exhausted = True
                break
            loop.bad_answer(parsed.answer, problem)
            continue
        if not parsed.calls:
            loop.notes.append(f"turn {turn}: neither a tool call nor an answer; episode ended")
            break
    blocker.finish(loop.step)
    final = blocker.query
    return EpisodeRecord(
        query_id=query.query_id,
        task=query.task,
        refinement_level=refinement_level,
        mode=mode,
        block_count=block_count,
        calls=tuple(loop.calls),
        segments=tuple(blocker.segments),
        answer=answer,
        expected_answer=expected_answer(
            final.task, final.preferences, final.time_info, final.location_preference
        ),
        reached_goal=env.done,
        steps_exhausted=steps_exhausted,
        blocks_applied=blocker.blocks_applied,
        blocks_dropped=blocker.blocks_dropped,
        error=error,
        notes=(*blocker.notes, *loop.notes),
    )
