"""Which model-call failures are retried, and how long to wait: a tenacity policy.

Transient failures are retried with exponential backoff and full jitter: HTTP 408, 409, 425,
429 and every 5xx (including Anthropic's 529 "overloaded"), timeouts, refused or dropped
connections, and a 2xx answer whose body is not JSON (a truncated read).  A server's own
wait wins over the backoff: ``retry-after-ms`` (milliseconds, OpenAI) first, then
``Retry-After`` in seconds or as an HTTP date.  Retries stop after ``max_attempts`` calls or
when the next wait would end past ``max_total_s`` from the first attempt, whichever comes
first; the last error is then raised as it was.  Client errors (400, 401, 403, 404, 422) are
never retried: they do not go away by waiting.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
import tenacity

from pytest_budget.models._client import ModelCallError

__all__ = [
    "RETRYABLE_STATUSES",
    "RetryPolicy",
    "call_with_retries",
    "is_transient",
    "server_wait",
]

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 409, 425, 429})
_TRANSIENT_KINDS = frozenset({"timeout", "transport", "malformed"})

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Retry limits: attempts, total seconds, and the backoff's first and largest wait."""

    max_attempts: int = 6
    max_total_s: float = 300.0
    initial_wait_s: float = 0.5
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        for name in ("max_total_s", "initial_wait_s", "max_wait_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")


def is_transient(exc: BaseException) -> bool:
    """Whether waiting and calling again may succeed."""
    if not isinstance(exc, ModelCallError):
        return False
    if exc.kind in _TRANSIENT_KINDS:
        return True
    if exc.kind != "http" or exc.status is None:
        return False
    return exc.status in RETRYABLE_STATUSES or exc.status >= 500


def server_wait(exc: BaseException, *, now: _dt.datetime | None = None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, then ``Retry-After``), if any."""
    if not isinstance(exc, ModelCallError):
        return None
    if exc.retry_after_ms:
        try:
            millis = float(exc.retry_after_ms.strip())
        except ValueError:
            millis = math.nan
        if math.isfinite(millis) and millis >= 0:
            return millis / 1000.0
    raw = (exc.retry_after or "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
        seconds = (when - (now or _dt.datetime.now(_dt.UTC))).total_seconds()
        return max(0.0, seconds)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class _Wait(tenacity.wait.wait_base):
    """The server's wait when it gave one, else exponential backoff with full jitter."""

    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self.policy = policy
        self.rng = rng

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = server_wait(exc) if exc is not None else None
        if asked is not None:
            return asked
        ceiling = min(
            self.policy.max_wait_s,
            self.policy.initial_wait_s * 2 ** (retry_state.attempt_number - 1),
        )
        # Full jitter (AWS architecture blog): spreads clients that failed together.
        return self.rng.uniform(0.0, ceiling)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[BaseException, float], None] | None = None,
    rng: random.Random | None = None,
) -> T:
    """Await ``call()`` until it succeeds or the policy gives up (the last error is raised).

    ``on_retry(error, wait_s)`` is told before each wait (for counters and adaptive
    concurrency).  Jitter only moves *when* calls happen, never what they return, so it uses
    its own unseeded ``random.Random`` unless one is given.
    """

    # Most calls succeed at once: the first attempt runs outside tenacity, whose per-call
    # set-up costs about as much CPU as a local model call.  A transient failure is handed to
    # tenacity as its attempt 1 (re-raised, not re-sent), with the time already spent taken
    # off the total, so waits, stops and counting are exactly tenacity's.
    started = time.monotonic()
    try:
        return await call()
    except BaseException as exc:
        if policy.max_attempts <= 1 or not is_transient(exc):
            raise
        pending: list[BaseException] = [exc]

    async def first_then_call() -> T:
        if pending:
            raise pending.pop()
        return await call()

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is None or state.outcome is None:
            return
        error = state.outcome.exception()
        if error is not None:
            on_retry(error, state.upcoming_sleep)

    remaining_s = max(0.0, policy.max_total_s - (time.monotonic() - started))
    retrying = tenacity.AsyncRetrying(
        stop=(
            tenacity.stop_after_attempt(policy.max_attempts)
            | tenacity.stop_before_delay(remaining_s)
        ),
        wait=_Wait(policy, rng or random.Random()),
        retry=tenacity.retry_if_exception(is_transient),
        sleep=anyio.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return await retrying(first_then_call)
