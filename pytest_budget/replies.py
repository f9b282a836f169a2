"""What an agent returned, checked before any parser reads it.

Every call to a user's agent goes through :func:`pytest_budget.roles.call_role`, which hands
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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pytest_budget.suite_registry import reply_rule

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
    """``repr(value)`` cut to ``limit`` characters; never raises (a ``repr`` that raises or
    recurses gives a placeholder naming the type and the error)."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # no need to build the repr of megabytes
    try:
        text = repr(value)
    except Exception as exc:  # a hostile or broken object
        return f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
    if not isinstance(text, str):  # pragma: no cover - repr() enforces str
        return f"<{type(value).__name__} object>"
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
