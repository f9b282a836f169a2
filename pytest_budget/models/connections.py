"""Keep-alive connections for the model calls made inside one event loop.

Why this exists: the suites run every cell in its own ``anyio.run`` loop, and an ``httpx``
connection opened in one loop breaks in the next, so outside a scope the chat clients open
a fresh connection per call.  That costs a TCP handshake per call on both ends, and at
tens of calls in flight the client's CPU becomes the bottleneck.  A single pooled
``httpx.AsyncClient`` does not fix it: its pool re-checks every connection against every
queued request on each event, which grows with the square of the calls in flight.

:func:`connection_scope` therefore keeps, for the duration of one loop's work, a free list
of keep-alive connections per origin: a call takes an idle one (or makes
one), sends through it, and puts it back.  Concurrency stays bounded by the runtime's
limiter, so the list never grows past the calls in flight.  Everything is closed when the
scope ends, inside the loop that opened it.

A call skips httpx's client layers (redirects, cookies, auth hooks, stream decoders), which
are not needed for one JSON POST and cost more CPU than the request.  Under asyncio,
``http://`` origins (local model servers, where the client's CPU sets the pace) use
:class:`~pytest_budget.models.http11.HTTP11Connection`, a keep-alive connection parsed by
httptools in C; ``https://`` ones and other event loops use single-connection pools of
httpcore (the engine under httpx's own transport).  Errors are raised as the httpx
exceptions of the same name on both paths, so the retry policy cannot tell them apart.

A connection whose call failed is closed, not reused.  When proxy variables are set in the
environment (``HTTP_PROXY`` and friends) the scope stands aside and calls take the client's
own ``httpx.AsyncClient``, which honours them.
"""

from __future__ import annotations

import ssl
import threading
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import anyio
import httpcore
import httpx
import sniffio

from pytest_budget.models.http11 import HTTP11Connection, HTTPAnswer, open_connection, request_head

__all__ = [
    "ConnectionScope",
    "HTTPAnswer",
    "connection_scope",
    "current_connection_scope",
    "in_connection_scope",
    "run_in_connection_scope",
]

T = TypeVar("T")

_CURRENT: ContextVar[ConnectionScope | None] = ContextVar("budget_connection_scope", default=None)

# Building a verifying SSL context reads the CA bundle (tens of ms); one per process.
_SSL_LOCK = threading.Lock()
_SSL_CONTEXT: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx.create_ssl_context()
        return _SSL_CONTEXT


_Origin = tuple[bytes, bytes, int | None]


@dataclass(frozen=True)
class _Target:
    origin: _Origin
    url: httpcore.URL
    host_header: bytes
    host: str
    port: int
    path: str


def _target(url: str) -> _Target:
    parsed = httpx.URL(url)
    origin = (parsed.raw_scheme, parsed.raw_host, parsed.port)
    host = parsed.raw_host if parsed.port is None else b"%s:%d" % (parsed.raw_host, parsed.port)
    default_port = 443 if parsed.scheme == "https" else 80
    return _Target(
        origin,
        httpcore.URL(scheme=origin[0], host=origin[1], port=origin[2], target=parsed.raw_path),
        host,
        parsed.host,
        parsed.port or default_port,
        parsed.raw_path.decode("ascii"),
    )


def _as_httpx_error(
    exc: httpcore.TimeoutException | httpcore.NetworkError | Exception,
) -> Exception:
    """The httpx exception of the same name (httpx's transport maps them the same way)."""
    kind = getattr(httpx, type(exc).__name__, None)
    if isinstance(kind, type) and issubclass(kind, httpx.TransportError):
        return kind(str(exc))
    if isinstance(exc, httpcore.TimeoutException):
        return httpx.TimeoutException(str(exc))
    return httpx.TransportError(str(exc) or type(exc).__name__)


_HTTPCORE_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)


