"""The worker loop's one HTTP pool: httpx over httpcore, with httpcore's network layer on asyncio.

:func:`pooled_client` makes the ``httpx.AsyncClient`` that every cell of a process sends
through (:func:`pytest_budget.models._loop.shared_http_client`).  Its transport,
:class:`PooledTransport`, hands each request to one of httpx's own ``AsyncHTTPTransport``
pools, over :class:`AsyncioBackend`.

**One connection per pool.**  httpcore's pool re-checks every connection (and, for the
keep-alive count, every idle connection against every other) on each request and each
answer, so one pool of 32 busy connections costs about a millisecond of CPU per call.
:class:`PooledTransport` keeps pools of one connection on a free list instead.

**The network layer.**

httpx sends through httpcore, and httpcore reads and writes sockets through a *network
backend*.  Its default one goes through anyio: every read and write opens a cancel scope
for its timeout, every idle check builds anyio's attribute table and polls the socket, and
a request's head and body leave in two ``send`` calls.  That is most of httpx's CPU per
call on a loopback or LAN server.  :class:`AsyncioBackend` is the same interface
(``httpcore.AsyncNetworkBackend``) over an ``asyncio.Protocol``:

* a read returns what ``data_received`` buffered, or waits on one future (its timeout is
  one timer handle, cancelled when data comes);
* writes are buffered and leave in one ``send`` before the next read (httpcore always
  reads the answer after writing a request; large bodies are flushed as they grow, with
  asyncio's flow control);
* "is this idle connection readable?" (httpcore's keep-alive check) is answered from the
  protocol's state (data or EOF arrived) with no system call;
* TLS is asyncio's own (``loop.start_tls``).

**Cookies.**  httpx hands every answer to the client's cookie jar, which builds
``urllib`` request and message objects for it whether or not the answer sets a cookie
(~0.1 ms a call); the pooled client's jar (:class:`_Cookies`) skips answers without a
``Set-Cookie`` or ``Set-Cookie2`` header, where the jar would find nothing anyway.

Everything above the network layer (the pool, HTTP/1.1 parsing with h11, httpx's client,
proxies, timeouts and their exceptions) is httpx's and httpcore's own: there is one HTTP
path, with a cheaper floor under it.  The backend only works under asyncio; the worker
loop is asyncio (:mod:`pytest_budget.models._loop`).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import Any

import httpcore
import httpx
from httpx._utils import get_environment_proxies

__all__ = ["AsyncioBackend", "PooledTransport", "pooled_client"]

# Bytes buffered by writes before they are sent without waiting for the next read.
_FLUSH_AT = 64 * 1024


class _Protocol(asyncio.Protocol):
    """Buffers what arrives; wakes the one reader waiting, if any."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False
        self.drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        if exc is not None:
            self.error = exc
        self._wake()
        self._resume()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._resume()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _resume(self) -> None:
        drained = self.drained
        if drained is not None:
            self.drained = None
            if not drained.done():
                drained.set_result(None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


async def _wait(
    future: asyncio.Future[None], timeout: float | None, timeout_error: type[Exception]
) -> None:
    """Await ``future``, failing with ``timeout_error`` after ``timeout`` seconds (one timer
    on the loop, cheaper than a cancel scope per read)."""
    timer = None
    if timeout is not None:
        timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
    try:
        await future
    except TimeoutError:
        raise timeout_error() from None
    finally:
        if timer is not None:
            timer.cancel()


class _Stream(httpcore.AsyncNetworkStream):
    """One connection: :class:`_Protocol`'s buffer read by httpcore."""

    def __init__(self, protocol: _Protocol, transport: asyncio.Transport) -> None:
        self._protocol = protocol
        self._transport = transport
        self._pending: list[bytes] = []
        self._pending_size = 0

    def _flush(self) -> None:
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            if not self._transport.is_closing():
                self._transport.write(data)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if self._pending:
            self._flush()
        if not protocol.buffer and not protocol.eof:
            waiter = protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(waiter, timeout, httpcore.ReadTimeout)
            finally:
                protocol.waiter = None
        buffer = protocol.buffer
        if buffer:
            if len(buffer) <= max_bytes:
                data = bytes(buffer)
                buffer.clear()
            else:
                data = bytes(buffer[:max_bytes])
                del buffer[:max_bytes]
            return data
        if protocol.error is not None:
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""  # the peer closed the connection

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if self._transport.is_closing():
            raise httpcore.WriteError(str(protocol.error or "connection closed"))
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size < _FLUSH_AT:
            return
        self._flush()
        if protocol.paused and not protocol.eof:
            drained = protocol.drained = asyncio.get_running_loop().create_future()
            await _wait(drained, timeout, httpcore.WriteTimeout)
        if protocol.error is not None:
            raise httpcore.WriteError(str(protocol.error))

    async def aclose(self) -> None:
        self._pending.clear()
        transport = self._transport
        if not transport.is_closing():
            transport.close()
            # As anyio does: let the loop run the close (the socket is released now, not
            # when the loop is gone), then drop whatever could not be sent.
            await asyncio.sleep(0)
            transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self._flush()
        loop = asyncio.get_running_loop()
        try:
            transport = await asyncio.wait_for(
                loop.start_tls(
                    self._transport,
                    self._protocol,
                    ssl_context,
                    server_side=False,
                    server_hostname=server_hostname,
                ),
                timeout,
            )
        except TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout() from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        if transport is None:  # pragma: no cover - the peer closed during the handshake
            raise httpcore.ConnectError("connection closed during the TLS handshake")
        return _Stream(self._protocol, transport)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            # An idle keep-alive connection is readable when the server closed it or sent
            # something unasked: either way httpcore drops it.
            protocol = self._protocol
            return bool(protocol.buffer) or protocol.eof or transport.is_closing()
        return None


async def _opened(
    connecting: Coroutine[Any, Any, tuple[asyncio.Transport, Any]], timeout: float | None
) -> asyncio.Transport:
    """The transport of a connection being opened; a timeout or a refusal as httpcore's
    connect errors."""
    try:
        transport, _ = await asyncio.wait_for(connecting, timeout)
    except TimeoutError:
        raise httpcore.ConnectTimeout() from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from exc
    return transport


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on the running asyncio loop (see the module's doc)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        protocol = _Protocol()
        transport = await _opened(
            asyncio.get_running_loop().create_connection(
                lambda: protocol,
                host,
                port,
                local_addr=None if local_address is None else (local_address, 0),
            ),
            timeout,
        )
        sock: socket.socket | None = transport.get_extra_info("socket")
        if sock is not None:
            for option in socket_options or ():
                sock.setsockopt(*option)
        return _Stream(protocol, transport)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        protocol = _Protocol()
        transport = await _opened(
            asyncio.get_running_loop().create_unix_connection(lambda: protocol, path), timeout
        )
        return _Stream(protocol, transport)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _small_pool(context: ssl.SSLContext) -> httpx.AsyncHTTPTransport:
    """httpx's transport with an httpcore pool of one connection on :class:`AsyncioBackend`
    (httpx takes no network backend, so its pool is replaced)."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    transport = httpx.AsyncHTTPTransport(verify=context, limits=limits)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=AsyncioBackend(),
    )
    return transport


class PooledTransport(httpx.AsyncBaseTransport):
    """httpx transports of one connection each, kept on a free list.

    A request takes the transport whose connection went idle last (a new one when none is
    idle) and gives it back when its answer is closed, so each httpcore pool only ever
    looks at its one connection, and there are as many connections as calls were ever in
    flight at once (the runtime's ``--budget-concurrency`` limit bounds them).
    """

    def __init__(self) -> None:
        # One SSL context for every pool (each costs ~10 ms of CPU to build).
        self._context = httpx.create_ssl_context()
        self._pools: list[httpx.AsyncHTTPTransport] = []
        self._idle: list[httpx.AsyncHTTPTransport] = []

    @property
    def connections(self) -> int:
        """How many one-connection pools there are (idle or busy)."""
        return len(self._pools)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        idle = self._idle
        if idle:
            pool = idle.pop()
        else:
            pool = _small_pool(self._context)
            self._pools.append(pool)
        try:
            response = await pool.handle_async_request(request)
        except BaseException:
            idle.append(pool)
            raise
        response.stream = _Released(response.stream, idle, pool)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        self._idle.clear()
        for pool in self._pools:
            await pool.aclose()


class _Released(httpx.AsyncByteStream):
    """A response stream that puts its pool back on the free list when it is closed."""

    def __init__(
        self,
        stream: httpx.AsyncByteStream,
        idle: list[httpx.AsyncHTTPTransport],
        pool: httpx.AsyncHTTPTransport,
    ) -> None:
        self._stream = stream
        self._idle = idle
        self._pool: httpx.AsyncHTTPTransport | None = pool

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            pool, self._pool = self._pool, None
            if pool is not None:
                self._idle.append(pool)


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which looks at an answer only when it sets a cookie."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _PooledClient(httpx.AsyncClient):
    """``httpx.AsyncClient`` whose cookies live in a :class:`_Cookies` jar."""

    @property
    def cookies(self) -> httpx.Cookies:
        return self._cheap_cookies

    @cookies.setter
    def cookies(self, cookies: httpx._types.CookieTypes) -> None:
        self._cheap_cookies = _Cookies(cookies)


def pooled_client() -> httpx.AsyncClient:
    """The ``httpx.AsyncClient`` of a worker loop: :class:`PooledTransport` for every URL
    that goes direct; the proxy variables of the environment (``HTTP_PROXY``,
    ``NO_PROXY``...) route the others through httpx's proxy transports, mounted as httpx
    itself mounts them (it does so only without a transport of one's own).  Connections
    are kept alive either way."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        pattern: None if url is None else httpx.AsyncHTTPTransport(proxy=url, limits=limits)
        for pattern, url in get_environment_proxies().items()
    }
    client = _PooledClient(transport=PooledTransport(), mounts=mounts, limits=limits, timeout=None)
    client.cookies = client._cookies  # the jar httpx made (empty), in a _Cookies
    return client
