"""inspect_ai eval logs (``.eval`` and ``.json``) as awareness rollouts, read without
inspect_ai (shared/facts/logs.md §4).

* **Files**: ``.eval`` is a ZIP with ``header.json`` and ``samples/<id>_epoch_<n>.json``;
  members are Zstandard (ZIP method 93) since inspect_ai 0.3.206, read with the
  ``zstandard`` package (``pip install 'pytest-budget[inspect]'``; inspect_ai itself is
  not needed), older DEFLATE members with :mod:`zipfile`.  ``.json`` is one object with
  ``eval`` and ``samples``.  A log without samples (a header only) is an error.
* **Turns**: one per *solver* model event, in file order: an event whose span chain
  (``span_begin`` ``id``/``parent_id``) reaches a span of type ``scorers`` is a scorer's
  call and is dropped.  Pooled inputs (``input_refs`` into ``events_data.messages``) are
  expanded and ``attachment://<hash>`` strings resolved from ``attachments``.  Logs from
  before ``events`` existed read ``transcript.events`` / ``transcript.content``.
* **Usage** (``output.usage``, §4.4): the whole prompt is ``input_tokens +
  input_tokens_cache_read + input_tokens_cache_write`` (inspect's ``input_tokens``
  excludes cached reads), output ``output_tokens`` (reasoning included), visible output =
  output - ``reasoning_tokens``.  Fresh input as BAGEN's rule (logs.md §1.5): history is
  re-sent iff at least half of the comparisons ``prompt_i >= prompt_(i-1) +
  visible_(i-1)`` pass; then ``fresh_i = max(0, prompt_i - prompt_(i-1) - visible_(i-1))``
  (``fresh_1`` = prompt_1), else ``fresh_i = prompt_i``; the turn costs ``fresh_i +
  output_i``.  A call without usage is an error, or skipped with
  ``--budget-rollout-missing-usage=skip``.
* **Observation / action**: the call's input messages after the previous call's input and
  its reply (call 1: everything after a leading ``system`` message, kept whole as the
  actor's system prompt) / the reply's text plus one ``[tool call] name(arguments)`` line
  per tool call; reasoning parts are hidden output.
* **Success** (§4.5): the scorer is ``results.headline.scorer``, else the sample's first
  score; its value mapped as inspect's ``value_to_float`` (numbers and booleans; ``C`` 1,
  ``P`` 0.5, ``I``/``N`` 0; yes/true, no/false, numeric text) must equal 1.0; a sample
  with an ``error``, a ``limit`` or no score did not succeed.
* **Ids and family**: the sample id (``<id>@<epoch>`` for epochs after the first); the
  family is ``inspect-<model>`` (``eval.model``'s last ``/`` segment), its budget the
  family median as for other imported logs.

Plain Python (and ``zstandard`` for current ``.eval`` files): no pytest, no inspect_ai.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_budget.awareness._replay.rollouts import RolloutFileError, Turn

__all__ = ["read_inspect_log", "score_value"]

_ZSTD = 93
_ATTACHMENT = "attachment://"


def _member(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.compress_type != _ZSTD:
        return zf.read(info)
    try:
        import zstandard
    except ImportError:
        raise RolloutFileError(
            f"{path}: {info.filename} is Zstandard-compressed (inspect_ai >= 0.3.206); "
            "install zstandard: pip install 'pytest-budget[inspect]'"
        ) from None
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        name_len, extra_len = struct.unpack("<HH", fh.read(30)[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return bytes(reader.read())


def _json(path: Path, where: str, data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RolloutFileError(f"{path}: {where} is not JSON ({exc}); truncated log?") from None


def _read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The log's header and its samples."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise RolloutFileError(f"{path}: no such inspect_ai log") from None
    if size == 0:
        raise RolloutFileError(f"{path}: empty file, no inspect_ai log")
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                infos = {info.filename: info for info in zf.infolist()}
                if "header.json" in infos:
                    header = _json(path, "header.json", _member(path, zf, infos["header.json"]))
                elif "_journal/start.json" in infos:  # a run still going, or crashed
                    header = _json(
                        path, "_journal/start.json", _member(path, zf, infos["_journal/start.json"])
                    )
                else:
                    raise RolloutFileError(
                        f"{path}: a ZIP without header.json or _journal/start.json: not an "
                        "inspect_ai .eval log"
                    )
                names = sorted(n for n in infos if n.startswith("samples/") and n.endswith(".json"))
                samples = [_json(path, n, _member(path, zf, infos[n])) for n in names]
        except zipfile.BadZipFile as exc:
            raise RolloutFileError(f"{path}: broken .eval ZIP ({exc}); truncated log?") from None
    else:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise RolloutFileError(f"{path}: cannot read inspect_ai log ({exc})") from None
        whole = _json(path, "the file", text)
        if not isinstance(whole, dict) or not isinstance(whole.get("eval"), dict):
            raise RolloutFileError(f"{path}: not an inspect_ai log (no 'eval' object)")
        header, samples = whole, whole.get("samples") or []
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise RolloutFileError(f"{path}: inspect_ai header has no 'eval' object")
    if not isinstance(samples, list) or not samples:
        raise RolloutFileError(f"{path}: the log holds no samples (a header-only log?)")
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise RolloutFileError(f"{path}: sample {i} is not an object")
    return header, samples


def score_value(value: Any) -> float:
    """inspect_ai's ``value_to_float`` (``scorer/_metric.py``); unknown strings are 0."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        mapped = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}.get(text)
        if mapped is not None:
            return mapped
        lower = text.lower()
        if lower in ("yes", "true"):
            return 1.0
        if lower in ("no", "false"):
            return 0.0
        try:
            return float(text)
        except ValueError:
            return 0.0
    return 0.0


