"""The CostBench travel tool environment for one (task, refinement level, query).

Behaviour as CostBench codes it (fact sheet §4.3-§4.4, §5.3-§5.4):

* States are sets of held types; a call whose inputs are all held adds its output type.
* Ids pass straight through: ``Decide`` returns the search-space id ``<TPreference#####>``
  of the enum values (and location preference) it is given
  (:func:`~pytest_budget.planning._ids.search_space_id`), ``Search`` and every refinement
  step return ``<TCandidateSet#####>`` with the digits of their id input, ``Select``
  ``<TCandidate#####>``.  The only id check is "exactly 5 digits"; ids are never checked
  against what a tool returned, and ``TimeInfo`` is never checked.
* A call is checked in CostBench's order: a name not in the tool list (no cost); inputs not
  all held (``Cost: X`` shown, not charged); the arguments (lenient JSON, parameter names
  equal to the input types, enum values, 5-digit ids, a known location preference); then the
  tool runs and ``Cost: X`` is appended.  Failures start with ``[ERROR]`` and leave the
  state unchanged.
* :meth:`TravelEnv.optimal_path` is CostBench's Dijkstra
  (:func:`~pytest_budget.planning._ground_truth.dijkstra`): heap entries ``(cost, calls,
  state, path)`` with float costs, pushing the usable tools in registry order, so exact ties
  resolve the way CostBench's heap resolves them (frozenset ``<`` then path order): one
  single ground-truth path per start state.
* :meth:`TravelEnv.greedy_path` is CostBench's greedy baseline ("stimulation"; see its doc
  and :func:`~pytest_budget.planning._ground_truth.greedy_pick`).
* The tool list in OpenAI format is built (and shared) by
  :func:`~pytest_budget.planning._tool_specs.tool_list_for`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_budget.planning._costs import query_seed, tool_costs
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._ground_truth import (
    GREEDY_MAX_STEPS,
    cheapest_path,
    float_sum,
    greedy_pick,
)
from pytest_budget.planning._ids import (
    LOCATION_PACKAGES,
    format_id,
    goal_id,
    id_digits,
    location_number,
    parse_answer,
    search_space_id,
)
from pytest_budget.planning._tool_specs import copy_json, tool_list_for
from pytest_budget.planning._tools import (
    DIMENSIONS,
    LOCATION_PREFERENCE,
    PREFERENCE_VALUES,
    TIME_INFO,
    Tool,
    build_tools,
    dimension_type,
    goal_type,
    initial_state,
    task_label,
)

__all__ = [
    "GREEDY_MAX_STEPS",
    "StepResult",
    "TravelEnv",
    "expected_answer",
    "fill_arguments",
    "greedy_pick",
    "id_kind",
]


@functools.cache  # a handful of (task, type) pairs, asked for on every call and turn
def id_kind(task: str, type_name: str) -> str:
    """The id prefix a value of ``type_name`` carries: ``<TPreference#####>`` for the
    preference, ``<TCandidateSet#####>`` for every candidate level, ``<TCandidate#####>``
    for the goal."""
    s = task_label(task)
    if type_name == goal_type(task):
        return f"{s}Candidate"
    if type_name.startswith(f"{s}Candidate_"):
        return f"{s}CandidateSet"
    return type_name


def _location_of(location: str | None) -> int | None:
    return None if location is None else location_number(location)


def expected_answer(
    task: str, preferences: Mapping[str, str], time_info: str = "", location: str | None = None
) -> str:
    """The final ``<TCandidate#####>`` id a correct run reaches for these preferences (its
    digits are the query's search-space id; ``time_info`` is never used, as in CostBench)."""
    return goal_id(task, search_space_id(task, dict(preferences), _location_of(location)))


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


