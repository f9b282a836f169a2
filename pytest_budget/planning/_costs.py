"""Reproducible CostBench tool costs (DESIGN.md section 5.3, CostBench App. B.6.1).

* ``seed_q = int(sha256(f"{seed}:{query_id}"), 16) mod (2**31 - 1)``.  DESIGN writes the
  constant 42; CostBench's Table 5 calls 42 the *global seed* (``tool_creation_seed`` in its
  config), so ``seed`` stands in for it and the default reproduces DESIGN exactly.
* Atomic costs: one ``random.Random(seed_q)`` stream, ``round(rng.uniform(lo, hi), 2)`` per
  atomic tool in :func:`atomic_cost_order` (over all six tasks, so a task's costs depend on
  the refinement level but not on which task is being played).
* Composite cost: ``round(max(1, sum(component costs) + noise), 2)`` with noise from
  ``numpy.random.default_rng(s).normal(0, noise_std * sqrt(k))`` for ``k`` components and
  ``s = int(sha256(f"{seed_q}:{name}"), 16) mod (2**31 - 1)``.

sha256 rather than Python's ``hash`` so the same query id gives the same costs in every process.
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from collections import OrderedDict
from collections.abc import Iterable

from numpy.random import default_rng

from pytest_budget.planning._tools import TASKS, Tool, atomic_chain

__all__ = [
    "SEED_MODULUS",
    "atomic_cost_order",
    "atomic_costs",
    "composite_cost",
    "derive_seed",
    "query_seed",
    "tool_costs",
]

SEED_MODULUS = 2**31 - 1


def derive_seed(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % SEED_MODULUS


def query_seed(query_id: str, seed: int = 42) -> int:
    return derive_seed(f"{seed}:{query_id}")


def atomic_cost_order(refinement_level: int) -> list[str]:
    """All six tasks' atomic names in draw order: Decides; Search + Steps per task; Selects."""
    return list(_atomic_cost_order(refinement_level))


@functools.cache
def _atomic_cost_order(refinement_level: int) -> tuple[str, ...]:
    chains = [atomic_chain(task, refinement_level) for task in TASKS]
    order = [chain[0].name for chain in chains]
    for chain in chains:
        order.extend(tool.name for tool in chain[1:-1])
    order.extend(chain[-1].name for chain in chains)
    return tuple(order)


def atomic_costs(
    seed_q: int, refinement_level: int, cost_range: tuple[float, float] = (15, 25)
) -> dict[str, float]:
    lo, hi = cost_range
    rng = random.Random(seed_q)
    return {name: round(rng.uniform(lo, hi), 2) for name in atomic_cost_order(refinement_level)}


def composite_cost(
    name: str, component_costs: Iterable[float], seed_q: int, noise_std: float = 0.1
) -> float:
    parts = list(component_costs)
    rng = default_rng(derive_seed(f"{seed_q}:{name}"))
    noise = float(rng.normal(0.0, noise_std * math.sqrt(len(parts))))
    return round(max(1.0, sum(parts) + noise), 2)


def tool_costs(
    tools: Iterable[Tool],
    seed_q: int,
    refinement_level: int,
    *,
    cost_range: tuple[float, float] = (15, 25),
    noise_std: float = 0.1,
) -> dict[str, float]:
    """Cost of every tool in ``tools`` (atomics from the shared stream, composites noised).

    A pure function of its arguments, remembered for the process (every agent of a cell,
    and every cost change that draws the same seed, needs the same costs): a fresh dict
    each call, so callers may edit it.
    """
    listed = tuple(tools)
    key = (
        tuple((tool.name, tool.components) for tool in listed),
        seed_q,
        refinement_level,
        tuple(cost_range),
        noise_std,
    )
    found = _COSTS_MEMO.get(key)
    if found is None:
        found = _COSTS_MEMO[key] = _tool_costs(
            listed, seed_q, refinement_level, cost_range, noise_std
        )
        if len(_COSTS_MEMO) > _COSTS_MEMO_SIZE:
            _COSTS_MEMO.popitem(last=False)
    else:
        _COSTS_MEMO.move_to_end(key)
    return dict(found)


# (tool names and components, seed_q, level, range, noise) -> costs; ~2 KB an entry.
_COSTS_MEMO: OrderedDict[tuple[object, ...], dict[str, float]] = OrderedDict()
_COSTS_MEMO_SIZE = 20_000


def _tool_costs(
    tools: tuple[Tool, ...],
    seed_q: int,
    refinement_level: int,
    cost_range: tuple[float, float],
    noise_std: float,
) -> dict[str, float]:
    atomic = atomic_costs(seed_q, refinement_level, cost_range)
    costs: dict[str, float] = {}
    for tool in tools:
        if tool.is_composite:
            parts = [atomic[c] for c in tool.components]
            costs[tool.name] = composite_cost(tool.name, parts, seed_q, noise_std)
        else:
            costs[tool.name] = atomic[tool.name]
    return costs
