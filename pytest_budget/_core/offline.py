"""CPU work a live cell needs but the wire does not wait for, run when the event loop idles.

A live run's calls all go through one event loop (:mod:`pytest_budget.models._loop`).  A
planning episode also computes its environment and ground truth, re-solves it after a
block, replays the greedy baseline and scores its cell.  Run inline, that work sits in the
loop's queue beside the answers just read and the requests that just got a slot, and
delays them: slots stay idle.  :func:`offline_submit` queues it instead; one task per loop
runs a job only when nothing else is ready (every answer read, every request sent), the
job of the lowest :data:`CALL_RANK` first (the cell whose test comes first), then in order.

Not a thread: under the interpreter lock a thread computing beside the loop makes every
return of the loop from ``select`` wait for the lock (up to the 5 ms switch interval), and
one thread runs the jobs of later cells before the re-solve an early cell waits for; tried,
a live planning run (d = 0.5 s, c = 32, 1,944 calls) sent its first request 10-15 s after
start instead of 4-7 s, and took 89 s instead of 49 s in one of two pairs.

Jobs are short (milliseconds); a loop that is never idle still runs one after
:data:`MAX_YIELDS` turns, so no job waits forever.  Outside asyncio (trio) a job runs at
once, inline, as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import heapq
import itertools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CALL_RANK", "MAX_YIELDS", "offline", "offline_submit", "settled"]

T = TypeVar("T")

#: The rank of the work running: the cell's place in the run's order (lower goes first).
#: Its calls' waiters for a slot (:func:`pytest_budget.models._loop.ranked_limiter`) and its
#: offline jobs are served lowest rank first, so the cells whose tests come first finish
#: first (their scoring and tests run while later cells' calls are on the wire).
CALL_RANK: contextvars.ContextVar[int] = contextvars.ContextVar(
    "pytest_budget_call_rank", default=-1
)

#: Turns of a never-idle loop a job waits at most before it runs anyway.
MAX_YIELDS = 64

_Job = tuple[int, int, Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]", Any]


class _Queue:
    """The jobs of one event loop, and the task running them."""

    def __init__(self) -> None:
        self.heap: list[_Job] = []
        self.order = itertools.count()
        self.task: asyncio.Task[None] | None = None


_QUEUES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = weakref.WeakKeyDictionary()


def _idle(loop: asyncio.AbstractEventLoop) -> bool:
    # asyncio's own queue of ready callbacks (answers read, tasks woken by a free slot).
    ready = getattr(loop, "_ready", None)
    return not ready


async def _work(queue: _Queue) -> None:
    loop = asyncio.get_running_loop()
    yields = 0
    while queue.heap:
        if not _idle(loop) and yields < MAX_YIELDS:
            yields += 1
            await asyncio.sleep(0)  # to the back of the queue: the wire's work goes first
            continue
        yields = 0
        *_, func, args, future, context = heapq.heappop(queue.heap)
        if future.done():  # its waiter was cancelled
            continue
        try:
            future.set_result(context.run(func, *args))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            future.set_exception(exc)
    queue.task = None


def offline_submit(
    func: Callable[..., T], *args: Any
) -> asyncio.Future[T] | concurrent.futures.Future[T]:
    """Queue ``func(*args)`` (in a copy of the caller's context) to run when the caller's
    event loop idles, lowest :data:`CALL_RANK` first.  Outside asyncio it runs now."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or not hasattr(loop, "_ready"):
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            done.set_result(func(*args))
        except Exception as exc:
            done.set_exception(exc)
        return done
    queue = _QUEUES.get(loop)
    if queue is None:
        queue = _QUEUES[loop] = _Queue()
    future: asyncio.Future[T] = loop.create_future()
    job = (CALL_RANK.get(), next(queue.order), func, args, future, contextvars.copy_context())
    heapq.heappush(queue.heap, job)
    if queue.task is None:
        queue.task = loop.create_task(_work(queue))
    return future


async def settled(future: asyncio.Future[T] | concurrent.futures.Future[T]) -> T:
    """The result of an :func:`offline_submit` job."""
    if isinstance(future, concurrent.futures.Future):
        return future.result()
    return await future


async def offline(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` run when the event loop idles (:func:`offline_submit`)."""
    return await settled(offline_submit(func, *args))