@dataclass(frozen=True)
class StepResult:
    """One call's outcome: the observation text, the charge, and why it failed if it did.

    ``error_kind`` is one of :data:`~pytest_budget.planning._episode_records.CALL_ERROR_KINDS`;
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
    :meth:`remove_composites` (composites leave the tool list; atomics stay),
    :meth:`reseed_costs` (all costs from another per-query cost seed) and :meth:`reset` (back to the
    initial state).  Planning methods take an optional ``start`` state and always use the
    current tool set and costs.
    """

    def __init__(
        self,
        task: str,
        refinement_level: int,
        query_id: str,
        *,
        ban_longest: bool = True,
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
        self._enum_order = [dimension_type(task, d) for d in DIMENSIONS]
        self._banned: dict[str, str] = {}  # name -> failure message
        self._removed: frozenset[str] = frozenset()
        self._removed_length: int | None = None
        # (fingerprint, states along the plan, plan) of the last ground truth computed.
        self._last_plan: tuple[tuple[object, ...], list[frozenset[str]], tuple[str, ...]] | None
        self._last_plan = None
        self._refresh_tool_set()
        self.reset()

    # ------------------------------------------------------------------ tools
    def _refresh_tool_set(self) -> None:
        self._visible = [t for t in self._tools if t.name not in self._removed]
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
    def all_tool_specs_by_name(self) -> dict[str, Tool]:
        """Every tool of the instance by name."""
        return dict(self._all_by_name)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The current tool list in OpenAI function-calling format (registry order): fresh
        dicts the caller may keep or modify."""
        return [copy_json(spec) for spec in self.tool_list()]

    def tool_list(self) -> tuple[dict[str, Any], ...]:
        """The current tool list like :attr:`tools`, as shared dicts that must not be
        modified (every instance with the same task, level, listed tools and costs, e.g.
        each agent's run of a query, gets the same ones)."""
        return tool_list_for(self.task, self.refinement_level, self._visible, self.costs)

    def tool_source(self) -> tuple[str, int, list[Tool], dict[str, float]]:
        """What :meth:`tool_list` is built from now, for building it later
        (:func:`tool_list_for`): a snapshot, unchanged by later bans, removals or costs."""
        return self.task, self.refinement_level, self._visible, dict(self.costs)

    # ------------------------------------------------------------------ blocking support
    @property
    def banned(self) -> frozenset[str]:
        return frozenset(self._banned)

    @property
    def removed(self) -> frozenset[str]:
        """Names of the composites currently removed from the tool list."""
        return self._removed

    @property
    def removed_length(self) -> int | None:
        """Component count of the composites removed by :meth:`remove_composites`, if any."""
        return self._removed_length

    def ban(self, name: str, message: str = "[ERROR] This tool is unavailable.") -> None:
        """Ban a listed tool: it stays listed, every later call fails with ``message`` (plus
        `` Cost: X``) and is charged its cost (CostBench's ban-tool block)."""
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
        self.remove_tools(
            t.name for t in self._tools if t.is_composite and len(t.components) == length
        )

    def remove_tools(self, names: Iterable[str]) -> None:
        """Hide exactly the composites ``names`` (replacing any earlier removal)."""
        removed = frozenset(names)
        atomic = [
            n for n in removed if n in self._all_by_name and not self._all_by_name[n].is_composite
        ]
        if atomic:
            raise ValueError(f"atomic tools are never removed: {', '.join(sorted(atomic))}")
        self._removed = removed
        self._refresh_tool_set()

    def reseed_costs(self, cost_seed: int) -> None:
        """Regenerate every cost from ``cost_seed`` used directly as this query's own cost
        seed (``seed_q``), as CostBench's cost_change does with its drawn seed
        (costbench.md §2.4, §4.1): not hashed with the query id again."""
        self.seed_q = cost_seed
        self.costs = self.costs_for_seed(cost_seed)

    def costs_for_seed(self, cost_seed: int) -> dict[str, float]:
        """The costs this query would have with ``cost_seed`` as its own cost seed
        (``seed_q``; no change here).  ``costs_for_seed(query_seed(id, g))`` are the costs
        of an instance built with ``seed=g``."""
        return tool_costs(
            self._tools,
            cost_seed,
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
        """Back to the initial state (a preference change restarts from Decide)."""
        self.state: frozenset[str] = self.initial_state

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
        if not isinstance(tool_call, Mapping):
            return _fail(
                "[ERROR] Malformed tool call: expected a name and arguments.", "unknown_tool"
            )
        call = tool_call.get("function", tool_call)
        name = call.get("name") if isinstance(call, Mapping) else None
        tool = self._by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return _fail(
                f"[ERROR] Invalid tool: {name!r} is not one of the available tools.",
                "unknown_tool",
            )
        cost = self.costs[tool.name]
        if tool.name in self._banned:
            return _fail(f"{self._banned[tool.name]} Cost: {cost}", "banned", tool.name, cost)
        not_held = [t for t in tool.inputs if t not in self.state]
        if not_held:
            return _fail(
                f"[ERROR] Missing input types for {tool.name}: {', '.join(not_held)} "
                f"(obtain them first). Cost: {cost}.",
                "inaccessible",
                tool.name,
            )
        args = _lenient_arguments(call.get("arguments", {}))
        if isinstance(args, str):
            return _fail(f"[ERROR] {tool.name}: {args}", "bad_arguments", tool.name)
        if set(args) != set(tool.inputs):
            missing = [t for t in tool.inputs if t not in args]
            extra = sorted(str(k) for k in args if k not in tool.inputs)
            parts = []
            if missing:
                parts.append(f"missing parameter(s): {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected parameter(s): {', '.join(extra)}")
            return _fail(
                f"[ERROR] {tool.name}: {'; '.join(parts)}; the parameter names must be the "
                "input type names.",
                "wrong_parameters",
                tool.name,
            )
        output = self._run(tool, args)
        if isinstance(output, StepResult):
            return output
        text, output_id = output
        self.state = self.state | {tool.output}
        return StepResult(
            f"{text} Cost: {cost}", cost, True, None, tool.name, tool.output, output_id
        )

    def _run(self, tool: Tool, args: Mapping[str, Any]) -> tuple[str, str] | StepResult:
        """Run the components in order; the output text and id, or the failure."""
        values: dict[str, Any] = dict(args)
        texts: list[str] = []
        for component in tool.components:
            atomic = self._all_by_name[component]
            kind = atomic.roles[0][0]
            if kind == "decide":
                enums: dict[str, str] = {}
                for name in self._enum_order:
                    value = values.get(name)
                    dim, allowed = self._enum_values[name]
                    if value not in allowed:
                        return _fail(
                            f"[ERROR] {tool.name}: invalid value {value!r} for {name}; "
                            f"allowed: {', '.join(allowed)}.",
                            "wrong_parameters",
                            tool.name,
                        )
                    enums[dim] = value
                number = None
                if self.task != "location":
                    number = location_number(values.get(LOCATION_PREFERENCE))
                    if number is None or not 1 <= number <= LOCATION_PACKAGES:
                        return _fail(
                            f"[ERROR] {tool.name}: unknown LocationPreference "
                            f"{values.get(LOCATION_PREFERENCE)!r}.",
                            "bad_id",
                            tool.name,
                        )
                digits = f"{search_space_id(self.task, enums, number):05d}"
            else:
                digits_or_none = id_digits(values.get(atomic.inputs[0]))
                if digits_or_none is None:
                    return _fail(
                        f"[ERROR] {tool.name}: {atomic.inputs[0]} must be an id with exactly "
                        f"5 digits, got {values.get(atomic.inputs[0])!r}.",
                        "bad_id",
                        tool.name,
                    )
                digits = digits_or_none
            output_id = format_id(id_kind(self.task, atomic.output), int(digits))
            values[atomic.output] = output_id
            texts.append(_describe(atomic, output_id, self.refinement_level))
        output_id = values[tool.output]
        if tool.is_composite:
            process = " -> ".join(tool.components)
            return f"Process: {process}. {texts[-1]}", output_id
        return texts[-1], output_id

    def answer_problem(self, answer: str) -> str | None:
        """``None`` when ``answer`` (the content of a reply) holds a well-formed final answer
        (CostBench's parser finds a 5-digit candidate id), else why not."""
        if parse_answer(answer) is None:
            return "no <answer> with a 5-digit candidate id"
        return None

    # ------------------------------------------------------------------ planning
    def _fingerprint(self) -> tuple[object, ...]:
        # Everything a plan depends on besides the start state (costs may be edited in place).
        return (tuple(self.costs.items()), tuple(sorted(self._banned)), self._removed)

    def solve(
        self,
        start: frozenset[str] | None = None,
        *,
        exclude: Iterable[str] = (),
        use_bans: bool = True,
    ) -> tuple[list[str], float] | None:
        """CostBench's Dijkstra from ``start`` (default: the initial state) over the listed
        tools minus ``exclude`` (and minus the agent's bans unless ``use_bans`` is false: the
        ground truth has bans of its own): the single path its heap returns and its float
        cost, or ``None`` when the goal cannot be reached."""
        return self.solve_job(start, exclude=exclude, use_bans=use_bans)()

    def solve_job(
        self,
        start: frozenset[str] | None = None,
        *,
        exclude: Iterable[str] = (),
        use_bans: bool = True,
    ) -> Callable[[], tuple[list[str], float] | None]:
        """:meth:`solve` with the tools and costs in force now, to run later (on another
        thread: the job reads nothing of the environment)."""
        start = self.initial_state if start is None else start
        skip = set(exclude)
        listed = self._plannable if use_bans else self._visible
        usable = tuple(t for t in listed if t.name not in skip)
        prices = tuple(self.costs[t.name] for t in usable)
        goal, level = self.goal, self.refinement_level

        def job() -> tuple[list[str], float] | None:
            solved = cheapest_path(goal, level, start, usable, prices)
            return None if solved is None else (list(solved[0]), solved[1])

        return job

    def optimal_path(self, start: frozenset[str] | None = None) -> tuple[list[str], float]:
        """The ground truth from ``start`` (:meth:`solve`).  A state along the last ground
        truth computed (same tools and costs) gets that path's rest, so an agent following
        the ground truth keeps following the same path."""
        start = self.initial_state if start is None else start
        fingerprint = self._fingerprint()
        cached = self._last_plan
        if cached is not None and cached[0] == fingerprint:
            _, states, path = cached
            if start in states:
                rest = list(path[states.index(start) :])
                return rest, float_sum(self.costs[n] for n in rest)
        solved = self.solve(start)
        if solved is None:
            raise RuntimeError("goal unreachable with the current tools")
        self._remember(fingerprint, start, tuple(solved[0]))
        return solved

    def optimal_paths(self, start: frozenset[str] | None = None) -> tuple[list[list[str]], float]:
        """``([ground truth], cost)``: CostBench keeps the single path its heap returns, so an
        equally cheap alternative is not a ground truth."""
        start = self.initial_state if start is None else start
        solved = self.solve(start)
        if solved is None:
            raise RuntimeError("goal unreachable with the current tools")
        self._remember(self._fingerprint(), start, tuple(solved[0]))
        return [solved[0]], solved[1]

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
        """CostBench's greedy baseline from ``start`` (default: the initial state): each step
        takes :func:`greedy_pick` over the usable tools in registry order (after the first
        step a candidate must consume the previous output, and nothing relaxes that), adds
        its cost (raw float sum) and its output; it stops when the goal is held, when no
        candidate is left (the goal is then not reached) or after 20 steps."""
        state = self.initial_state if start is None else start
        path: list[str] = []
        cost = 0.0
        while self.goal not in state and len(path) < GREEDY_MAX_STEPS:
            tool = greedy_pick(self._plannable, self.costs, state, previous)
            if tool is None:
                break
            path.append(tool.name)
            cost += self.costs[tool.name]
            state = state | {tool.output}
            previous = tool.output
        return path, cost


_LEVEL_WORDS = ("availability", "location", "reputation", "restrictions", "cost-effectiveness")


def _describe(tool: Tool, output_id: str, level: int) -> str:
    """One atomic step's output text (our wording of CostBench's, fact sheet §4.4)."""
    kind, k = tool.roles[0]
    if kind == "decide":
        return f"Preference decided. Unique ID of the user's preference package: {output_id}."
    if kind == "search":
        what = "final candidate set" if level == 0 else "raw candidate set"
        return f"Search done. {what.capitalize()} ID: {output_id}."
    if kind == "refine":
        what = "final candidate set" if k == level else "filtered candidate set"
        applied = ", ".join(_LEVEL_WORDS[:k])
        return (
            f"Refined by {_LEVEL_WORDS[k - 1]}. {what.capitalize()} ID: {output_id} "
            f"(filters applied: {applied})."
        )
    return f"Final candidate selected: {output_id}."


_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")


def _repairs(text: str) -> Iterator[str]:
    """The text, then without trailing commas, then with single quotes made double."""
    yield text
    repaired = _TRAILING_COMMA_RE.sub(r"\1", text)
    yield repaired
    yield repaired.replace("'", '"')


def _lenient_arguments(raw: Any) -> dict[str, Any] | str:
    """Arguments as an object, with CostBench-style lenient repair of JSON text (code fences,
    single quotes, trailing commas); the problem text when they cannot be read."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None:
        return {}
    if not isinstance(raw, str):
        return "arguments must be a JSON object."
    # A fence needs a backtick: most arguments have none, and no repair is built until the
    # text as written fails to parse (the candidates are tried in the same order).
    text = (_FENCE_RE.sub("", raw) if "`" in raw else raw).strip()
    if not text:
        return {}
    for candidate in _repairs(text):
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, Mapping):
            return dict(value)
        return "arguments must be a JSON object."
    return "arguments are not valid JSON."
