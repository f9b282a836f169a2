"""Rollouts (logged trajectories) and the JSONL file format they are stored in.

A rollout is what an actor did with no budget constraint: ordered turns, each with what
the actor was shown, what it did and its usage vector (one number per budget dimension),
plus the outcome.  The awareness suite replays rollouts as probes (``probes.py``).

File format: JSON Lines, one rollout per line (``docs/reference/rollout.schema.json``)::

    {"schema_version": 1, "id": "sokoban-8x8-0007", "env": "sokoban",
     "budget": {"tokens": 2500}, "success": true,
     "turns": [{"usage": {"tokens": 212}, "observation": "...", "action": "...",
                "info": {...}}, ...],
     "meta": {...}}

Only ``id``, ``env``, ``budget``, ``success`` and ``turns[].usage`` are required;
``schema_version`` defaults to 1.  ``env`` is a free label (a user's own environment is
welcome).  Every malformed line raises :class:`RolloutFileError` with one line naming the
file, the line and what is wrong.  Plain Python: no pytest here.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_budget._core.files import write_atomic

__all__ = [
    "ROLLOUT_SCHEMA_VERSION",
    "ActorObservation",
    "ActorReply",
    "Rollout",
    "RolloutFileError",
    "Turn",
    "actor_reply",
    "as_read_back",
    "read_json_file",
    "read_rollouts",
    "read_text_file",
    "rollout_from_dict",
    "rollout_to_dict",
    "write_rollouts",
]

ROLLOUT_SCHEMA_VERSION = 1


class RolloutFileError(ValueError):
    """A rollout file or record that cannot be read; the message is one line."""


def read_text_file(path: Path, what: str, empty: str | None = None) -> str:
    """The text of ``path`` (a log named ``what`` in the messages); a missing, unreadable or
    empty file is a one-line :class:`RolloutFileError` (``empty``: its wording)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RolloutFileError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RolloutFileError(f"{path}: cannot read {what} ({exc})") from None
    if not text.strip():
        raise RolloutFileError(f"{path}: empty file, {empty or f'expected {what}'}")
    return text


