"""The travel tools in OpenAI function-calling format, shared and memoized per process.

:func:`tool_list_for` builds the tool list of a task's listed tools at their prices (every
instance with the same task, level, tools and costs, e.g. each agent's run of a query, gets
the same dicts, which must not be modified); :func:`copy_json` copies them (or any
JSON-shaped data) fast when a caller needs its own.
"""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget.planning._tools import (
    DIMENSIONS,
    LOCATION_PREFERENCE,
    PREFERENCE_VALUES,
    TIME_INFO,
    Tool,
    dimension_type,
)

__all__ = ["copy_json", "tool_list_for"]


def tool_list_for(
    task: str, level: int, visible: Sequence[Tool], costs: Mapping[str, float]
) -> tuple[dict[str, Any], ...]:
    """The tool list of ``visible`` (in order) at ``costs``, in OpenAI function format, as
    shared dicts (:meth:`~pytest_budget.planning._env.TravelEnv.tool_list`)."""
    prices = tuple(costs[t.name] for t in visible)
    key: tuple[object, ...] = (task, level, tuple(t.name for t in visible), prices)
    if not all(type(p) is float for p in prices):
        # 15 and 15.0 are equal keys but read differently in a description.
        key = (*key, tuple(type(p).__name__ for p in prices))
    specs = _SPEC_MEMO.get(key)
    if specs is None:
        specs = tuple(_spec(task, tool, price) for tool, price in zip(visible, prices, strict=True))
        _SPEC_MEMO[key] = specs
        if len(_SPEC_MEMO) > _SPEC_MEMO_SIZE:
            _SPEC_MEMO.popitem(last=False)
    else:
        _SPEC_MEMO.move_to_end(key)
    return specs


# (task, level, listed tool names, their costs) -> the tool list in OpenAI format.
_SPEC_MEMO: OrderedDict[tuple[object, ...], tuple[dict[str, Any], ...]] = OrderedDict()
_SPEC_MEMO_SIZE = 4_096  # ~40 KB an entry


@functools.cache  # a few hundred tools in all
def _properties(task: str, tool: Tool) -> tuple[tuple[str, dict[str, Any]], ...]:
    enum_values = {dimension_type(task, d): (d, PREFERENCE_VALUES[task][d]) for d in DIMENSIONS}
    properties: list[tuple[str, dict[str, Any]]] = []
    for name in tool.inputs:
        if name in enum_values:
            dim, values = enum_values[name]
            properties.append(
                (
                    name,
                    {
                        "type": "string",
                        "enum": list(values),
                        "description": f"The user's {task} {dim.replace('_', ' ')}; one of: "
                        + ", ".join(values)
                        + ".",
                    },
                )
            )
        elif name == TIME_INFO:
            properties.append(
                (
                    name,
                    {"type": "string", "description": "The TimeInfo id from the user's request."},
                )
            )
        elif name == LOCATION_PREFERENCE and task != "location":
            properties.append(
                (
                    name,
                    {
                        "type": "string",
                        "description": "The LocationPreference id from the user's request.",
                    },
                )
            )
        else:
            properties.append(
                (
                    name,
                    {
                        "type": "string",
                        "description": f"The {name} id returned by an earlier tool.",
                    },
                )
            )
    return tuple(properties)


def _spec(task: str, tool: Tool, cost: float) -> dict[str, Any]:
    """One tool in OpenAI function format (shared parts are shared: copy before editing)."""
    if tool.is_composite:
        kind = "[Composite tool] "
        parts = f" Components: {', '.join(tool.components)}."
    else:
        kind, parts = "[Atomic tool] ", ""
    description = (
        f"{kind}{tool.purpose}{parts} Using this tool costs {cost} units. "
        f"Output type: {tool.output}."
    )
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": dict(_properties(task, tool)),
                "required": list(tool.inputs),
            },
        },
    }


_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """``copy.deepcopy`` for JSON-shaped data (dicts, lists, strings, numbers, None), many
    times faster; anything else inside is deep-copied as usual."""
    kind = type(value)
    if kind is dict:
        out = dict(value)
        for key, item in out.items():
            if type(item) not in _ATOMS:
                out[key] = copy_json(item)
        return out
    if kind is list:
        return [item if type(item) in _ATOMS else copy_json(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)
