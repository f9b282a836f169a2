"""Bounded concurrency on anyio: take a limiter's token cheaply, run indexed work in a pool.

Kept apart from :mod:`pytest_budget._core.roles` (the agent call code): the model runtime and
the suites bound their own work with these, and none of them needs the roles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

__all__ = ["acquire", "for_each_bounded"]


async def acquire(limiter: anyio.CapacityLimiter) -> None:
    """Take a token of ``limiter``, yielding to the event loop only when none is free.

    ``async with limiter`` always yields once, even when a token is free; at tens of calls
    in flight each yield sends the call to the back of the loop's queue, which stretches
    every burst of answers.  Release with ``limiter.release()``.
    """
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        await limiter.acquire()


async def for_each_bounded(
    count: int,
    work: Callable[[int], Awaitable[None]],
    limiter: anyio.CapacityLimiter | None = None,
) -> None:
    """Await ``work(0)`` .. ``work(count - 1)`` concurrently, started in index order.

    No more tasks run than ``limiter`` admits at once (all of them without one): each task
    takes the next index when it is free.  One task per item would spend tens of
    microseconds each on items parked behind the limiter, before the first call goes out;
    a pool of workers does that work while earlier calls wait on the network.
    """
    tokens = limiter.total_tokens if limiter is not None else float("inf")
    workers = count if tokens == float("inf") else min(count, max(1, int(tokens)))
    indices = iter(range(count))

    async def worker() -> None:
        for index in indices:  # shared: each index is taken by exactly one worker
            await work(index)

    async with anyio.create_task_group() as group:
        for _ in range(workers):
            group.start_soon(worker)
