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
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from pytest_budget.planning.costs import query_seed, tool_costs
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

__all__ = ["TravelEnv", "expected_answer", "make_id"]

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


def _cents(cost: float) -> int:
    # Costs have two decimals; integer cents make exact ties exact (float sums drift).
    return round(cost * 100)


class TravelEnv:
    """One CostBench task instance: tools, costs, stepping, Dijkstra ground truth, greedy."""

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
        self.seed_q = query_seed(query_id, seed)
        self._tools = build_tools(task, refinement_level, ban_longest=ban_longest)
        self._by_name = {tool.name: tool for tool in self._tools}
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
        self.reset()

    # ------------------------------------------------------------------ tools
    @property
    def tool_specs(self) -> list[Tool]:
        return list(self._tools)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool list in OpenAI function-calling format."""
        return [self._spec(tool) for tool in self._tools]

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

    # ------------------------------------------------------------------ stepping
    def reset(self) -> None:
        self.state: frozenset[str] = self.initial_state
        # id -> carried preference context, per type; only ids issued in this episode are valid.
        self._issued: dict[str, dict[str, dict[str, str | None]]] = {}

    @property
    def done(self) -> bool:
        return self.goal in self.state

    def step(self, tool_call: Mapping[str, Any]) -> tuple[str, float]:
        """Run one call ``{"name", "arguments"}`` (or OpenAI's ``{"function": {...}}``).

        Returns ``(observation, charged cost)``; invalid calls return an ``[ERROR]``
        observation naming the problem and charge nothing.
        """
        parsed = self._parse_call(tool_call)
        if isinstance(parsed, str):
            return parsed, 0.0
        tool, args = parsed
        missing = [name for name in tool.inputs if name not in args]
        extra = sorted(name for name in args if name not in tool.inputs)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing parameter(s): {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected parameter(s): {', '.join(extra)}")
            return f"[ERROR] {tool.name}: {'; '.join(parts)}.", 0.0
        not_held = [name for name in tool.inputs if name not in self.state]
        if not_held:
            return (
                f"[ERROR] {tool.name}: inputs not yet available: {', '.join(not_held)}.",
                0.0,
            )
        problem = self._check_values(tool, args)
        if problem:
            return f"[ERROR] {tool.name}: {problem}", 0.0
        output_id = self._execute(tool, args)
        self.state = self.state | {tool.output}
        return f"{tool.name} succeeded. {tool.output}: {output_id}", self.costs[tool.name]

    def _parse_call(self, tool_call: Mapping[str, Any]) -> tuple[Tool, dict[str, Any]] | str:
        if not isinstance(tool_call, Mapping):
            return "[ERROR] Malformed tool call: expected an object with name and arguments."
        call = tool_call.get("function", tool_call)
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            return "[ERROR] Malformed tool call: missing tool name."
        name = call["name"]
        tool = self._by_name.get(name)
        if tool is None:
            return f"[ERROR] Unknown tool: {name!r} is not in the tool list."
        raw = call.get("arguments", {})
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                return f"[ERROR] {name}: arguments are not valid JSON ({exc.msg})."
        if not isinstance(raw, Mapping):
            return f"[ERROR] {name}: arguments must be a JSON object."
        return tool, dict(raw)

    def _check_values(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
        for name in tool.inputs:
            value = args[name]
            if not isinstance(value, str) or not value.strip():
                return f"parameter {name} must be a non-empty string."
            if name in self._enum_values:
                allowed = self._enum_values[name][1]
                if value not in allowed:
                    return f"invalid value {value!r} for {name}; allowed: {', '.join(allowed)}."
            elif name not in self._free_text:
                if not _ID_RE.match(value) or not value.startswith(f"{name}-"):
                    return f"wrong id format for {name}: expected {name}-<8 hex>, got {value!r}."
                if value not in self._issued.get(name, {}):
                    return f"unknown {name} id {value!r}: it was not returned by an earlier call."
        return None

    def _execute(self, tool: Tool, args: Mapping[str, str]) -> str:
        # Composites run their components in order; intermediate ids stay internal.
        values: dict[str, str] = dict(args)
        context: dict[str, str | None] = {}
        for component in tool.components:
            atomic = self._by_name[component]
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

    # ------------------------------------------------------------------ planning
    def _usable(self, state: frozenset[str]) -> list[Tool]:
        return [t for t in self._tools if t.output not in state and set(t.inputs) <= state]

    def _dijkstra(self) -> tuple[tuple[int, int], list[tuple[str, ...]]]:
        """Best (cents, calls) to the goal and every path achieving it exactly."""
        start = self.initial_state
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
            for tool in self._usable(state):
                nxt = state | {tool.output}
                key = (cents + _cents(self.costs[tool.name]), calls + 1)
                old = best.get(nxt)
                if old is None or key < old:
                    best[nxt] = key
                    preds[nxt] = [(state, tool.name)]
                    heapq.heappush(heap, (*key, next(counter), nxt))
                elif key == old:
                    preds[nxt].append((state, tool.name))
        if goal_key is None:
            raise RuntimeError("goal unreachable")  # cannot happen: the atomic chain exists

        def paths_to(state: frozenset[str]) -> list[tuple[str, ...]]:
            if state == start:
                return [()]
            return [(*p, name) for prev, name in preds[state] for p in paths_to(prev)]

        found = sorted({p for g in goals for p in paths_to(g)})
        return goal_key, found

    def optimal_path(self) -> tuple[list[str], float]:
        """Dijkstra ground truth: min cost, ties toward fewer calls, then by tool names."""
        (cents, _), paths = self._dijkstra()
        return list(paths[0]), cents / 100

    def optimal_paths(self) -> tuple[list[list[str]], float]:
        """Every path tied exactly on cost and number of calls (metrics treat them alike)."""
        (cents, _), paths = self._dijkstra()
        return [list(p) for p in paths], cents / 100

    def greedy_path(self) -> tuple[list[str], float]:
        """CostBench's greedy baseline: among usable tools consuming the previous output (any
        usable tool on the first step), take the least cost per component; ties by name."""
        state = self.initial_state
        previous: str | None = None
        path: list[str] = []
        cents = 0
        while self.goal not in state:
            options = [t for t in self._usable(state) if previous is None or previous in t.inputs]
            if not options:
                raise RuntimeError(f"greedy is stuck after {path}")
            tool = min(
                options,
                key=lambda t: (Fraction(_cents(self.costs[t.name]), len(t.components)), t.name),
            )
            path.append(tool.name)
            cents += _cents(self.costs[tool.name])
            state = state | {tool.output}
            previous = tool.output
        return path, cents / 100
