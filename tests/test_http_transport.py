"""The worker loop's HTTP pool (:mod:`pytest_budget.models._http_transport`) on real sockets.

Every test talks HTTP(S) to :class:`tests.model_server.ModelServer` on loopback through the
pooled client every cell uses; nothing is monkeypatched except the environment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpcore
import pytest
import trustme

from pytest_budget.models._client import ModelCallError
from pytest_budget.models._http_transport import AsyncioBackend, PooledTransport
from pytest_budget.models._loop import run_on_worker_loop, shared_http_client
from pytest_budget.models._provider import build_chat_client
from tests.model_server import (
    Fault,
    ModelServer,
    fresh_worker_loop,
    tls_context,
    trust_authority,
)

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def fresh_loop() -> Iterator[None]:
    yield from fresh_worker_loop()


def _calls(server: ModelServer, count: int, content: str = "hello") -> list[str]:
    client = build_chat_client("openai", "m", base_url=server.url, timeout=20)
    messages = [{"role": "user", "content": content}]

    async def burst() -> list[str]:
        answers: list[str] = [""] * count

        async def one(i: int) -> None:
            answers[i] = (await client.complete(messages, max_tokens=5)).text

        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
        return answers

    return run_on_worker_loop(burst)


def test_sixty_four_calls_in_flight_get_sixty_four_kept_alive_connections() -> None:
    # The pool used to stop at 32 connections whatever --budget-concurrency said, so at
    # c=64 half the calls queued behind the others (wall time twice the bound).
    # Answers take 2 s: time enough for all 64 to be sent on a loaded machine.
    with ModelServer(lambda body: "ok", latency=2.0) as server:
        assert _calls(server, 64) == ["ok"] * 64
        assert server.max_in_flight == 64
        assert _calls(server, 64) == ["ok"] * 64  # the next burst: the same connections
        assert server.connections == 64
        assert len(server.requests) == 128


def test_a_large_request_goes_out_whole() -> None:
    # Above the backend's write buffer (64 KiB): flushed as it grows, with flow control.
    text = "0123456789abcdef" * 200_000  # 3.2 MB
    with ModelServer(lambda body: str(len(body["messages"][0]["content"]))) as server:
        assert _calls(server, 3, text) == [str(len(text))] * 3
        assert all(body["messages"][0]["content"] == text for body in server.requests)


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    with ModelServer(lambda body: "ok") as server:
        server.fail(Fault("close"))
        assert _calls(server, 1) == ["ok"]
        time.sleep(0.2)  # the server's FIN has arrived: the idle connection is readable
        assert _calls(server, 1) == ["ok"]  # a new connection, no error
        assert server.connections == 2
        assert _calls(server, 1) == ["ok"]  # and that one is kept alive
        assert server.connections == 2


def test_https_through_the_pool_with_a_trusted_authority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authority = trustme.CA()
    trust_authority(authority, tmp_path, monkeypatch)
    with ModelServer(lambda body: "over tls", tls=tls_context(authority)) as server:
        assert server.url.startswith("https://")
        assert _calls(server, 4) == ["over tls"] * 4
        assert _calls(server, 4) == ["over tls"] * 4
        assert server.connections == 4  # kept alive across bursts, TLS and all


def test_an_untrusted_certificate_is_a_transport_error() -> None:
    untrusted = tls_context(trustme.CA())  # an authority the client does not trust
    with ModelServer(lambda body: "never", tls=untrusted) as server:
        client = build_chat_client("openai", "m", base_url=server.url, timeout=20)
        with pytest.raises(ModelCallError) as info:
            run_on_worker_loop(lambda: client.complete(MESSAGES, max_tokens=5))
        assert info.value.kind == "transport" and "ConnectError" in str(info.value)
        assert server.requests == []


def test_the_worker_loops_client_uses_the_asyncio_backend() -> None:
    async def transport() -> object:
        client = shared_http_client()
        assert client is not None
        return client._transport

    pooled = run_on_worker_loop(transport)
    assert isinstance(pooled, PooledTransport)
    with ModelServer(lambda body: "ok", latency=0.3) as server:
        _calls(server, 2)  # both in flight at once: two connections

        async def backends() -> list[object]:
            return [pool._pool._network_backend for pool in pooled._pools]  # type: ignore[attr-defined]

        assert pooled.connections == 2
        assert all(isinstance(b, AsyncioBackend) for b in run_on_worker_loop(backends))


def test_the_backend_times_out_reads_refuses_nothing_quietly_and_sees_the_peer_close() -> None:
    async def go(port: int) -> tuple[bytes, bool, bool, float]:
        backend = AsyncioBackend()
        with pytest.raises(httpcore.ConnectError):
            await backend.connect_tcp("127.0.0.1", 9, timeout=2)  # nothing listens there
        stream = await backend.connect_tcp("127.0.0.1", port, timeout=2)
        started = time.monotonic()
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(100, timeout=0.1)  # nothing asked: nothing to read
        waited = time.monotonic() - started
        idle = stream.get_extra_info("is_readable")
        await stream.write(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := await stream.read(65536, timeout=2):
            received += chunk
        closed = stream.get_extra_info("is_readable")  # the server closed it: drop it
        await stream.aclose()
        return received, idle, closed, waited

    with ModelServer() as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        received, idle, closed, waited = asyncio.run(go(port))
    assert received.startswith(b"HTTP/1.1 200 OK") and received.endswith(b'"object": "model"}]}')
    assert (idle, closed) == (False, True)
    assert 0.09 <= waited < 1.0


def test_the_pooled_client_keeps_and_sends_back_the_cookies_servers_set() -> None:
    # Its jar skips answers without Set-Cookie (no urllib objects per call); one that sets a
    # cookie (a gateway's sticky session) is kept and sent with the next requests.
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(self.headers.get("Cookie"))
            self.send_response(200)
            if self.path == "/set":
                self.send_header("Set-Cookie", "route=b7; Path=/")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    async def visits() -> dict[str, str]:
        http = shared_http_client()
        assert http is not None
        for path in ("/plain", "/set", "/plain", "/plain"):
            assert (await http.get(url + path)).text == "ok"
        return dict(http.cookies)

    try:
        assert run_on_worker_loop(visits) == {"route": "b7"}
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [None, None, "route=b7", "route=b7"]
