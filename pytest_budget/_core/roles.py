"""The one way the suites call an agent in a role.

A suite declares its roles in the registry (:class:`~pytest_budget._core.registry.Role`:
its name, the method called on an agent, what it may answer) and their Protocols in its
own package; this module names no suite and no role.  Any object with the role's method,
or a plain callable, fills the role; the method may be sync or async.  Sync callables run in a
worker thread (anyio) so a slow agent never blocks the event loop, and every call goes
through :func:`call_role`, which bounds concurrency and turns an agent's exception into
an :class:`AgentError` carrying a one-line reason (and the agent's own traceback) instead
of crashing the cell, and a value no parser of the role could read (``None`` from a
planner, a number from a tool agent, megabytes of text) into an :class:`InvalidOutput`
naming its type.

``KeyboardInterrupt`` and cancellation pass through (they stop the run or the task); every
other exception, ``SystemExit``, ``GeneratorExit`` and custom ``BaseException`` subclasses
included, is the agent's error for that one item.
"""

from __future__ import annotations

import functools
import inspect
import os
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread

from pytest_budget._core.agent_log import agent_timeout, collect_agent_errors, log_agent_error
from pytest_budget._core.concurrency import acquire
from pytest_budget._core.registry import role as registered_role
from pytest_budget._core.replies import reply_problem, safe_repr
from pytest_budget._core.written import count_reply

__all__ = [
    "AgentError",
    "InvalidOutput",
    "agent_name",
    "agent_traceback",
    "call_role",
    "collect_agent_errors",
    "role_callable",
]


class AgentError(Exception):
    """An agent raised, or could not be called; ``reason`` is one line for the report.

    ``traceback`` is the agent's own traceback (the frames of pytest-budget, anyio and
    asyncio left out) when the agent raised, else ``""``.
    """

    def __init__(self, role: str, agent: str, reason: str, traceback: str = "") -> None:
        super().__init__(f"{role} {agent!r} {reason}")
        self.role = role
        self.agent = agent
        self.reason = reason
        self.traceback = traceback


class InvalidOutput(AgentError):
    """The agent answered, but with nothing its role can read; ``reason`` names the type.

    Scored like an unreadable answer (``invalid``), not like an agent that raised;
    ``preview`` is a short, safe ``repr`` of what came back.
    """

    def __init__(self, role: str, agent: str, reason: str, preview: str = "") -> None:
        super().__init__(role, agent, reason)
        self.preview = preview


# The package root (this module sits one folder below it).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_ANYIO_DIR = os.path.dirname(os.path.abspath(anyio.__file__)) + os.sep
_STDLIB_DIR = os.path.dirname(os.path.abspath(functools.__file__)) + os.sep
_STDLIB_PLUMBING = ("asyncio", "concurrent", "threading.py", "contextvars.py", "functools.py")


def _user_frame(frame: traceback.FrameSummary) -> bool:
    """Whether a frame is the agent's (not pytest-budget's, anyio's or the event loop's)."""
    name = os.path.abspath(frame.filename)
    if name.startswith((_PACKAGE_DIR, _ANYIO_DIR)):
        return False
    if name.startswith(_STDLIB_DIR):
        return not name[len(_STDLIB_DIR) :].startswith(_STDLIB_PLUMBING)
    return True


def agent_traceback(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it, with only the agent's own frames (and any
    ``__cause__``/``__context__`` chain); never raises."""
    try:
        info = traceback.TracebackException.from_exception(exc, capture_locals=False)
        seen: set[int] = set()
        stack: list[traceback.TracebackException | None] = [info]
        while stack:
            current = stack.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            kept = [frame for frame in current.stack if _user_frame(frame)]
            current.stack = traceback.StackSummary.from_list(kept or list(current.stack)[-1:])
            stack.extend([current.__cause__, current.__context__])
        return "".join(info.format()).rstrip("\n")
    except Exception:
        return f"{type(exc).__name__}: {safe_repr(exc)}"


def _reason(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    detail = text.splitlines()[0] if text.strip() else ""
    return f"raised {type(exc).__name__}" + (f": {detail}" if detail else "")


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
    declared = registered_role(role)
    if declared is None:
        raise AgentError(
            role,
            agent_name(agent),
            f"no registered suite declares role {role!r}; register its suite first",
        )
    method_name = declared.method
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
    exception the agent raises comes back as :class:`AgentError` with a one-line reason and
    the agent's traceback (``KeyboardInterrupt`` and cancellation pass through); a reply no
    parser of ``role`` could read raises :class:`InvalidOutput` naming its type.
    """
    fn = role_callable(agent, role)
    name = agent_name(agent)
    deadline = agent_timeout()
    if deadline > 0 and getattr(agent, "run_inline", False) is not True:
        try:
            with anyio.fail_after(deadline):
                result = await _call(fn, agent, role, name, args, limiter)
        except TimeoutError:
            error = AgentError(
                role,
                name,
                f"timed out after {deadline:g} s (--budget-agent-timeout); the call was "
                "abandoned and the run goes on",
            )
            log_agent_error(error)
            raise error from None
    else:
        result = await _call(fn, agent, role, name, args, limiter)
    problem = reply_problem(role, result)
    if problem is not None:
        raise InvalidOutput(role, name, problem, safe_repr(result))
    count_reply(agent, role, result)  # once per reply: the cell's spend in reference tokens
    return result


async def _call(
    fn: Callable[..., Any],
    agent: object,
    role: str,
    name: str,
    args: tuple[Any, ...],
    limiter: anyio.CapacityLimiter | None,
) -> Any:
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
        # Abandoned when its deadline passes: a sync agent that never returns cannot hold
        # the cell (its thread is a daemon, left behind).
        result = await anyio.to_thread.run_sync(
            functools.partial(fn, *args), limiter=limiter, abandon_on_cancel=True
        )
        if inspect.isawaitable(result):
            result = await _await(result)
        return result
    except AgentError:
        raise
    except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
        raise  # the user stops the run; a task group cancels its tasks
    except BaseException as exc:  # an agent's bug (even SystemExit) must not crash the cell
        error = AgentError(role, name, _reason(exc), agent_traceback(exc))
        log_agent_error(error)
        raise error from exc


async def _await(result: Awaitable[Any]) -> Any:
    return await result
