"""What an agent returned, checked before any parser reads it.

Every call to a user's agent goes through :func:`pytest_budget._core.roles.call_role`, which hands
the value here.  :func:`reply_problem` says, in one line naming the type, why a value
cannot be an answer of its role (``None`` from a planner, a number from a tool agent, a
dict without the keys the role reads, a string over the raw-output size limit); the call
then ends as ``invalid`` with that reason instead of being read as an empty plan or a
wrong tool call.  :func:`safe_repr` shows any value, even one whose ``repr`` raises or
recurses, in at most a few hundred characters.

The size limit on raw outputs is per run (``--budget-max-output-chars``, set by the plugin
with :func:`set_run_output_limit`); :func:`output_limit` overrides it inside a block.
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from itertools import chain
from typing import Any

from pytest_budget._core.registry import reply_rule

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "OUTPUT_LIMIT",
    "current_output_limit",
    "describe",
    "output_limit",
    "reply_problem",
    "safe_repr",
    "set_run_output_limit",
]

#: Default limit on the characters of one raw agent output (a few hundred pages of text).
DEFAULT_MAX_OUTPUT_CHARS = 1_000_000
#: Set by :func:`output_limit` for the calls made inside a block (None: the run's limit).
OUTPUT_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "pytest_budget_output_limit", default=None
)
# The run's limit (``--budget-max-output-chars``), set once per process by the plugin.  A
# process-wide value, not a context variable: an async test's event loop may run in a
# context copied before the run set it.
_run_limit = DEFAULT_MAX_OUTPUT_CHARS
_PREVIEW = 200
#: Largest object reply (lists, dicts) read, in characters written out with every repeated
#: reference counted where it occurs; sizing one costs at most ~0.1 s.
MAX_SPELLED_OUT = 200_000
#: Nesting levels sized (paths are copied per level: sizing stays linear below this).
_SIZED_DEPTH = 200


def set_run_output_limit(max_chars: int) -> None:
    """The limit for every agent call of this process (the plugin calls it at start-up)."""
    global _run_limit
    _run_limit = max_chars


def current_output_limit() -> int:
    """The limit in force here: :func:`output_limit`'s, else the run's."""
    value = OUTPUT_LIMIT.get()
    return _run_limit if value is None else value


@contextmanager
def output_limit(max_chars: int) -> Iterator[None]:
    """Apply ``max_chars`` to the raw outputs of agent calls made inside the block."""
    token = OUTPUT_LIMIT.set(max_chars)
    try:
        yield
    finally:
        OUTPUT_LIMIT.reset(token)


def describe(value: object) -> str:
    """The value's type name, for a reason (``str of 10,485,760 characters`` for long text)."""
    name = type(value).__name__
    if isinstance(value, str):
        return f"{name} of {len(value):,} characters"
    return name


def safe_repr(value: object, limit: int = _PREVIEW) -> str:
    """``repr(value)`` in at most about ``limit`` characters; never raises, never stalls.

    Containers, dataclasses, numbers and text are written out here, the way ``repr``
    writes them, within a character budget and a depth limit: a huge integer (``repr``
    refuses more than 4,300 digits) shows its size, nesting deeper than
    :data:`_SHOWN_DEPTH` shows ``[...]`` (``repr`` would recurse), a cycle shows ``[...]``,
    and one list under many references (40 references 12 levels deep: 40**12 paths) stops
    at the budget.  Another object's own ``repr`` is called (a placeholder naming the type
    and the error when it raises or recurses).  No memory addresses: the same value reads
    the same in every run.
    """
    out: list[str] = []
    budget = [limit]
    _show(value, 0, set(), out, budget)
    text = "".join(out)
    if budget[0] < 0:
        text = text[: max(0, limit - 3)] + "..."
    return text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates


#: Deepest nesting :func:`safe_repr` spells out.
_SHOWN_DEPTH = 12
#: Integers with more bits than this are shown by their size, not their digits.
_SHOWN_INT_BITS = 3_000


