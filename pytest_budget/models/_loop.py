"""One event loop per process for every cell's async work, and one HTTP pool on it.

The suites' tests are synchronous; their async work (agent calls, Phase 0, episodes) runs
on a single asyncio event loop that lives in a daemon thread of the process for the whole
run (:func:`worker_loop`).  One loop means one ``httpx.AsyncClient`` connection pool
(:func:`shared_http_client`) whose keep-alive connections serve every cell, one
concurrency limit that spans cells, and work of later cells that can start while an
earlier test is still waiting (:meth:`WorkerLoop.submit`).

A call from synchronous code (:meth:`WorkerLoop.run`) carries the caller's context
variables into the task (the current :class:`~pytest_budget._core.budget.Meter`, output limits,
per-cell counters) and blocks until it is done.  ``KeyboardInterrupt`` in the caller cancels
the task, so Ctrl-C stops the work on the loop too.  The thread is a daemon: a sync agent
that never returns cannot keep the process alive after the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import heapq
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import sniffio

from pytest_budget._core.offline import CALL_RANK

if TYPE_CHECKING:  # httpx loads with the first live client (shared_http_client)
    import httpx

__all__ = [
    "CALL_RANK",
    "WorkerLoop",
    "cancel_worker_loop",
    "close_worker_loop",
    "on_worker_loop",
    "ranked_limiter",
    "run_blocking",
    "run_on_worker_loop",
    "shared_http_client",
    "shared_limiter",
    "turns_limiter",
    "worker_loop",
]

T = TypeVar("T")

_LOCK = threading.Lock()
_LOOP: WorkerLoop | None = None


class WorkerLoop:
    """An asyncio event loop running in a daemon thread until :meth:`close`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            while True:
                try:
                    self.loop.run_forever()
                    return  # stopped by close()
                except (KeyboardInterrupt, SystemExit):
                    # Raised by an agent inside a task (asyncio re-raises these out of the
                    # loop): the task holds it for whoever waits; the loop keeps serving.
                    continue

        self.thread = threading.Thread(target=main, name="pytest-budget-loop", daemon=True)
        self.thread.start()
        ready.wait()
        self.http: httpx.AsyncClient | None = None
        self.limiter: anyio.CapacityLimiter | None = None

    def is_current(self) -> bool:
        """Whether the caller runs on this loop's thread."""
        return threading.get_ident() == self.thread.ident

    def submit(
        self,
        func: Callable[[], Awaitable[T]],
        context: contextvars.Context | None = None,
    ) -> concurrent.futures.Future[T]:
        """Start ``func()`` on the loop now, in ``context`` (a copy of the caller's by
        default); the returned future holds its result."""
        if self.loop.is_closed():
            raise RuntimeError("the worker event loop is closed")
        ctx = context if context is not None else contextvars.copy_context()
        # The caller's loop may be another library's; this task runs under asyncio.
        ctx.run(sniffio.current_async_library_cvar.set, None)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            if not future.set_running_or_notify_cancel():
                return

            async def body() -> tuple[bool, Any]:
                try:
                    return True, await func()
                except (KeyboardInterrupt, SystemExit) as exc:  # to the caller, not the loop
                    return False, exc

            task = self.loop.create_task(body(), context=ctx)

            def done(task: asyncio.Task[tuple[bool, Any]]) -> None:
                if task.cancelled():
                    future.set_exception(concurrent.futures.CancelledError())
                    return
                error = task.exception()
                if error is not None:
                    future.set_exception(error)
                    return
                ok, value = task.result()
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

            task.add_done_callback(done)
            _TASKS[future] = task

        self.loop.call_soon_threadsafe(start)
        return future

    def cancel(self, future: concurrent.futures.Future[Any]) -> None:
        """Cancel the task behind ``future`` (from any thread)."""
        task = _TASKS.get(future)
        if task is not None:
            self.loop.call_soon_threadsafe(task.cancel)
        else:
            future.cancel()

    def wait(self, future: concurrent.futures.Future[T]) -> T:
        """Block until ``future`` is done; Ctrl-C cancels its task and re-raises."""
        try:
            return future.result()
        except KeyboardInterrupt:
            self.cancel(future)
            raise

    def run(self, func: Callable[[], Awaitable[T]]) -> T:
        """Run ``func()`` on the loop from synchronous code and return its result."""
        if self.is_current():
            raise RuntimeError("WorkerLoop.run() called from the loop's own thread")
        return self.wait(self.submit(func))

    def cancel_all(self) -> None:
        """Cancel every task on the loop (Ctrl-C: stop the work of every cell)."""

        def cancel() -> None:
            for task in asyncio.all_tasks(self.loop):
                task.cancel()

        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(cancel)

    def close(self, timeout: float = 5.0) -> None:
        """Close the HTTP pool, stop the loop and wait (at most ``timeout``) for the thread."""
        if self.loop.is_closed():
            return
        if self.http is not None:
            http, self.http = self.http, None
            try:
                asyncio.run_coroutine_threadsafe(http.aclose(), self.loop).result(timeout)
            except Exception:
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


# Futures -> tasks, to cancel a task from another thread (entries go with their futures).
_TASKS: weakref.WeakKeyDictionary[concurrent.futures.Future[Any], asyncio.Task[Any]] = (
    weakref.WeakKeyDictionary()
)


def worker_loop() -> WorkerLoop:
    """The process's loop (started on first use)."""
    global _LOOP
    with _LOCK:
        if _LOOP is None or _LOOP.loop.is_closed():
            _LOOP = WorkerLoop()
        return _LOOP


