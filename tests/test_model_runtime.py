"""The model runtime against a real local server: retries, replay, spend cap, concurrency."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_server import Fault, ModelServer

from pytest_budget._core.budget import Budget, Meter
from pytest_budget.models._client import ModelCallError
from pytest_budget.models._ledger import SpendLedger
from pytest_budget.models._prices import ModelPrice, PriceTableError, load_price_table
from pytest_budget.models._provider import build_chat_client
from pytest_budget.models._recorder import cassette_has_records, request_key, resolve_mode
from pytest_budget.models._retry import RetryPolicy, is_transient, server_wait
from pytest_budget.models._runtime import AdaptiveLimit, ModelRuntime, RuntimeConfig
from pytest_budget.models._usage import TokenUsage

FAST = RetryPolicy(max_attempts=6, max_total_s=30, initial_wait_s=0.01, max_wait_s=0.05)
MESSAGES = [{"role": "user", "content": "How far?"}]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(lambda body: "ok " + body["messages"][-1]["content"]) as running:
        yield running


def make_runtime(tmp_path: Path, **overrides: Any) -> ModelRuntime:
    settings: dict[str, Any] = {
        "cache_dir": str(tmp_path / "models"),
        "ledger_path": str(tmp_path / "ledger.json"),
        "retry": FAST,
    }
    prices = overrides.pop("prices", ["m = 1 2"])
    settings.update(overrides)
    return ModelRuntime(RuntimeConfig(**settings), load_price_table(prices))


def ledger_state(runtime: ModelRuntime) -> Any:
    """The run's ledger after this process's buffered counters are written."""
    runtime.flush()
    assert runtime.ledger is not None
    return runtime.ledger.read()


def call(model: Any, content: str = "How far?", max_tokens: int = 16) -> Any:
    messages = [{"role": "user", "content": content}]
    return anyio.run(lambda: model.complete(messages, max_tokens=max_tokens))


def client(server: ModelServer, timeout: float = 5.0, provider: str = "openai") -> Any:
    return build_chat_client(provider, "m", base_url=server.url, timeout=timeout)


# -- prices ------------------------------------------------------------------------------------


def test_cost_is_worked_out_per_token_class() -> None:
    price = ModelPrice(input=3.0, output=15.0, cached_read=0.3, cache_write=3.75)
    usage = TokenUsage(
        input=1_000, output=200, cached_read=400, cached_write=100, reasoning=50, reported=True
    )
    # 500 fresh x 3 + 400 x 0.3 + 100 x 3.75 + 200 x 15, per million.
    assert price.cost(usage) == pytest.approx((1500 + 120 + 375 + 3000) / 1e6)
    assert ModelPrice(1.0, 2.0).cost(TokenUsage()) == 0.0  # unreported usage costs nothing


def test_price_lines_and_file(tmp_path: Path) -> None:
    file = tmp_path / "prices.json"
    file.write_text(json.dumps({"openai:m": {"input": 5, "output": 10}}))
    table = load_price_table(["m = 1 2 0.5", "# comment", "big = 1 2 0.5 1.25"], str(file))
    assert table.lookup("openai", "m") == ModelPrice(5.0, 10.0)  # provider:model first
    assert table.lookup("anthropic", "m") == ModelPrice(1.0, 2.0, 0.5)
    assert table.lookup("openai", "big") == ModelPrice(1.0, 2.0, 0.5, 1.25)
    assert table.lookup("openai", "other") is None


@pytest.mark.parametrize(
    ("lines", "content", "message"),
    [
        (["m = 0.15 O.6"], None, "budget_prices (ini) line 1: m: output price 'O.6' is not"),
        (["m 0.15 0.6"], None, "line 1: 'm 0.15 0.6' is not 'MODEL = INPUT OUTPUT"),
        (["m = 1"], None, "expected 'MODEL = INPUT OUTPUT [CACHED_READ [CACHE_WRITE]]'"),
        (["m = 1 -2"], None, "output price must be >= 0"),
        ([], '{"m": {"input": 1, "ouptut": 2}}', "prices.json: m: unknown field 'ouptut'"),
        ([], '{"m": {"input": 1}}', "m: missing 'output' price"),
        ([], '{"m": [1, 2', "prices.json: not valid JSON"),
        ([], "m = 1 2\nn = x 2\n", "prices.json line 2: n: input price 'x'"),
    ],
)
def test_price_typos_are_one_line_errors(
    tmp_path: Path, lines: list[str], content: str | None, message: str
) -> None:
    path = None
    if content is not None:
        path = tmp_path / "prices.json"
        path.write_text(content)
    with pytest.raises(PriceTableError) as info:
        load_price_table(lines, str(path) if path else None)
    assert message in str(info.value) and "\n" not in str(info.value)


# -- retry rules -------------------------------------------------------------------------------


def _error(status: int | None = None, kind: str = "http", **headers: str) -> ModelCallError:
    return ModelCallError("openai", "m", "x", status=status, kind=kind, **headers)


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (_error(429), True),
        (_error(500), True),
        (_error(503), True),
        (_error(529), True),
        (_error(408), True),
        (_error(400), False),
        (_error(401), False),
        (_error(404), False),
        (_error(kind="timeout"), True),
        (_error(kind="transport"), True),
        (_error(200, kind="malformed"), True),
        (_error(200, kind="unusable"), False),
        (_error(kind="spend_cap"), False),
        (ValueError("x"), False),
    ],
)
def test_which_failures_are_retried(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_server_wait_reads_ms_seconds_and_dates() -> None:
    now = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.UTC)
    assert server_wait(_error(429, retry_after_ms="250", retry_after="9")) == 0.25
    assert server_wait(_error(429, retry_after="3")) == 3.0
    date = "Mon, 23 Nov 2026 12:00:07 GMT"
    assert server_wait(_error(503, retry_after=date), now=now) == 7.0
    past = "Mon, 23 Nov 2026 11:00:00 GMT"
    assert server_wait(_error(503, retry_after=past), now=now) == 0.0
    assert server_wait(_error(429, retry_after="soon")) is None
    assert server_wait(_error(429, retry_after="-4")) is None
    assert server_wait(_error(429)) is None


# -- retries against the server ----------------------------------------------------------------


def test_every_kind_of_fault_is_retried_until_an_answer(
    server: ModelServer, tmp_path: Path
) -> None:
    server.fail(
        Fault.http(429, {"retry-after": "0"}),
        Fault.http(503),
        Fault("drop"),
        Fault("truncate"),
        Fault.http(500),
    )
    runtime = make_runtime(tmp_path)
    result = call(runtime.wrap(client(server)))
    assert result.text == "ok How far?"
    assert len(server.requests) == 6
    state = ledger_state(runtime)
    assert (state.count("retries"), state.count("rate_limited"), state.count("calls")) == (5, 1, 1)
    assert state.spent_usd == pytest.approx((50 * 1 + 7 * 2) / 1e6)


def test_a_reply_slower_than_the_timeout_is_retried(server: ModelServer, tmp_path: Path) -> None:
    server.fail(Fault("slow", seconds=0.6))
    runtime = make_runtime(tmp_path)
    result = call(runtime.wrap(client(server, timeout=0.2)))
    assert result.text == "ok How far?" and len(server.requests) == 2


def test_retry_after_ms_is_honoured(server: ModelServer, tmp_path: Path) -> None:
    server.fail(Fault.http(429, {"retry-after-ms": "400"}))
    model = make_runtime(tmp_path).wrap(client(server))
    started = time.perf_counter()
    call(model)
    assert time.perf_counter() - started >= 0.4


def test_retries_stop_at_the_attempt_limit(server: ModelServer, tmp_path: Path) -> None:
    server.fail(*[Fault.http(500)] * 5)
    policy = RetryPolicy(max_attempts=3, initial_wait_s=0.01, max_wait_s=0.01)
    runtime = make_runtime(tmp_path, retry=policy)
    with pytest.raises(ModelCallError) as info:
        call(runtime.wrap(client(server)))
    assert info.value.status == 500 and len(server.requests) == 3
    assert ledger_state(runtime).count("errors") == 1


def test_a_wait_past_the_time_limit_gives_up_at_once(server: ModelServer, tmp_path: Path) -> None:
    server.fail(Fault.http(429, {"retry-after": "30"}))
    policy = RetryPolicy(max_attempts=6, max_total_s=2.0)
    started = time.perf_counter()
    with pytest.raises(ModelCallError) as info:
        call(make_runtime(tmp_path, retry=policy).wrap(client(server)))
    assert info.value.status == 429 and len(server.requests) == 1
    assert time.perf_counter() - started < 2.0


def test_a_rejected_key_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with ModelServer(api_key="right") as server:
        with pytest.raises(ModelCallError) as info:
            call(make_runtime(tmp_path).wrap(client(server)))
    assert info.value.status == 401 and len(server.requests) == 1
    assert "wrong" not in str(info.value)


# -- record and replay -------------------------------------------------------------------------


def test_new_mode_replays_what_it_recorded(server: ModelServer, tmp_path: Path) -> None:
    first = call(make_runtime(tmp_path).wrap(client(server)))
    runtime = make_runtime(tmp_path)
    again = call(runtime.wrap(client(server)))
    assert again == first and len(server.requests) == 1
    assert runtime.stats.replayed == 1
    other = call(runtime.wrap(client(server)), content="And now?")
    assert other.text == "ok And now?" and len(server.requests) == 2


def test_none_mode_never_calls(server: ModelServer, tmp_path: Path) -> None:
    call(make_runtime(tmp_path).wrap(client(server)))
    replay_only = make_runtime(tmp_path, record_mode="none")
    assert call(replay_only.wrap(client(server))).text == "ok How far?"
    with pytest.raises(ModelCallError) as info:
        call(replay_only.wrap(client(server)), content="new question")
    assert info.value.kind == "not_recorded" and "--budget-record-mode=new" in str(info.value)
    assert len(server.requests) == 1


def test_all_mode_calls_again_and_rerecords(server: ModelServer, tmp_path: Path) -> None:
    call(make_runtime(tmp_path).wrap(client(server)))
    call(make_runtime(tmp_path, record_mode="all").wrap(client(server)))
    assert len(server.requests) == 2


def test_once_mode_records_an_empty_cassette_then_replays_only(
    server: ModelServer, tmp_path: Path
) -> None:
    root = tmp_path / "models"
    assert resolve_mode("once", root, "openai", "m") == "new"
    call(make_runtime(tmp_path).wrap(client(server)))
    assert cassette_has_records(root, "openai", "m")
    assert resolve_mode("once", root, "openai", "m") == "none"
    assert resolve_mode("once", root, "openai", "other") == "new"
    assert resolve_mode("all", root, "openai", "m") == "all"


def test_key_covers_the_request_and_records_hold_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-CANARY-runtime-42"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    body = {"model": "m", "messages": MESSAGES, "max_tokens": 16, "temperature": 0.0}
    assert request_key("openai", body) == request_key("openai", dict(reversed(body.items())))
    assert request_key("openai", body) != request_key("openai", {**body, "max_tokens": 17})
    assert request_key("openai", body) != request_key("anthropic", body)
    with ModelServer(api_key=canary) as server:
        call(make_runtime(tmp_path).wrap(client(server)))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" and "models" in p.parts for p in files)
    for path in files:
        assert canary not in path.read_text(errors="replace"), path


def test_a_corrupt_record_is_a_miss_and_is_recorded_again(
    server: ModelServer, tmp_path: Path
) -> None:
    call(make_runtime(tmp_path).wrap(client(server)))
    (journal,) = (tmp_path / "models").rglob("*.jsonl")
    journal.write_text('{"format": 1, "request": \n')  # one line, not a record
    runtime = make_runtime(tmp_path)
    assert call(runtime.wrap(client(server))).text == "ok How far?"
    assert runtime.recorder is not None and runtime.recorder.corrupt == 1
    assert len(server.requests) == 2
    (fresh,) = set((tmp_path / "models").rglob("*.jsonl")) - {journal}
    assert json.loads(fresh.read_text())["response"]["text"] == "ok How far?"
    assert call(make_runtime(tmp_path).wrap(client(server))).text == "ok How far?"
    assert len(server.requests) == 2  # the new recording replays


# -- spend cap and ledger ----------------------------------------------------------------------


def test_the_spend_cap_refuses_calls_before_they_are_made(
    server: ModelServer, tmp_path: Path
) -> None:
    # Price 1000 $/M tokens in and out: a call reserves (prompt estimate + 16) x 1e-3 $,
    # about 0.03 $; each costs (50 + 7) x 1e-3 = 0.057 $.  A 0.1 $ cap admits one call.
    runtime = make_runtime(tmp_path, max_usd=0.1, prices=["m = 1000 1000"])
    model = runtime.wrap(client(server))
    call(model, content="one")
    with pytest.raises(ModelCallError) as info:
        call(model, content="two")
    assert info.value.kind == "spend_cap" and "$0.1 reached" in str(info.value)
    assert len(server.requests) == 1
    assert runtime.exhausted() and runtime.stats.refused == 1
    assert runtime.ledger is not None
    state = runtime.ledger.read()
    assert state.spent_usd == pytest.approx(0.057) and state.reserved_usd == pytest.approx(0.0)
    with pytest.raises(ModelCallError):  # closed for good, even for a small call
        call(model, content="x", max_tokens=1)


def _reserve_and_record(path: str, rounds: int) -> None:
    ledger = SpendLedger(path, max_usd=1000.0)
    for _ in range(rounds):
        assert ledger.reserve(0.5)
        ledger.record(cost_usd=0.25, release_usd=0.5, counts={"calls": 1})


def test_the_ledger_is_exact_across_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.json")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_reserve_and_record, args=(path, 50)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    state = SpendLedger(path).read()
    assert state.count("calls") == 150
    assert state.spent_usd == pytest.approx(37.5) and state.reserved_usd == pytest.approx(0.0)


def test_calls_charge_the_current_meter(server: ModelServer, tmp_path: Path) -> None:
    model = make_runtime(tmp_path).wrap(client(server))
    meter = Meter("problem", Budget(tokens=1000))

    async def go() -> None:
        with meter.activate():
            await model.complete(MESSAGES, max_tokens=8)
            await model.complete(MESSAGES, max_tokens=8)  # replayed: charged the same

    anyio.run(go)
    assert meter.used["tokens"] == 2 * 57
    assert meter.used["usd"] == pytest.approx(2 * (50 + 14) / 1e6)


def test_missing_usage_is_counted_not_invented(tmp_path: Path) -> None:
    with ModelServer(report_usage=False) as server:
        runtime = make_runtime(tmp_path)
        result = call(runtime.wrap(client(server)))
    assert result.usage.reported is False
    state = ledger_state(runtime)
    assert state.count("unreported_usage") == 1 and state.count("input_tokens") == 0


# -- concurrency -------------------------------------------------------------------------------


def test_calls_in_flight_are_bounded(tmp_path: Path) -> None:
    with ModelServer(latency=0.05) as server:
        model = make_runtime(tmp_path, concurrency=4).wrap(client(server))

        async def go() -> None:
            async with anyio.create_task_group() as group:
                for i in range(16):
                    group.start_soon(
                        lambda i=i: model.complete(  # type: ignore[misc]
                            [{"role": "user", "content": f"q{i}"}], max_tokens=4
                        )
                    )

        anyio.run(go)
    assert len(server.requests) == 16 and server.max_in_flight == 4


def test_adaptive_limit_halves_on_429_and_grows_back() -> None:
    limit = AdaptiveLimit(8)
    limit.rate_limited()
    assert limit.limit == 4
    limit.rate_limited()  # same burst (within a second): one signal
    assert limit.limit == 4
    limit._last_shrink -= 2
    limit.rate_limited()
    assert limit.limit == 2 and limit.lowest == 2
    for _ in range(20):
        limit.succeeded()
    assert limit.limit == 3
    for _ in range(200):
        limit.succeeded()
    assert limit.limit == 8


def test_the_limit_follows_the_event_loop(tmp_path: Path) -> None:
    limit = AdaptiveLimit(3)
    first = anyio.run(lambda: _limiter_of(limit))
    limit.rate_limited()
    second = anyio.run(lambda: _limiter_of(limit))
    assert first is not second and second.total_tokens == 1


async def _limiter_of(limit: AdaptiveLimit) -> anyio.CapacityLimiter:
    return limit.limiter()


def test_anthropic_calls_go_through_the_same_runtime(tmp_path: Path) -> None:
    with ModelServer(lambda body: "hello") as server:
        server.fail(Fault.http(529, {"retry-after": "0"}))
        runtime = make_runtime(tmp_path, prices=["anthropic:m = 1 2"])
        result = call(runtime.wrap(client(server, provider="anthropic")))
    assert result.text == "hello" and len(server.requests) == 2
    assert ledger_state(runtime).spent_usd == pytest.approx((50 + 14) / 1e6)


def test_progress_line_projects_the_total_from_finished_tests() -> None:
    from pytest_budget.models._ledger import LedgerState
    from pytest_budget.models._setup import progress_line

    state = LedgerState(
        counts={"calls": 1000, "replayed": 200, "retries": 3, "input_tokens": 45000,
                "output_tokens": 1200}
    )  # fmt: skip
    config = RuntimeConfig()
    # 1,200 calls in 3 of 9 tests: about 400 per test, so ~3,600 in all.
    line = progress_line(config, state, 3, 9)
    assert line.startswith("budget: model calls 1,200/~3,600 (tests 3/9): 200 replayed, 3 retries")
    assert "tokens 45,000 in / 1,200 out" in line
    # Before any test finished there is nothing to project from.
    assert progress_line(config, state, 0, 9).startswith("budget: model calls 1,200 (tests 0/9)")
    # Done: the projection is the count itself.
    assert "1,200/~1,200 (tests 9/9)" in progress_line(config, state, 9, 9)


def test_a_tool_list_sent_again_is_encoded_as_it_is_now(
    server: ModelServer, tmp_path: Path
) -> None:
    # The runtime reuses a tool list's JSON while the same tools object builds an equal
    # list; one changed in place in between is sent (and keyed) as it is now.
    from pytest_budget.models._chat_types import ToolSpec
    from pytest_budget.models._recorder import canonical_body

    model = make_runtime(tmp_path).wrap(client(server))
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    tools = (ToolSpec("search", "Finds things.", parameters), ToolSpec("book", "Books."))

    def send(content: str) -> None:
        anyio.run(
            lambda: model.complete(
                [{"role": "user", "content": content}], max_tokens=8, tools=tools
            )
        )

    send("one")
    send("two")
    parameters["properties"]["city"] = {"type": "string"}
    send("three")
    first, second, third = server.requests
    assert first["tools"] == second["tools"] != third["tools"]
    assert third["tools"][0]["function"]["parameters"]["properties"] == {"city": {"type": "string"}}
    # What was sent is json.dumps of the body as the client builds it now (a second method).
    sent = model.client.request_body(
        [{"role": "user", "content": "three"}], max_tokens=8, tools=tools
    )
    assert canonical_body(third) == canonical_body(sent)
