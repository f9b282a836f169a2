"""A scripted HTTP server on loopback for testing model clients (a real server, not a mock).

``ScriptedServer`` runs ``http.server.ThreadingHTTPServer`` on ``127.0.0.1`` at a free port
(port 0) in a background thread.  Each POST takes the next :class:`Reply` from the script
(status, JSON or raw body, headers, optional short delay) and is recorded as a
:class:`Recorded` request.  When the script runs out the server answers 500 with
``{"error": {"message": "script exhausted"}}``.  Non-POST methods get 405.

    with ScriptedServer([Reply(json={...})]) as server:
        ... post to server.url + "/v1/chat/completions" ...
        assert server.requests[0].json["max_tokens"] == 64

Leaving the ``with`` block shuts the server down and closes its socket.  The server never
writes to stderr; its access-log lines are kept in :attr:`ScriptedServer.log`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["Recorded", "Reply", "ScriptedServer"]

MAX_DELAY = 0.2
"""Longest delay a reply may ask for: tests must stay fast and never depend on timing."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON value (``json``) or raw bytes (``body``), never both."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.json is not None and self.body is not None:
            raise ValueError("give json or body, not both")
        if not 0.0 <= self.delay <= MAX_DELAY:
            raise ValueError(f"delay must be within [0, {MAX_DELAY}] s, got {self.delay!r}")

    def payload(self) -> tuple[bytes, str]:
        if self.body is not None:
            return self.body, self.headers.get("content-type", "text/plain; charset=utf-8")
        return json.dumps(self.json).encode("utf-8"), "application/json"


@dataclass(frozen=True)
class Recorded:
    """A request the server received (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5  # socket timeout, so a stuck client cannot hang shutdown

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        recorded = Recorded(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        reply = self.server.owner._take(recorded)
        if reply.delay:
            time.sleep(reply.delay)
        payload, content_type = reply.payload()
        self.send_response(reply.status)
        headers = {"content-type": content_type, **reply.headers}
        for name, value in headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _not_allowed(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def log_message(self, format: str, *args: Any) -> None:
        self.server.owner._log(format % args)


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close (replies sleep at most MAX_DELAY), so a test leaves
    # no thread behind.
    daemon_threads = False
    block_on_close = True
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout test) closes its socket mid-reply: not an error here.
        self.owner._log(f"handler error for {client_address}")


class ScriptedServer:
    """A loopback HTTP server answering POSTs from a script; see the module docstring."""

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque(replies)
        self._requests: list[Recorded] = []
        self._log_lines: list[str] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- script and records ------------------------------------------------------------------
    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    @property
    def log(self) -> list[str]:
        with self._lock:
            return list(self._log_lines)

    def _take(self, recorded: Recorded) -> Reply:
        with self._lock:
            self._requests.append(recorded)
            if self._script:
                return self._script.popleft()
        return Reply(status=500, json={"error": {"message": "script exhausted"}})

    def _log(self, line: str) -> None:
        with self._lock:
            self._log_lines.append(line)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedServer:
        if self._server is not None:
            raise RuntimeError("server already started")
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-http-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
