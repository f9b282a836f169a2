"""The CostBench travel tool environment for one (task, refinement level, query).

States are sets of held types; a call whose inputs are all held adds its output type.  Tool
outputs are ids ``<OutputType>-<8 hex>`` derived (sha256) from the preferences carried along
the chain, so every valid path ends at the same final id and :func:`expected_answer` can check
an agent's ``<answer>`` against the query without replaying it.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pytest_budget.planning.costs import query_seed, tool_costs
from pytest_budget.planning.records import Query
from pytest_budget.planning.tools import (
    DIMENSIONS,
    LOCATION_PREFERENCE,
    PREFERENCE_VALUES,
    TIME_INFO,
    Tool,
    build_tools,
    dimension_type,
    goal_type,
    initial_state,
)

__all__ = [
    "StepResult",
    "TravelEnv",
    "expected_answer",
    "fill_arguments",
    "greedy_pick",
    "make_id",
]

_ID_RE = re.compile(r"^[A-Za-z0-9_]+-[0-9a-f]{8}$")


def make_id(task: str, output_type: str, context: Mapping[str, str | None]) -> str:
    """Deterministic id of an output of ``output_type`` for the carried preferences."""
    payload = json.dumps([task, output_type, sorted(context.items())], separators=(",", ":"))
    return f"{output_type}-{hashlib.sha256(payload.encode('utf-8')).hexdigest()[:8]}"


def expected_answer(
    task: str, preferences: Mapping[str, str], time_info: str, location: str | None = None
) -> str:
    """The final ``TravelX`` id a correct run reaches for these query preferences."""
    context: dict[str, str | None] = {d: preferences[d] for d in DIMENSIONS}
    context["location"] = None if task == "location" else location
    context["time"] = time_info
    return make_id(task, goal_type(task), context)


def fill_arguments(tool: Tool, query: Query, ids: Mapping[str, str]) -> dict[str, str]:
    """Correct arguments for ``tool``: enum values from ``query``'s preferences, ``TimeInfo``
    and (outside the location task) ``LocationPreference`` from the query, every other input
    from ``ids`` (type -> the id an earlier call returned).  Raises ``KeyError`` for an id
    input that ``ids`` lacks."""
    enums = {dimension_type(query.task, d): query.preferences[d] for d in DIMENSIONS}
    args: dict[str, str] = {}
    for name in tool.inputs:
        if name in enums:
            args[name] = enums[name]
        elif name == TIME_INFO:
            args[name] = query.time_info
        elif name == LOCATION_PREFERENCE and query.task != "location":
            args[name] = query.location_preference or ""
        else:
            args[name] = ids[name]
    return args


def _cents(cost: float) -> int:
    # Costs have two decimals; integer cents make exact ties exact (float sums drift).
    return round(cost * 100)


def greedy_pick(
    tools: Iterable[Tool],
    costs: Mapping[str, float],
    state: frozenset[str],
    previous: str | None,
) -> Tool | None:
    """CostBench's greedy choice (App. B.2, eqs. 7-8 and 10-11).

    Among ``tools`` whose inputs are held and whose output is not, keep those that consume
    ``previous`` (the last output; ``None`` relaxes the rule, as on the first step and the
    first step after a blocking event) and take the least cost per atomic component, ties by
    name.  ``None`` when nothing qualifies.
    """
    options = [
        t
        for t in tools
        if t.output not in state
        and set(t.inputs) <= state
        and (previous is None or previous in t.inputs)
    ]
    if not options:
        return None
    return min(options, key=lambda t: (Fraction(_cents(costs[t.name]), len(t.components)), t.name))


@dataclass(frozen=True)
class StepResult:
    """One call's outcome: the observation text, the charge, and why it failed if it did.

    ``error_kind`` is one of :data:`~pytest_budget.planning.records.CALL_ERROR_KINDS`;
    ``tool`` is the called tool's name when the call named a tool in the current list.
    """

    observation: str
    cost: float
    ok: bool
    error_kind: str | None = None
    tool: str | None = None
    output_type: str | None = None
    output_id: str | None = None


def _fail(observation: str, kind: str, tool: str | None = None, cost: float = 0.0) -> StepResult:
    return StepResult(observation, cost, False, kind, tool)


class TravelEnv:
    """One CostBench task instance: tools, costs, stepping, Dijkstra ground truth, greedy.

    Beyond the static environment it supports what blocking events need (CostBench §3.2):
    :meth:`ban` (the tool stays listed but every call fails and is still charged),
    :meth:`remove_composites` (composites of one length leave the tool list; atomics stay),
    :meth:`reseed_costs` (all costs from another global seed) and :meth:`reset` (back to the
    initial state, issued ids forgotten).  Planning methods take an optional ``start`` state
    and always use the current tool set and costs.
    """

    def __init__(
        self,
        task: str,
        refinement_level: int,
        query_id: str,
        *,
        ban_longest: bool = False,
        noise_std: float = 0.1,
        cost_range: tuple[float, float] = (15, 25),
        seed: int = 42,
    ) -> None:
        self.task = task
        self.refinement_level = refinement_level
        self.query_id = query_id
        self.global_seed = seed
        self.seed_q = query_seed(query_id, seed)
        self._noise_std = noise_std
        self._cost_range = cost_range
        self._tools = build_tools(task, refinement_level, ban_longest=ban_longest)
        self._all_by_name = {tool.name: tool for tool in self._tools}
        self.costs: dict[str, float] = tool_costs(
            self._tools,
            self.seed_q,
            refinement_level,
            cost_range=cost_range,
            noise_std=noise_std,
        )
        self.goal = goal_type(task)
        self.initial_state = initial_state(task)
        self._enum_values = {
            dimension_type(task, d): (d, PREFERENCE_VALUES[task][d]) for d in DIMENSIONS
        }
        # Free-text inputs come from the query; for the location task "LocationPreference" is
        # instead the id Decide_Location_Preference returns.
        self._free_text = {TIME_INFO} if task == "location" else {TIME_INFO, LOCATION_PREFERENCE}
        self._banned: dict[str, str] = {}  # name -> failure message
        self._removed_length: int | None = None
        # (fingerprint, states along the plan, plan) of the last canonical plan computed.
        self._last_plan: tuple[tuple[object, ...], list[frozenset[str]], tuple[str, ...]] | None
        self._last_plan = None
        self._refresh_tool_set()
        self.reset()

    # ------------------------------------------------------------------ tools
    def _refresh_tool_set(self) -> None:
        self._visible = [
            t
            for t in self._tools
            if not (t.is_composite and len(t.components) == self._removed_length)
        ]
        self._by_name = {tool.name: tool for tool in self._visible}
        self._plannable = [t for t in self._visible if t.name not in self._banned]

    @property
    def tool_specs(self) -> list[Tool]:
        """The tools currently listed (removed composites excluded; banned ones included)."""
        return list(self._visible)

    @property
    def all_tool_specs(self) -> list[Tool]:
        """Every tool of the instance, whatever blocking events did."""
        return list(self._tools)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The current tool list in OpenAI function-calling format."""
        return [self._spec(tool) for tool in self._visible]

    def _spec(self, tool: Tool) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for name in tool.inputs:
            if name in self._enum_values:
                dim, values = self._enum_values[name]
                properties[name] = {
                    "type": "string",
                    "enum": list(values),
                    "description": f"The user's {self.task} {dim.replace('_', ' ')}.",
                }
            elif name == TIME_INFO:
                properties[name] = {"type": "string", "description": "The user's travel time."}
            elif name == LOCATION_PREFERENCE and name in self._free_text:
                properties[name] = {"type": "string", "description": "The user's location."}
            else:
                properties[name] = {
                    "type": "string",
                    "description": f"A {name} id returned by an earlier tool ({name}-xxxxxxxx).",
                }
        kind = (
            f"Composite tool of {len(tool.components)} atomic tools: "
            + " -> ".join(tool.components)
            if tool.is_composite
            else "Atomic tool"
        )
        description = (
            f"{tool.purpose} {kind}. Cost: {self.costs[tool.name]:.2f}. Output: {tool.output}."
        )
        return {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": list(tool.inputs),
                    "additionalProperties": False,
                },
            },
        }

    # ------------------------------------------------------------------ blocking support
    @property
    def banned(self) -> frozenset[str]:
        return frozenset(self._banned)

    @property
    def removed_length(self) -> int | None:
        """Component count of the composites currently removed, if any."""
        return self._removed_length

    def ban(self, name: str, message: str = "This tool is unavailable.") -> None:
        """Ban a listed tool: it stays listed, every later call fails with ``message`` and is
        charged its cost (CostBench's ban-tool block)."""
        if name not in self._all_by_name:
            raise KeyError(f"no tool {name!r}")
        self._banned[name] = message
        self._refresh_tool_set()

    def remove_composites(self, length: int | None) -> None:
        """Hide every composite of exactly ``length`` components (``None`` restores them);
        each call replaces the previous removal.  Atomic tools always stay."""
        if length is not None and length < 2:
            raise ValueError("only composites (two or more components) can be removed")
        self._removed_length = length
        self._refresh_tool_set()

    def reseed_costs(self, global_seed: int) -> None:
        """Regenerate every cost as if the instance had been built with ``seed=global_seed``."""
        self.global_seed = global_seed
        self.seed_q = query_seed(self.query_id, global_seed)
        self.costs = tool_costs(
            self._tools,
            self.seed_q,
            self.refinement_level,
            cost_range=self._cost_range,
            noise_std=self._noise_std,
        )

    def reachable(self, start: frozenset[str] | None = None, *, without: str | None = None) -> bool:
        """Whether the goal can still be produced from ``start`` (default: the current state)
        with the usable tools, optionally pretending ``without`` were banned too."""
        held = set(self.state if start is None else start)
        tools = [t for t in self._plannable if t.name != without]
        grew = True
        while grew and self.goal not in held:
            grew = False
            for tool in tools:
                if tool.output not in held and held.issuperset(tool.inputs):
                    held.add(tool.output)
                    grew = True
        return self.goal in held

    # ------------------------------------------------------------------ stepping
    def reset(self) -> None:
        """Back to the initial state; ids issued so far stop being valid."""
        self.state: frozenset[str] = self.initial_state
        # id -> carried preference context, per type; only ids issued since the reset are valid.
        self._issued: dict[str, dict[str, dict[str, str | None]]] = {}

    @property
    def done(self) -> bool:
        return self.goal in self.state

    def step(self, tool_call: Mapping[str, Any]) -> tuple[str, float]:
        """Run one call ``{"name", "arguments"}`` (or OpenAI's ``{"function": {...}}``).

        Returns ``(observation, charged cost)``; invalid calls return an ``[ERROR]``
        observation naming the problem and charge nothing (a banned tool's call is charged).
        """
        result = self.step_detailed(tool_call)
        return result.observation, result.cost

    def step_detailed(self, tool_call: Mapping[str, Any]) -> StepResult:
        """Like :meth:`step`, with the error kind (``CALL_ERROR_KINDS``) and the output."""
        parsed = self._parse_call(tool_call)
        if isinstance(parsed, StepResult):
            return parsed
        tool, args = parsed
        missing = [name for name in tool.inputs if name not in args]
        extra = sorted(str(name) for name in args if name not in tool.inputs)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing parameter(s): {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected parameter(s): {', '.join(extra)}")
            return _fail(f"[ERROR] {tool.name}: {'; '.join(parts)}.", "wrong_parameters", tool.name)
        not_held = [name for name in tool.inputs if name not in self.state]
        if not_held:
            return _fail(
                f"[ERROR] {tool.name}: inputs not yet available: {', '.join(not_held)}.",
                "inaccessible",
                tool.name,
            )
        problem = self._check_values(tool, args)
        if problem:
            kind, text = problem
            return _fail(f"[ERROR] {tool.name}: {text}", kind, tool.name)
        output_id = self._execute(tool, args)
        self.state = self.state | {tool.output}
        return StepResult(
            f"{tool.name} succeeded. {tool.output}: {output_id}",
            self.costs[tool.name],
            True,
            None,
            tool.name,
            tool.output,
            output_id,
        )

    def _parse_call(self, tool_call: Mapping[str, Any]) -> tuple[Tool, dict[str, Any]] | StepResult:
        if not isinstance(tool_call, Mapping):
            return _fail(
                "[ERROR] Malformed tool call: expected an object with name and arguments.",
                "unknown_tool",
            )
        call = tool_call.get("function", tool_call)
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            return _fail("[ERROR] Malformed tool call: missing tool name.", "unknown_tool")
        name = call["name"]
        tool = self._by_name.get(name)
        if tool is None:
            return _fail(f"[ERROR] Unknown tool: {name!r} is not in the tool list.", "unknown_tool")
        if name in self._banned:
            # Checked before the arguments: whatever was passed, a banned tool fails and charges.
            return _fail(f"[ERROR] {name}: {self._banned[name]}", "banned", name, self.costs[name])
        raw = call.get("arguments", {})
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                return _fail(
                    f"[ERROR] {name}: arguments are not valid JSON ({exc.msg}).",
                    "bad_arguments",
                    name,
                )
            except RecursionError:
                return _fail(f"[ERROR] {name}: arguments nest too deeply.", "bad_arguments", name)
        if not isinstance(raw, Mapping):
            return _fail(f"[ERROR] {name}: arguments must be a JSON object.", "bad_arguments", name)
        return tool, dict(raw)

    def _check_values(self, tool: Tool, args: Mapping[str, Any]) -> tuple[str, str] | None:
        for name in tool.inputs:
            value = args[name]
            if not isinstance(value, str) or not value.strip():
                return "wrong_parameters", f"parameter {name} must be a non-empty string."
            if name in self._enum_values:
                allowed = self._enum_values[name][1]
                if value not in allowed:
                    return (
                        "wrong_parameters",
                        f"invalid value {value!r} for {name}; allowed: {', '.join(allowed)}.",
                    )
            elif name not in self._free_text:
                if not _ID_RE.match(value) or not value.startswith(f"{name}-"):
                    return (
                        "bad_id",
                        f"wrong id format for {name}: expected {name}-<8 hex>, got {value!r}.",
                    )
                if value not in self._issued.get(name, {}):
                    return (
                        "bad_id",
                        f"unknown {name} id {value!r}: it was not returned by an earlier call.",
                    )
        return None

    def _execute(self, tool: Tool, args: Mapping[str, str]) -> str:
        # Composites run their components in order; intermediate ids stay internal.
        values: dict[str, str] = dict(args)
        context: dict[str, str | None] = {}
        for component in tool.components:
            atomic = self._all_by_name[component]
            if atomic.roles[0][0] == "decide":
                context = {d: values[dimension_type(self.task, d)] for d in DIMENSIONS}
                context["location"] = values.get(LOCATION_PREFERENCE)  # None for location
                context["time"] = None
            else:
                held_id = values[atomic.inputs[0]]
                carried = self._issued.get(atomic.inputs[0], {}).get(held_id)
                context = dict(carried) if carried is not None else context
                if LOCATION_PREFERENCE in atomic.inputs and LOCATION_PREFERENCE in self._free_text:
                    context["location"] = values[LOCATION_PREFERENCE]
                if TIME_INFO in atomic.inputs:
                    context["time"] = values[TIME_INFO]
            values[atomic.output] = make_id(self.task, atomic.output, context)
            if component == tool.components[-1]:
                self._issued.setdefault(atomic.output, {})[values[atomic.output]] = context
        return values[tool.output]

    def answer_problem(self, answer: str) -> str | None:
        """Why ``answer`` (the text of an ``<answer>``) is not a final id, as an ``[ERROR]``
        observation; ``None`` when it is a goal id a call returned since the last reset.

        A well-formed goal id the environment issued is accepted even when it is not the
        expected one (the agent chose other preferences: a user-intent miss, not a bad id).
        """
        text = answer.strip() if isinstance(answer, str) else ""
        if not _ID_RE.match(text) or not text.startswith(f"{self.goal}-"):
            return (
                f"[ERROR] Answer: wrong id format: expected the {self.goal} id a tool returned "
                f"({self.goal}-<8 hex>), got {answer!r}."
            )
        if text not in self._issued.get(self.goal, {}):
            return (
                f"[ERROR] Answer: unknown {self.goal} id {text!r}: it was not returned by a "
                "tool call (since the requirements last changed)."
            )
        return None

    # ------------------------------------------------------------------ planning
    def _usable(self, state: frozenset[str]) -> list[Tool]:
        return [t for t in self._plannable if t.output not in state and set(t.inputs) <= state]

    def _fingerprint(self) -> tuple[object, ...]:
        # Everything a plan depends on besides the start state (costs may be edited in place).
        return (tuple(self.costs.items()), tuple(sorted(self._banned)), self._removed_length)

    def _dijkstra(self, start: frozenset[str]) -> tuple[tuple[int, int], list[tuple[str, ...]]]:
        """Best (cents, calls) to the goal and every path achieving it exactly."""
        edges = [
            (t.name, frozenset(t.inputs), t.output, _cents(self.costs[t.name]))
            for t in self._plannable
        ]
        best: dict[frozenset[str], tuple[int, int]] = {start: (0, 0)}
        preds: dict[frozenset[str], list[tuple[frozenset[str], str]]] = {start: []}
        counter = itertools.count()
        heap: list[tuple[int, int, int, frozenset[str]]] = [(0, 0, next(counter), start)]
        done: set[frozenset[str]] = set()
        goal_key: tuple[int, int] | None = None
        goals: list[frozenset[str]] = []
        while heap:
            cents, calls, _, state = heapq.heappop(heap)
            if state in done:
                continue
            done.add(state)
            if self.goal in state:
                # Lexicographic (cost, calls) order: the first goal popped is optimal.
                if goal_key is None:
                    goal_key = (cents, calls)
                if (cents, calls) == goal_key:
                    goals.append(state)
                continue
            if goal_key is not None and (cents, calls) > goal_key:
                break
            for name, needs, output, price in edges:
                if output in state or not needs <= state:
                    continue
                nxt = state | {output}
                key = (cents + price, calls + 1)
                old = best.get(nxt)
                if old is None or key < old:
                    best[nxt] = key
                    preds[nxt] = [(state, name)]
                    heapq.heappush(heap, (*key, next(counter), nxt))
                elif key == old:
                    preds[nxt].append((state, name))
        if goal_key is None:
            raise RuntimeError("goal unreachable with the current tools")

        def paths_to(state: frozenset[str]) -> list[tuple[str, ...]]:
            if state == start:
                return [()]
            return [(*p, name) for prev, name in preds[state] for p in paths_to(prev)]

        found = sorted({p for g in goals for p in paths_to(g)})
        return goal_key, found

    def optimal_path(self, start: frozenset[str] | None = None) -> tuple[list[str], float]:
        """Dijkstra ground truth from ``start`` (default: the initial state) under the current
        tools and costs: min cost, ties toward fewer calls, then by tool names.

        A state reached by following the last plan computed (same tools and costs) reuses
        its suffix: the rest of a canonical optimal plan is the canonical optimal plan from
        any state along it, since adding the prefix's fixed (cost, calls) keeps the order.
        """
        start = self.initial_state if start is None else start
        fingerprint = self._fingerprint()
        cached = self._last_plan
        if cached is not None and cached[0] == fingerprint:
            _, states, path = cached
            if start in states:
                rest = path[states.index(start) :]
                return list(rest), sum(_cents(self.costs[n]) for n in rest) / 100
        (cents, _), paths = self._dijkstra(start)
        self._remember(fingerprint, start, paths[0])
        return list(paths[0]), cents / 100

    def optimal_paths(self, start: frozenset[str] | None = None) -> tuple[list[list[str]], float]:
        """Every path tied exactly on cost and number of calls (metrics treat them alike)."""
        start = self.initial_state if start is None else start
        (cents, _), paths = self._dijkstra(start)
        self._remember(self._fingerprint(), start, paths[0])
        return [list(p) for p in paths], cents / 100

    def _remember(
        self, fingerprint: tuple[object, ...], start: frozenset[str], path: tuple[str, ...]
    ) -> None:
        states = [start]
        for name in path:
            states.append(states[-1] | {self._all_by_name[name].output})
        self._last_plan = (fingerprint, states, path)

    def greedy_path(
        self, start: frozenset[str] | None = None, previous: str | None = None
    ) -> tuple[list[str], float]:
        """CostBench's greedy baseline from ``start`` (default: the initial state): among
        usable tools consuming the previous output (any usable tool on the first step, unless
        ``previous`` is given), take the least cost per component; ties by name.  When no
        usable tool consumes the previous output (possible only after a ban) the rule is
        relaxed for that step."""
        state = self.initial_state if start is None else start
        path: list[str] = []
        cents = 0
        while self.goal not in state:
            tool = greedy_pick(self._plannable, self.costs, state, previous)
            if tool is None and previous is not None:
                # Nothing consumes the previous output (a ban can do that): relax the rule.
                tool = greedy_pick(self._plannable, self.costs, state, None)
            if tool is None:
                raise RuntimeError(f"greedy is stuck after {path}")
            path.append(tool.name)
            cents += _cents(self.costs[tool.name])
            state = state | {tool.output}
            previous = tool.output
        return path, cents / 100
