"""One thread per process for CPU work a cell needs but the wire does not wait for.

A live run's calls all go through one event loop (:mod:`pytest_budget.models._loop`); while
a piece of CPU work (a planning episode's environment and ground truth, its greedy
replay, a cell's scores) runs on that loop, no answer is read and no request goes out.
Such work runs here instead, and the loop awaits its result like a call's answer.

One thread, jobs in the order given: with the interpreter lock more threads would only
take turns with the event loop more often; with one, the loop gets the lock back at every
switch interval (5 ms) at worst.  The jobs are pure computations, so their order changes
no result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import sniffio

__all__ = ["offline", "offline_submit", "settled"]

T = TypeVar("T")

_LOCK = threading.Lock()
_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None
#: The thread's name: a test tells where a job ran by it.
THREAD_NAME = "pytest-budget-offline"


def offline_submit(func: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
    """Start ``func(*args)`` on the offline thread, in a copy of the caller's context."""
    global _EXECUTOR
    with _LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=THREAD_NAME)
        executor = _EXECUTOR
    return executor.submit(contextvars.copy_context().run, func, *args)


async def settled(future: concurrent.futures.Future[T]) -> T:
    """The result of an :func:`offline_submit` job, awaited without blocking the loop."""
    if future.done():
        return future.result()
    if sniffio.current_async_library() == "asyncio":
        return await asyncio.wrap_future(future)
    from anyio import to_thread  # another event loop (trio): a worker thread waits

    return await to_thread.run_sync(future.result)


async def offline(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` run on the offline thread while the caller's event loop goes on."""
    return await settled(offline_submit(func, *args))
