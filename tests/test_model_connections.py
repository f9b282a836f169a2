"""The worker loop and its one connection pool, against real servers on loopback.

Every test talks HTTP to :class:`tests.model_server.ModelServer`; nothing is monkeypatched
except the proxy environment.  Each test gets a fresh worker loop (the pool reads the proxy
variables when it is made).
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from pytest_budget.models._client import ChatClient, ModelCallError
from pytest_budget.models._loop import (
    close_worker_loop,
    on_worker_loop,
    run_blocking,
    run_on_worker_loop,
    worker_loop,
)
from pytest_budget.models._provider import build_chat_client
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig
from tests.model_server import Fault, ModelServer, fresh_worker_loop

MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def fresh_loop() -> Iterator[None]:
    yield from fresh_worker_loop()


def _client(server: ModelServer, timeout: float = 5.0) -> ChatClient:
    return build_chat_client("openai", "m", base_url=server.url, timeout=timeout)


def test_calls_of_successive_cells_share_one_kept_alive_connection() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def cell() -> list[str]:
            return [(await client.complete(MESSAGES, max_tokens=5)).text for _ in range(3)]

        assert run_on_worker_loop(cell) == ["ok"] * 3
        assert run_on_worker_loop(cell) == ["ok"] * 3  # the next cell, the same loop
        assert server.connections == 1
        assert len(server.requests) == 6


def test_concurrent_calls_of_two_cells_open_one_connection_each_at_most() -> None:
    with ModelServer(lambda body: "ok", latency=0.05) as server:
        client = _client(server)

        async def call() -> None:
            await client.complete(MESSAGES, max_tokens=5)

        async def cell() -> None:
            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(call)

        first, second = worker_loop().submit(cell), worker_loop().submit(cell)
        first.result(10), second.result(10)
        assert server.max_in_flight == 8  # both cells' calls were on the wire together
        run_on_worker_loop(cell)
        assert server.connections == 8  # the third cell reused them
        assert len(server.requests) == 12


def test_keep_alive_holds_whatever_the_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # NO_PROXY used to turn keep-alive off; a proxy that does not exist must be bypassed too.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def cell() -> str:
            return (await client.complete(MESSAGES, max_tokens=5)).text

        assert [run_on_worker_loop(cell) for _ in range(4)] == ["ok"] * 4
        assert server.connections == 1


def test_a_proxy_in_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # The "proxy" is the model server itself: a request for another host reaches it only
    # through the proxy setting (httpx sends the absolute URL to the proxy).
    with ModelServer(lambda body: "via proxy") as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = build_chat_client("openai", "m", base_url="http://model.invalid/v1", timeout=5)
        result = run_on_worker_loop(lambda: client.complete(MESSAGES, max_tokens=5))
        assert result.text == "via proxy"


def test_another_event_loop_gets_fresh_connections_and_the_same_answers() -> None:
    with ModelServer() as server:
        client = _client(server)
        system = [{"role": "system", "content": "You estimate budgets."}, *MESSAGES]

        async def call() -> tuple[str, int, int]:
            result = await client.complete(system, max_tokens=9)
            return result.text, result.usage.input, result.usage.output

        elsewhere = [anyio.run(call), anyio.run(call)]  # two loops of their own
        pooled = run_on_worker_loop(call)
        assert elsewhere == [pooled, pooled]
        assert server.requests[0] == server.requests[2]
        assert server.connections == 3  # one per foreign-loop call, one for the pool


def test_a_dropped_connection_is_a_transport_error_and_the_next_call_works() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)

        async def go() -> tuple[str, str]:
            await client.complete(MESSAGES, max_tokens=5)
            server.fail(Fault("drop"))
            with pytest.raises(ModelCallError) as info:
                await client.complete(MESSAGES, max_tokens=5)
            after = await client.complete(MESSAGES, max_tokens=5)
            return info.value.kind, after.text

        assert run_on_worker_loop(go) == ("transport", "ok")


def test_a_slow_answer_times_out() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server, timeout=0.2)
        server.fail(Fault("slow", seconds=1.0))
        with pytest.raises(ModelCallError) as info:
            run_on_worker_loop(lambda: client.complete(MESSAGES, max_tokens=5))
        assert info.value.kind == "timeout" and "timed out after 0.2 s" in str(info.value)


def test_error_statuses_and_retry_headers_come_through() -> None:
    with ModelServer(lambda body: "ok") as server:
        client = _client(server)
        server.fail(Fault.http(429, {"Retry-After": "7", "retry-after-ms": "6500"}))
        with pytest.raises(ModelCallError) as info:
            run_on_worker_loop(lambda: client.complete(MESSAGES, max_tokens=5))
        error = info.value
        assert (error.status, error.retry_after, error.retry_after_ms) == (429, "7", "6500")


def test_the_runtime_retries_a_drop_on_a_kept_alive_connection() -> None:
    with ModelServer(lambda body: "ok") as server:
        runtime = ModelRuntime(RuntimeConfig(concurrency=2))
        model = runtime.wrap(_client(server))
        server.fail(Fault("drop"), Fault.http(503, {"retry-after": "0"}))
        result = run_on_worker_loop(lambda: model.complete(MESSAGES, max_tokens=5))
        assert result.text == "ok"
        assert len(server.requests) == 3


def test_the_callers_context_goes_with_the_work() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")
    var.set("caller")

    async def read() -> tuple[str, bool]:
        return var.get(), on_worker_loop()

    assert run_on_worker_loop(read) == ("caller", True)
    assert on_worker_loop() is False


def test_run_blocking_from_inside_a_running_loop_uses_the_worker_loop() -> None:
    async def inner() -> bool:
        return on_worker_loop()

    async def outer() -> bool:
        return run_blocking(inner)  # a sync helper called from an async test

    assert anyio.run(outer) is True

    async def nested() -> bool:
        return run_blocking(inner)  # on the worker loop itself: a loop of its own thread

    assert run_on_worker_loop(nested) is False


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_waiting_cancels_the_work_on_the_loop() -> None:
    stopped = threading.Event()

    async def forever() -> None:
        try:
            await anyio.sleep(60)
        finally:
            stopped.set()

    main = threading.main_thread().ident
    assert main is not None and threading.get_ident() == main
    timer = threading.Timer(0.2, lambda: signal.pthread_kill(main, signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_on_worker_loop(forever)
    assert stopped.wait(2)
    assert time.monotonic() - started < 2


def test_the_loop_thread_is_a_daemon_and_closes() -> None:
    loop = worker_loop()
    assert loop.thread.daemon
    close_worker_loop()
    assert not loop.thread.is_alive()
    assert worker_loop() is not loop  # a later use starts a new one
