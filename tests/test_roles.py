"""Calling agents: objects or callables, sync or async, errors become AgentError."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from pytest_budget._core.concurrency import acquire, for_each_bounded
from pytest_budget._core.roles import AgentError, agent_name, call_role


class SyncPlanner:
    name = "sync-planner"

    def plan(self, request: str) -> str:
        return f"sync:{request}"


class AsyncPlanner:
    async def plan(self, request: str) -> str:
        await anyio.sleep(0)
        return f"async:{request}"


async def async_function(request: str) -> str:
    return f"fn:{request}"


def test_object_function_and_async_forms() -> None:
    async def main() -> list[str]:
        return [
            await call_role(SyncPlanner(), "planner", "r"),
            await call_role(AsyncPlanner(), "planner", "r"),
            await call_role(lambda r: f"lambda:{r}", "planner", "r"),
            await call_role(async_function, "planner", "r"),
        ]

    assert anyio.run(main) == ["sync:r", "async:r", "lambda:r", "fn:r"]


def test_sync_agents_run_off_the_event_loop_thread() -> None:
    seen: list[int] = []

    def planner(request: str) -> str:
        seen.append(threading.get_ident())
        return request

    async def main() -> None:
        await call_role(planner, "planner", "x")

    anyio.run(main)
    assert seen and seen[0] != threading.get_ident()


def test_limiter_bounds_concurrency() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def planner(request: int) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.02)
        with lock:
            active -= 1
        return str(request)

    async def main() -> None:
        limiter = anyio.CapacityLimiter(3)
        async with anyio.create_task_group() as group:
            for i in range(12):
                group.start_soon(lambda i=i: call_role(planner, "planner", i, limiter=limiter))

    anyio.run(main)
    assert peak == 3


def test_agent_exception_becomes_one_line_agent_error() -> None:
    def broken(request: object) -> None:
        raise RuntimeError("model went away\nsecond line")

    async def main() -> None:
        await call_role(broken, "planner", None)

    with pytest.raises(AgentError) as info:
        anyio.run(main)
    assert info.value.reason == "raised RuntimeError: model went away"
    assert info.value.agent == "broken"


def test_not_callable_agent_is_explained() -> None:
    async def main() -> None:
        await call_role(object(), "planner", None)

    with pytest.raises(AgentError, match=r"has no \.plan\(\) method and is not callable"):
        anyio.run(main)


def test_agent_names() -> None:
    assert agent_name(SyncPlanner()) == "sync-planner"
    assert agent_name(AsyncPlanner()) == "AsyncPlanner"
    assert agent_name(async_function) == "async_function"


def test_inline_agents_run_in_the_event_loop_thread() -> None:
    import threading

    class Quick:
        run_inline = True

        def estimate(self, probe: object) -> str:
            return threading.current_thread().name

    class Slow:
        def estimate(self, probe: object) -> str:
            return threading.current_thread().name

    async def both() -> tuple[str, str]:
        return (
            await call_role(Quick(), "estimator", None),
            await call_role(Slow(), "estimator", None),
        )

    quick, slow = anyio.run(both)
    assert quick == threading.current_thread().name and slow != quick


def test_for_each_bounded_runs_every_index_once_within_the_limit() -> None:
    seen: list[int] = []
    in_flight = peak = 0

    async def work(index: int) -> None:
        nonlocal in_flight, peak
        seen.append(index)
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.001 * (index % 3))
        in_flight -= 1

    async def go(limiter: anyio.CapacityLimiter | None, count: int) -> None:
        await for_each_bounded(count, work, limiter)

    anyio.run(go, anyio.CapacityLimiter(4), 50)
    assert sorted(seen) == list(range(50)) and peak == 4
    assert seen[:4] == [0, 1, 2, 3]  # started in index order
    seen.clear()
    peak = 0
    anyio.run(go, None, 30)  # no limiter: all at once
    assert sorted(seen) == list(range(30)) and peak == 30
    seen.clear()
    anyio.run(go, anyio.CapacityLimiter(8), 0)
    assert seen == []


def test_for_each_bounded_lets_an_error_through() -> None:
    async def work(index: int) -> None:
        if index == 5:
            raise ValueError("five")

    async def go() -> None:
        await for_each_bounded(10, work, anyio.CapacityLimiter(3))

    with pytest.raises(ExceptionGroup) as info:
        anyio.run(go)
    assert info.group_contains(ValueError, match="five")


def test_acquire_yields_only_when_it_must_wait() -> None:
    order: list[str] = []

    async def other() -> None:
        order.append("other ran")

    async def go() -> None:
        limiter = anyio.CapacityLimiter(1)
        async with anyio.create_task_group() as group:
            group.start_soon(other)
            await acquire(limiter)  # a free token: no trip through the loop
            order.append("acquired")
            limiter.release()

            async def holder() -> None:
                await acquire(limiter)
                order.append("holder acquired")
                await anyio.sleep(0.01)
                limiter.release()

            group.start_soon(holder)
            await anyio.sleep(0)
            await acquire(limiter)  # held by the holder: waits for its release
            order.append("acquired after holder")
            limiter.release()

    anyio.run(go)
    assert order == ["acquired", "other ran", "holder acquired", "acquired after holder"]