class ConnectionScope:
    """Idle keep-alive connections per origin, for one event loop's calls."""

    def __init__(self) -> None:
        self.direct = not urllib.request.getproxies()
        self.opened = 0  # connections made (for tests and benchmarks: reuse is visible)
        self._closed = False
        self._asyncio = sniffio.current_async_library() == "asyncio"
        self._targets: dict[str, _Target] = {}
        # asyncio and http://: our httptools connections.
        self._idle_fast: dict[_Origin, list[HTTP11Connection]] = {}
        self._open_fast: set[HTTP11Connection] = set()
        # https:// or another event loop: single-connection httpcore pools.
        self._idle: dict[_Origin, list[httpcore.AsyncConnectionPool]] = {}
        self._open: list[httpcore.AsyncConnectionPool] = []

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            target = self._targets[url] = _target(url)
        return target

    async def post(
        self, url: str, headers: Mapping[str, str], content: bytes, timeout: float
    ) -> HTTPAnswer:
        """POST ``content`` to ``url`` on an idle connection and read the whole answer."""
        if self._closed:
            raise RuntimeError("connection scope is closed")
        target = self._target(url)
        if self._asyncio and target.origin[0] == b"http":
            return await self._post_fast(target, headers, content, timeout)
        return await self._post_httpcore(target, headers, content, timeout)

    # -- http:// under asyncio ------------------------------------------------------------------
    async def _post_fast(
        self, target: _Target, headers: Mapping[str, str], content: bytes, timeout: float
    ) -> HTTPAnswer:
        head = request_head(
            "POST", target.path, target.host_header.decode("ascii"), headers, len(content)
        )
        idle = self._idle_fast.get(target.origin)
        connection = None
        while idle:
            candidate = idle.pop()
            if candidate.reusable:  # the server may have closed it while it was idle
                connection = candidate
                break
            self._open_fast.discard(candidate)
            candidate.close()
        if connection is None:
            connection = await open_connection(target.host, target.port, timeout)
            self._open_fast.add(connection)
            self.opened += 1
        try:
            answer = await connection.request(head, content, timeout)
        except BaseException:
            self._open_fast.discard(connection)  # request() has closed it
            raise
        if connection.reusable:
            self._idle_fast.setdefault(target.origin, []).append(connection)
        else:
            self._open_fast.discard(connection)
            connection.close()
        return answer

    # -- https:// or another event loop -----------------------------------------------------------
    def _pool(self, origin: _Origin) -> httpcore.AsyncConnectionPool:
        idle = self._idle.get(origin)
        if idle:
            return idle.pop()
        if origin[0] == b"https":
            pool = httpcore.AsyncConnectionPool(ssl_context=_ssl_context(), max_connections=1)
        else:
            pool = httpcore.AsyncConnectionPool(max_connections=1)
        self._open.append(pool)
        self.opened += 1
        return pool

    async def _post_httpcore(
        self, target: _Target, headers: Mapping[str, str], content: bytes, timeout: float
    ) -> HTTPAnswer:
        raw_headers = [
            (b"Host", target.host_header),
            (b"Content-Length", str(len(content)).encode()),
            *((name.encode(), value.encode()) for name, value in headers.items()),
        ]
        seconds = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        pool = self._pool(target.origin)
        try:
            answer = await pool.request(
                b"POST",
                target.url,
                headers=raw_headers,
                content=content,
                extensions={"timeout": seconds},
            )
        except BaseException as exc:
            # A half-used connection is not trusted again (also on cancellation).
            with anyio.CancelScope(shield=True):
                await self._discard(pool)
            if isinstance(exc, _HTTPCORE_ERRORS):
                raise _as_httpx_error(exc) from exc
            raise
        self._idle.setdefault(target.origin, []).append(pool)
        return HTTPAnswer(
            answer.status,
            {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in answer.headers
            },
            answer.content,
        )

    async def _discard(self, pool: httpcore.AsyncConnectionPool) -> None:
        if pool in self._open:
            self._open.remove(pool)
        await pool.aclose()

    async def aclose(self) -> None:
        self._closed = True
        pools, self._open, self._idle = self._open, [], {}
        for pool in pools:
            await pool.aclose()
        fast, self._open_fast, self._idle_fast = self._open_fast, set(), {}
        for connection in fast:
            await connection.aclose()


def current_connection_scope() -> ConnectionScope | None:
    """The scope of the running task, if any (inherited by tasks it starts)."""
    return _CURRENT.get()


@asynccontextmanager
async def connection_scope() -> AsyncIterator[ConnectionScope]:
    """Reuse connections for the model calls made inside the block (one event loop).

    Nested use joins the outer scope.  Connections are closed when the outermost block
    ends, shielded from cancellation so nothing is left for the garbage collector.
    """
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    scope = ConnectionScope()
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)
        with anyio.CancelScope(shield=True):
            await scope.aclose()


async def in_connection_scope(func: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(in_connection_scope, lambda: work())``: run ``work`` inside a scope."""
    async with connection_scope():
        return await func()


def run_in_connection_scope(func: Callable[[], Awaitable[T]]) -> T:
    """Run ``func()`` in a new event loop, inside a connection scope, and return its result.

    The loop's main task returns nothing: on Python 3.11, ``asyncio.Runner`` restoring the
    SIGINT handler at exit builds the ``repr`` of the handler, which includes the main task
    and its result; for a cell's outcome (every probe and answer) that ``repr`` costs a
    noticeable share of the cell.
    """
    box: list[T] = []

    async def main() -> None:
        async with connection_scope():
            box.append(await func())

    anyio.run(main)
    return box[0]
