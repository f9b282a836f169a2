"""The model runtime: what happens around every model call of a run.

:meth:`ModelRuntime.wrap` turns a bare chat client into a :class:`RuntimeChatModel` with the
client's ``complete`` signature.  Each call, in order:

1. **Replay**: the request's recording is returned when the record mode allows it
   (:mod:`pytest_budget.models._recorder`); nothing is sent and nothing is spent.  The
   recording is looked up by the request and the repeat running (:data:`CALL_REPEAT`), so
   each ``--budget-repeat`` is its own call, live or replayed.
2. **Spend cap**: the call's worst-case cost is reserved in the run's shared ledger
   (:mod:`pytest_budget.models._ledger`); past ``--budget-max-usd`` the call is refused.
3. **Concurrency**: at most ``--budget-concurrency`` calls per process are in flight; after
   a 429 that limit is halved (at most once a second, never below 1), and it grows back by
   one after every 20 successes in a row (additive increase, multiplicative decrease).
4. **Retries**: transient failures are retried with backoff, honouring the server's
   ``Retry-After`` (:mod:`pytest_budget.models._retry`).
5. **Bookkeeping**: the answer is recorded, its cost (from the price table) and token counts
   go to the ledger, and its usage is charged to the current :class:`~pytest_budget._core.budget.
   Meter` if one is active (replayed calls charge it too, so caps bind the same way).

A failure that survives the retries, a refused call and a missing recording raise
:class:`~pytest_budget.models._client.ModelCallError` with a one-line reason; the suites
report it as that probe's or turn's error and the cell goes on.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from pytest_budget._core.budget import Usage, current_meter
from pytest_budget._core.concurrency import acquire
from pytest_budget._core.tokens import count_tokens
from pytest_budget.models._cell_calls import (
    CALL_REPEAT,
    CELL_CALLS,
    CellCalls,
    _cell_failed,
    _cell_spent,
)
from pytest_budget.models._client import ChatClient, ChatResult, ModelCallError, ToolSpec
from pytest_budget.models._ledger import SpendLedger
from pytest_budget.models._loop import ranked_limiter
from pytest_budget.models._prices import PriceTable
from pytest_budget.models._recorder import CallRecorder, canonical_body, key_of, scrub_result
from pytest_budget.models._retry import RetryPolicy, call_with_retries, is_transient
from pytest_budget.models._usage import TokenUsage

__all__ = [
    "CALL_REPEAT",
    "CELL_CALLS",
    "AdaptiveLimit",
    "CellCalls",
    "EndpointHealth",
    "ModelRuntime",
    "RuntimeChatModel",
    "RuntimeConfig",
]

_GROW_AFTER = 20  # successes in a row before the limit grows by one
_SHRINK_EVERY_S = 1.0  # at most one halving per second (a burst of 429s is one signal)
# Prompt tokens are estimated for the reservation; real tokenizers split finer than the
# reference one, so the estimate is padded.
_PROMPT_PAD = 1.5
_FLUSH_EVERY_S = 0.5  # buffered ledger counters (no spend cap) reach the file this often
_TOOLS_JSON_SIZE = 256  # tool lists whose JSON a model keeps (a few dozen per planning task)


@dataclass(frozen=True)
class RuntimeConfig:
    """Settings of one run's runtime (plain values, the same in every process)."""

    record_mode: str = "new"
    cache_dir: str | None = None
    ledger_path: str | None = None
    max_usd: float | None = None
    concurrency: int = 8
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # ``once`` resolved per "provider:model" by the controller before the run.
    resolved_modes: Mapping[str, str] = field(default_factory=dict)
    # Failed attempts (of the last 10, and 80% of them) after which an endpoint counts as
    # down and the run stops (0: never).
    endpoint_failures: int = 5
    # Other processes of the run may send the same requests (xdist workers): a file lock per
    # request key (under the cache directory) makes one of them call and the others replay.
    claim_files: bool = False

    def mode_for(self, provider: str, model: str) -> str:
        return self.resolved_modes.get(f"{provider}:{model}", self.record_mode)


