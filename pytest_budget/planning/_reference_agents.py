"""Reference tool agents for the planning suite (offline, deterministic, stateless).

Each one makes one tool call per turn, reads the ids it passes from the tool messages in the
conversation (those after the last user message: a preference change starts over), and ends
with ``<answer>ID</answer>`` once the goal type is held.  They read the query's exact
preferences from ``observation.reference`` - the reference channel of
:mod:`pytest_budget.planning._episode`, which they ask for with ``wants_reference = True`` -
because the request text is deliberately vague and understanding it is not what they stand
for.  None keeps state between calls, so one instance can serve concurrent episodes; the
random agent draws from ``sha256(seed, query_id, step)``.

* :class:`OracleToolAgent` - follows the segmented ground truth: the next call of the current
  optimal plan, which it alone asks for (``wants_optimal_next = True``).
* :class:`GreedyToolAgent` - CostBench's greedy baseline as coded (fact sheet §5.4): among
  the listed, unbanned tools whose inputs are held and which consume the previous output, the
  first with the least cost per component; the chain rule is never relaxed (App. B.2 says it
  is after a block; the code's relaxation counter never takes effect), and when no tool
  qualifies it stops without an answer.
* :class:`RandomValidToolAgent` - a uniformly random tool whose inputs are held and whose
  output is not yet held (so every call makes progress).
* :class:`AtomicOnlyToolAgent` - always the next atomic tool of the chain; only when a ban took
  that atomic away does it use the shortest composite starting with it.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from pytest_budget.planning._costs import derive_seed
from pytest_budget.planning._env import fill_arguments, id_kind
from pytest_budget.planning._episode import ReferenceView, ToolAgentObservation, read_messages
from pytest_budget.planning._ground_truth import greedy_pick
from pytest_budget.planning._tools import Tool, atomic_chain

__all__ = [
    "AtomicOnlyToolAgent",
    "GreedyToolAgent",
    "OracleToolAgent",
    "RandomValidToolAgent",
    "held_ids",
]

_OUTPUT_RE = re.compile(r"(<([A-Za-z]+)\d{5}>)")


def held_ids(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Latest id per id kind (``DiningPreference``, ``DiningCandidateSet``,
    ``DiningCandidate``; see :func:`~pytest_budget.planning._env.id_kind`) from the tool
    messages after the last user message (a preference change starts over; the loop's own
    ``[ERROR]`` user messages change no requirement and do not count)."""
    start = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        is_error = isinstance(content, str) and content.startswith("[ERROR]")
        if message.get("role") == "user" and not is_error:
            start = index
    ids: dict[str, str] = {}
    for message in messages[start:]:
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str):
            if content.startswith("[ERROR]"):
                continue
            for full, kind in _OUTPUT_RE.findall(content):
                ids[kind] = full
    return ids


def _usable(view: ReferenceView) -> list[Tool]:
    return [
        t
        for t in view.tools
        if t.name not in view.banned
        and t.output not in view.held
        and view.held.issuperset(t.inputs)
    ]


def _shortest(tools: Iterable[Tool], costs: Mapping[str, float]) -> Tool | None:
    return min(tools, key=lambda t: (len(t.components), costs[t.name], t.name), default=None)


class _ReferenceToolAgent:
    """Shared turn logic: answer once the goal is held, else call the chosen tool."""

    name: ClassVar[str] = "reference"
    run_inline: ClassVar[bool] = True  # pure, quick computation: no worker thread
    wants_reference: ClassVar[bool] = True
    wants_optimal_next: ClassVar[bool] = False

    def act(self, observation: ToolAgentObservation) -> dict[str, Any]:
        view = observation.reference
        if view is None:
            raise RuntimeError(
                f"{type(self).__name__} needs the reference channel; run it with run_episode"
            )
        kinds = held_ids(read_messages(observation))
        task = view.query.task
        if view.goal in view.held:
            return {"content": f"<answer> {kinds[id_kind(task, view.goal)]} </answer>"}
        tool = self.choose(observation, view)
        if tool is None:  # nothing qualifies: stop (a turn without tool calls ends the run)
            return {"content": "No usable tool is left."}
        ids = {t: kinds[id_kind(task, t)] for t in tool.inputs if id_kind(task, t) in kinds}
        arguments = fill_arguments(tool, view.query, ids)
        return {
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{observation.step + 1}",
                    "type": "function",
                    "function": {"name": tool.name, "arguments": json.dumps(arguments)},
                }
            ],
        }

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool | None:
        raise NotImplementedError


class OracleToolAgent(_ReferenceToolAgent):
    """Follows the segmented ground truth through the loop's optimal-next-call hint."""

    name: ClassVar[str] = "oracle"
    wants_optimal_next: ClassVar[bool] = True

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool | None:
        if view.optimal_next is None:  # the bans left no way to the goal: stop
            return None
        return next(t for t in view.tools if t.name == view.optimal_next)


class GreedyToolAgent(_ReferenceToolAgent):
    """CostBench's greedy policy: least cost per component among chain-consistent tools."""

    name: ClassVar[str] = "greedy"

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool | None:
        tools = [t for t in view.tools if t.name not in view.banned]
        return greedy_pick(tools, view.costs, view.held, view.previous_output)


class RandomValidToolAgent(_ReferenceToolAgent):
    """A random tool whose inputs are held (and whose output is new), each step."""

    name: ClassVar[str] = "random-valid"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool:
        options = sorted(_usable(view), key=lambda t: t.name)
        if not options:
            raise RuntimeError("no usable tool")
        rng = random.Random(derive_seed(f"{self.seed}:{observation.query_id}:{observation.step}"))
        return rng.choice(options)


class AtomicOnlyToolAgent(_ReferenceToolAgent):
    """Always the atomic chain: Decide, Search, Step1..L, Select."""

    name: ClassVar[str] = "atomic-only"

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool:
        chain = atomic_chain(view.query.task, observation.refinement_level)
        reached = max((i for i, t in enumerate(chain) if t.output in view.held), default=-1)
        wanted = chain[reached + 1].name
        usable = _usable(view)
        for tool in usable:
            if tool.name == wanted:
                return tool
        # The next atomic is banned: the shortest composite that starts with it, else anything.
        fallback = _shortest((t for t in usable if t.components[0] == wanted), view.costs)
        fallback = fallback or _shortest(usable, view.costs)
        if fallback is None:
            raise RuntimeError("no usable tool")
        return fallback
