"""Reading agent trajectories in other formats (mini-swe-agent, OpenAI chat logs): format
detection, and one record turned into a :class:`~pytest_budget.awareness._replay.rollouts.Rollout`.
Re-exported by :mod:`pytest_budget.awareness._logs.trajectories`.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_budget.awareness._logs.verdicts import HarnessVerdicts
from pytest_budget.awareness._replay.rollouts import RolloutFileError, Turn, _number, read_text_file

TrajectoryFormat = Literal["pytest-budget", "mini-swe-agent", "openai-chat", "bagen", "inspect"]
FORMATS: tuple[TrajectoryFormat, ...] = (
    "pytest-budget", "mini-swe-agent", "openai-chat", "bagen", "inspect",
)  # fmt: skip
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
    text = read_text_file(path, "trajectory file", "no trajectories")
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
    if isinstance(data.get("turns"), list):
        return "bagen"  # one BAGEN rollout object (its writer's list has one element)
    if isinstance(data.get("eval"), dict) and "version" in data:
        return "inspect"
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

    A ZIP is an inspect_ai ``.eval`` log and a JSON list a BAGEN dialogue log; a JSON object
    with ``eval`` and ``version`` is an inspect_ai ``.json`` log, one with ``turns`` but no
    ``budget`` a single BAGEN rollout.
    Our rollout format has ``turns`` and ``budget``; mini-swe-agent has ``messages`` plus
    ``trajectory_format``, an ``info`` object or messages with ``extra``; openai-chat has
    ``messages`` whose entries carry ``usage``.  Anything else is a :class:`RolloutFileError`.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""  # _read_records names the problem
    if head.startswith(b"PK"):
        return "inspect"  # an inspect_ai .eval log is a ZIP
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return "bagen"  # BAGEN's dialogue log: one JSON list of rollouts
    first = _read_records(path)[0]
    fmt = _sniff(first.data)
    if fmt is None:
        raise RolloutFileError(
            f"{first.where}: cannot tell the trajectory format (expected a pytest-budget "
            "rollout, a mini-swe-agent trajectory, an openai-chat transcript with usage, a "
            "BAGEN dialogue log or an inspect_ai log); pass --budget-rollout-format"
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


def _parse_usage(raw: Any, at: str) -> _Usage:
    if not isinstance(raw, dict):
        raise RolloutFileError(f"{at} must be an object, got {type(raw).__name__}")
    counts: dict[str, float] = {}
    for key in ("prompt_tokens", "completion_tokens"):
        if raw.get(key) is None:
            raise RolloutFileError(f"{at} has no {key!r}")
        counts[key] = _number(raw[key], f"{at}.{key}")
    if raw.get("total_tokens") is not None:
        counts["total_tokens"] = _number(raw["total_tokens"], f"{at}.total_tokens")
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
            counts[key] = _number(block[key], f"{at}.{details}.{key}")
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


def _outcome(
    data: Mapping[str, Any],
    info: Mapping[str, Any],
    fmt: str,
    rid: str,
    where: str,
    resolved: Mapping[str, bool] | None,
    verdicts: HarnessVerdicts | None,
) -> tuple[bool, str]:
    """Whether the trajectory succeeded, and by which rule (given, harness, or the file)."""
    if resolved is not None and rid in resolved:
        success, rule = bool(resolved[rid]), "resolved (given by the caller)"
    elif verdicts is not None:
        success, rule = verdicts.verdict(rid), "harness report resolved_ids"
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
    return success, rule


def _charged_turns(kept: Sequence[_Call]) -> tuple[list[Turn], int]:
    """The calls with usage as turns charged their new input (the prompt's growth past the
    previous call, clamped at 0), and how many were clamped."""
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
    return turns, clamped


def _import_record(
    record: _Record,
    fmt: str,
    *,
    max_turns: int,
    on_missing_usage: str,
    resolved: Mapping[str, bool] | None,
    verdicts: HarnessVerdicts | None = None,
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
    success, rule = _outcome(data, info, fmt, rid, where, resolved, verdicts)
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
    turns, clamped = _charged_turns(kept)
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


def family_budget(totals: Iterable[float]) -> float:
    """A rollout family's token budget as BAGEN computes it (bagen.md §3.5, logs.md §1.6):
    ``statistics.median`` of the totals, ``statistics.median_low`` when the median is not a
    whole number (so 7,926.5 becomes the lower middle total, e.g. 7,836)."""
    values = list(totals)
    median = statistics.median(values)
    if float(median).is_integer():
        return float(median)
    return float(statistics.median_low(values))