def read_json_file(path: Path, what: str) -> Any:
    """The one JSON document in ``path``; a truncated file is a one-line error too."""
    text = read_text_file(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RolloutFileError(
            f"{path}: not JSON (line {exc.lineno}: {exc.msg}); expected {what} (truncated file?)"
        ) from None
    except RecursionError:
        raise RolloutFileError(f"{path}: JSON nested too deeply to read") from None


@dataclass(frozen=True)
class Turn:
    """One actor turn: what it saw, what it did, and the usage it cost (per dimension)."""

    usage: Mapping[str, float]
    observation: str | None = None
    action: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rollout:
    """A finished trajectory with its budget caps and outcome.

    ``budget`` names the dimensions (``{"tokens": 2500}``, or Warehouse's three).  Ground
    truth *feasible* = ``success`` and the total usage within the cap in every dimension.
    """

    id: str
    env: str
    budget: Mapping[str, float]
    success: bool
    turns: tuple[Turn, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def T(self) -> int:  # the papers' name for the number of turns
        return len(self.turns)

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.budget)

    @cached_property
    def _sums(self) -> tuple[dict[str, float], ...]:
        # Summed once per rollout: every cell of an environment probes the same rollouts,
        # and ``total``/``feasible`` are read for each (the rollout is frozen).
        running = dict.fromkeys(self.budget, 0.0)
        out = []
        for turn in self.turns:
            for dim in running:
                running[dim] += float(turn.usage.get(dim, 0.0))
            out.append(dict(running))
        return tuple(out)

    def cumulative(self) -> list[dict[str, float]]:
        """C_1 .. C_T: usage summed over turns 1..k, per budget dimension."""
        return [dict(sums) for sums in self._sums]

    def total(self) -> dict[str, float]:
        """C_T per dimension (zeros for a rollout without turns)."""
        return dict(self._sums[-1]) if self._sums else dict.fromkeys(self.budget, 0.0)

    @cached_property
    def feasible(self) -> bool:
        total = self._sums[-1] if self._sums else dict.fromkeys(self.budget, 0.0)
        return self.success and all(total[dim] <= cap for dim, cap in self.budget.items())


@dataclass(frozen=True)
class ActorObservation:
    """What an actor is handed each turn: ``text`` is the prompt a model would read.

    ``state`` is the environment's own structured view (a Sokoban ``Level``, a Warehouse
    state dict) for programmatic actors; ``turn`` counts from 1.
    """

    env: str
    rollout_id: str
    turn: int
    text: str
    state: Any = None


@dataclass(frozen=True)
class ActorReply:
    """An actor's answer normalised: its text and, when it reported them, its tokens."""

    text: str
    tokens: float | None = None


def actor_reply(reply: Any) -> ActorReply:
    """Accept raw text, an :class:`ActorReply`, or a mapping with ``text`` and ``usage``.

    ``usage`` may give ``tokens`` or ``input_tokens``/``output_tokens`` (summed).  Anything
    else becomes its ``str`` so the environment's parser can reject it as a bad action.
    """
    if isinstance(reply, ActorReply):
        if isinstance(reply.text, str) and _usable(reply.tokens):
            return reply
        # Built by the agent: its fields are whatever it put there.
        return ActorReply(_text(reply.text), _tokens(reply.tokens))
    if isinstance(reply, str):
        return ActorReply(reply)
    if isinstance(reply, Mapping):
        text = reply.get("text", reply.get("content", ""))
        usage = reply.get("usage")
        tokens: float | None = None
        if isinstance(usage, Mapping):
            if isinstance(usage.get("tokens"), int | float):
                tokens = _tokens(usage["tokens"])
            else:
                parts = [_tokens(usage.get(k)) for k in ("input_tokens", "output_tokens")]
                if all(p is not None for p in parts):
                    tokens = _tokens(sum(p for p in parts if p is not None))
        return ActorReply(text if isinstance(text, str) else _text(text), tokens)
    return ActorReply(_text(reply))


def _usable(tokens: object) -> bool:
    """Whether an :class:`ActorReply`'s ``tokens`` can be read as they are."""
    if tokens is None:
        return True
    if isinstance(tokens, bool) or not isinstance(tokens, int | float):
        return False
    try:
        float(tokens)
    except OverflowError:
        return False
    return True


def _tokens(value: object) -> float | None:
    """A reported token count as a float (None when it is not a number).

    An integer past float's range becomes an infinity, which the environments ignore with
    a note, as they do a negative or NaN count.
    """
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _text(value: object) -> str:
    """``str(value)`` for the environment's parser to reject; never raises."""
    if isinstance(value, str):
        return value
    try:
        text = str(value)
    except Exception as exc:  # a hostile object: its str() raises or recurses
        return f"<{type(value).__name__} object; str() raised {type(exc).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__} object>"


# ------------------------------------------------------------------------ dict form


def rollout_to_dict(rollout: Rollout) -> dict[str, Any]:
    turns = []
    for turn in rollout.turns:
        entry: dict[str, Any] = {"usage": dict(turn.usage)}
        if turn.observation is not None:
            entry["observation"] = turn.observation
        if turn.action is not None:
            entry["action"] = turn.action
        if turn.info:
            entry["info"] = dict(turn.info)
        turns.append(entry)
    out: dict[str, Any] = {
        "schema_version": ROLLOUT_SCHEMA_VERSION,
        "id": rollout.id,
        "env": rollout.env,
        "budget": dict(rollout.budget),
        "success": rollout.success,
        "turns": turns,
    }
    if rollout.meta:
        out["meta"] = dict(rollout.meta)
    return out


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RolloutFileError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise RolloutFileError(f"{what} must be finite, got {value!r}")
    if number < 0:
        raise RolloutFileError(f"{what} must not be negative, got {value!r}")
    return number


def rollout_from_dict(data: Any) -> Rollout:
    """Validate one rollout record; raises :class:`RolloutFileError` (no location)."""
    if not isinstance(data, dict):
        raise RolloutFileError(f"a rollout must be a JSON object, got {type(data).__name__}")
    version = data.get("schema_version", ROLLOUT_SCHEMA_VERSION)
    if version != ROLLOUT_SCHEMA_VERSION:
        raise RolloutFileError(
            f"schema_version {version!r} is not supported (this version reads "
            f"{ROLLOUT_SCHEMA_VERSION}); re-export the rollouts or upgrade pytest-budget"
        )
    for key in ("id", "env", "budget", "success", "turns"):
        if key not in data:
            raise RolloutFileError(f"missing field {key!r}")
    rollout_id, env = data["id"], data["env"]
    if not isinstance(rollout_id, str) or not rollout_id:
        raise RolloutFileError(f"'id' must be a non-empty string, got {rollout_id!r}")
    if not isinstance(env, str) or not env:
        raise RolloutFileError(f"'env' must be a non-empty string, got {env!r}")
    budget_raw = data["budget"]
    if not isinstance(budget_raw, dict) or not budget_raw:
        raise RolloutFileError("'budget' must be an object like {\"tokens\": 2500}")
    budget = {str(dim): _number(cap, f"budget[{dim!r}]") for dim, cap in budget_raw.items()}
    if any(cap == 0 for cap in budget.values()):
        raise RolloutFileError("every budget cap must be positive")
    success = data["success"]
    if not isinstance(success, bool):
        raise RolloutFileError(f"'success' must be true or false, got {success!r}")
    turns_raw = data["turns"]
    if not isinstance(turns_raw, list):
        raise RolloutFileError("'turns' must be a list")
    if not turns_raw:
        raise RolloutFileError("'turns' is empty: a rollout needs at least one turn")
    turns = []
    for index, raw in enumerate(turns_raw, start=1):
        where = f"turns[{index - 1}]"
        if not isinstance(raw, dict):
            raise RolloutFileError(f"{where} must be an object")
        usage_raw = raw.get("usage")
        if not isinstance(usage_raw, dict):
            raise RolloutFileError(f"{where} has no 'usage' object")
        usage = {str(d): _number(v, f"{where}.usage[{d!r}]") for d, v in usage_raw.items()}
        missing = [dim for dim in budget if dim not in usage]
        if missing:
            raise RolloutFileError(f"{where}.usage lacks budget dimension {missing[0]!r}")
        observation, action = raw.get("observation"), raw.get("action")
        for name, value in (("observation", observation), ("action", action)):
            if value is not None and not isinstance(value, str):
                raise RolloutFileError(f"{where}.{name} must be a string")
        info = raw.get("info", {})
        if not isinstance(info, dict):
            raise RolloutFileError(f"{where}.info must be an object")
        turns.append(Turn(usage, observation, action, info))
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise RolloutFileError("'meta' must be an object")
    return Rollout(rollout_id, env, budget, success, tuple(turns), meta)


# ------------------------------------------------------------------------ files


def read_rollouts(path: str | os.PathLike[str]) -> list[Rollout]:
    """Every rollout in a JSONL file (blank lines skipped); ids must be unique."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # tolerate an editor's byte-order mark
    except FileNotFoundError:
        raise RolloutFileError(f"{path}: no such rollout file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RolloutFileError(f"{path}: cannot read rollout file ({exc})") from None
    rollouts: list[Rollout] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RolloutFileError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise RolloutFileError(f"{path}:{number}: JSON nested too deeply to read") from None
        try:
            rollout = rollout_from_dict(data)
        except RolloutFileError as exc:
            raise RolloutFileError(f"{path}:{number}: {exc}") from None
        if rollout.id in seen:
            raise RolloutFileError(
                f"{path}:{number}: duplicate rollout id {rollout.id!r} (first on line "
                f"{seen[rollout.id]})"
            )
        seen[rollout.id] = number
        rollouts.append(rollout)
    if not rollouts:
        raise RolloutFileError(f"{path}: no rollouts in file")
    return rollouts


def write_rollouts(path: str | os.PathLike[str], rollouts: Iterable[Rollout]) -> Path:
    """Write rollouts as JSONL atomically (a reader never sees a half-written file)."""
    lines = (json.dumps(rollout_to_dict(r), separators=(",", ":")) + "\n" for r in rollouts)
    return write_atomic(path, "".join(lines))


def as_read_back(rollouts: Iterable[Rollout]) -> list[Rollout]:
    """``rollouts`` exactly as :func:`read_rollouts` returns them after :func:`write_rollouts`.

    Generated rollouts hold the environment's own types (an ``int`` budget cap, tuples in
    ``info``); read back from a file they hold floats and lists.  A process that generated
    a set and one that read it from the cache must see the same values.
    """
    return [rollout_from_dict(json.loads(json.dumps(rollout_to_dict(r)))) for r in rollouts]
