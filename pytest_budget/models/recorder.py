"""Record and replay model calls: one JSON file per distinct request, written as it completes.

A call is keyed by the SHA-256 of its normalised request: the provider and the JSON body the
client would post (model, messages, tools, ``max_tokens``, ``temperature``), serialised with
sorted keys.  Headers are never part of the key or the file, so no API key is stored; the
base URL is not part of the key either, so calls recorded against a hosted API replay in CI
without it.  Files live under ``<dir>/<provider>/<model>/<key[:2]>/<key>.json``; the folder of
one provider and model is a *cassette*.

Modes (``--budget-record-mode``), as in VCR-style tools:

* ``new`` (default): replay what is recorded, call and record the rest;
* ``once``: a cassette that already holds recordings replays only (a new request is an
  error); an empty one records everything;
* ``all``: call everything and re-record;
* ``none``: replay only; a request without a recording is an error and nothing is called.

Every record is written with temp-file-and-rename, so a run killed at any moment leaves only
whole records, and the next run replays them instead of paying again.  Identical requests
get the identical recorded answer, which is what makes a replayed run's scores equal the
live run's (temperature 0 is the default for every role).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_budget.models.client import ChatResult, ToolCall
from pytest_budget.models.usage import TokenUsage

__all__ = [
    "RECORD_FORMAT",
    "CallRecorder",
    "cassette_has_records",
    "request_key",
    "resolve_mode",
    "result_from_json",
    "result_to_json",
]

RECORD_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def request_key(provider: str, body: Mapping[str, Any]) -> str:
    """The SHA-256 hex digest of the normalised request."""
    canonical = json.dumps(
        {"provider": provider, "request": body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _cassette(root: Path, provider: str, model: str) -> Path:
    safe = _UNSAFE.sub("_", model).strip("._") or "model"
    if safe != model:
        # Two model names that sanitise alike must not share a folder.
        safe = f"{safe}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:8]}"
    return root / _UNSAFE.sub("_", provider) / safe


def cassette_has_records(root: str | os.PathLike[str], provider: str, model: str) -> bool:
    folder = _cassette(Path(root), provider, model)
    return folder.is_dir() and any(folder.glob("*/*.json"))


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


class CallRecorder:
    """Reads and writes recorded calls under one directory (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.corrupt = 0  # records that could not be read (treated as missing)
        self._made: set[Path] = set()  # folders known to exist (one mkdir per folder)
        self._cassettes: dict[tuple[str, str], str] = {}

    def path(self, provider: str, model: str, key: str) -> Path:
        folder = self._cassettes.get((provider, model))
        if folder is None:
            folder = self._cassettes[provider, model] = str(_cassette(self.root, provider, model))
        return Path(f"{folder}/{key[:2]}/{key}.json")

    def load(
        self, provider: str, model: str, key: str, body: Mapping[str, Any]
    ) -> ChatResult | None:
        """The recorded answer to exactly this request, or None."""
        path = self.path(provider, model, key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError:
            self.corrupt += 1
            return None
        try:
            data = json.loads(text)
            # The file name is the SHA-256 of the normalised request; the stored key guards
            # against a file copied or renamed by hand.
            if data.get("format") != RECORD_FORMAT or data.get("key") != key:
                self.corrupt += 1
                return None
            return result_from_json(data["response"])
        except (ValueError, KeyError, TypeError, AttributeError):
            self.corrupt += 1
            return None

    def store(
        self,
        provider: str,
        model: str,
        key: str,
        body: Mapping[str, Any],
        result: ChatResult,
    ) -> Path:
        """Write one record atomically (a reader never sees half a file)."""
        path = self.path(provider, model, key)
        if path.parent not in self._made:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(path.parent)
        record = {
            "format": RECORD_FORMAT,
            "provider": provider,
            "model": model,
            "key": key,
            "request": body,
            "response": result_to_json(result),
        }
        # dumps, not dump: json.dump to a file takes the pure-Python encoder, several times
        # slower on a long conversation.
        data = json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")
        # A name of our own, unique per process and thread (a store never yields to another
        # task), is half the cost of mkstemp's random-name search.
        tmp = f"{path.parent}/.{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:  # os.write may write less than asked
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
