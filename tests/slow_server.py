"""Model endpoints that never finish answering, on loopback: for deadline tests.

``SlowServer("hang")`` answers ``GET /v1/models`` normally (so the run's endpoint check
passes) and never answers a POST; ``SlowServer("trickle")`` starts a 200 answer to every
POST and then sends one byte every ``every_s`` seconds, so no read ever waits long enough
for a per-read timeout.  Both stop at :meth:`stop`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["SlowServer"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        owner = self.server.owner
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner.lock:
            owner.posts += 1
            owner.post_times.append(time.monotonic())
        try:
            if owner.mode == "hang":
                owner.stopped.wait()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            self.wfile.flush()
            while not owner.stopped.wait(owner.every_s):
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:  # the client gave up
            return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    owner: SlowServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


class SlowServer:
    def __init__(self, mode: str, every_s: float = 0.2) -> None:
        assert mode in ("hang", "trickle")
        self.mode = mode
        self.every_s = every_s
        self.lock = threading.Lock()
        self.posts = 0
        self.post_times: list[float] = []
        self.stopped = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> SlowServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
