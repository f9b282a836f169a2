"""CostBench's ground truth and greedy baseline over a travel task's tools and prices.

* :func:`dijkstra` is CostBench's heap search: entries ``(cost, calls, state, path)`` with
  float costs, pushing the usable tools in registry order, so exact ties resolve the way
  CostBench's heap resolves them (frozenset ``<`` then path order): one single ground-truth
  path per start state.  :func:`cheapest_path` remembers its answers per process.
* :func:`greedy_pick` is one step of CostBench's greedy baseline ("stimulation"), which
  :meth:`~pytest_budget.planning._env.TravelEnv.greedy_path` runs for at most
  :data:`GREEDY_MAX_STEPS` steps.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from pytest_budget.planning._tools import Tool

__all__ = [
    "GREEDY_MAX_STEPS",
    "cheapest_path",
    "dijkstra",
    "float_sum",
    "greedy_pick",
    "greedy_score",
]

#: The greedy baseline stops after this many steps (CostBench's stimulation loop).
GREEDY_MAX_STEPS = 20


def greedy_score(tool: Tool, costs: Mapping[str, float]) -> float:
    """CostBench's greedy score: the cost of an atomic tool, cost / component count of a
    composite."""
    cost = costs[tool.name]
    return cost / len(tool.components) if tool.is_composite else cost


def greedy_pick(
    tools: Iterable[Tool],
    costs: Mapping[str, float],
    state: frozenset[str],
    previous: str | None,
) -> Tool | None:
    """CostBench's greedy choice: among ``tools`` (in registry order) whose inputs are held
    and which consume ``previous`` (the last output; ``None`` before the first step), the
    first one with the least :func:`greedy_score`.  ``None`` when nothing qualifies.

    As coded, a candidate's output may already be held; and nothing relaxes the "consume the
    previous output" rule (the relaxation App. B.2 describes never happens in the code).
    """
    best: Tool | None = None
    best_score = 0.0
    for tool in tools:
        if not state.issuperset(tool.inputs):
            continue
        if previous is not None and previous not in tool.inputs:
            continue
        score = greedy_score(tool, costs)
        if best is None or score < best_score:
            best, best_score = tool, score
    return best


# Ground truths are recomputed for every agent, scenario and block with the same tools and
# costs; the search is a pure function of its inputs, so one process remembers the answers.
_SOLVE_MEMO: OrderedDict[tuple[object, ...], tuple[tuple[str, ...], float] | None] = OrderedDict()
_SOLVE_MEMO_SIZE = 20_000  # a key shares its tools and prices with the env: ~1 KB each


def cheapest_path(
    goal: str,
    level: int,
    start: frozenset[str],
    tools: tuple[Tool, ...],
    prices: tuple[float, ...],
) -> tuple[tuple[str, ...], float] | None:
    """:func:`dijkstra`, remembered per process (a bounded LRU memo): ``tools`` with their
    ``prices`` from ``start`` to ``goal`` within one refinement ``level``."""
    # Within a task (goal) and level a tool's name stands for the tool (build_tools), and
    # names hash and compare far faster than the dataclasses.
    key = (goal, level, start, tuple(t.name for t in tools), prices)
    if key in _SOLVE_MEMO:
        _SOLVE_MEMO.move_to_end(key)
        return _SOLVE_MEMO[key]
    solved = dijkstra(goal, start, tools, prices)
    _SOLVE_MEMO[key] = solved
    if len(_SOLVE_MEMO) > _SOLVE_MEMO_SIZE:
        _SOLVE_MEMO.popitem(last=False)
    return solved


class _Held(int):
    """A state as a bit mask (one bit per type name) that orders like the frozenset it
    stands for: ``a < b`` is "proper subset", as ``frozenset.__lt__`` is, so heap ties on
    (cost, calls) resolve exactly as CostBench's frozenset entries do.  Equality and hash
    are the int's: one mask per set of names."""

    __slots__ = ()

    def __lt__(self, other: int) -> bool:
        return int.__and__(self, other) == self and int.__ne__(self, other)


def dijkstra(
    goal: str, start: frozenset[str], tools: tuple[Tool, ...], prices: tuple[float, ...]
) -> tuple[tuple[str, ...], float] | None:
    """CostBench's heap search: entries (cost, calls, state, path), first goal state popped.

    The states are :class:`_Held` masks, not frozensets: the same heap entries pushed in
    the same order and compared the same way (so the same path and cost), with integer
    tests instead of building and hashing a frozenset for every move considered.
    """
    bits: dict[str, int] = {}

    def bit(name: str) -> int:
        found = bits.get(name)
        if found is None:
            found = bits[name] = 1 << len(bits)
        return found

    start_mask = 0
    for name in start:
        start_mask |= bit(name)
    usable: list[tuple[str, int, int, float]] = []
    for tool, price in zip(tools, prices, strict=True):
        needs = 0
        for name in tool.inputs:
            needs |= bit(name)
        usable.append((tool.name, needs, bit(tool.output), price))
    goal_bit = bit(goal)
    heap: list[tuple[float, int, _Held, tuple[str, ...]]] = [(0.0, 0, _Held(start_mask), ())]
    visited: set[int] = set()
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        cost, calls, state, path = pop(heap)
        if state in visited:
            continue
        visited.add(state)
        if state & goal_bit:
            return path, cost
        for name, needs, output, price in usable:
            # A held output leads back to this (visited) state: skipped like any visited one.
            if state & output or needs & ~state:
                continue
            nxt = state | output
            if nxt in visited:
                continue
            push(heap, (cost + price, calls + 1, _Held(nxt), (*path, name)))
    return None


def float_sum(values: Iterable[float]) -> float:
    """The plain left-to-right float sum (CostBench adds costs this way; ``sum`` is the same
    today, this pins it)."""
    total = 0.0
    for value in values:
        total += value
    return total
