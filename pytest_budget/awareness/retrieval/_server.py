"""The retrieval server: a BM25 index served over HTTP on loopback (``/search``,
``/retrieve``, ``/health``), refusing malformed and oversized requests with one-line
errors.  Re-exported by :mod:`pytest_budget.awareness.retrieval._client`.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pytest_budget.awareness.retrieval._index import (
    _DRAIN_LIMIT,
    DEFAULT_K,
    MAX_BODY_BYTES,
    MAX_K,
    MAX_QUERY_CHARS,
    RETRIEVE_DEFAULT_K,
    BM25Index,
    _one_line,
)


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close


def _query_too_long(query: str) -> _BadRequest:
    return _BadRequest(400, f"'query' is too long: {len(query)} characters > {MAX_QUERY_CHARS}")


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # UnicodeDecodeError and JSONDecodeError are both ValueErrors.
        raise _BadRequest(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise _BadRequest(400, f"body must be a JSON object, got {type(payload).__name__}")
    return payload


def _checked_query(payload: dict[str, Any]) -> str:
    if "query" not in payload:
        raise _BadRequest(400, "missing 'query'")
    query = payload["query"]
    if not isinstance(query, str):
        raise _BadRequest(400, f"'query' must be a string, got {type(query).__name__}")
    if not query.strip():
        raise _BadRequest(400, "'query' must not be empty or whitespace")
    if len(query) > MAX_QUERY_CHARS:
        raise _query_too_long(query)
    return query


def _checked_k(payload: dict[str, Any], key: str, default: int) -> int:
    k = payload.get(key, default)
    if isinstance(k, bool) or not isinstance(k, int):
        raise _BadRequest(400, f"'{key}' must be an integer, got {type(k).__name__}")
    if not 1 <= k <= MAX_K:
        raise _BadRequest(400, f"'{key}' must be within 1..{MAX_K}, got {k}")
    return k


def _parse_search(body: bytes) -> tuple[str, int]:
    payload = _json_object(body)
    unknown = sorted(set(payload) - {"query", "k"})
    if unknown:
        raise _BadRequest(400, f"unknown key(s) {unknown}; expected 'query' and optional 'k'")
    return _checked_query(payload), _checked_k(payload, "k", DEFAULT_K)


def _parse_retrieve(body: bytes) -> tuple[str, int]:
    """BAGEN's ``/retrieve`` request: ``{"query": str, "top_k": int}`` (``k`` also read, as
    BAGEN's server does; other keys are ignored, as there)."""
    payload = _json_object(body)
    query = _checked_query(payload)
    return query, _checked_k(payload, "top_k" if "top_k" in payload else "k", RETRIEVE_DEFAULT_K)


def passage_content(title: str, text: str) -> str:
    """A passage as one ``content`` string, wiki-18 style: ``"Title"`` then the text."""
    return f'"{title}"\n{text}'


def split_content(content: str) -> tuple[str, str]:
    """``(title, text)`` of a ``content`` string: the first line is the title (one pair of
    surrounding double quotes removed) when there is more than one line; else no title."""
    if "\n" not in content:
        return "", content
    first, text = content.split("\n", 1)
    title = first.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, text


