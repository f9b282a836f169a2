"""Record and replay model calls: append-only journals of calls, written as each completes.

A call is keyed by the SHA-256 of its normalised request: the provider, the repeat it belongs
to (``--budget-repeat``; left out for the first, index 0) and the JSON body the client would
post (model, messages, tools, ``max_tokens``, ``temperature``), serialised with sorted keys.
So each repeat of a run is recorded apart and replays as the answers that repeat got, and a
cache recorded before repeats were keyed (every key without an index) still answers the
first repeat.  Headers are never part of the key or the record, so no API key is stored; the
base URL is not part of the key either, so calls recorded against a hosted API replay in CI
without it.  The folder ``<dir>/<provider>/<model>/`` of one provider and model is a
*cassette*.

A cassette holds journals, ``calls-<time>-<pid>-<random>.jsonl``: one per process that
recorded something, one JSON record per line (format, key, provider, model, request,
response), appended with a single ``write`` as the call completes.  Appending costs one
system call where a file per call costs four and a directory entry, and on some disks
creating a file takes half a millisecond.  A process reads the cassette's journals once,
when it first needs them, into an index of key -> (file, offset); replaying a call reads
that one line.  Later journals win (the names sort by time), so ``all`` re-records
override older answers, and folders from several machines can be copied together.
Records written by other processes after the index was read are not seen until the next
run.  Records in the earlier layout, one ``<key[:2]>/<key>.json`` file per call, are read
too.

Modes (``--budget-record-mode``), as in VCR-style tools:

* ``new`` (default): replay what is recorded, call and record the rest;
* ``once``: a cassette that already holds recordings replays only (a new request is an
  error); an empty one records everything;
* ``all``: call everything and re-record;
* ``none``: replay only; a request without a recording is an error and nothing is called.

A run killed at any moment leaves whole lines, except at worst a torn last line, which is
skipped on reading (each process appends to its own journal, so nothing is written after
it); the next run replays the rest instead of paying again (per repeat: a run cut short in its
third repeat replays the first two).  Identical requests of one repeat get the identical
recorded answer, which is what makes a replayed run's scores equal the live run's
(temperature 0 is the default for every role).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_budget.models._client import ChatResult, ToolCall
from pytest_budget.models._usage import TokenUsage

__all__ = [
    "RECORD_FORMAT",
    "CallRecorder",
    "canonical_body",
    "cassette_has_records",
    "key_of",
    "request_key",
    "resolve_mode",
    "result_from_json",
    "result_to_json",
    "scrub_result",
]

RECORD_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_JOURNAL_GLOB = "calls-*.jsonl"
_LEGACY_GLOB = "*/*.json"
# Every line this module writes starts so; the key is read from the next 64 characters
# without parsing the line (a line of another shape is parsed).
_LINE_PREFIX = b'{"format":%d,"key":"' % RECORD_FORMAT
_HEX = frozenset(b"0123456789abcdef")


def canonical_body(body: Mapping[str, Any], encoded: Mapping[str, str] | None = None) -> str:
    """The request body as compact JSON with sorted keys: what is hashed, sent and stored.

    ``encoded`` gives the canonical JSON of some top-level values already (a tool list sent
    unchanged turn after turn); the result is the same text as without it."""
    if not encoded:
        return _CANONICAL.encode(body)
    # json.dumps(sort_keys=True) writes the top level as '{' + '"key":value' joined by ','
    # in key order + '}': the other keys are encoded in one go, the given values spliced in.
    parts = []
    rest: dict[str, Any] = {}
    for key in sorted(body):
        text = encoded.get(key)
        if text is None:
            rest[key] = body[key]
            continue
        if rest:
            parts.append(_CANONICAL.encode(rest)[1:-1])
            rest = {}
        parts.append(f"{_CANONICAL.encode(key)}:{text}")
    if rest:
        parts.append(_CANONICAL.encode(rest)[1:-1])
    return "{" + ",".join(parts) + "}"


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrub(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, dict):
        return {_scrub_value(k): _scrub_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v) for v in value]
    return value


def scrub_result(result: ChatResult) -> ChatResult:
    """``result`` with every lone surrogate (which has no UTF-8 form) replaced by U+FFFD.

    A server may put ``"\\ud800"`` in its JSON; passed on, such a string could not be sent
    back in the next request, written to a report or recorded.  Returns ``result`` itself
    when there is none (the usual case).
    """
    texts = [result.text, result.raw_finish_reason or ""]
    for call in result.tool_calls:
        texts += [call.id, call.name, call.raw_arguments, json.dumps(call.arguments)]
    if not any(_LONE_SURROGATE.search(text) for text in texts):
        return result
    calls = tuple(
        ToolCall(
            _scrub(call.id),
            _scrub(call.name),
            _scrub_value(call.arguments),
            _scrub(call.raw_arguments),
        )
        for call in result.tool_calls
    )
    finish = None if result.raw_finish_reason is None else _scrub(result.raw_finish_reason)
    return ChatResult(_scrub(result.text), calls, result.usage, finish)


def _repeat_field(repeat: int) -> str:
    """The ``"repeat":N,`` member of a key's text and of a record (none for index 0)."""
    return f'"repeat":{int(repeat)},' if repeat else ""


