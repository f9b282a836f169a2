"""Every model call has a total deadline, and a run stops early (one line naming the
endpoint) when most calls to an endpoint fail: real hanging and trickling loopback servers."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx
import pytest

from pytest_budget.models._client import ModelCallError, OpenAIChatClient
from pytest_budget.models._loop import run_on_worker_loop
from pytest_budget.models._retry import RetryPolicy
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig
from tests.chat_logs import write_chat_file
from tests.slow_server import SlowServer

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("mode", ["hang", "trickle"])
@pytest.mark.parametrize("path", ["httpx", "connection-scope"])
def test_a_call_fails_at_its_total_deadline(mode: str, path: str) -> None:
    """A server sending a byte every 0.2 s never trips a 1 s per-read timeout; the total
    deadline ends the call after 1 s all the same."""

    async def call(client: OpenAIChatClient) -> float:
        started = time.monotonic()
        with anyio.fail_after(15):  # the test's own guard: without a deadline this hangs
            with pytest.raises(ModelCallError) as info:
                await client.complete(MESSAGES, max_tokens=5)
        assert info.value.kind == "timeout"
        assert "timed out after 1 s (a total deadline for the whole answer)" in str(info.value)
        return time.monotonic() - started

    with SlowServer(mode) as server:
        if path == "httpx":

            async def go() -> float:
                async with httpx.AsyncClient() as http:
                    client = OpenAIChatClient("m", server.url, timeout=1, http_client=http)
                    return await call(client)

            elapsed = anyio.run(go)
        else:
            client = OpenAIChatClient("m", server.url, timeout=1)
            elapsed = run_on_worker_loop(lambda: call(client))
            anyio.run(client.aclose)
    assert 0.9 <= elapsed < 5


@pytest.mark.parametrize("mode", ["hang", "trickle"])
def test_an_endpoint_that_mostly_fails_stops_every_call(mode: str, tmp_path: Path) -> None:
    """20 calls, 8 in flight, each allowed 6 attempts: without the stop this is 20 x 6
    attempts of 1 s; with it the endpoint is down after 5 failed attempts and every other
    call fails at once with the same line."""
    config = RuntimeConfig(
        cache_dir=str(tmp_path / "rec"),
        concurrency=8,
        retry=RetryPolicy(max_attempts=6, max_total_s=60, initial_wait_s=0.01, max_wait_s=0.02),
    )
    runtime = ModelRuntime(config)
    errors: list[tuple[float, ModelCallError]] = []
    with SlowServer(mode) as server:
        model = runtime.wrap(OpenAIChatClient("m", server.url, timeout=1))

        async def one(index: int) -> None:
            try:
                await model.complete([{"role": "user", "content": str(index)}], max_tokens=5)
            except ModelCallError as exc:
                errors.append((time.monotonic() - started, exc))

        async def main() -> None:
            with anyio.fail_after(30):  # the test's own guard
                async with anyio.create_task_group() as group:
                    for index in range(20):
                        group.start_soon(one, index)

        started = time.monotonic()
        run_on_worker_loop(main)
        elapsed = time.monotonic() - started
        posts = server.posts
    assert len(errors) == 20
    first = min(at for at, _ in errors)
    assert 0.9 <= first < 3  # the first error comes at the deadline, not after 6 attempts
    assert elapsed < 6
    assert posts <= 16  # far fewer than 20 x 6 attempts
    down = runtime.endpoint_down()
    assert down is not None and f"endpoint {server.url}/chat/completions is failing" in down
    assert sum(exc.kind == "endpoint_down" for _, exc in errors) >= 10
    assert runtime.stats.failed == 20


def test_a_healthy_endpoint_with_a_few_failures_is_not_stopped(tmp_path: Path) -> None:
    from tests.model_server import Fault, ModelServer

    runtime = ModelRuntime(
        RuntimeConfig(retry=RetryPolicy(max_attempts=3, initial_wait_s=0.01, max_wait_s=0.01))
    )
    with ModelServer() as server:
        server.fail(*[Fault.http(500)] * 4)  # two calls fail, then everything succeeds
        model = runtime.wrap(OpenAIChatClient("m", server.url, timeout=5))

        async def go() -> int:
            ok = 0
            for index in range(12):
                try:
                    await model.complete([{"role": "user", "content": str(index)}], max_tokens=5)
                    ok += 1
                except ModelCallError:
                    pass
            return ok

        assert run_on_worker_loop(go) == 11  # 4 failures: 3 for the first call, 1 retried
    assert runtime.endpoint_down() is None


@pytest.mark.parametrize("mode", ["hang", "trickle"])
def test_a_run_against_a_dead_endpoint_stops_with_one_line(
    pytester: pytest.Pytester, mode: str
) -> None:
    with SlowServer(mode) as server:
        started = time.monotonic()
        result = pytester.runpytest_subprocess(
            "--budget-suite=awareness", write_chat_file(pytester.path, 4, failed=()),
            "--budget-agent=openai:m",
            f"--budget-base-url={server.url}", "--budget-model-timeout=0.3", "--budget-gate=off",
            "--budget-report=r.json", "-p", "no:cacheprovider", timeout=120,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    output = result.stdout.str()
    stop = f"budget: endpoint {server.url}/chat/completions is failing"
    assert sum(stop in line for line in output.splitlines()) == 1, output
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert elapsed < 60  # 8 probes x 6 attempts x 0.3 s, plus backoff, without the stop