def _emit(piece: str, out: list[str], budget: list[int]) -> bool:
    """Append ``piece``; False once the budget is spent (the caller stops walking)."""
    out.append(piece)
    budget[0] -= len(piece)
    return budget[0] >= 0


def _atom(value: object, limit: int) -> str | None:
    """The text of a value with no children, or None for a container or object."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > _SHOWN_INT_BITS:
            digits = int(value.bit_length() * math.log10(2)) + 1
            return f"<int of about {digits:,} digits>"
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, str):
        return repr(value[:limit])  # no need to build the repr of megabytes
    if isinstance(value, bytes | bytearray):
        return repr(bytes(value[:limit]))
    return None


def _show(value: object, depth: int, path: set[int], out: list[str], budget: list[int]) -> bool:
    atom = _atom(value, budget[0] + 1)
    if atom is not None:
        return _emit(atom, out, budget)
    if id(value) in path:
        return _emit("[...]", out, budget)  # a cycle
    if depth >= _SHOWN_DEPTH:
        return _emit("[...]" if isinstance(value, list) else "...", out, budget)
    children: Iterable[tuple[str | None, object]]  # lazy: a list of millions stops early
    if isinstance(value, dict):
        open_, close = "{", "}"
        children = ((None, pair) for pair in dict.items(value))
    elif isinstance(value, list | tuple | set | frozenset):
        open_, close = (
            "[]" if isinstance(value, list) else "()" if isinstance(value, tuple) else "{}"
        )
        children = ((None, item) for item in value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        open_, close = f"{type(value).__name__}(", ")"
        children = ((f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value))
    else:
        return _emit(_object_text(value, budget[0] + 1), out, budget)
    if not _emit(open_, out, budget):
        return False
    path.add(id(value))
    try:
        for index, (name, child) in enumerate(children):
            if index and not _emit(", ", out, budget):
                return False
            if name is not None and not _emit(f"{name}=", out, budget):
                return False
            shown_child: Any = child
            if isinstance(value, dict):
                pair: Any = child
                shown_child = pair[1]
                if not (_show(pair[0], depth + 1, path, out, budget) and _emit(": ", out, budget)):
                    return False
            if not _show(shown_child, depth + 1, path, out, budget):
                return False
    finally:
        path.discard(id(value))
    return _emit(close, out, budget)


def _object_text(value: object, limit: int) -> str:
    """``repr`` of an object of another type, or its type and the error ``repr`` raised."""
    try:
        text = repr(value)
    except Exception as exc:  # RecursionError, ValueError, anything a hostile repr raises
        return f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
    if not isinstance(text, str):  # pragma: no cover - repr() enforces str
        return f"<{type(value).__name__} object>"
    return _ADDRESS.sub("", text[:limit])


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _keys(mapping: Mapping[Any, Any]) -> str:
    try:
        keys = [safe_repr(key, 40) for key in list(mapping)[:8]]
    except Exception:
        return "keys unreadable"
    more = ", ..." if len(mapping) > 8 else ""
    return "keys: " + (", ".join(keys) + more if keys else "none")


def _too_long(value: object, limit: int) -> str | None:
    if isinstance(value, str) and len(value) > limit:
        return (
            f"returned {describe(value)}, over the {limit:,}-character limit for raw outputs "
            "(--budget-max-output-chars); not parsed"
        )
    return None


_NOT_ANSWERS = (type(None), bool, int, float, complex, bytes, bytearray)


def reply_problem(role: str, value: object, limit: int | None = None) -> str | None:
    """Why ``value`` cannot be an answer of ``role`` (one line naming its type), or None.

    Only what no parser of the role could read is refused here; everything else is left
    to the role's own parser (which reports its own reasons).
    """
    limit = current_output_limit() if limit is None else limit
    try:
        return _problem(role, value, limit)
    except Exception as exc:  # e.g. a mapping whose methods raise
        return f"returned {type(value).__name__}; reading it raised {type(exc).__name__}"


def _problem(role: str, value: object, limit: int) -> str | None:
    problem = _role_problem(role, value, limit)
    if problem is None and isinstance(value, list | tuple | dict):
        if _spelled_out_size(value, MAX_SPELLED_OUT) > MAX_SPELLED_OUT:
            # Every reader (parsers, json.dumps, repr) walks each reference anew: one list
            # under many references is exponential work however few objects it holds.
            return (
                f"returned a {type(value).__name__} of more than {MAX_SPELLED_OUT:,} "
                "characters written out (repeated references counted each time they occur); "
                "not parsed"
            )
    return problem


def _role_problem(role: str, value: object, limit: int) -> str | None:
    rule = reply_rule(role)
    if rule is None:
        # No rule (an actor): the reply is an action for the environment, which scores
        # anything it cannot read as a malformed action and goes on; only size is checked.
        return _free_problem(value, limit)
    if isinstance(value, str):
        return _too_long(value, limit)
    if isinstance(value, _NOT_ANSWERS):
        return f"returned {describe(value)}; expected {rule.expected}"
    if isinstance(value, Mapping) and rule.mapping_keys:
        if not any(key in value for key in rule.mapping_keys):
            wanted = " or ".join(repr(key) for key in rule.mapping_keys)
            return (
                f"returned a {type(value).__name__} without {wanted} ({_keys(value)}); "
                f"expected {rule.expected}"
            )
        return _mapping_problem(value, limit)
    if rule.accepts is not None and not rule.accepts(value):
        return f"returned {describe(value)}; expected {rule.expected}"
    return _too_long(getattr(value, "text", None), limit) if rule.sized_text else None


_TEXTS = (str, bytes, bytearray)
_NESTED = (list, tuple, dict)


def _spelled_out_size(value: object, limit: int) -> int:
    """About how many characters ``value`` takes written out as JSON, each reference
    counted where it occurs (a cycle once); stops counting past ``limit`` (the result is
    then only known to be over it)."""
    size = 0
    # Depth-first, the containers on the current path in ``path`` (a cycle is cut where it
    # closes): a container's exit marker sits below its items on the stack, so it leaves
    # the path once they are done.  One set for the walk, not one per container.  Leaves
    # are counted where they are met: only containers go on the stack.
    path: set[int] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack and size <= limit:
        node, leaving = stack.pop()
        if leaving:
            path.discard(id(node))
        elif isinstance(node, _TEXTS):
            size += len(node) + 2
        elif (
            isinstance(node, _NESTED)
            and id(node) not in path
            and len(path) < _SIZED_DEPTH  # deeper: every reader stops there (RecursionError)
        ):
            path.add(id(node))
            stack.append((node, True))
            # A dict's keys and values, not its (key, value) pairs: a pair is a new
            # object whose id may be reused once freed.
            items = (
                chain.from_iterable(dict.items(node))
                if type(node) is dict or isinstance(node, dict)
                else node
            )
            size += 2
            for item in items:
                if isinstance(item, _TEXTS):
                    size += len(item) + 3
                elif isinstance(item, _NESTED):
                    stack.append((item, False))
                    size += 1
                else:
                    size += 5
                if size > limit:
                    break
        else:
            size += 4
    return size


def _mapping_problem(value: Mapping[Any, Any], limit: int) -> str | None:
    for key in ("text", "content"):
        long = _too_long(value.get(key), limit)
        if long is not None:
            return f"{key!r} {long}"
    return None


def _free_problem(value: object, limit: int) -> str | None:
    if isinstance(value, Mapping):
        return _mapping_problem(value, limit)
    text = getattr(value, "text", None)  # a reply object (an actor's ActorReply)
    return _too_long(text if isinstance(text, str) else value, limit)
