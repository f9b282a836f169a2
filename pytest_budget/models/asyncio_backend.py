"""A plain-asyncio network backend for httpcore, used for ``http://`` model servers.

httpcore's default backend goes through anyio socket streams, which open a cancel scope and
yield to the event loop on every read and write.  For a local model server at tens of calls
in flight that bookkeeping costs about as much CPU as parsing the HTTP itself.  This backend
implements httpcore's documented interface (:class:`httpcore.AsyncNetworkBackend`,
:class:`httpcore.AsyncNetworkStream`) over an :class:`asyncio.Protocol` with a byte buffer:
a read returns what has arrived or waits for the next chunk, a write hands the bytes to the
transport and waits only when the transport asks for back-pressure.

Timeouts use :func:`asyncio.timeout` and raise httpcore's own timeout errors, connection
failures raise ``ConnectError``/``ReadError``/``WriteError``, so httpx and the retry policy
see exactly the exceptions they see with the default backend.  TLS is not handled here:
``https://`` origins keep httpcore's default backend.
"""

from __future__ import annotations

import asyncio
import socket
import typing
from collections.abc import Iterable

import httpcore

__all__ = ["AsyncioBackend"]


class _BufferedProtocol(asyncio.Protocol):
    """Collects received bytes and wakes one waiting reader or writer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.write_paused = False
        self._reader: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake_reader()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake_reader()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake_reader()
        self._wake_writer()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._wake_writer()

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    def _wake_writer(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    async def wait_readable(self, timeout: float | None) -> None:
        self._reader = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._reader
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no data within {timeout} s") from None
        finally:
            self._reader = None

    async def wait_writable(self, timeout: float | None) -> None:
        self._drain = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._drain
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not write within {timeout} s") from None
        finally:
            self._drain = None


class _AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, protocol: _BufferedProtocol, transport: asyncio.Transport) -> None:
        self._protocol = protocol
        self._transport = transport

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.buffer and not protocol.eof:
            await protocol.wait_readable(timeout)
        if protocol.buffer:
            data = bytes(protocol.buffer[:max_bytes])
            del protocol.buffer[:max_bytes]
            return data
        if protocol.error is not None:
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""  # orderly end of stream; httpcore decides whether that is an error

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        if self._protocol.write_paused:
            await self._protocol.wait_writable(timeout)
            if self._protocol.error is not None:
                raise httpcore.WriteError(str(self._protocol.error))

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("TLS goes through httpcore's default backend")

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            # Idle keep-alive connection with bytes or EOF pending: the server hung up.
            return bool(self._protocol.buffer) or self._protocol.eof
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Plain TCP over asyncio for httpcore (see the module doc)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _BufferedProtocol, host, port, local_addr=local
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from None
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Headers and body are separate writes; without this Nagle holds the second.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for option in socket_options or ():
                sock.setsockopt(*option)
        return _AsyncioStream(protocol, transport)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("unix sockets go through httpcore's default backend")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
