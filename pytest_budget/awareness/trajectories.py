"""Import logged coding-agent trajectories (SWE-bench style) as awareness rollouts.

Two log formats are read besides our own rollout JSONL (``rollouts.py``):

``mini-swe-agent``
    A ``.traj.json`` file (one trajectory per file), or JSON Lines with one such trajectory
    per line.  Fields read: ``messages`` (``{role, content, extra?}``), each assistant
    call's usage at ``messages[i].extra.response.usage``, ``info.exit_status``,
    ``info.config.model.model_name`` and ``instance_id`` (or ``info.instance_id``).

``openai-chat``
    JSON Lines, one transcript per line:
    ``{"id"?, "model"?, "messages": [...], "resolved"|"success"?, ...}``; every assistant
    message carries a ``usage`` object.

Both formats give ``usage`` as ``prompt_tokens``, ``completion_tokens`` and optionally
``total_tokens``, ``completion_tokens_details.reasoning_tokens`` and
``prompt_tokens_details.cached_tokens``.

Turns and their usage (dimension ``"tokens"``)
    One turn per assistant call.  A chat API re-sends the whole history on every call, so
    the raw ``prompt_tokens`` counts earlier turns again.  As in BAGEN's public code the
    turn's input is what is *new* since the previous call::

        new_input_1 = prompt_1
        new_input_i = max(0, prompt_i - prompt_(i-1) - visible_(i-1))      (i >= 2)
        visible_j   = max(0, completion_j - reasoning_j)   (reasoning tokens are not re-sent)
        usage_i     = new_input_i + completion_i           (the call's own output in full)

    "Previous call" is the previous call that is kept (see the missing-usage policy).  A
    negative difference (history trimmed or compacted) is clamped to 0 and flagged
    (``Turn.info["clamped"]``, ``meta["clamped_turns"]``).  ``Turn.info`` keeps the raw
    counts: ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (as logged, else
    prompt + completion), ``reasoning_tokens`` / ``cached_tokens`` when logged,
    ``new_input_tokens`` and ``message_index``.

System prompt
    The first ``system``/``developer`` message before the first assistant call is kept
    whole in ``meta["actor_system_prompt"]``: the awareness estimator is shown it first, as
    BAGEN replays the actor's own system prompt (:mod:`pytest_budget.awareness.dialogue`).

Observations and actions
    A turn's ``observation`` is the ``user``/``tool``/``function`` content that arrived
    since the previous assistant message (the task statement for turn 1), joined by blank
    lines; ``system``/``developer`` prompts and mini-swe-agent's final ``exit`` message
    belong to no turn.  Its ``action`` is the assistant content plus one
    ``[tool call] name(arguments)`` line per tool call.  Texts longer than
    :data:`MAX_TEXT_CHARS` (2,000) keep their first and last 1,000 characters around a
    ``[... N characters omitted ...]`` marker.

Success
    The first rule that applies: the caller's ``resolved={id: bool}`` mapping (e.g. read
    from a SWE-bench evaluation report); then, for mini-swe-agent, a boolean top-level
    ``resolved``, then ``info.resolved``, then ``info.exit_status == "Submitted"`` (a
    submitted patch counts as success when nothing says whether it resolved the issue; a
    missing or null exit status is no success); for openai-chat, a boolean ``resolved``,
    then ``success``, and a transcript with neither is an error.  ``meta["success_rule"]``
    records which rule decided.

Ids
    mini-swe-agent: ``instance_id``, else ``info.instance_id``; openai-chat: ``id``; else
    the file name without ``.traj.json``/``.jsonl``/... , plus ``:<line>`` when the file
    holds several records.  Ids must be unique over one :func:`load_trajectories` call.

Turn cap
    At most ``max_turns`` (160, the paper's SWE-bench cap) assistant calls are kept; a
    longer trajectory is cut after call 160, flagged (``meta["truncated"]``), and counts as
    *unsuccessful*: under the cap it did not finish (the logged outcome stays in
    ``meta["logged_success"]``).

Budget and family
    The env label (rollout family) is ``env=`` when given, else ``swe-<model>`` (the model
    name's last ``/`` segment, lower-cased; other characters than ``a-z0-9._-`` become
    ``-``), else ``swe``.  The budget is ``{"tokens": budget}`` when the caller gives one,
    else the family's median total tokens over every imported rollout of that family in
    the same :func:`load_trajectories` call (the paper's "rollout-family-specific median
    budgets"; numpy's median, so the mean of the two middle totals for an even count).

Bad input
    Every problem raises :class:`RolloutFileError` with one line naming the file, the line
    (JSON Lines) and the message index: an unreadable, empty, truncated or unparseable
    file, a record that is not an object, ``messages`` that is not a list, a message that
    is not an object, an unknown role, content of the wrong type, a malformed usage object
    (not an object, ``prompt_tokens``/``completion_tokens`` missing, not a number, negative
    or not finite), a non-boolean outcome, no assistant message, a duplicate id.  An
    assistant call with *no* usage (absent or null) is an error by default; with
    ``on_missing_usage="skip"`` the call is dropped from the turns (its observation and
    action are lost) and counted in ``meta["skipped_turns"]``; a trajectory left with no
    turn is still an error.  Missing usage is checked on every call, even past the cap.

Files in our own rollout format are passed through :func:`read_rollouts` unchanged
(``budget``, ``env`` and ``max_turns`` apply to imported logs only).

The bundled ``data/swe_synthetic.traj.jsonl`` is SYNTHETIC: written by
:func:`synthesize_swe_trajectories` (deterministic), marked ``info.synthetic = true`` in every
record and in its file name; it is no real agent's log.  Regenerate it with
``python -m pytest_budget.awareness.trajectories``.  Plain Python and numpy: no pytest.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pytest_budget.awareness.rollouts import Rollout, RolloutFileError, Turn, read_rollouts

__all__ = [
    "FORMATS",
    "MAX_TEXT_CHARS",
    "MAX_TURNS",
    "SYNTHETIC_COUNT",
    "SYNTHETIC_ENV",
    "SYNTHETIC_FILE",
    "SYNTHETIC_SEED",
    "TrajectoryFormat",
    "bundled_swe_path",
    "bundled_swe_rollouts",
    "detect_format",
    "family_label",
    "load_trajectories",
    "synthesize_swe_trajectories",
    "synthetic_swe_text",
]

TrajectoryFormat = Literal["pytest-budget", "mini-swe-agent", "openai-chat"]
FORMATS: tuple[TrajectoryFormat, ...] = ("pytest-budget", "mini-swe-agent", "openai-chat")
MAX_TURNS = 160
MAX_TEXT_CHARS = 2000

SYNTHETIC_FILE = "swe_synthetic.traj.jsonl"
SYNTHETIC_ENV = "swe-synthetic"
SYNTHETIC_SEED = 42
SYNTHETIC_COUNT = 32

_OBSERVATION_ROLES = frozenset({"user", "tool", "function"})
_ROLES: dict[str, frozenset[str]] = {
    "mini-swe-agent": frozenset({"system", "developer", "assistant", "exit"}) | _OBSERVATION_ROLES,
    "openai-chat": frozenset({"system", "developer", "assistant"}) | _OBSERVATION_ROLES,
}
_USAGE_AT = {"mini-swe-agent": "extra.response.usage", "openai-chat": "usage"}
_STEM_SUFFIXES = (".traj.jsonl", ".traj.json", ".jsonl", ".json", ".traj")


# ------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class _Record:
    path: Path
    line: int | None  # None: a JSON document spread over several lines
    data: dict[str, Any]
    alone: bool = False  # the only record in its file

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else str(self.path)


def _read_records(path: Path) -> list[_Record]:
    """The file as one JSON object, else as JSON Lines of objects (blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RolloutFileError(f"{path}: no such trajectory file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RolloutFileError(f"{path}: cannot read trajectory file ({exc})") from None
    if not text.strip():
        raise RolloutFileError(f"{path}: empty file, no trajectories")
    try:
        whole: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        whole_error: json.JSONDecodeError | None = exc
    except RecursionError:
        raise RolloutFileError(f"{path}: JSON nested too deeply to read") from None
    else:
        if not isinstance(whole, dict):
            raise RolloutFileError(
                f"{path}: expected a JSON object (or JSON Lines of objects), "
                f"got a JSON {type(whole).__name__}"
            )
        one_line = "\n" not in text.strip()
        return [_Record(path, 1 if one_line else None, whole, alone=True)]
    records: list[_Record] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except RecursionError:
            raise RolloutFileError(f"{path}:{number}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            if not records and whole_error is not None and len(lines) > 1:
                # A document spread over several lines (a pretty-printed .traj.json) that
                # does not parse as a whole: truncated or corrupt.
                raise RolloutFileError(
                    f"{path}: not valid JSON, truncated or corrupt? ({whole_error.msg} at "
                    f"line {whole_error.lineno} column {whole_error.colno})"
                ) from None
            raise RolloutFileError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise RolloutFileError(
                f"{path}:{number}: a trajectory must be a JSON object, got {type(data).__name__}"
            )
        records.append(_Record(path, number, data))
    if len(records) == 1:
        records[0] = _Record(path, records[0].line, records[0].data, alone=True)
    return records


def _sniff(data: Mapping[str, Any]) -> TrajectoryFormat | None:
    if "turns" in data and "budget" in data:
        return "pytest-budget"
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None
    if "trajectory_format" in data or isinstance(data.get("info"), dict):
        return "mini-swe-agent"
    for message in messages:
        if isinstance(message, dict):
            if isinstance(message.get("extra"), dict):
                return "mini-swe-agent"
            if "usage" in message:
                return "openai-chat"
    return None


def detect_format(path: str | os.PathLike[str]) -> TrajectoryFormat:
    """The format of a trajectory file, sniffed from its first record's content.

    Our rollout format has ``turns`` and ``budget``; mini-swe-agent has ``messages`` plus
    ``trajectory_format``, an ``info`` object or messages with ``extra``; openai-chat has
    ``messages`` whose entries carry ``usage``.  Anything else is a :class:`RolloutFileError`.
    """
    path = Path(path)
    first = _read_records(path)[0]
    fmt = _sniff(first.data)
    if fmt is None:
        raise RolloutFileError(
            f"{first.where}: cannot tell the trajectory format (expected a pytest-budget "
            "rollout, a mini-swe-agent trajectory or an openai-chat transcript with usage); "
            "pass the format explicitly"
        )
    return fmt


# ------------------------------------------------------------------------ one record


@dataclass(frozen=True)
class _Usage:
    prompt: float
    completion: float
    raw: dict[str, float]  # as logged, for Turn.info

    @property
    def visible(self) -> float:
        return max(0.0, self.completion - self.raw.get("reasoning_tokens", 0.0))


@dataclass(frozen=True)
class _Call:
    index: int
    usage: _Usage | None
    observation: str | None
    action: str | None


@dataclass
class _Imported:
    id: str
    family: str
    success: bool
    turns: tuple[Turn, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(sum(turn.usage["tokens"] for turn in self.turns))


def _clip_text(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    half = MAX_TEXT_CHARS // 2
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"


def _count(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RolloutFileError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise RolloutFileError(f"{what} must be finite, got {value!r}")
    if number < 0:
        raise RolloutFileError(f"{what} must not be negative, got {value!r}")
    return number


def _parse_usage(raw: Any, at: str) -> _Usage:
    if not isinstance(raw, dict):
        raise RolloutFileError(f"{at} must be an object, got {type(raw).__name__}")
    counts: dict[str, float] = {}
    for key in ("prompt_tokens", "completion_tokens"):
        if raw.get(key) is None:
            raise RolloutFileError(f"{at} has no {key!r}")
        counts[key] = _count(raw[key], f"{at}.{key}")
    if raw.get("total_tokens") is not None:
        counts["total_tokens"] = _count(raw["total_tokens"], f"{at}.total_tokens")
    for details, key in (
        ("completion_tokens_details", "reasoning_tokens"),
        ("prompt_tokens_details", "cached_tokens"),
    ):
        block = raw.get(details)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise RolloutFileError(f"{at}.{details} must be an object or null")
        if block.get(key) is not None:
            counts[key] = _count(block[key], f"{at}.{details}.{key}")
    return _Usage(counts["prompt_tokens"], counts["completion_tokens"], counts)


def _text(content: Any, at: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    raise RolloutFileError(
        f"{at}.content must be a string, a list of parts or null, got {type(content).__name__}"
    )


def _tool_calls(message: Mapping[str, Any]) -> list[str]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    lines = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name", "?"), function.get("arguments", "")
            lines.append(f"[tool call] {name}({arguments})")
    return lines


def _usage_raw(message: Mapping[str, Any], fmt: str) -> Any:
    if fmt == "openai-chat":
        return message.get("usage")
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    return response.get("usage") if isinstance(response, dict) else None


def _calls(record: _Record, fmt: str) -> list[_Call]:
    messages = record.data.get("messages")
    if not isinstance(messages, list):
        raise RolloutFileError(f"{record.where}: 'messages' must be a list")
    roles = _ROLES[fmt]
    pending: list[str] = []
    calls: list[_Call] = []
    for index, message in enumerate(messages):
        at = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RolloutFileError(f"{record.where}: {at} must be an object")
        role = message.get("role")
        if role not in roles:
            raise RolloutFileError(
                f"{record.where}: {at} has unknown role {role!r} (expected one of "
                f"{', '.join(sorted(roles))})"
            )
        try:
            text = _text(message.get("content"), at)
            if role == "assistant":
                raw = _usage_raw(message, fmt)
                usage = None if raw is None else _parse_usage(raw, f"{at}.{_USAGE_AT[fmt]}")
                action = "\n".join(part for part in [text, *_tool_calls(message)] if part)
                observation = "\n\n".join(pending)
                calls.append(
                    _Call(
                        index,
                        usage,
                        _clip_text(observation) if observation else None,
                        _clip_text(action) if action else None,
                    )
                )
                pending = []
            elif role in _OBSERVATION_ROLES and text:
                pending.append(text)
        except RolloutFileError as exc:
            raise RolloutFileError(f"{record.where}: {exc}") from None
    if not calls:
        raise RolloutFileError(f"{record.where}: no assistant message, nothing to replay")
    return calls


def _system_prompt(messages: Any) -> str | None:
    """The first ``system``/``developer`` message's text before the first assistant call."""
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict) or message.get("role") == "assistant":
            return None
        if message.get("role") in ("system", "developer"):
            content = message.get("content")
            text = content if isinstance(content, str) else None
            if isinstance(content, list):
                text = _text(content, "system")
            return text if text and text.strip() else None
    return None


def _stem(path: Path) -> str:
    name = path.name
    for suffix in _STEM_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _identity(record: _Record, candidates: Iterable[Any]) -> str:
    for value in candidates:
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    stem = _stem(record.path)
    return stem if record.alone else f"{stem}:{record.line}"


def _flag(container: Mapping[str, Any], key: str, label: str, where: str) -> bool | None:
    value = container.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise RolloutFileError(f"{where}: {label!r} must be true or false, got {value!r}")
    return value


def family_label(model: str | None) -> str:
    """``swe-<model>`` from a model name (``anthropic/claude-x`` -> ``swe-claude-x``)."""
    if not model:
        return "swe"
    name = re.sub(r"[^a-z0-9._-]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-")
    return f"swe-{name}" if name else "swe"


def _import_record(
    record: _Record,
    fmt: str,
    *,
    max_turns: int,
    on_missing_usage: str,
    resolved: Mapping[str, bool] | None,
) -> _Imported:
    data, where = record.data, record.where
    info_raw = data.get("info", {}) if fmt == "mini-swe-agent" else {}
    if info_raw is None:
        info_raw = {}
    if not isinstance(info_raw, dict):
        raise RolloutFileError(f"{where}: 'info' must be an object")
    info: dict[str, Any] = info_raw

    if fmt == "mini-swe-agent":
        rid = _identity(record, (data.get("instance_id"), info.get("instance_id")))
        config = info.get("config")
        model_config = config.get("model") if isinstance(config, dict) else None
        model = model_config.get("model_name") if isinstance(model_config, dict) else None
    else:
        rid = _identity(record, (data.get("id"),))
        model = data.get("model")
    model = model if isinstance(model, str) and model else None

    # ---- outcome
    meta: dict[str, Any] = {"format": fmt, "source": str(record.path)}
    if record.line is not None:
        meta["line"] = record.line
    if resolved is not None and rid in resolved:
        success, rule = bool(resolved[rid]), "resolved (given by the caller)"
    else:
        found = _flag(data, "resolved", "resolved", where)
        rule = "resolved"
        if found is None and fmt == "mini-swe-agent":
            found = _flag(info, "resolved", "info.resolved", where)
            rule = "info.resolved"
        if found is None and fmt == "openai-chat":
            found = _flag(data, "success", "success", where)
            rule = "success"
        if found is not None:
            success = found
        elif fmt == "mini-swe-agent":
            success, rule = info.get("exit_status") == "Submitted", "exit_status == 'Submitted'"
        else:
            raise RolloutFileError(
                f"{where}: no outcome, give 'resolved' or 'success' (true or false)"
            )
    if fmt == "mini-swe-agent":
        status = info.get("exit_status")
        meta["exit_status"] = status if isinstance(status, str) else None
    meta["success_rule"] = rule

    # ---- turns
    calls = _calls(record, fmt)
    system = _system_prompt(record.data.get("messages"))
    if system is not None:
        meta["actor_system_prompt"] = system
    if on_missing_usage == "error":
        for call in calls:
            if call.usage is None:
                raise RolloutFileError(
                    f"{where}: messages[{call.index}] (assistant) has no usage at "
                    f"{_USAGE_AT[fmt]}; every call needs its token counts (or skip such "
                    "calls: --budget-rollout-missing-usage=skip, on_missing_usage='skip')"
                )
    truncated = len(calls) > max_turns
    kept = calls[:max_turns]
    skipped = sum(1 for call in kept if call.usage is None)
    turns: list[Turn] = []
    previous: _Usage | None = None
    clamped = 0
    for call in kept:
        usage = call.usage
        if usage is None:
            continue
        if previous is None:
            new_input = usage.prompt
            was_clamped = False
        else:
            difference = usage.prompt - previous.prompt - previous.visible
            was_clamped = difference < 0
            new_input = max(0.0, difference)
        clamped += was_clamped
        turn_info: dict[str, Any] = dict(usage.raw)
        turn_info.setdefault("total_tokens", usage.prompt + usage.completion)
        turn_info["new_input_tokens"] = new_input
        turn_info["message_index"] = call.index
        if was_clamped:
            turn_info["clamped"] = True
        turns.append(
            Turn({"tokens": new_input + usage.completion}, call.observation, call.action, turn_info)
        )
        previous = usage
    if not turns:
        raise RolloutFileError(
            f"{where}: every assistant call lacks usage ({skipped} skipped), no turn left"
        )

    meta.update(
        model=model,
        assistant_calls=len(calls),
        max_turns=max_turns,
        truncated=truncated,
        skipped_turns=skipped,
        clamped_turns=clamped,
        logged_success=success,
    )
    if truncated:
        success = False
    if data.get("synthetic") is True or info.get("synthetic") is True:
        meta["synthetic"] = True
    return _Imported(rid, family_label(model), success, tuple(turns), meta)


# ------------------------------------------------------------------------ loading


def _as_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(path) for path in paths]


def load_trajectories(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    fmt: TrajectoryFormat | Literal["auto"] = "auto",
    budget: float | None = None,
    env: str | None = None,
    max_turns: int = MAX_TURNS,
    on_missing_usage: Literal["error", "skip"] = "error",
    resolved: Mapping[str, bool] | None = None,
) -> list[Rollout]:
    """Rollouts from trajectory files, in file order then record order (rules: module doc).

    ``fmt`` forces one format for every file (``"auto"`` sniffs each file); ``budget`` is a
    token cap for every imported family (default: each family's median total); ``env``
    relabels every imported trajectory into one family; ``resolved`` maps trajectory ids
    to the evaluation's verdict and overrides the outcome read from the file.
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"fmt must be 'auto' or one of {', '.join(FORMATS)}, got {fmt!r}")
    if on_missing_usage not in ("error", "skip"):
        raise ValueError(f"on_missing_usage must be 'error' or 'skip', got {on_missing_usage!r}")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int | float):
            raise ValueError(f"budget must be a number of tokens, got {budget!r}")
        if not math.isfinite(budget) or budget <= 0:
            raise ValueError(f"budget must be positive and finite, got {budget!r}")
    if env is not None and (not isinstance(env, str) or not env):
        raise ValueError(f"env must be a non-empty string, got {env!r}")

    # Each entry is a finished Rollout (our format) or an import waiting for its budget.
    loaded: list[Rollout | _Imported] = []
    first_seen: dict[str, str] = {}
    for path in _as_paths(paths):
        file_format = detect_format(path) if fmt == "auto" else fmt
        if file_format == "pytest-budget":
            entries: list[tuple[str, Rollout | _Imported]] = [
                (str(path), rollout) for rollout in read_rollouts(path)
            ]
        else:
            entries = []
            for record in _read_records(path):
                imported = _import_record(
                    record,
                    file_format,
                    max_turns=max_turns,
                    on_missing_usage=on_missing_usage,
                    resolved=resolved,
                )
                if env is not None:
                    imported.family = env
                entries.append((record.where, imported))
        for where, entry in entries:
            if entry.id in first_seen:
                raise RolloutFileError(
                    f"{where}: duplicate trajectory id {entry.id!r} (first in "
                    f"{first_seen[entry.id]})"
                )
            first_seen[entry.id] = where
            loaded.append(entry)

    families: dict[str, list[_Imported]] = {}
    for entry in loaded:
        if isinstance(entry, _Imported):
            families.setdefault(entry.family, []).append(entry)
    caps: dict[str, float] = {}
    for family, members in families.items():
        if budget is not None:
            caps[family] = float(budget)
            continue
        median = float(np.median([member.total for member in members]))
        if median <= 0:
            raise RolloutFileError(
                f"family {family!r}: median total tokens is 0, cannot set a budget; pass one"
            )
        caps[family] = median

    out: list[Rollout] = []
    for entry in loaded:
        if isinstance(entry, Rollout):
            out.append(entry)
            continue
        meta = dict(entry.meta)
        meta.update(
            budget_rule="given" if budget is not None else "family median",
            family_size=len(families[entry.family]),
        )
        out.append(
            Rollout(
                entry.id,
                entry.family,
                {"tokens": caps[entry.family]},
                entry.success,
                entry.turns,
                meta,
            )
        )
    return out


# ------------------------------------------------------------------------ synthetic data

# Short, made-up step contents (the bundled file must stay small).
_SYN_STEPS: tuple[tuple[str, str], ...] = (
    ("Look at the layout.", "ls src tests"),
    ("Find the function.", "grep -rn 'def parse' src"),
    ("Read the module.", "sed -n 1,80p src/{mod}.py"),
    ("Reproduce the issue.", "python repro.py"),
    ("Patch the edge case.", "sed -i 's/< n/<= n/' src/{mod}.py"),
    ("Run the tests.", "pytest -q tests/test_{mod}.py"),
    ("Check the diff.", "git diff"),
)
_SYN_OUTPUTS: tuple[str, ...] = (
    "README.md setup.py src tests",
    "src/{mod}.py:41:def parse(text, n):",
    "Traceback (most recent call last): IndexError",
    "1 failed, 7 passed",
    "8 passed",
    "",
)
_SYN_MODULES = ("core", "parser", "io", "utils", "fields", "query")
_SYN_SUBMIT = "Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


def _bash(thought: str, command: str) -> str:
    return f"THOUGHT: {thought}\n```mswea_bash_command\n{command}\n```"


def synthesize_swe_trajectories(
    seed: int = SYNTHETIC_SEED, count: int = SYNTHETIC_COUNT
) -> list[dict[str, Any]]:
    """SYNTHETIC mini-swe-agent trajectories (no real agent), deterministic in ``seed``.

    Lengths run from 10 to 160 assistant calls (quantiles of 10 + 150 q^3, skewed to short runs).
    Token growth is what a chat API reports: call 1 reads a 1,800-4,200 token system +
    task prompt; each later call re-reads the history plus the last output and the new
    observation (20-8,000 tokens, log-normal); each call writes 30-1,200 tokens.  The
    160-call run stops with ``LimitsExceeded`` (unresolved); the others submit, resolved
    with probability falling from 0.85 at 10 calls to 0.25 at 160.  Every record carries
    ``info.synthetic = true``; only integers are stored, so the text is byte-stable.
    """
    if count < 2:
        raise ValueError("count must be at least 2 (the 10- and 160-call ends)")
    rng = np.random.default_rng(seed)
    # Quantiles of 10 + 150 q^3 (mean about 47 calls), ends pinned to 10 and 160 calls.
    lengths = [10 + round(150 * ((j + 0.5) / count) ** 3) for j in range(count)]
    lengths[0], lengths[-1] = 10, MAX_TURNS
    order = [int(i) for i in rng.permutation(count)]
    records: list[dict[str, Any]] = []
    for number, position in enumerate(order, start=1):
        length = lengths[position]
        module = _SYN_MODULES[int(rng.integers(len(_SYN_MODULES)))]
        capped = length >= MAX_TURNS
        resolved = (not capped) and bool(rng.random() < 0.85 - 0.6 * (length - 10) / 150)
        instance = f"synthetic__pkg-{number:04d}"
        messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": "SYNTHETIC trajectory generated by pytest-budget; not a real run.",
            },
            {
                "role": "user",
                "content": f"Please solve this issue: parse() drops item n in {module}.",
            },
        ]
        prompt = int(rng.integers(1800, 4201))
        for call in range(1, length + 1):
            completion = int(np.clip(rng.lognormal(math.log(150), 0.6), 30, 1200))
            last = call == length
            if last and not capped:
                content = _SYN_SUBMIT
            else:
                thought, command = _SYN_STEPS[int(rng.integers(len(_SYN_STEPS)))]
                content = _bash(thought, command.format(mod=module))
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            messages.append(
                {
                    "role": "assistant",
                    "content": content,
                    "extra": {"response": {"usage": usage}},
                }
            )
            if last and not capped:
                break
            observed = int(np.clip(rng.lognormal(math.log(300), 1.0), 20, 8000))
            output = _SYN_OUTPUTS[int(rng.integers(len(_SYN_OUTPUTS)))].format(mod=module)
            messages.append(
                {
                    "role": "user",
                    "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>",
                }
            )
            prompt += completion + observed
        status = "LimitsExceeded" if capped else "Submitted"
        messages.append({"role": "exit", "content": "", "extra": {"exit_status": status}})
        records.append(
            {
                "trajectory_format": "mini-swe-agent-1.1",
                "instance_id": instance,
                "info": {
                    "synthetic": True,
                    "generator": "pytest_budget.awareness.trajectories.synthesize_swe_trajectories",
                    "seed": seed,
                    "exit_status": status,
                    "submission": "",
                    "resolved": resolved,
                    "model_stats": {"instance_cost": 0, "api_calls": length},
                    "config": {"model": {"model_name": "synthetic"}},
                },
                "messages": messages,
            }
        )
    return records


def synthetic_swe_text(seed: int = SYNTHETIC_SEED, count: int = SYNTHETIC_COUNT) -> str:
    """The bundled file's exact text: one compact JSON record per line."""
    return "".join(
        json.dumps(record, separators=(",", ":")) + "\n"
        for record in synthesize_swe_trajectories(seed, count)
    )


def bundled_swe_path() -> Path:
    """Where the bundled SYNTHETIC trajectories live (inside the installed package)."""
    return Path(__file__).with_name("data") / SYNTHETIC_FILE


def bundled_swe_rollouts(*, budget: float | None = None) -> list[Rollout]:
    """The bundled SYNTHETIC trajectories imported as rollouts of family ``swe-synthetic``."""
    return load_trajectories(
        [bundled_swe_path()], fmt="mini-swe-agent", budget=budget, env=SYNTHETIC_ENV
    )


if __name__ == "__main__":  # regenerate the bundled file
    bundled_swe_path().write_text(synthetic_swe_text(), encoding="utf-8")
    print(f"wrote {bundled_swe_path()}")
