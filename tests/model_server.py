"""A local model server for tests: OpenAI- and Anthropic-compatible, with scripted faults.

A real ``ThreadingHTTPServer`` on ``127.0.0.1`` (free port) speaking HTTP/1.1:

* ``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic) answer with the
  text ``answer(body)`` returns (``body`` is the request JSON, so answers can depend on the
  role's system prompt), after ``latency`` seconds, with a ``usage`` block (OpenAI: a dict
  ``answer`` returns is the whole assistant message, e.g. with ``tool_calls``);
* ``GET /v1/models`` and ``GET /v1/models/{id}`` list / describe ``models``;
* a request without the expected key (``api_key``) gets 401 like the hosted APIs;
* ``fail(*faults)`` queues faults for the next POSTs: an HTTP status with headers
  (``Fault.status(429, {"retry-after": "0"})``), a dropped connection, a truncated JSON body,
  a reply slower than the client's timeout, a reply without ``usage``, an HTML page, a
  whole reply after which the server closes the kept-alive connection;
* ``tls``: a server-side ``ssl.SSLContext`` serves HTTPS instead.

It counts requests, TCP connections (``connections``) and the most POSTs ever in flight at
once (``max_in_flight``).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "ESTIMATOR_MARK",
    "Fault",
    "ModelServer",
    "fresh_worker_loop",
    "role_answer",
    "tls_context",
    "trust_authority",
]

#: In every awareness estimator request (its answer format), and in no other role's.
ESTIMATOR_MARK = "<answer>impossible</answer>"


@dataclass(frozen=True)
class Fault:
    kind: str  # status | drop | truncate | slow | no_usage | html | close
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def http(cls, status: int, headers: dict[str, str] | None = None) -> Fault:
        return cls("status", status=status, headers=headers or {})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes; with Nagle on, a kept-alive connection waits for the
    # client's delayed ACK (~40 ms) before the body goes out.
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.owner.lock:
            self.server.owner.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        merged = {"Content-Type": "application/json", **(headers or {})}
        for name, value in merged.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _authorised(self) -> bool:
        expected = self.server.owner.api_key
        if expected is None:
            return True
        given = self.headers.get("x-api-key") or (self.headers.get("authorization") or "")
        return given in (expected, f"Bearer {expected}")

    def do_GET(self) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.gets.append(self.path)
            owner.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        if not self._authorised():
            self._send(401, json.dumps({"error": {"message": "invalid api key"}}).encode())
            return
        if owner.html:
            self._send(200, b"<!doctype html><html>hello</html>", {"Content-Type": "text/html"})
            return
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": name, "object": "model"} for name in owner.models]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
            return
        name = self.path.rsplit("/", 1)[-1]
        if name in owner.models:
            self._send(200, json.dumps({"id": name, "type": "model"}).encode())
        else:
            self._send(404, json.dumps({"error": {"message": f"model {name} not found"}}).encode())

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw)
        with owner.lock:
            owner.requests.append(body)
            owner.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
            fault = owner.faults.popleft() if owner.faults else None
        try:
            self._answer(body, fault)
        finally:
            with owner.lock:
                owner.in_flight -= 1

    def _answer(self, body: dict[str, Any], fault: Fault | None) -> None:
        owner = self.server.owner
        if not self._authorised():
            self._send(401, json.dumps({"error": {"message": "invalid api key"}}).encode())
            return
        if owner.latency:
            time.sleep(owner.latency)
        if fault is not None and fault.kind == "status":
            message = {"error": {"message": f"scripted {fault.status}"}}
            self._send(fault.status, json.dumps(message).encode(), fault.headers)
            return
        if fault is not None and fault.kind == "drop":
            self.close_connection = True  # no response at all: the client sees a disconnect
            return
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.seconds)
        if fault is not None and fault.kind == "html":
            self._send(200, b"<html>proxy error</html>", {"Content-Type": "text/html"})
            return
        rejected = owner.reject(body) if owner.reject is not None else None
        if rejected is not None:
            self._send(400, json.dumps({"error": {"message": rejected}}).encode())
            return
        answered = owner.answer(body)
        # A dict is the whole OpenAI assistant message (tool calls); a string is its text.
        message: dict[str, Any] = (
            answered if isinstance(answered, dict) else {"role": "assistant", "content": answered}
        )
        text = message.get("content") or ""
        anthropic = self.path.endswith("/messages")
        usage: dict[str, Any] | None
        if anthropic:
            reply: dict[str, Any] = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            }
            usage = {"input_tokens": owner.input_tokens, "output_tokens": owner.output_tokens}
        else:
            reply = {
                "id": "c1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                        "message": message,
                    }
                ],
            }
            usage = {
                "prompt_tokens": owner.input_tokens,
                "completion_tokens": owner.output_tokens,
                "total_tokens": owner.input_tokens + owner.output_tokens,
            }
        if not (fault is not None and fault.kind == "no_usage") and owner.report_usage:
            reply["usage"] = usage
        payload = json.dumps(reply).encode()
        if fault is not None and fault.kind == "truncate":
            payload = payload[: len(payload) // 2]
        self._send(200, payload)
        if fault is not None and fault.kind == "close":
            # A whole answer, then the connection closes (no "Connection: close" header),
            # as a server does with keep-alive connections it times out.
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    owner: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, killed run) closes its socket mid-reply: expected.
        return


class ModelServer:
    """See the module docstring."""

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], str | dict[str, Any]] | None = None,
        *,
        latency: float = 0.0,
        models: tuple[str, ...] = ("m",),
        api_key: str | None = None,
        input_tokens: int = 50,
        output_tokens: int = 7,
        report_usage: bool = True,
        reject: Callable[[dict[str, Any]], str | None] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answer = answer or role_answer
        # A request ``reject(body)`` names gets HTTP 400 with that message (not retried).
        self.reject = reject
        self.tls = tls  # a server-side context: HTTPS
        self.latency = latency
        self.models = models
        self.api_key = api_key
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.report_usage = report_usage
        self.html = False
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.headers_seen: list[dict[str, str]] = []  # every request's headers, lower-case
        self.faults: deque[Fault] = deque()
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0  # TCP connections accepted (keep-alive reuse shows here)
        self._server: _Server | None = None
        self._url: str | None = None
        self._thread: threading.Thread | None = None

    def fail(self, *faults: Fault) -> None:
        with self.lock:
            self.faults.extend(faults)

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (kept after :meth:`stop`, to show nothing answers)."""
        assert self._url is not None, "server not started"
        return self._url

    def start(self) -> ModelServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        host, port = self._server.server_address[:2]
        scheme = "https" if self.tls is not None else "http"
        self._url = f"{scheme}://{host!s}:{port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def role_answer(body: dict[str, Any]) -> str:
    """A scripted reply per role, read off the prompt the suite sent: an interval for the
    awareness estimator, an empty plan for the triage planner, an answer for the solver."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("system", ""))
    if ESTIMATOR_MARK in text:  # the awareness estimator's answer format
        return "<think>about the same again</think><answer>[0, 900]</answer>"
    if "How your plan is used" in text:
        return '{"plan": []}'
    return "Answer: 0"


def tls_context(authority: Any) -> ssl.SSLContext:
    """A server-side TLS context with a certificate for ``127.0.0.1`` issued by
    ``authority`` (a ``trustme.CA``)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    return context


def trust_authority(authority: Any, folder: Path, monkeypatch: Any) -> None:
    """Make the run trust ``authority`` through ``SSL_CERT_FILE`` (as a company proxy's
    CA would be trusted); its PEM is written into ``folder``."""
    ca_file = folder / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))


def fresh_worker_loop() -> Iterator[None]:
    """A test between two closings of the process's worker loop (its HTTP client and
    pool start anew); ``yield from`` it in an autouse fixture."""
    from pytest_budget.models._loop import close_worker_loop

    close_worker_loop()
    yield
    close_worker_loop()