def on_worker_loop() -> bool:
    """Whether the caller is a task of the process's worker loop."""
    loop = _LOOP
    return loop is not None and loop.is_current()


def close_worker_loop() -> None:
    """Close the process's loop if it was started (the plugin calls it at the end)."""
    global _LOOP
    with _LOCK:
        loop, _LOOP = _LOOP, None
    if loop is not None:
        loop.close()


def cancel_worker_loop() -> None:
    """Cancel every task of the process's loop, if it was started (Ctrl-C)."""
    loop = _LOOP
    if loop is not None:
        loop.cancel_all()


def run_on_worker_loop(func: Callable[[], Awaitable[T]]) -> T:
    """Run ``func()`` on the process's worker loop and return its result (sync code only)."""
    return worker_loop().run(func)


# CALL_RANK (defined beside the offline jobs it ranks too): waiters for a ranked_limiter
# token are served lowest rank first, then in order of arrival.


class _RankedWaiters:
    """The part of ``OrderedDict`` anyio's asyncio limiter uses for its waiters, ordered
    by (:data:`CALL_RANK` of the waiting task, arrival)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Any]] = []
        self._events: dict[Any, tuple[int, Any]] = {}
        self._arrivals = 0

    def __bool__(self) -> bool:
        return bool(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __setitem__(self, borrower: Any, event: Any) -> None:
        self._arrivals += 1
        heapq.heappush(self._heap, (CALL_RANK.get(), self._arrivals, borrower))
        self._events[borrower] = (self._arrivals, event)

    def pop(self, borrower: Any, default: Any = None) -> Any:
        found = self._events.pop(borrower, None)  # its heap entry is skipped later
        return default if found is None else found[1]

    def popitem(self, last: bool = True) -> tuple[Any, Any]:
        while self._heap:
            _, arrival, borrower = heapq.heappop(self._heap)
            found = self._events.get(borrower)
            if found is not None and found[0] == arrival:
                del self._events[borrower]
                return borrower, found[1]
        raise KeyError("no waiters")


def run_blocking(func: Callable[[], Awaitable[T]]) -> T:
    """Run ``func()`` to completion from synchronous code, on the process's worker loop.

    Every cell's work runs on that one loop (this module), whatever
    loop the caller runs: a sync helper called from an ``async def`` test (pytest-asyncio or
    anyio) blocks until the work is done, and the caller's context (output limit, meter)
    goes with it.  Called from a task of the worker loop itself (which must not block), the
    work runs in a loop of its own thread instead.
    """
    if not on_worker_loop():
        return run_on_worker_loop(func)
    box: list[Any] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box.append((True, context.run(anyio.run, func)))
        except BaseException as exc:
            box.append((False, exc))

    thread = threading.Thread(target=target, name="pytest-budget-nested-loop", daemon=True)
    thread.start()
    thread.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def ranked_limiter(total: int) -> anyio.CapacityLimiter:
    """An ``anyio.CapacityLimiter`` (asyncio) that hands free tokens to the waiter of the
    lowest :data:`CALL_RANK` first; a plain one where anyio's internals differ."""
    limiter = anyio.CapacityLimiter(total)
    if isinstance(getattr(limiter, "_wait_queue", None), OrderedDict):
        limiter._wait_queue = _RankedWaiters()  # type: ignore[attr-defined]
    return limiter


def shared_limiter(total: int) -> anyio.CapacityLimiter:
    """The one ``--budget-concurrency`` limit of every cell's agent calls on the worker loop
    (a limiter of its own on any other loop); ranked (:data:`CALL_RANK`)."""
    loop = _LOOP
    if loop is None or not loop.is_current():
        return anyio.CapacityLimiter(total)
    if loop.limiter is None:
        loop.limiter = ranked_limiter(total)
    elif loop.limiter.total_tokens != total:
        loop.limiter.total_tokens = total
    return loop.limiter


#: Turns in progress (built, waiting for a slot or an identical request, on the wire) per
#: slot of the cells' limiter, for agents whose model bounds its own calls: enough to keep
#: every slot fed, few enough that waiting requests stay a few megabytes.
TURNS_PER_SLOT = 4
_TURNS: weakref.WeakKeyDictionary[anyio.CapacityLimiter, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def turns_limiter(limiter: anyio.CapacityLimiter) -> anyio.CapacityLimiter:
    """The limiter of turns in progress beside ``limiter`` (the cells' limit on calls):
    :data:`TURNS_PER_SLOT` times its tokens, ranked (:data:`CALL_RANK`) like it; one per
    limiter, so it spans the cells as that one does."""
    total = max(1, math.ceil(limiter.total_tokens)) * TURNS_PER_SLOT
    found = _TURNS.get(limiter)
    if found is None:
        found = _TURNS[limiter] = ranked_limiter(total)
    elif found.total_tokens != total:
        found.total_tokens = total
    return found


def shared_http_client() -> httpx.AsyncClient | None:
    """The worker loop's pooled client when called on that loop, else None.

    Keep-alive connections belong to the loop that opened them, so other loops (an async
    test's own) get None and use a client of their own.  Connections stay alive whatever
    the proxy environment (:func:`~pytest_budget.models._http_transport.pooled_client`).
    """
    loop = _LOOP
    if loop is None or not loop.is_current():
        return None
    if loop.http is None:
        from pytest_budget.models._http_transport import pooled_client

        loop.http = pooled_client()
    return loop.http
