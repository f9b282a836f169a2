"""HTTP/1.1 keep-alive connections over asyncio, parsed by httptools (llhttp, in C).

Why this exists: a model call is one small JSON POST and one small JSON answer, and at tens
of calls in flight against a local server the client's CPU per call decides the wall time.
httpcore with h11 (pure Python) costs about 0.3 ms of CPU per call; this connection, a
plain :class:`asyncio.Protocol` feeding httptools' parser, about 0.05 ms.  It is used by
:class:`~pytest_budget.models.connections.ConnectionScope` for ``http://`` origins under
asyncio; ``https://`` origins and other event loops keep httpcore.

What it does, and no more: one request at a time per connection (no pipelining), whole
answers (no streaming), ``Content-Length``, chunked and read-until-close bodies, gzip and
deflate content codings, and keep-alive as the server allows it.  Failures raise the httpx
exceptions httpx's own transport would raise (``ConnectError``, ``ConnectTimeout``,
``ReadTimeout``, ``WriteTimeout``, ``ReadError``, ``RemoteProtocolError``), so the retry
policy and the error messages cannot tell the two paths apart.
"""

from __future__ import annotations

import asyncio
import http
import json
import socket
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httptools
import httpx

__all__ = ["HTTP11Connection", "HTTPAnswer", "open_connection", "request_head"]


@dataclass(frozen=True, slots=True)
class HTTPAnswer:
    """A whole HTTP answer: status, headers (lower-case names) and body bytes."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def reason_phrase(self) -> str:
        try:
            return http.HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON (``ValueError`` when it is not)."""
        return json.loads(self.content)

    @classmethod
    def from_httpx(cls, response: httpx.Response) -> HTTPAnswer:
        return cls(response.status_code, dict(response.headers), response.content)


def _checked(text: str, what: str) -> bytes:
    # A line break in a header would let a value start a new header (or a new request); an
    # API key read with a trailing newline is the usual way to get one.  The value is never
    # quoted: it may be a key.
    if "\r" in text or "\n" in text:
        raise httpx.LocalProtocolError(f"header {what} contains a line break")
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise httpx.LocalProtocolError(f"header {what} is not latin-1 text") from None


def request_head(
    method: str, target: str, host: str, headers: Mapping[str, str], length: int
) -> bytes:
    """The request line and headers of a request with a ``length``-byte body."""
    lines = [f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n".encode("latin-1")]
    for name, value in headers.items():
        lines.append(b"%s: %s\r\n" % (_checked(name, repr(name)), _checked(value, repr(name))))
    lines.append(b"Content-Length: %d\r\n\r\n" % length)
    return b"".join(lines)


def _decoded(body: bytes, coding: str | None) -> bytes:
    if not coding or coding == "identity":
        return body
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:  # some servers send raw deflate without the zlib header
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error as exc:
        raise httpx.DecodingError(f"cannot decode the {coding} answer: {exc}") from None
    raise httpx.DecodingError(
        f"the answer uses content-encoding {coding!r}, which is not supported"
    )


class HTTP11Connection(asyncio.Protocol):
    """One keep-alive connection; :meth:`request` sends a request and returns the answer."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[HTTPAnswer] | None = None
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._headers_done = False
        self._last_data = 0.0
        self._write_paused = False
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self.reusable = False  # true only between whole answers the server left open

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # Head and body leave in one write, but an answer to a previous request must
            # not wait on Nagle either.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        if self._answer is None or self._answer.done():
            # Bytes nobody asked for (or after a failure): the stream is out of step.
            self.reusable = False
            self.close()
            return
        self._last_data = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx.RemoteProtocolError("the server switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed HTTP answer: {exc}"))

    def eof_received(self) -> bool:
        self.reusable = False
        answer = self._answer
        if answer is not None and not answer.done():
            if self._headers_done and not self._framed():
                # No length and not chunked: the body ends where the connection does.
                self._complete()
            elif self._headers_done:
                self._fail(httpx.RemoteProtocolError("the server closed the connection mid-answer"))
            else:
                self._fail(
                    httpx.RemoteProtocolError("Server disconnected without sending a response.")
                )
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        if not self._lost.done():
            self._lost.set_result(None)
        answer = self._answer
        if answer is not None and not answer.done():
            detail = f": {exc}" if exc else ""
            if self._headers_done and exc is None and not self._framed():
                self._complete()
            elif exc is not None and not self._headers_done and not self._body:
                self._fail(httpx.ReadError(f"connection lost{detail}"))
            else:
                self._fail(httpx.RemoteProtocolError(f"the connection closed mid-answer{detail}"))

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False

    # -- httptools callbacks ---------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        previous = self._headers.get(key)
        self._headers[key] = text if previous is None else f"{previous}, {text}"

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            # An interim answer (e.g. 100 Continue): the real one follows on the same bytes.
            self._headers, self._body, self._headers_done = {}, [], False
            return
        self.reusable = self._parser.should_keep_alive()
        self._complete()

    # -- the call --------------------------------------------------------------------------
    def _framed(self) -> bool:
        return "content-length" in self._headers or "chunked" in self._headers.get(
            "transfer-encoding", ""
        )

    def _complete(self) -> None:
        answer = self._answer
        if answer is None or answer.done():
            return
        try:
            body = _decoded(b"".join(self._body), self._headers.get("content-encoding"))
        except httpx.DecodingError as exc:
            self._fail(exc)
            return
        answer.set_result(HTTPAnswer(self._parser.get_status_code(), self._headers, body))

    def _fail(self, exc: Exception) -> None:
        self.reusable = False
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_exception(exc)
        self.close()

    def _check_timeout(self, timeout: float) -> None:
        answer = self._answer
        if answer is None or answer.done():
            return
        # Like httpx's read timeout: the longest silence allowed, not a deadline.
        silent = self._loop.time() - self._last_data
        if silent < timeout:
            self._timer = self._loop.call_later(timeout - silent, self._check_timeout, timeout)
        elif self._write_paused:
            self._fail(httpx.WriteTimeout(f"could not send the request within {timeout:g} s"))
        else:
            self._fail(httpx.ReadTimeout(f"no answer within {timeout:g} s"))

    async def request(self, head: bytes, body: bytes, timeout: float) -> HTTPAnswer:
        """Send one request (``head`` from :func:`request_head`) and read the whole answer."""
        transport = self._transport
        if transport is None or transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self.reusable = False
        self._headers, self._body, self._headers_done = {}, [], False
        answer: asyncio.Future[HTTPAnswer] = self._loop.create_future()
        self._answer = answer
        self._last_data = self._loop.time()
        transport.write(head + body)
        self._timer = self._loop.call_later(timeout, self._check_timeout, timeout)
        try:
            return await answer
        except BaseException:
            # Cancelled or failed half-way: the stream is out of step, never reuse it.
            self.reusable = False
            self.close()
            raise
        finally:
            if self._timer is not None:
                self._timer.cancel()
            self._answer = None

    def close(self) -> None:
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    async def aclose(self) -> None:
        """Close and wait until the socket is released (so no loop closes over it)."""
        self.close()
        if self._transport is not None and not self._lost.done():
            await asyncio.wait_for(asyncio.shield(self._lost), 1.0)


async def open_connection(host: str, port: int, timeout: float) -> HTTP11Connection:
    """Connect to ``host:port`` (``ConnectError`` / ``ConnectTimeout`` when it fails)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            _, connection = await loop.create_connection(HTTP11Connection, host, port)
    except TimeoutError:
        raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g} s") from None
    except OSError as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
    return connection
