"""HTTP chat clients against a real scripted server on loopback (tests/scripted_server.py)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest
from scripted_server import Reply, ScriptedServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget._core.budget import Usage
from pytest_budget.models import (
    ANTHROPIC_VERSION,
    AnthropicChatClient,
    ChatClient,
    ChatResult,
    ModelCallError,
    OpenAIChatClient,
    TokenUsage,
    ToolSpec,
    from_anthropic,
    from_openai,
)

KEY = "sk-canary-5f1e9a7c-do-not-leak"

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2 + 2?"},
]

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def openai_reply(
    content: str | None = "4",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    finish: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def anthropic_reply(
    content: list[dict[str, Any]], *, usage: dict[str, Any] | None = None, stop: str = "end_turn"
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def call(client: ChatClient, **kwargs: Any) -> ChatResult:
    """Run one ``complete`` call on a fresh event loop and close the client."""
    kwargs.setdefault("max_tokens", 64)

    async def go() -> ChatResult:
        async with client:
            return await client.complete(kwargs.pop("messages", MESSAGES), **kwargs)

    return anyio.run(go)


def failing_call(client: ChatClient, **kwargs: Any) -> ModelCallError:
    with pytest.raises(ModelCallError) as info:
        call(client, **kwargs)
    return info.value


# -- OpenAI Chat Completions ----------------------------------------------------------------
def test_openai_request_shape() -> None:
    with ScriptedServer([Reply(json=openai_reply())]) as server:
        call(OpenAIChatClient("gpt-test", server.url + "/v1/", api_key=KEY), max_tokens=123)
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert "x-api-key" not in request.headers
    assert request.json == {
        "model": "gpt-test",
        "messages": MESSAGES,
        "max_tokens": 123,
        "temperature": 0.0,
    }


def test_openai_sends_tools_in_function_format_and_temperature() -> None:
    with ScriptedServer([Reply(json=openai_reply())]) as server:
        call(OpenAIChatClient("m", server.url + "/v1"), tools=[WEATHER], temperature=0.7)
    body = server.requests[0].json
    assert body["temperature"] == 0.7
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    assert "authorization" not in server.requests[0].headers  # no key given, none sent


def test_openai_parses_text_finish_reason_and_usage() -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 50,
        "total_tokens": 170,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    reply = openai_reply("The answer is 4.", usage=usage, finish="length")
    with ScriptedServer([Reply(json=reply)]) as server:
        result = call(OpenAIChatClient("m", server.url + "/v1", api_key=KEY))
    assert result.text == "The answer is 4."
    assert result.tool_calls == ()
    assert result.raw_finish_reason == "length"
    assert result.usage == TokenUsage(
        input=120, output=50, reasoning=30, cached_read=100, cached_write=0, reported=True
    )
    assert result.usage.to_usage() == Usage(tokens=170)


def test_openai_parses_tool_calls() -> None:
    tool_calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{"}},
    ]
    reply = openai_reply(None, tool_calls=tool_calls, finish="tool_calls")
    with ScriptedServer([Reply(json=reply)]) as server:
        result = call(OpenAIChatClient("m", server.url + "/v1"), tools=[WEATHER])
    assert result.text == ""
    assert result.raw_finish_reason == "tool_calls"
    first, second = result.tool_calls
    assert (first.id, first.name, first.arguments) == ("call_a", "get_weather", {"city": "Oslo"})
    # Garbage arguments are kept raw for the suite's parser to call invalid, not a crash.
    assert (second.id, second.arguments, second.raw_arguments) == ("call_b", None, "{")


def test_openai_missing_usage_is_reported_false_with_zeros() -> None:
    with ScriptedServer([Reply(json=openai_reply("4"))]) as server:
        result = call(OpenAIChatClient("m", server.url + "/v1"))
    assert result.text == "4"
    assert result.usage == TokenUsage()
    assert result.usage.reported is False
    assert result.usage.to_usage() == Usage(tokens=0)


# -- Anthropic Messages ---------------------------------------------------------------------
def test_anthropic_request_shape_separates_system_and_maps_tools() -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "system", "content": "Answer in digits."},
        {"role": "user", "content": "What is 2 + 2?"},
    ]
    reply = anthropic_reply([{"type": "text", "text": "4"}])
    with ScriptedServer([Reply(json=reply)]) as server:
        call(
            AnthropicChatClient("claude-test", server.url, api_key=KEY),
            messages=messages,
            max_tokens=77,
            tools=[WEATHER],
        )
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.json == {
        "model": "claude-test",
        "system": "You are terse.\n\nAnswer in digits.",
        "messages": [{"role": "user", "content": "What is 2 + 2?"}],
        "max_tokens": 77,
        "temperature": 0.0,
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    }


def test_anthropic_without_system_or_key_sends_neither() -> None:
    reply = anthropic_reply([{"type": "text", "text": "4"}])
    with ScriptedServer([Reply(json=reply)]) as server:
        call(AnthropicChatClient("m", server.url), messages=MESSAGES[1:])
    request = server.requests[0]
    assert "system" not in request.json and "tools" not in request.json
    assert "x-api-key" not in request.headers


def test_anthropic_parses_text_tool_use_and_cached_usage() -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "Let me check. "},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "text", "text": "One moment."},
    ]
    usage = {
        "input_tokens": 20,
        "output_tokens": 40,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 50,
    }
    reply = anthropic_reply(content, usage=usage, stop="tool_use")
    with ScriptedServer([Reply(json=reply)]) as server:
        result = call(AnthropicChatClient("m", server.url, api_key=KEY), tools=[WEATHER])
    assert result.text == "Let me check. One moment."
    assert result.raw_finish_reason == "tool_use"
    (tool_call,) = result.tool_calls
    assert (tool_call.id, tool_call.name) == ("toolu_1", "get_weather")
    assert tool_call.arguments == {"city": "Oslo"}
    assert json.loads(tool_call.raw_arguments) == {"city": "Oslo"}
    # Cache tokens are not part of input_tokens, so they are added to input.
    assert result.usage == TokenUsage(
        input=370, output=40, reasoning=0, cached_read=300, cached_write=50, reported=True
    )
    assert result.usage.uncached_input == 20
    assert result.usage.to_usage() == Usage(tokens=410)


def test_anthropic_missing_usage_is_reported_false_with_zeros() -> None:
    reply = anthropic_reply([{"type": "text", "text": "4"}])
    with ScriptedServer([Reply(json=reply)]) as server:
        result = call(AnthropicChatClient("m", server.url))
    assert result.usage == TokenUsage(reported=False)
    assert result.usage.total == 0


# -- usage parsers --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "block",
    [
        None,
        "garbage",
        {},
        {"prompt_tokens": 10},  # no completion count: not reported, not half-invented
        {"prompt_tokens": -1, "completion_tokens": 5},
        {"prompt_tokens": True, "completion_tokens": 5},
        {"prompt_tokens": "10", "completion_tokens": 5},
    ],
)
def test_from_openai_unusable_blocks_are_unreported(block: object) -> None:
    assert from_openai(block) == TokenUsage(reported=False)


@pytest.mark.parametrize(
    "block", [None, [], {"input_tokens": 3}, {"input_tokens": 3, "output_tokens": 2.5}]
)
def test_from_anthropic_unusable_blocks_are_unreported(block: object) -> None:
    assert from_anthropic(block) == TokenUsage(reported=False)


def test_from_openai_without_details_and_with_null_details() -> None:
    plain = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert from_openai(plain) == TokenUsage(input=7, output=3, reported=True)
    nulls = {**plain, "prompt_tokens_details": None, "completion_tokens_details": None}
    assert from_openai(nulls) == TokenUsage(input=7, output=3, reported=True)


def test_from_anthropic_without_cache_fields() -> None:
    usage = from_anthropic({"input_tokens": 11, "output_tokens": 4})
    assert usage == TokenUsage(input=11, output=4, reported=True)
    assert usage.to_usage()["tokens"] == 15


def test_token_usage_is_frozen() -> None:
    usage = TokenUsage(input=1)
    with pytest.raises(AttributeError):
        usage.input = 2  # type: ignore[misc]


# -- errors and secrets ---------------------------------------------------------------------
@pytest.mark.parametrize("client_cls", [OpenAIChatClient, AnthropicChatClient])
def test_http_500_raises_without_key_and_truncated_body(client_cls: type[ChatClient]) -> None:
    body = b"internal failure " + b"x" * 5000
    with ScriptedServer([Reply(status=500, body=body)]) as server:
        error = failing_call(client_cls("m", server.url, api_key=KEY))
    assert error.status == 500
    assert error.provider == client_cls.provider
    assert "HTTP 500" in str(error) and "internal failure" in str(error)
    assert len(str(error)) < 300
    for text in (str(error), repr(error), repr(error.args), error.reason):
        assert KEY not in text
    assert error.__cause__ is None


def test_error_body_echoing_the_key_is_masked() -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}}
    with ScriptedServer([Reply(status=401, json=echo)]) as server:
        error = failing_call(OpenAIChatClient("m", server.url, api_key=KEY))
    assert error.status == 401
    assert "Incorrect API key provided: ***" in str(error)
    assert KEY not in str(error) and KEY not in repr(error)


def test_429_keeps_retry_after_for_a_later_retry_layer() -> None:
    reply = Reply(
        status=429, json={"error": {"message": "slow down"}}, headers={"retry-after": "3"}
    )
    with ScriptedServer([reply]) as server:
        error = failing_call(AnthropicChatClient("m", server.url, api_key=KEY))
    assert (error.status, error.retry_after, error.reason) == (429, "3", "slow down")


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (Reply(body=b"<html><body>Bad gateway</body></html>"), "not JSON"),
        (Reply(json=["a", "list"]), "not a JSON object"),
        (Reply(json={"object": "chat.completion"}), "malformed response: no choices"),
        (Reply(json={"choices": [{"message": {"tool_calls": [{}]}}]}), "no function name"),
    ],
)
def test_unusable_200_responses_raise(reply: Reply, fragment: str) -> None:
    with ScriptedServer([reply]) as server:
        error = failing_call(OpenAIChatClient("m", server.url, api_key=KEY))
    assert fragment in str(error)
    assert KEY not in str(error)


def test_unreachable_server_raises_without_status() -> None:
    server = ScriptedServer().start()
    url = server.url
    server.stop()  # the port is closed now: connection refused
    error = failing_call(OpenAIChatClient("m", url, api_key=KEY, timeout=5))
    assert error.status is None
    assert "ConnectError" in str(error)
    assert KEY not in str(error)


def test_timeout_raises_model_call_error() -> None:
    reply = Reply(json=openai_reply(), delay=0.2)
    with ScriptedServer([reply]) as server:
        error = failing_call(OpenAIChatClient("m", server.url, api_key=KEY, timeout=0.02))
    assert error.status is None
    assert "timed out" in str(error)


def test_reprs_never_show_the_key() -> None:
    for client in (
        OpenAIChatClient("m", "http://127.0.0.1:9", api_key=KEY),
        AnthropicChatClient("m", api_key=KEY),
    ):
        assert KEY not in repr(client) and "***" in repr(client)
        assert KEY not in repr(vars(client))  # not even in the attributes' reprs
        anyio.run(client.aclose)
    assert "api_key=None" in repr(AnthropicChatClient("m"))


def test_key_never_reaches_any_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    replies = [
        Reply(json=openai_reply(usage={"prompt_tokens": 1, "completion_tokens": 1})),
        Reply(status=500, body=b"boom"),
        Reply(json=anthropic_reply([{"type": "text", "text": "ok"}])),
    ]
    with ScriptedServer(replies) as server:
        call(OpenAIChatClient("m", server.url, api_key=KEY))
        failing_call(OpenAIChatClient("m", server.url, api_key=KEY))
        call(AnthropicChatClient("m", server.url, api_key=KEY))
    assert len(server.requests) == 3
    assert caplog.records, "expected httpx to log the requests at DEBUG/INFO"
    assert KEY not in caplog.text
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert server.log and all(KEY not in line for line in server.log)


# -- client behaviour -----------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_max_tokens_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        call(OpenAIChatClient("m", "http://127.0.0.1:9"), max_tokens=bad)


def test_constructor_rejects_empty_model_and_bad_timeout() -> None:
    with pytest.raises(ValueError, match="model"):
        OpenAIChatClient("", "http://127.0.0.1:9")
    with pytest.raises(ValueError, match="timeout"):
        AnthropicChatClient("m", timeout=0)


def test_shared_http_client_is_left_open_and_calls_run_concurrently() -> None:
    replies = [Reply(json=openai_reply(str(i)), delay=0.05) for i in range(8)]
    results: list[str] = []

    async def go(url: str) -> bool:
        async with httpx.AsyncClient() as http:
            client = OpenAIChatClient("m", url, http_client=http)

            async def one() -> None:
                result = await client.complete(MESSAGES, max_tokens=8)
                results.append(result.text)

            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(one)
            await client.aclose()
            return http.is_closed

    with ScriptedServer(replies) as server:
        closed = anyio.run(go, server.url)
    assert closed is False
    assert sorted(results) == [str(i) for i in range(8)]
    assert len(server.requests) == 8


# -- the scripted server itself -------------------------------------------------------------
def test_scripted_server_records_and_answers_exhausted_script_and_get() -> None:
    with ScriptedServer([Reply(status=201, json={"ok": 1}, headers={"x-test": "yes"})]) as server:
        assert server.url.startswith("http://127.0.0.1:")
        first = httpx.post(server.url + "/a", json={"n": 1})
        second = httpx.post(server.url + "/b", content=b"raw")
        third = httpx.get(server.url + "/c")
    assert (first.status_code, first.json(), first.headers["x-test"]) == (201, {"ok": 1}, "yes")
    assert second.status_code == 500 and "script exhausted" in second.text
    assert third.status_code == 405
    assert [(r.path, r.body) for r in server.requests] == [("/a", b'{"n":1}'), ("/b", b"raw")]
    with pytest.raises(RuntimeError):
        _ = server.url  # stopped


def test_scripted_server_rejects_long_delays() -> None:
    with pytest.raises(ValueError, match="delay"):
        Reply(delay=1.0)


def test_models_package_does_not_import_pytest() -> None:
    code = (
        "import sys, pytest_budget.models\n"
        "bad = [m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')]\n"
        "print(','.join(sorted(bad)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