class AdaptiveLimit:
    """A per-process limit on calls in flight that backs off on 429s (AIMD).

    anyio primitives belong to one event loop; the suites run every cell on the process's
    worker loop, but a user's async test has its own, so the :class:`anyio.CapacityLimiter`
    is rebuilt when the loop changes; the current limit carries over.
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError(f"concurrency must be >= 1, got {maximum}")
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self._streak = 0
        self._last_shrink = -math.inf
        self._token: object | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._lock = threading.Lock()

    def limiter(self) -> anyio.CapacityLimiter:
        # The token wraps the running loop; a new wrapper per call, so compare the loop.
        token = anyio.lowlevel.current_token().native_token
        if self._limiter is None or self._token is not token:
            self._token = token
            self._limiter = ranked_limiter(self.limit)
        return self._limiter

    def _apply(self) -> None:
        if self._limiter is not None:
            self._limiter.total_tokens = self.limit

    def rate_limited(self) -> None:
        with self._lock:
            self._streak = 0
            now = time.monotonic()
            if now - self._last_shrink < _SHRINK_EVERY_S:
                return
            self._last_shrink = now
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
        self._apply()

    def succeeded(self) -> None:
        with self._lock:
            self._streak += 1
            if self._streak < _GROW_AFTER or self.limit >= self.maximum:
                return
            self._streak = 0
            self.limit += 1
        self._apply()


@dataclass
class _Stats:
    """This process's counters (the ledger holds the run's)."""

    calls: int = 0
    replayed: int = 0
    errors: int = 0
    refused: int = 0
    # Calls that raised after the retries (errors, missing recordings, a stopped endpoint):
    # a cell during which this grows is incomplete.
    failed: int = 0


class EndpointHealth:
    """Recent attempts to one endpoint; *down* once most of them failed.

    An attempt counts as failed when waiting might have helped (timeouts, refused or
    dropped connections, 5xx, truncated bodies; not 429, which the adaptive limit handles,
    and not client errors).  Once at least ``min_failures`` of the last ``window`` attempts
    failed and they are at least ``ratio`` of that window, the endpoint is down: every
    later call fails at once with the same message instead of retrying in full.
    """

    def __init__(self, endpoint: str, min_failures: int, window: int = 10, ratio: float = 0.8):
        self.endpoint = endpoint
        self.min_failures = min_failures
        self.ratio = ratio
        self.recent: deque[bool] = deque(maxlen=max(window, min_failures))
        self.down: str | None = None
        self._lock = threading.Lock()
        # Attempts in flight (their cancel scopes): cancelled when the endpoint goes down,
        # so none waits out its own deadline after the verdict.
        self.in_flight: set[anyio.CancelScope] = set()

    def record(self, error: BaseException | None) -> None:
        failed = (
            error is not None
            and is_transient(error)
            and not (isinstance(error, ModelCallError) and error.status == 429)
        )
        with self._lock:
            self.recent.append(failed)
            failures = sum(self.recent)
            if (
                self.down is None
                and self.min_failures > 0
                and failures >= self.min_failures
                and failures >= self.ratio * len(self.recent)
            ):
                self.down = (
                    f"endpoint {self.endpoint} is failing: {failures} of the last "
                    f"{len(self.recent)} attempts failed (last: {error}); stopping instead of "
                    "retrying every call (is the server up and --budget-base-url right? "
                    "--budget-model-timeout sets each call's deadline)"
                )
                doomed = list(self.in_flight)
            else:
                doomed = []
        for scope in doomed:  # same event loop: record() runs in one of its tasks
            scope.cancel()


class ModelRuntime:
    """One per process: the recorder, the ledger, the price table and the limit."""

    def __init__(self, config: RuntimeConfig, prices: PriceTable | None = None) -> None:
        self.config = config
        self.prices = prices or PriceTable({})
        self.recorder = CallRecorder(config.cache_dir) if config.cache_dir else None
        self.ledger = (
            SpendLedger(config.ledger_path, config.max_usd) if config.ledger_path else None
        )
        self.limit = AdaptiveLimit(config.concurrency)
        self.stats = _Stats()
        self._rng = random.Random()  # jitter only: timing, never results
        self._pending: dict[str, int] = {}
        self._pending_cost = 0.0
        self._pending_lock = threading.Lock()
        self._flushed_at = time.monotonic()
        self._health: dict[str, EndpointHealth] = {}
        self._claims: dict[str, anyio.Lock] = {}

    def wrap(self, client: ChatClient) -> RuntimeChatModel:
        return RuntimeChatModel(client, self)

    __call__ = wrap  # the provider factory's ``chat_model`` callable

    @contextlib.asynccontextmanager
    async def claim(self, key: str) -> AsyncIterator[None]:
        """Hold the request ``key``: one holder per process (an anyio lock per key) and, with
        a cache directory, per run (a file lock that other xdist workers wait for)."""
        lock = self._claims.get(key)
        if lock is None:
            lock = self._claims[key] = anyio.Lock()
        try:
            async with lock:
                held = None
                if self.config.claim_files and self.config.cache_dir:
                    held = await _file_lock(f"{self.config.cache_dir}/claims/{key[:40]}.lock")
                try:
                    yield
                finally:
                    if held is not None:
                        held.release()
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._claims.pop(key, None)

    def health(self, endpoint: str) -> EndpointHealth:
        with self._pending_lock:
            found = self._health.get(endpoint)
            if found is None:
                found = self._health[endpoint] = EndpointHealth(
                    endpoint, self.config.endpoint_failures
                )
            return found

    def endpoint_down(self) -> str | None:
        """Why the run should stop: the first endpoint found down (None: all are fine)."""
        for health in list(self._health.values()):
            if health.down is not None:
                return health.down
        return None

    def exhausted(self) -> bool:
        """Whether the run's spend cap is reached (no ledger or no cap: never)."""
        return self.ledger is not None and self.ledger.exhausted()

    # -- bookkeeping ------------------------------------------------------------------------
    def _count(self, cost: float = 0.0, release: float = 0.0, **counts: int) -> None:
        """Add to the run's ledger.  Under a spend cap at once (other processes must see the
        spend); otherwise buffered and written at most every ``_FLUSH_EVERY_S`` and at
        :meth:`flush`, so a call costs no file lock."""
        if self.ledger is None:
            return
        if self.config.max_usd is not None:
            self.ledger.record(cost_usd=cost, release_usd=release, counts=counts)
            return
        with self._pending_lock:
            self._pending_cost += cost
            for name, amount in counts.items():
                if amount:
                    self._pending[name] = self._pending.get(name, 0) + amount
            due = time.monotonic() - self._flushed_at >= _FLUSH_EVERY_S
        if due:
            self.flush()

    def flush(self) -> None:
        """Write buffered counters to the ledger (the suites call it at the end of a cell)."""
        if self.ledger is None:
            return
        with self._pending_lock:
            pending, cost = self._pending, self._pending_cost
            self._pending, self._pending_cost = {}, 0.0
            self._flushed_at = time.monotonic()
        if pending or cost:
            self.ledger.record(cost_usd=cost, counts=pending)

    def _usage_counts(self, usage: TokenUsage) -> dict[str, int]:
        if not usage.reported:
            return {"unreported_usage": 1}
        return {
            "input_tokens": usage.input,
            "output_tokens": usage.output,
            "reasoning_tokens": usage.reasoning,
            "cached_read_tokens": usage.cached_read,
            "cached_write_tokens": usage.cached_write,
        }


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only strings, None, lists and dicts: no number or boolean,
    which ``==`` would find equal across JSON types (``1 == 1.0 == True``)."""
    if type(value) is dict:
        return all(_plain(item) for item in value.values())
    if type(value) is list:
        return all(_plain(item) for item in value)
    return value is None or type(value) is str


async def _file_lock(path: str) -> Any:
    """Take the file lock at ``path`` without blocking the event loop (cancellable)."""
    import os

    from filelock import FileLock, Timeout

    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock = FileLock(path)
    while True:
        try:
            lock.acquire(timeout=0)
            return lock
        except Timeout:
            await anyio.sleep(0.02)


def _charge_meter(usage: TokenUsage, cost: float) -> None:
    meter = current_meter()
    if meter is None:
        return
    amounts: dict[str, float] = {}
    if usage.reported:
        amounts["tokens"] = float(usage.total)
    if cost:
        amounts["usd"] = cost
    if amounts:
        meter.charge(Usage(**amounts))


class RuntimeChatModel:
    """A chat client behind the runtime; has the client's ``complete`` signature."""

    #: Its live calls are bounded by the runtime's limit (``--budget-concurrency``, ranked
    #: like the cells' limiter); replays and the building of a request take no slot.
    limits_calls: ClassVar[bool] = True

    def __init__(self, client: ChatClient, runtime: ModelRuntime) -> None:
        self.client = client
        self.runtime = runtime
        # The role of the agent this model serves (set by the provider factory): a cell's
        # spend is reported per role.
        self.role: str | None = None
        self.provider = client.provider
        self.model = client.model
        # id(tools argument) -> (it, the body's tool list, that list's canonical JSON).
        self._tools_json: dict[int, tuple[object, list[Any], str]] = {}

    def __repr__(self) -> str:
        return f"RuntimeChatModel({self.client!r})"

    def _error(self, reason: str, kind: str) -> ModelCallError:
        return ModelCallError(self.provider, self.model, reason, kind=kind)

    def _reservation(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int, tools: object
    ) -> float:
        price = self.runtime.prices.lookup(self.provider, self.model)
        if price is None:
            return 0.0
        prompt = json.dumps([dict(m) for m in messages], default=str) + json.dumps(
            tools, default=str
        )
        estimate = TokenUsage(
            input=math.ceil(count_tokens(prompt) * _PROMPT_PAD), output=max_tokens, reported=True
        )
        return price.cost(estimate)

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Sequence[ToolSpec] | None = None,
    ) -> ChatResult:
        runtime = self.runtime
        mode = runtime.config.mode_for(self.provider, self.model)
        body = self.client.request_body(
            messages, max_tokens=max_tokens, temperature=temperature, tools=tools
        )
        # Encoded once: hashed for the key, sent as the request, kept in the recording.
        body_json = self._encode(body, tools)
        repeat = CALL_REPEAT.get()
        key = key_of(self.provider, body_json, repeat)
        recorder = runtime.recorder
        if recorder is not None and mode in ("new", "none"):
            recorded = recorder.load(self.provider, self.model, key, body)
            if recorded is not None:
                return self._replayed(recorded)
        if mode == "none":
            runtime._count(not_recorded=1)
            runtime.stats.failed += 1
            _cell_failed()
            raise self._error(self._not_recorded(body_json, repeat), "not_recorded")
        if recorder is None or mode != "new":
            return await self._live(messages, body, body_json, key, max_tokens, repeat)
        # One live call per request in the whole run: a cell of this process or another
        # xdist worker asking the same thing meanwhile waits and replays its answer.
        async with runtime.claim(key):
            # Only other processes of the run (xdist workers) record while this one runs.
            recorded = recorder.load(
                self.provider, self.model, key, body, refresh=runtime.config.claim_files
            )
            if recorded is not None:
                return self._replayed(recorded)
            return await self._live(messages, body, body_json, key, max_tokens, repeat)

    def _encode(self, body: Mapping[str, Any], tools: Sequence[ToolSpec] | None) -> str:
        """:func:`canonical_body` of ``body``, the tool list's JSON reused while the same
        ``tools`` tuple (a planning agent's memoized one) builds an equal list: a planning
        turn re-sends its task's tools unchanged, the largest part of its body."""
        wire = body.get("tools")
        if type(tools) is not tuple or not isinstance(wire, list):
            return canonical_body(body)
        found = self._tools_json.get(id(tools))
        # Compared with a copy read back from the JSON itself, holding only strings, None,
        # lists and dicts: equal then means the same JSON, whatever was changed in place.
        if found is not None and found[0] is tools and found[1] == wire:
            return canonical_body(body, {"tools": found[2]})
        tools_text = canonical_body({"tools": wire})[len('{"tools":') : -1]
        snapshot = json.loads(tools_text)
        if _plain(snapshot):
            if len(self._tools_json) >= _TOOLS_JSON_SIZE:
                self._tools_json.clear()
            # The entry holds ``tools`` itself, so its id is not reused while it is here.
            self._tools_json[id(tools)] = (tools, snapshot, tools_text)
        return canonical_body(body, {"tools": tools_text})

    def _not_recorded(self, body_json: str, repeat: int) -> str:
        """Why replay-only mode has no answer (a cache of the first repeat only, say so)."""
        config = self.runtime.config
        where = f"record mode {config.record_mode!r}, cache {config.cache_dir}"
        recorder = self.runtime.recorder
        first = key_of(self.provider, body_json)
        if repeat and recorder is not None and recorder.load(self.provider, self.model, first):
            return (
                f"no recorded answer for repeat {repeat} (counting from 0) of this request: "
                "the cache holds its first repeat only (recorded with a smaller "
                "--budget-repeat, or before repeats were recorded apart) "
                f"({where}); record the other repeats with --budget-record-mode=new, or "
                "replay with --budget-repeat=1"
            )
        return (
            f"no recorded answer for this request ({where}); record it with "
            "--budget-record-mode=new"
        )

    def _replayed(self, recorded: ChatResult) -> ChatResult:
        runtime = self.runtime
        runtime.stats.replayed += 1
        runtime._count(replayed=1)  # token counters are for live (paid) calls
        _cell_spent(self.role)
        price = runtime.prices.lookup(self.provider, self.model)
        _charge_meter(recorded.usage, price.cost(recorded.usage) if price else 0.0)
        return recorded

    async def _attempt(
        self, body: dict[str, Any], content: bytes, health: EndpointHealth
    ) -> ChatResult:
        """One try of a live call: a slot of the adaptive limit, then the request, its
        outcome told to the endpoint's health (a down endpoint fails it at once)."""
        limiter = self.runtime.limit.limiter()
        await acquire(limiter)
        try:
            if health.down is not None:  # after the wait: it may have gone down meanwhile
                raise self._error(health.down, "endpoint_down")
            with anyio.CancelScope() as scope:
                health.in_flight.add(scope)
                try:
                    result = await self.client.send(body, content)
                finally:
                    health.in_flight.discard(scope)
            if scope.cancelled_caught:
                raise self._error(health.down or "endpoint is down", "endpoint_down")
        except ModelCallError as exc:
            if exc.kind != "endpoint_down":
                health.record(exc)
            raise
        finally:
            limiter.release()
        health.record(None)
        return result

    async def _live(
        self,
        messages: Sequence[Mapping[str, Any]],
        body: dict[str, Any],
        body_json: str,
        key: str,
        max_tokens: int,
        repeat: int = 0,
    ) -> ChatResult:
        runtime = self.runtime
        recorder = runtime.recorder
        reserved = self._reservation(messages, max_tokens, body.get("tools"))
        ledger = runtime.ledger
        if ledger is not None and not ledger.reserve(reserved):
            runtime.stats.refused += 1
            _cell_failed(refused=True)
            raise self._error(
                f"spend cap ${ledger.max_usd:g} reached (${ledger.read().spent_usd:.4f} spent); "
                "no further model calls are made",
                "spend_cap",
            )

        def on_retry(error: BaseException, wait_s: float) -> None:
            rate_limited = isinstance(error, ModelCallError) and error.status == 429
            if rate_limited:
                runtime.limit.rate_limited()
            runtime._count(retries=1, rate_limited=int(rate_limited))

        content = body_json.encode()
        health = runtime.health(str(getattr(self.client, "endpoint", self.provider)))

        try:
            result = await call_with_retries(
                lambda: self._attempt(body, content, health),
                runtime.config.retry,
                on_retry=on_retry,
                rng=runtime._rng,
            )
        except ModelCallError as exc:
            runtime.stats.errors += 1
            runtime.stats.failed += 1
            _cell_failed()
            runtime._count(release=reserved, errors=1, rate_limited=int(exc.status == 429))
            raise
        except BaseException:
            runtime._count(release=reserved)
            raise
        runtime.limit.succeeded()
        result = scrub_result(result)  # a lone surrogate must not lose a paid-for answer
        price = runtime.prices.lookup(self.provider, self.model)
        cost = price.cost(result.usage) if price is not None else 0.0
        if recorder is not None:
            recorder.store(
                self.provider, self.model, key, body, result, body_json=body_json, repeat=repeat
            )
        runtime.stats.calls += 1
        runtime._count(
            cost=cost,
            release=reserved,
            calls=1,
            unpriced=int(price is None),
            **runtime._usage_counts(result.usage),
        )
        _cell_spent(self.role, result.usage, cost)
        _charge_meter(result.usage, cost)
        return result
