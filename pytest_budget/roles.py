"""Agent roles and the one way the suites call them.

A role is a small :class:`typing.Protocol`.  Any object with the role's method, or a plain
callable, fills the role; the method may be sync or async.  Sync callables run in a
worker thread (anyio) so a slow agent never blocks the event loop, and every call goes
through :func:`call_role`, which bounds concurrency and turns an agent's exception into
an :class:`AgentError` carrying a one-line reason instead of crashing the cell.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.to_thread

__all__ = [
    "ROLE_METHODS",
    "Actor",
    "AgentError",
    "Estimator",
    "Planner",
    "Solver",
    "ToolAgent",
    "acquire",
    "agent_name",
    "call_role",
    "for_each_bounded",
    "role_callable",
]


@runtime_checkable
class Planner(Protocol):
    """Triage planner: returns an ordered plan with per-item token allocations.

    May return a :class:`~pytest_budget.triage.Plan`, a mapping like
    ``{"plan": [{"id": "p1", "tokens": 300}]}``, or the raw text an LLM would write.
    """

    def plan(self, request: Any) -> Any: ...


@runtime_checkable
class Solver(Protocol):
    """Solves one problem, optionally under a hard output-token cap.

    Returns a :class:`~pytest_budget.triage.Solution`, a mapping with ``text``/``tokens``/
    ``answer``, or raw text (tokens are then counted with the reference tokenizer).
    """

    def solve(self, problem: Any, max_tokens: int | None = None) -> Any: ...


@runtime_checkable
class Estimator(Protocol):
    """Answers an awareness probe with an interval, ``impossible`` or raw text."""

    def estimate(self, probe: Any) -> Any: ...


@runtime_checkable
class Actor(Protocol):
    """Acts in an environment: observation in, action (or raw text) out."""

    def act(self, observation: Any) -> Any: ...


@runtime_checkable
class ToolAgent(Protocol):
    """Multi-turn tool caller for the travel-planning environment."""

    def act(self, observation: Any) -> Any: ...


#: The method each role calls on an agent object.
ROLE_METHODS: dict[str, str] = {
    "planner": "plan",
    "solver": "solve",
    "estimator": "estimate",
    "actor": "act",
    "tool_agent": "act",
}


class AgentError(Exception):
    """An agent raised, or could not be called; ``reason`` is one line for the report."""

    def __init__(self, role: str, agent: str, reason: str) -> None:
        super().__init__(f"{role} {agent!r} {reason}")
        self.role = role
        self.agent = agent
        self.reason = reason


def agent_name(agent: object) -> str:
    """A readable name for reports: ``agent.name``, a function's name, or the class name."""
    name = getattr(agent, "name", None)
    if isinstance(name, str) and name:
        return name
    if inspect.isfunction(agent) or inspect.ismethod(agent):
        return agent.__name__
    return type(agent).__name__


def role_callable(agent: object, role: str) -> Callable[..., Any]:
    """The callable that fills ``role``: the role's method if present, else the agent itself."""
    method_name = ROLE_METHODS[role]
    method = getattr(agent, method_name, None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(agent):
        return agent
    raise AgentError(
        role,
        agent_name(agent),
        f"has no .{method_name}() method and is not callable; "
        f"give it a {method_name}() method or pass a function",
    )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    return call is not None and inspect.iscoroutinefunction(call)


async def call_role(
    agent: object,
    role: str,
    *args: Any,
    limiter: anyio.CapacityLimiter | None = None,
) -> Any:
    """Call ``agent`` in ``role`` with ``args``; sync agents run in a worker thread.

    An agent with ``run_inline = True`` (quick, never blocking) is called in the event loop.

    ``limiter`` bounds how many calls run at once (``--budget-concurrency``).  Any
    exception the agent raises comes back as :class:`AgentError` with a one-line reason.
    """
    fn = role_callable(agent, role)
    name = agent_name(agent)
    try:
        if getattr(agent, "run_inline", False) is True:
            # Cheap, non-blocking agents (the reference ones): a worker thread per call would
            # cost more than the call itself.
            result = fn(*args)
            return await _await(result) if inspect.isawaitable(result) else result
        if _is_async(fn):
            if limiter is None:
                return await fn(*args)
            await acquire(limiter)
            try:
                return await fn(*args)
            finally:
                limiter.release()
        result = await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=limiter)
        if inspect.isawaitable(result):
            result = await _await(result)
        return result
    except AgentError:
        raise
    except Exception as exc:  # an agent's bug must not crash the cell
        detail = str(exc).splitlines()[0] if str(exc) else ""
        reason = f"raised {type(exc).__name__}" + (f": {detail}" if detail else "")
        raise AgentError(role, name, reason) from exc


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


async def _await(result: Awaitable[Any]) -> Any:
    return await result
