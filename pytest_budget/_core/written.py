"""Tokens the agents no model meters write, counted with the reference tokenizer.

A model agent's spend comes from the usage its model reports (the runtime counts it per
cell, :mod:`pytest_budget.models._cell_calls`).  The reference agents, and agents of your
own that call no metered model, report nothing; so every reply they give is counted once,
as it comes back from :func:`pytest_budget._core.roles.call_role`, with
:func:`~pytest_budget._core.tokens.count_tokens`.  Offline runs then have a spend axis too.

The counts of the running cell live in :data:`CELL_WRITTEN` (role -> tokens), set per
cell by the fixtures; work started ahead for a cell gets its own counter and is merged in.
Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pytest_budget._core.replies import MAX_SPELLED_OUT, safe_repr
from pytest_budget._core.tokens import count_tokens

__all__ = [
    "CELL_WRITTEN",
    "count_reply",
    "merge_written",
    "reply_text",
    "shared_work",
    "with_written",
]

#: role -> reference tokens written by the running cell's unmetered agents (None: no cell).
CELL_WRITTEN: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "pytest_budget_cell_written", default=None
)


def _plain(value: object) -> Any:
    """A JSON form of a reply object: a dataclass or pydantic model as its fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return str(value)


# json.dumps(reply, default=_plain, ensure_ascii=False), without building an encoder for
# every reply (an encoder keeps no state between calls).
_REPLY_JSON = json.JSONEncoder(default=_plain, ensure_ascii=False)


def reply_text(reply: object) -> str:
    """What an agent wrote: its text (a string, or an object's ``text``), else its JSON."""
    if isinstance(reply, str):
        return reply
    text = getattr(reply, "text", None)
    if isinstance(text, str):
        return text
    try:
        return _REPLY_JSON.encode(reply)
    except Exception:  # an agent's object may raise anything from its hooks
        # Written out within the reply size limit it has passed (huge integers, deep
        # nesting and a __str__ or __repr__ that raises included).
        return safe_repr(reply, MAX_SPELLED_OUT)


def count_reply(agent: object, role: str, reply: object) -> None:
    """Count the tokens of ``reply`` for the running cell, unless its agent is metered by a
    model (``metered = True``: the runtime counts what the model reported instead)."""
    counts = CELL_WRITTEN.get()
    if counts is None or getattr(agent, "metered", False) is True:
        return
    counts[role] = counts.get(role, 0) + count_tokens(reply_text(reply))


@contextmanager
def shared_work() -> Iterator[None]:
    """Replies inside are counted for no cell: work every agent of the run shares (triage's
    Phase 0, the awareness rollouts the estimators read) is done once, by whichever cell
    needs it first, and would otherwise land on that cell alone (and on another one under
    xdist)."""
    token = CELL_WRITTEN.set(None)
    try:
        yield
    finally:
        CELL_WRITTEN.reset(token)


def merge_written(into: dict[str, int], other: Mapping[str, int]) -> None:
    for role, tokens in other.items():
        into[role] = into.get(role, 0) + tokens


_ROLE_KEYS = ("calls", "replayed", "input_tokens", "output_tokens", "reasoning_tokens")


def _empty_role() -> dict[str, Any]:
    return {**dict.fromkeys(_ROLE_KEYS, 0), "usd": None, "counted_tokens": 0}


def with_written(spend: Mapping[str, Any] | None, written: Mapping[str, int]) -> dict[str, Any]:
    """The cell's ``spend``: its model calls (``spend``, None without a model runtime) with
    the counted tokens of ``written`` added per role and in all.  ``usd`` stays null where
    no model call was priced (reference agents cost tokens, not dollars)."""
    out: dict[str, Any] = dict(spend) if spend is not None else _empty_role()
    out.setdefault("reasoning_tokens", 0)
    roles = {role: dict(found) for role, found in (out.get("roles") or {}).items()}
    total = 0
    for role, tokens in written.items():
        entry = roles.setdefault(role, _empty_role())
        entry["counted_tokens"] = entry.get("counted_tokens", 0) + tokens
        total += tokens
    for entry in roles.values():
        entry.setdefault("counted_tokens", 0)
        entry.setdefault("reasoning_tokens", 0)
    out["counted_tokens"] = out.get("counted_tokens", 0) + total
    out["roles"] = {role: roles[role] for role in sorted(roles)}
    return out
