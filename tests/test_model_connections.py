"""Keep-alive connection scopes and the HTTP/1.1 connection, against real servers.

Every test talks HTTP to :class:`tests.model_server.ModelServer` on loopback (or to a raw
socket server for byte-level faults); nothing is monkeypatched.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
import warnings
import zlib
from collections.abc import Iterator

import anyio
import httpx
import pytest

from pytest_budget.models.client import ChatClient, ModelCallError
from pytest_budget.models.connections import (
    HTTPAnswer,
    connection_scope,
    current_connection_scope,
    in_connection_scope,
    run_in_connection_scope,
)
from pytest_budget.models.http11 import open_connection, request_head
from pytest_budget.models.provider import build_chat_client
from pytest_budget.models.runtime import ModelRuntime, RuntimeConfig
from tests.model_server import Fault, ModelServer

MESSAGES = [{"role": "user", "content": "hello"}]


def _client(server: ModelServer, timeout: float = 5.0) -> ChatClient:
    # As the suites build it: a fresh connection per call outside a scope.
    return build_chat_client("openai", "m", base_url=server.url, timeout=timeout)


def test_calls_in_a_scope_reuse_one_connection() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def go() -> list[str]:
            async with connection_scope() as scope:
                texts = [(await client.complete(MESSAGES, max_tokens=5)).text for _ in range(6)]
                assert scope.opened == 1
                return texts

        assert anyio.run(go) == ["ok"] * 6
        assert server.connections == 1
        assert len(server.requests) == 6


def test_without_a_scope_every_call_opens_a_connection() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def go() -> None:
            assert current_connection_scope() is None
            for _ in range(3):
                await client.complete(MESSAGES, max_tokens=5)

        anyio.run(go)
        assert server.connections == 3


def test_concurrent_calls_open_at_most_one_connection_each() -> None:
    with ModelServer(lambda body: "ok", latency=0.05) as server:
        client = _client(server)

        async def go() -> int:
            async with connection_scope() as scope:
                for _ in range(3):  # three waves of four calls in flight
                    async with anyio.create_task_group() as group:
                        for _ in range(4):
                            group.start_soon(lambda: client.complete(MESSAGES, max_tokens=5))
                return scope.opened

        assert anyio.run(go) == 4
        assert server.connections == 4
        assert server.max_in_flight == 4
        assert len(server.requests) == 12


def test_scopes_in_successive_event_loops_close_cleanly() -> None:
    # Each cell runs its own loop; a connection kept from an earlier loop would break
    # ("Event loop is closed") or leak a ResourceWarning when collected.
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                result = anyio.run(
                    in_connection_scope, lambda: client.complete(MESSAGES, max_tokens=5)
                )
                assert result.text == "ok"
            import gc

            gc.collect()
        assert server.connections == 3


def test_nested_scopes_share_the_outer_connections() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def go() -> None:
            async with connection_scope() as outer:
                await client.complete(MESSAGES, max_tokens=5)
                async with connection_scope() as inner:
                    assert inner is outer
                    await client.complete(MESSAGES, max_tokens=5)
                await client.complete(MESSAGES, max_tokens=5)
                assert outer.opened == 1

        anyio.run(go)
        assert server.connections == 1


def test_a_dropped_connection_is_replaced_and_the_error_is_a_transport_error() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def go() -> tuple[str, str, int]:
            async with connection_scope() as scope:
                await client.complete(MESSAGES, max_tokens=5)
                server.fail(Fault("drop"))
                with pytest.raises(ModelCallError) as info:
                    await client.complete(MESSAGES, max_tokens=5)
                after = await client.complete(MESSAGES, max_tokens=5)
                return info.value.kind, after.text, scope.opened

        kind, text, opened = anyio.run(go)
        assert kind == "transport"
        assert text == "ok"
        assert opened == 2  # the broken connection was not put back


def test_a_slow_answer_times_out_as_httpx_does() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server, timeout=0.2)
        server.fail(Fault("slow", seconds=1.0))

        async def go() -> ModelCallError:
            async with connection_scope():
                with pytest.raises(ModelCallError) as info:
                    await client.complete(MESSAGES, max_tokens=5)
                return info.value

        error = anyio.run(go)
        assert error.kind == "timeout"
        assert "timed out after 0.2 s" in str(error)


def test_error_statuses_and_retry_headers_come_through_the_scope() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)
        server.fail(Fault.http(429, {"Retry-After": "7", "retry-after-ms": "6500"}))

        async def go() -> ModelCallError:
            async with connection_scope():
                with pytest.raises(ModelCallError) as info:
                    await client.complete(MESSAGES, max_tokens=5)
                return info.value

        error = anyio.run(go)
        assert error.status == 429
        assert error.retry_after == "7"
        assert error.retry_after_ms == "6500"


def test_the_runtime_retries_a_drop_on_a_kept_alive_connection(tmp_path: object) -> None:
    with ModelServer(lambda body: "ok") as server:
        runtime = ModelRuntime(RuntimeConfig(concurrency=2))
        model = runtime.wrap(_client(server))
        server.fail(Fault("drop"), Fault.http(503, {"retry-after": "0"}))

        async def go() -> str:
            async with connection_scope():
                return (await model.complete(MESSAGES, max_tokens=5)).text

        assert anyio.run(go) == "ok"
        assert len(server.requests) == 3


def test_answers_are_the_same_with_and_without_a_scope() -> None:
    with ModelServer() as server:
        client = _client(server)
        system = [{"role": "system", "content": "You estimate budgets."}, *MESSAGES]

        async def call() -> tuple[str, int, int]:
            result = await client.complete(system, max_tokens=9)
            return result.text, result.usage.input, result.usage.output

        plain = anyio.run(call)
        scoped = anyio.run(in_connection_scope, call)
        assert plain == scoped
        # The server saw the same JSON body both times.
        assert server.requests[0] == server.requests[1]


def test_proxy_variables_make_the_scope_stand_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy in the environment must be honoured: calls then go through httpx's client.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    async def go() -> bool:
        async with connection_scope() as scope:
            return scope.direct

    assert anyio.run(go) is False


def test_http_answer_reads_like_a_response() -> None:
    answer = HTTPAnswer(503, {"retry-after": "1"}, b'{"error": {"message": "busy"}}')
    assert not answer.is_success
    assert answer.reason_phrase == "Service Unavailable"
    assert answer.json() == {"error": {"message": "busy"}}
    assert HTTPAnswer(299, {}, b"").is_success
    assert HTTPAnswer(799, {}, b"x").reason_phrase == ""
    with pytest.raises(ValueError):
        HTTPAnswer(200, {}, b"<html>").json()


# -- the HTTP/1.1 connection at the byte level ---------------------------------------------


@pytest.fixture
def raw_server() -> Iterator[tuple[int, list[bytes | list[bytes]]]]:
    """A TCP server that answers each connection's first request with a script, then closes.

    A script is the answer's bytes, where ``|`` splits it into pieces sent 20 ms apart, or
    the list of pieces itself (for binary bodies).
    """
    scripts: list[bytes | list[bytes]] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                script = scripts.pop(0)
                for chunk in script.split(b"|") if isinstance(script, bytes) else script:
                    conn.sendall(chunk)
                    time.sleep(0.02)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, scripts
    stop.set()
    thread.join(2)
    listener.close()


def _ask(port: int, timeout: float = 2.0) -> tuple[HTTPAnswer, bool]:
    """One POST on a fresh connection: the answer and whether the connection is reusable."""

    async def go() -> tuple[HTTPAnswer, bool]:
        connection = await open_connection("127.0.0.1", port, timeout)
        try:
            head = request_head("POST", "/v1/x", f"127.0.0.1:{port}", {}, 2)
            answer = await connection.request(head, b"{}", timeout)
            return answer, connection.reusable
        finally:
            await connection.aclose()

    return asyncio.run(go())


def test_an_answer_sent_in_pieces_is_reassembled(
    raw_server: tuple[int, list[bytes | list[bytes]]],
) -> None:
    port, scripts = raw_server
    scripts.append(b"HTTP/1.1 200 OK\r\nContent-Len|gth: 5\r\nX-Tag: a\r\n\r\nhe|llo")
    answer, reusable = _ask(port)
    assert (answer.status_code, answer.content) == (200, b"hello")
    assert answer.headers["x-tag"] == "a" and answer.headers["content-length"] == "5"
    assert reusable  # HTTP/1.1 without "Connection: close" stays open


def test_a_chunked_answer_is_decoded(raw_server: tuple[int, list[bytes | list[bytes]]]) -> None:
    port, scripts = raw_server
    scripts.append(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe|llo\r\n"
        b"6\r\n wor|ld\r\n0\r\n\r\n"
    )
    assert _ask(port)[0].content == b"hello world"


@pytest.mark.parametrize(
    ("script", "body"),
    [
        # No length, not chunked: the body ends where the connection does.
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil| close", b"until close"),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", b"ok"),
    ],
    ids=["read-until-close", "connection-close"],
)
def test_an_answer_that_ends_the_connection_is_read_and_not_reused(
    raw_server: tuple[int, list[bytes | list[bytes]]], script: bytes, body: bytes
) -> None:
    port, scripts = raw_server
    scripts.append(script)
    answer, reusable = _ask(port)
    assert answer.content == body and not reusable


def test_an_interim_answer_is_skipped(raw_server: tuple[int, list[bytes | list[bytes]]]) -> None:
    port, scripts = raw_server
    scripts.append(
        b"HTTP/1.1 100 Continue\r\n\r\n|HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\n!"
    )
    answer, _ = _ask(port)
    assert (answer.status_code, answer.content) == (201, b"!")


def test_gzip_and_deflate_bodies_are_decoded(
    raw_server: tuple[int, list[bytes | list[bytes]]],
) -> None:
    port, scripts = raw_server
    text = b'{"choices": []}' * 20
    for coding, body in (("gzip", gzip.compress(text)), ("deflate", zlib.compress(text))):
        head = b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n"
        scripts.append([head % (coding.encode(), len(body)), body])  # pieces as given
        assert _ask(port)[0].content == text


@pytest.mark.parametrize(
    ("script", "error", "message"),
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 3\r\n\r\nxyz",
            httpx.DecodingError,
            "'br'",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly part",
            httpx.RemoteProtocolError,
            "mid-answer",
        ),
        (b"", httpx.RemoteProtocolError, "without sending a response"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", httpx.RemoteProtocolError, "malformed HTTP answer"),
    ],
    ids=["unknown-coding", "closed-mid-answer", "closed-before-answer", "not-http"],
)
def test_a_broken_answer_raises_the_httpx_error(
    raw_server: tuple[int, list[bytes | list[bytes]]],
    script: bytes,
    error: type[Exception],
    message: str,
) -> None:
    port, scripts = raw_server
    scripts.append(script)
    with pytest.raises(error, match=message):
        _ask(port)


def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(httpx.ConnectError):
            _ask(port)


def test_the_read_timeout_is_the_longest_silence(
    raw_server: tuple[int, list[bytes | list[bytes]]],
) -> None:
    port, scripts = raw_server
    # Eight pieces 20 ms apart take 160 ms in all, longer than the 100 ms timeout, but no
    # silence reaches it: the answer arrives, as with httpx's per-read timeout.
    scripts.append(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n|a|b|c|d|e|f|")
    assert _ask(port, timeout=0.1)[0].content == b"abcdef"
    scripts.append(b"HTTP/1.1 200 OK\r\n|")  # then silence until the server closes
    with pytest.raises(httpx.ReadTimeout):
        _ask(port, timeout=0.005)


def test_a_line_break_in_a_header_is_refused_without_quoting_it() -> None:
    with pytest.raises(httpx.LocalProtocolError) as info:
        request_head("POST", "/", "h", {"authorization": "Bearer sk-CANARY\r\nX-Evil: 1"}, 0)
    assert "sk-CANARY" not in str(info.value) and "'authorization'" in str(info.value)


def test_scope_maps_backend_errors_to_httpx_errors() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

        async def go() -> None:
            async with connection_scope() as scope:
                await scope.post(f"http://127.0.0.1:{port}/v1", {}, b"{}", 1.0)

        with pytest.raises(httpx.ConnectError):
            anyio.run(go)


def test_run_in_connection_scope_returns_the_result_and_reuses_connections() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def three() -> list[str]:
            return [(await client.complete(MESSAGES, max_tokens=5)).text for _ in range(3)]

        assert run_in_connection_scope(three) == ["ok", "ok", "ok"]
        assert server.connections == 1
        assert current_connection_scope() is None  # nothing leaks out of the loop
