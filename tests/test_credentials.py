"""Credentials in a base URL and gateway headers from the environment: sent as headers,
never shown (report, HTML, errors, cache, output)."""

from __future__ import annotations

import base64
import json
import socket

import anyio
import pytest

from pytest_budget._core.redact import redact_text, redact_url, split_credentials
from pytest_budget._run.options import BudgetOptions
from pytest_budget.awareness._options import AwarenessOptions
from pytest_budget.models._client import ChatClient, ChatResult, ModelCallError, OpenAIChatClient
from pytest_budget.models._preflight import PreflightError, preflight
from pytest_budget.models._provider import ProviderConfigError, build_chat_client
from tests.chat_logs import write_chat_file
from tests.model_server import Fault, ModelServer

PASSWORD = "pw-CANARY-51d2"
TOKEN = "gw-CANARY-8c1e"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ask(client: ChatClient) -> ChatResult:
    async def call() -> ChatResult:
        async with client:
            return await client.complete([{"role": "user", "content": "hi"}], max_tokens=5)

    return anyio.run(call)


def with_credentials(url: str, password: str = PASSWORD) -> str:
    return url.replace("http://", f"http://alice:{password}@", 1)


def test_split_and_redact_by_hand() -> None:
    assert split_credentials("https://u:p%40ss@host:8/v1?x=1") == (
        "https://host:8/v1?x=1",
        ("u", "p@ss"),
    )
    assert split_credentials("https://host/v1") == ("https://host/v1", None)
    assert redact_url("https://u:p@ss@host/v1") == "https://***@host/v1"  # raw "@" in it
    assert redact_url("http://host/v1") == "http://host/v1"
    assert redact_text("cannot reach http://a:b@h/v1 or https://t@h2/", ["zzz"]) == (
        "cannot reach http://***@h/v1 or https://***@h2/"
    )
    options = BudgetOptions(
        base_url="https://u:p@h/v1",
        per_suite={"awareness": AwarenessOptions(search_url="http://k@s:1")},
    )
    assert options.as_dict()["base_url"] == "https://***@h/v1"
    assert options.as_dict()["search_url"] == "http://***@s:1"


def test_url_credentials_go_as_basic_auth_and_nowhere_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GW_TOKEN", TOKEN)
    with ModelServer() as server:
        client = build_chat_client(
            "openai", "m", base_url=with_credentials(server.url), header_envs=("X-Gw=GW_TOKEN",)
        )
        result = ask(client)
        assert result.text
        headers = server.headers_seen[-1]
    expected = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert headers["authorization"] == f"Basic {expected}"
    assert headers["x-gw"] == TOKEN
    assert PASSWORD not in client.base_url and PASSWORD not in repr(client)
    assert TOKEN not in repr(client)


def test_an_api_key_wins_over_url_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-key-123")
    with ModelServer() as server:
        client = build_chat_client(
            "openai", "m", base_url=with_credentials(server.url), api_key_env="MY_KEY"
        )
        ask(client)
        assert server.headers_seen[-1]["authorization"] == "Bearer sk-key-123"


def test_errors_never_hold_the_password_or_header_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refused connection, and a server echoing the secrets back in an error body."""
    monkeypatch.setenv("GW_TOKEN", TOKEN)
    down = with_credentials(f"http://127.0.0.1:{_free_port()}/v1")
    client = build_chat_client("openai", "m", base_url=down, header_envs=("X-Gw=GW_TOKEN",))
    with pytest.raises(ModelCallError) as refused:
        ask(client)
    with pytest.raises(PreflightError) as unreachable:
        preflight("openai", "m", base_url=down, api_key_env=None, timeout=2)
    assert "cannot reach http://***@127.0.0.1:" in str(unreachable.value)

    with ModelServer(answer=lambda body: "") as server:
        server.fail(Fault.http(500))
        echo = OpenAIChatClient("m", with_credentials(server.url), extra_headers={"X-Gw": TOKEN})
        # The scripted error body says "scripted 500"; make the echo explicit through _mask.
        from pytest_budget.models._client import _mask

        masked = _mask(f"bad header {TOKEN} for alice:{PASSWORD} at {server.url}", echo._secrets)
        with pytest.raises(ModelCallError) as failed:
            ask(echo)
    assert masked.startswith("bad header *** for ***")
    for message in (str(refused.value), str(unreachable.value), str(failed.value), masked):
        assert PASSWORD not in message and TOKEN not in message, message


def test_a_missing_header_variable_is_named_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    with pytest.raises(ProviderConfigError, match="X-Gw: the environment variable NOPE_TOKEN"):
        build_chat_client("openai", "m", base_url="http://h/v1", header_envs=("X-Gw=NOPE_TOKEN",))
    with pytest.raises(ProviderConfigError, match="expected HEADER=ENV_VAR"):
        build_chat_client("openai", "m", base_url="http://h/v1", header_envs=("X-Gw=a b",))


def _estimate(body: dict[str, object]) -> str:
    return "<answer>[0, 900]</answer>"


def test_a_run_with_url_credentials_and_gateway_headers_shows_neither(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_TOKEN", TOKEN)
    with ModelServer(answer=_estimate) as server:
        result = pytester.runpytest_subprocess(
            "--budget-suite=awareness", write_chat_file(pytester.path, 2, failed=()),
            "--budget-agent=openai:m",
            f"--budget-base-url={with_credentials(server.url)}",
            "--budget-model-header=X-Gateway-Token=GW_TOKEN", "--budget-gate=off",
            "--budget-report=r.json", "--budget-html=page.html", "--budget-cache-dir=cache",
        )  # fmt: skip
        seen = list(server.headers_seen)
    result.assert_outcomes(passed=1)
    assert seen and all(h.get("x-gateway-token") == TOKEN for h in seen)
    expected = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert all(h.get("authorization") == f"Basic {expected}" for h in seen)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["options"]["base_url"].startswith("http://***@127.0.0.1:")
    assert report["options"]["model_headers"] == ["X-Gateway-Token=GW_TOKEN"]
    files = [path for path in pytester.path.rglob("*") if path.is_file()]
    assert any(path.parts[-3:-1] == ("cache", "models") or "models" in path.parts for path in files)
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        assert PASSWORD not in text and TOKEN not in text, path
    assert "alice" not in (pytester.path / "page.html").read_text()
    output = result.stdout.str() + result.stderr.str()
    assert PASSWORD not in output and TOKEN not in output


def test_an_unreachable_endpoint_with_credentials_is_a_redacted_usage_error(
    pytester: pytest.Pytester,
) -> None:
    down = with_credentials(f"http://127.0.0.1:{_free_port()}/v1")
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", write_chat_file(pytester.path, 2, failed=()),
            "--budget-agent=openai:m",
        f"--budget-base-url={down}", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["ERROR: --budget-agent=openai:m: openai:m: cannot reach http://***@127.0.0.1:*"]
    )
    assert PASSWORD not in result.stdout.str() + result.stderr.str()