def _refuse_huge_query(body: bytes) -> None:
    """An oversized body holding an over-long query gets that query's 400, not a 413."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return
    query = payload.get("query") if isinstance(payload, dict) else None
    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        raise _query_too_long(query)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.1 keeps connections alive (every reply carries Content-Length), so a client does
    # not pay a TCP handshake per query.
    protocol_version = "HTTP/1.1"
    timeout = 30  # socket timeout: an idle or stalled client cannot hold a thread forever
    # Headers and body leave in one buffered write (flushed after each request), and with
    # Nagle off a reply is never held back waiting for the client's delayed ACK (~40 ms).
    wbufsize = -1
    disable_nagle_algorithm = True
    server_version = "pytest-budget-retrieval"

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    # -- plumbing ---------------------------------------------------------------------------
    def handle_expect_100(self) -> bool:
        # wfile is buffered: push "100 Continue" out now, or curl waits a second for it.
        go_on = super().handle_expect_100()
        self.wfile.flush()
        return go_on

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no stderr noise in test runs

    def _send_json(self, status: int, payload: Mapping[str, Any], **headers: str) -> None:
        body = json.dumps(payload).encode("ascii")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error_json(self, status: int, message: str, **headers: str) -> None:
        self._send_json(status, {"error": _one_line(message)}, **headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Errors raised by the standard library itself (bad request line, header limits,
        # unsupported method) answer in JSON like ours.
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            # An unparsable request line leaves the 0.9 default, which would drop the status
            # line and headers; nobody speaks 0.9, so answer as 1.0.
            self.request_version = "HTTP/1.0"
        if message is None:
            message = self.responses.get(code, ("error", ""))[0]
        self._send_error_json(code, message)

    def _content_length(self) -> int:
        """The announced body size (0 if none); refuses what we cannot frame."""
        raw = self.headers.get("Content-Length")
        if raw is None:
            if self.headers.get("Transfer-Encoding"):
                raise _BadRequest(
                    411, "Content-Length required (chunked bodies unsupported)", close=True
                )
            return 0
        try:
            length = int(raw.strip())
        except ValueError:
            raise _BadRequest(400, f"bad Content-Length {raw!r}", close=True) from None
        if length < 0:
            raise _BadRequest(400, f"bad Content-Length {raw!r}", close=True)
        return length

    def _drain(self, length: int, *, keep: bool = False) -> bytes | None:
        """Read ``length`` body bytes (kept only if ``keep``); None if it is too much to
        bother or the client stopped sending."""
        if length > _DRAIN_LIMIT:
            return None
        chunks: list[bytes] = []
        while length > 0:
            chunk = self.rfile.read(min(length, 65536))
            if not chunk:
                return None
            if keep:
                chunks.append(chunk)
            length -= len(chunk)
        return b"".join(chunks)

    def _read_body(self) -> bytes:
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            body = self._drain(length, keep=True)
            if body is not None:
                _refuse_huge_query(body)
            raise _BadRequest(
                413, f"body too large: {length} bytes > {MAX_BODY_BYTES}", close=body is None
            )
        return self.rfile.read(length) if length else b""

    def _skip_body(self) -> None:
        """Consume an unused body so the next request on this connection parses cleanly."""
        length = self._content_length()
        if length and self._drain(length) is None:
            self.close_connection = True

    # -- routing ----------------------------------------------------------------------------
    def _dispatch(self) -> None:
        try:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            route = _ROUTES.get(path)
            if route is None:
                self._skip_body()
                raise _BadRequest(
                    404,
                    f"unknown path {path!r}; endpoints: GET /health, POST /retrieve, POST /search",
                )
            method, handler = route
            if self.command != method:
                self._skip_body()
                self._send_error_json(
                    405, f"{self.command} not allowed on {path}; use {method}", Allow=method
                )
                return
            handler(self)
        except _BadRequest as exc:
            if exc.close:
                self.close_connection = True
            self._send_error_json(exc.status, exc.message)
        except OSError:
            raise  # the connection itself failed; nothing can be answered on it
        except Exception as exc:  # a bug in the index must not take the server down
            self.close_connection = True
            self._send_error_json(500, f"internal error: {type(exc).__name__}: {exc}")

    def _health(self) -> None:
        self._skip_body()
        self._send_json(200, {"status": "ok", "documents": len(self.server.index)})

    def _search(self) -> None:
        query, k = _parse_search(self._read_body())
        results = self.server.index.search(query, k)
        self._send_json(
            200, {"query": query, "k": k, "results": [hit.as_dict() for hit in results]}
        )

    def _retrieve(self) -> None:
        query, k = _parse_retrieve(self._read_body())
        results = [
            {"id": hit.id, "content": passage_content(hit.title, hit.text), "score": hit.score}
            for hit in self.server.index.search(query, k)
        ]
        self._send_json(
            200,
            {"query": query, "method": "bm25", "results": results, "num_results": len(results)},
        )

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _dispatch


_ROUTES: dict[str, tuple[str, Callable[[_Handler], None]]] = {
    "/health": ("GET", _Handler._health),
    "/search": ("POST", _Handler._search),
    "/retrieve": ("POST", _Handler._retrieve),
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many clients connect at once.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], index: BM25Index) -> None:
        # Set before binding: TCPServer.__init__ creates the socket from this attribute.
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.index = index
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._workers: list[threading.Thread] = []
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind also resolves the host's FQDN (a DNS call we do not need).
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="retrieval-http-handler",
            daemon=True,
        )
        with self._lock:
            self._connections.add(request)
            self._workers = [t for t in self._workers if t.is_alive()]
            self._workers.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-reply is not worth a traceback on stderr

    def close_connections(self, timeout: float) -> None:
        """End keep-alive connections so a stopped server really stops answering."""
        with self._lock:
            connections, workers = list(self._connections), list(self._workers)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler
        for thread in workers:
            thread.join(timeout)


class RetrievalServer:
    """Serve a :class:`BM25Index` over HTTP in a background thread (API: module docstring).

    ``start()`` binds (``port=0``: a free port), starts serving and returns the base URL;
    ``stop()`` stops accepting, closes open connections and the listening socket.  Also a
    context manager: ``with RetrievalServer(index) as server: ... server.url ...``.
    """

    def __init__(self, index: BM25Index, host: str = "127.0.0.1", port: int = 0) -> None:
        if not isinstance(index, BM25Index):
            raise TypeError(f"expected BM25Index, got {type(index).__name__}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer within 0..65535, got {port!r}")
        self.index = index
        self.host = host
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("retrieval server is not running")
        host, port = self._server.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> str:
        if self._server is not None:
            raise RuntimeError("retrieval server already started")
        server = _Server((self.host, self.port), self.index)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="retrieval-http-server",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self, timeout: float = 5.0) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()  # no accept after this returns
        server.server_close()
        server.close_connections(timeout)
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> RetrievalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"RetrievalServer({where}, documents={len(self.index)})"


# -- the client -------------------------------------------------------------------------------