def _ascii_line(
    key: str, provider: str, model: str, body: Mapping[str, Any], result: ChatResult, repeat: int
) -> bytes:
    """A journal line with every non-ASCII character escaped (same shape and keys)."""

    def dumps(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    return (
        f'{{"format":{RECORD_FORMAT},"key":"{key}","model":{dumps(model)},'
        f'"provider":{dumps(provider)},{_repeat_field(repeat)}"request":{dumps(dict(body))},'
        f'"response":{dumps(result_to_json(result))}}}\n'
    ).encode("ascii")


def key_of(provider: str, body_json: str, repeat: int = 0) -> str:
    """The key of a request of repeat ``repeat`` given its :func:`canonical_body`.

    Hashes the same bytes as ``json.dumps({"provider": ..., "repeat": repeat, "request":
    body})`` with sorted keys, ``repeat`` left out when it is 0 (so the first repeat's keys
    are those of a cache recorded before repeats were keyed), without encoding the body a
    second time.
    """
    canonical = (
        f'{{"provider":{json.dumps(provider, ensure_ascii=False)},'
        f'{_repeat_field(repeat)}"request":{body_json}}}'
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_key(provider: str, body: Mapping[str, Any], repeat: int = 0) -> str:
    """The SHA-256 hex digest of the normalised request of repeat ``repeat``."""
    return key_of(provider, canonical_body(body), repeat)


def _cassette(root: Path, provider: str, model: str) -> Path:
    safe = _UNSAFE.sub("_", model).strip("._") or "model"
    if safe != model:
        # Two model names that sanitise alike must not share a folder.
        safe = f"{safe}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:8]}"
    return root / _UNSAFE.sub("_", provider) / safe


def cassette_has_records(root: str | os.PathLike[str], provider: str, model: str) -> bool:
    folder = _cassette(Path(root), provider, model)
    if not folder.is_dir():
        return False
    journals = (p for p in folder.glob(_JOURNAL_GLOB) if p.stat().st_size > 0)
    return any(journals) or any(folder.glob(_LEGACY_GLOB))


def resolve_mode(mode: str, root: str | os.PathLike[str], provider: str, model: str) -> str:
    """``once`` becomes ``none`` (cassette has records) or ``new`` (it is empty); the rest
    stay.  Resolved once per run, before any call, so workers agree."""
    if mode != "once":
        return mode
    return "none" if cassette_has_records(root, provider, model) else "new"


def result_to_json(result: ChatResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "text": result.text,
        "tool_calls": [
            {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "raw_arguments": call.raw_arguments,
            }
            for call in result.tool_calls
        ],
        "usage": {
            "input": usage.input,
            "output": usage.output,
            "reasoning": usage.reasoning,
            "cached_read": usage.cached_read,
            "cached_write": usage.cached_write,
            "reported": usage.reported,
        },
        "finish_reason": result.raw_finish_reason,
    }


def result_from_json(data: Mapping[str, Any]) -> ChatResult:
    """Inverse of :func:`result_to_json` (ValueError/KeyError/TypeError on a bad record)."""
    usage = data["usage"]
    calls = tuple(
        ToolCall(
            id=str(call["id"]),
            name=str(call["name"]),
            arguments=dict(call["arguments"]) if call["arguments"] is not None else None,
            raw_arguments=str(call["raw_arguments"]),
        )
        for call in data["tool_calls"]
    )
    finish = data.get("finish_reason")
    return ChatResult(
        text=str(data["text"]),
        tool_calls=calls,
        usage=TokenUsage(
            input=int(usage["input"]),
            output=int(usage["output"]),
            reasoning=int(usage["reasoning"]),
            cached_read=int(usage["cached_read"]),
            cached_write=int(usage["cached_write"]),
            reported=bool(usage["reported"]),
        ),
        raw_finish_reason=finish if isinstance(finish, str) else None,
    )


class _Cassette:
    """One provider and model's folder: the index of its records and this process's journal."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        # key -> (file, offset, length); length -1 means the whole file (earlier layout).
        self.index: dict[str, tuple[str, int, int]] = {}
        self.corrupt = 0
        self._journal: str | None = None
        self._fd: int | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._size = 0
        # Bytes of each journal already indexed (a refresh reads on from there).
        self._indexed: dict[str, int] = {}
        if folder.is_dir():
            for path in sorted(str(p) for p in folder.glob(_LEGACY_GLOB)):
                self.index[Path(path).stem] = (path, 0, -1)
            # Names start with the time they were made: later journals override.
            for path in sorted(str(p) for p in folder.glob(_JOURNAL_GLOB)):
                self._read_journal(path)

    def refresh(self) -> None:
        """Index what other processes appended to their journals since the last read (an
        xdist worker replays a call another worker has just recorded)."""
        try:
            names = [
                entry.path
                for entry in os.scandir(self.folder)
                if entry.name.startswith("calls-") and entry.name.endswith(".jsonl")
            ]
        except OSError:  # not made yet
            return
        for path in sorted(names):
            if path == self._journal:
                continue
            start = self._indexed.get(path, 0)
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            if size > start:
                self._read_journal(path, start, growing=True)

    def _read_journal(self, path: str, start: int = 0, growing: bool = False) -> None:
        try:
            with open(path, "rb") as handle:
                handle.seek(start)
                data = handle.read()
        except OSError:
            self.corrupt += 1
            return
        offset = 0
        prefix, skip = _LINE_PREFIX, len(_LINE_PREFIX)
        while offset < len(data):
            end = data.find(b"\n", offset)
            if end < 0:
                # A torn last line (the writer was killed mid-write): not a record.  In a
                # journal another process is writing now, the rest of a line to come.
                if not growing:
                    self.corrupt += 1
                break
            line = data[offset:end]
            key = None
            if line.startswith(prefix) and line[skip + 64 : skip + 65] == b'"':
                candidate = line[skip : skip + 64]
                if _HEX.issuperset(candidate):
                    key = candidate.decode("ascii")
            if key is None:
                try:
                    record = json.loads(line)
                    key = record["key"] if isinstance(record, dict) else None
                except ValueError:
                    key = None
            if isinstance(key, str) and key:
                self.index[key] = (path, start + offset, end - offset)
            elif line.strip():
                self.corrupt += 1
            offset = end + 1
        self._indexed[path] = start + offset

    def read(self, key: str) -> dict[str, Any] | None:
        """The stored record of ``key`` (None when absent or unreadable)."""
        where = self.index.get(key)
        if where is None:
            return None
        path, offset, length = where
        try:
            if length < 0:
                with open(path, "rb") as handle:
                    raw = handle.read()
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    raw = os.pread(fd, length, offset)
                finally:
                    os.close(fd)
            record = json.loads(raw)
        except (OSError, ValueError):
            record = None
        # The stored key guards against a record copied, renamed or edited by hand.
        if (
            not isinstance(record, dict)
            or record.get("format") != RECORD_FORMAT
            or record.get("key") != key
        ):
            self.corrupt += 1
            del self.index[key]
            return None
        return record

    def append(self, key: str, line: bytes) -> str:
        """Append one record line (ending in a newline) to this process's journal."""
        if self._fd is None or self._journal is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            name = f"calls-{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            self._journal = str(self.folder / name)
            self._fd = os.open(self._journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._size = 0
            # Closed when the cassette is dropped or the interpreter exits, whichever is first.
            self._finalizer = weakref.finalize(self, os.close, self._fd)
        view = memoryview(line)
        while view:  # os.write may write less than asked
            view = view[os.write(self._fd, view) :]
        self.index[key] = (self._journal, self._size, len(line) - 1)
        self._size += len(line)
        return self._journal

    def close(self) -> None:
        if self._fd is not None:
            if self._finalizer is not None:
                self._finalizer()  # closes the descriptor, once
            self._fd = None
            self._journal = None


class CallRecorder:
    """Reads and writes recorded calls under one directory (see the module doc).

    One per process; safe to share between threads.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._cassettes: dict[tuple[str, str], _Cassette] = {}
        self._lock = threading.Lock()

    @property
    def corrupt(self) -> int:
        """Records that could not be read (each treated as missing)."""
        return sum(cassette.corrupt for cassette in self._cassettes.values())

    def _cassette(self, provider: str, model: str) -> _Cassette:
        cassette = self._cassettes.get((provider, model))
        if cassette is None:
            with self._lock:
                cassette = self._cassettes.get((provider, model))
                if cassette is None:
                    folder = _cassette(self.root, provider, model)
                    cassette = self._cassettes[provider, model] = _Cassette(folder)
        return cassette

    def is_empty(self, provider: str, model: str) -> bool:
        """Whether nothing is recorded for ``provider`` and ``model`` (as this process read
        the cassette): :meth:`load` finds no key there."""
        return not self._cassette(provider, model).index

    def folder(self, provider: str, model: str) -> Path:
        """The cassette folder of ``provider`` and ``model``."""
        return _cassette(self.root, provider, model)

    def load(
        self,
        provider: str,
        model: str,
        key: str,
        body: Mapping[str, Any] | None = None,
        *,
        refresh: bool = False,
    ) -> ChatResult | None:
        """The recorded answer to exactly this request, or None (``refresh``: look at what
        other processes recorded since this one read the cassette, too)."""
        cassette = self._cassette(provider, model)
        if key not in cassette.index and refresh:
            with self._lock:
                cassette.refresh()
        if key not in cassette.index:
            return None
        with self._lock:
            record = cassette.read(key)
        if record is None:
            return None
        try:
            return result_from_json(record["response"])
        except (ValueError, KeyError, TypeError, AttributeError):
            with self._lock:
                cassette.corrupt += 1
                cassette.index.pop(key, None)
            return None

    def store(
        self,
        provider: str,
        model: str,
        key: str,
        body: Mapping[str, Any],
        result: ChatResult,
        *,
        body_json: str | None = None,
        repeat: int = 0,
    ) -> Path:
        """Append one record to this process's journal; returns the journal's path.

        ``body_json`` is :func:`canonical_body` of ``body`` when the caller has it already;
        ``repeat`` (the repeat index ``key`` was made with) is stored beside the request.
        """
        if body_json is None:
            body_json = canonical_body(body)
        # Written by hand so the request is not encoded again; keys in sorted order, the
        # shape _LINE_PREFIX expects.
        response = json.dumps(
            result_to_json(result), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        line_text = (
            f'{{"format":{RECORD_FORMAT},"key":"{key}",'
            f'"model":{json.dumps(model, ensure_ascii=False)},'
            f'"provider":{json.dumps(provider, ensure_ascii=False)},'
            f'{_repeat_field(repeat)}"request":{body_json},"response":{response}}}\n'
        )
        try:
            line = line_text.encode()
        except UnicodeEncodeError:
            # A lone surrogate (a model may send "\ud800" in its JSON) has no UTF-8 form:
            # escaped as JSON \u sequences it is stored, and replays as the same string.
            line = _ascii_line(key, provider, model, body, result, repeat)
        cassette = self._cassette(provider, model)
        with self._lock:
            return Path(cassette.append(key, line))

    def close(self) -> None:
        """Close the journals this process has open (more stores open new ones)."""
        with self._lock:
            for cassette in self._cassettes.values():
                cassette.close()