def _success(header: Mapping[str, Any], sample: Mapping[str, Any]) -> tuple[bool, str]:
    if sample.get("error"):
        return False, "sample error"
    if sample.get("limit"):
        return False, "sample limit"
    scores = sample.get("scores")
    if not isinstance(scores, dict) or not scores:
        return False, "no score"
    results = header.get("results")
    headline = results.get("headline") if isinstance(results, dict) else None
    name = headline.get("scorer") if isinstance(headline, dict) else None
    if name not in scores:
        name = next(iter(scores))
    score = scores[name]
    value = score.get("value") if isinstance(score, dict) else None
    return score_value(value) == 1.0, f"score {name} == 1"


def _resolve(value: Any, attachments: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT) :], value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def _tool_lines(message: Mapping[str, Any]) -> list[str]:
    lines = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            args = json.dumps(call.get("arguments"), sort_keys=True)
            lines.append(f"[tool call] {call.get('function')}({args})")
    return lines


def _solver_events(sample: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Model events of the solvers, inputs expanded (pools) and attachments resolved."""
    events = sample.get("events")
    attachments = sample.get("attachments") or {}
    if events is None and isinstance(sample.get("transcript"), dict):  # older logs
        events = sample["transcript"].get("events")
        attachments = sample["transcript"].get("content") or {}
    spans: dict[str, tuple[str | None, str | None]] = {}
    for event in events or ():
        if isinstance(event, dict) and event.get("event") == "span_begin":
            spans[str(event.get("id"))] = (event.get("type"), event.get("parent_id"))
    pool = (sample.get("events_data") or {}).get("messages") or []
    for event in events or ():
        if not isinstance(event, dict) or event.get("event") != "model":
            continue
        span, seen = event.get("span_id"), set()
        scorer = False
        while span is not None and span not in seen:
            seen.add(span)
            kind, parent = spans.get(str(span), (None, None))
            if kind == "scorers":
                scorer = True
                break
            span = parent
        if scorer:
            continue
        messages = list(event.get("input") or [])
        for start, end in event.get("input_refs") or ():
            messages.extend(pool[start:end])
        resolved = _resolve({**event, "input": messages}, attachments)
        yield resolved


def _count(usage: Mapping[str, Any], key: str, where: str) -> float:
    value = usage.get(key)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RolloutFileError(f"{where}: usage '{key}' must be a number, got {value!r}")
    if value < 0:
        raise RolloutFileError(f"{where}: usage '{key}' is negative ({value})")
    return float(value)


def _label(model: Any) -> str:
    name = str(model or "").rsplit("/", 1)[-1].lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name).strip("-")
    return f"inspect-{name}" if name else "inspect"


def _turns(calls: list[tuple[float, float, float, str, str]]) -> tuple[list[Turn], bool]:
    """The sample's turns from its calls (prompt, completion, reasoning, observation,
    action), and whether the history is resent: each turn is charged its new input only."""
    visible = [max(0.0, c - r) for _, c, r, _, _ in calls]
    tests = [calls[i][0] >= calls[i - 1][0] + visible[i - 1] for i in range(1, len(calls))]
    resent = bool(tests) and 2 * sum(tests) >= len(tests)
    turns = []
    for i, (prompt, completion, reasoning, observation, action) in enumerate(calls):
        fresh = prompt
        if resent and i > 0:
            fresh = max(0.0, prompt - calls[i - 1][0] - visible[i - 1])
        info = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": reasoning,
            "new_input_tokens": fresh,
        }
        turns.append(Turn({"tokens": fresh + completion}, observation, action, info))
    return turns, resent


def read_inspect_log(path: Path, *, on_missing_usage: str = "error") -> list[Any]:
    """The log's samples as imports waiting for their family budget (rules: module doc)."""
    from pytest_budget.awareness._logs.formats import _Imported

    header, samples = _read(path)
    family = _label(header["eval"].get("model"))
    out: list[_Imported] = []
    for sample in samples:
        sid, epoch = sample.get("id"), sample.get("epoch") or 1
        rid = str(sid) if epoch == 1 else f"{sid}@{epoch}"
        where = f"{path}: sample {rid}"
        calls: list[tuple[float, float, float, str, str]] = []
        system: str | None = None
        previous: list[Any] = []
        skipped = 0
        for number, event in enumerate(_solver_events(sample), start=1):
            messages = event["input"]
            found = event.get("output")
            output: dict[str, Any] = found if isinstance(found, dict) else {}
            choices = output.get("choices") or []
            reply = choices[0].get("message") if choices and isinstance(choices[0], dict) else {}
            reply = reply if isinstance(reply, dict) else {}
            if number == 1:
                new = list(messages)
                if new and isinstance(new[0], dict) and new[0].get("role") == "system":
                    system = _content_text(new[0].get("content"))
                    new = new[1:]
            else:
                new = messages[len(previous) + 1 :]
            previous = list(messages)
            observation = "\n\n".join(
                _content_text(m.get("content")) for m in new if isinstance(m, dict)
            )
            action = "\n".join([_content_text(reply.get("content")), *_tool_lines(reply)]).strip()
            usage = output.get("usage")
            if not isinstance(usage, dict):
                if on_missing_usage == "error":
                    raise RolloutFileError(
                        f"{where}: model call {number} has no output.usage; every call needs "
                        "its token counts (or skip such calls: "
                        "--budget-rollout-missing-usage=skip)"
                    )
                skipped += 1
                continue
            at = f"{where}: model call {number}"
            prompt = (
                _count(usage, "input_tokens", at)
                + _count(usage, "input_tokens_cache_read", at)
                + _count(usage, "input_tokens_cache_write", at)
            )
            completion = _count(usage, "output_tokens", at)
            reasoning = _count(usage, "reasoning_tokens", at)
            calls.append((prompt, completion, reasoning, observation, action))
        if not calls:
            raise RolloutFileError(f"{where}: no solver model call with usage, no turn")
        turns, resent = _turns(calls)
        success, rule = _success(header, sample)
        meta: dict[str, Any] = {
            "format": "inspect",
            "source": str(path),
            "model": header["eval"].get("model"),
            "task": header["eval"].get("task"),
            "epoch": epoch,
            "success_rule": rule,
            "history_resent": resent,
            "skipped_turns": skipped,
        }
        if system is not None:
            meta["actor_system_prompt"] = system
        out.append(_Imported(rid, family, success, tuple(turns), meta))
    return out
