"""The suites driven end to end through ``--budget-agent=openai:...`` / ``anthropic:...``.

A real OpenAI-compatible (and Anthropic-compatible) HTTP server runs on loopback in this
process and answers each role with scripted text; pytest runs the installed suites in a
subprocess against it, as a user would against vLLM or a LiteLLM proxy.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

# Imported here, before pytester snapshots sys.modules: cryptography's extension keeps its
# classes, and a second import under a later test would not match them.
import trustme

from tests import inprocess
from tests.chat_logs import write_chat_file
from tests.model_server import tls_context, trust_authority

CANARY = "sk-CANARY-7f3e9a"

#: In every awareness estimator request (its answer format), and in no other role's.
ESTIMATOR_MARK = "<answer>impossible</answer>"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(body)
            self.server.auth.append(
                self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
            )
        text = self.server.answer(body)
        if self.path.endswith("/messages"):
            reply: dict[str, Any] = {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 50, "output_tokens": 7},
            }  # fmt: skip
        else:
            reply = {
                "id": "c1", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
            }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scheme = "http"
        if tls is not None:  # every accepted connection speaks TLS
            self.socket = tls.wrap_socket(self.socket, server_side=True)
            self.scheme = "https"
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str] = []

    @staticmethod
    def answer(body: dict[str, Any]) -> str:
        """A scripted reply per role, read from the prompt the suite sent."""
        text = json.dumps(body.get("messages", [])) + json.dumps(body.get("system", ""))
        if ESTIMATOR_MARK in text:  # the awareness estimator's answer format
            return "<think>about the same again</think><answer>[0, 900]</answer>"
        if "How your plan is used" in text:  # the triage planner prompt
            return '{"plan": []}'
        return "Answer: 0"

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"{self.scheme}://{host}:{port}"


@pytest.fixture
def model_server() -> Iterator[_ModelServer]:
    yield from _serve(_ModelServer())


@pytest.fixture
def tls_model_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_ModelServer]:
    """The same server over TLS, with a certificate from a throwaway CA that the run trusts
    through ``SSL_CERT_FILE`` (as a company proxy's CA would be trusted)."""
    authority = trustme.CA()
    trust_authority(authority, tmp_path, monkeypatch)
    yield from _serve(_ModelServer(tls_context(authority)))


def _serve(server: _ModelServer) -> Iterator[_ModelServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize(("agent", "base"), [("openai:test-model", "/v1"),
                                             ("anthropic:claude-test", "")])  # fmt: skip
def test_awareness_estimator_over_http(
    pytester: pytest.Pytester,
    model_server: _ModelServer,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    base: str,
) -> None:
    monkeypatch.setenv("MY_KEY", CANARY)
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", write_chat_file(pytester.path), f"--budget-agent={agent}",
        f"--budget-base-url={model_server.url}{base}", "--budget-api-key-env=MY_KEY",
        "--budget-gate=off", "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    # 3 transcripts of 3 calls: 2 probes each, every one answered [0, 900] through HTTP.
    assert cell["agent"] == agent and cell["scores"]["n_probes"] == 6
    assert cell["scores"]["invalid_rate"] == 0.0
    # The 3 transcripts are alike: 2 distinct requests, each sent once (the others replay).
    assert len(model_server.requests) == 2
    assert all(body["model"] == agent.split(":")[1] for body in model_server.requests)
    assert all(CANARY in header for header in model_server.auth)  # sent, as a header only
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path
    assert CANARY not in result.stdout.str() + result.stderr.str()


def test_awareness_estimator_over_https(
    pytester: pytest.Pytester, tls_model_server: _ModelServer
) -> None:
    # Hosted APIs are https://: those calls take the httpcore path with certificate checks.
    assert tls_model_server.url.startswith("https://")
    result = inprocess.run(pytester,
        "--budget-suite=awareness", write_chat_file(pytester.path),
            "--budget-agent=openai:test-model",
        f"--budget-base-url={tls_model_server.url}/v1", "--budget-gate=off",
        "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert cell["scores"]["n_probes"] == 6 and cell["scores"]["invalid_rate"] == 0.0
    assert len(tls_model_server.requests) == 2  # 2 distinct requests, each sent once


def test_an_untrusted_certificate_is_an_error_not_a_silent_pass(
    pytester: pytest.Pytester, tls_model_server: _ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE")  # the throwaway CA is no longer trusted
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", write_chat_file(pytester.path),
            "--budget-agent=openai:test-model",
        f"--budget-base-url={tls_model_server.url}/v1", "--budget-gate=off",
        "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [x for x in result.stderr.lines if x.startswith("ERROR:")]
    assert f"the TLS certificate of {tls_model_server.url}/v1 is not trusted" in line
    # OpenSSL's own words, e.g. "unable to get local issuer certificate".
    assert re.search(r"is not trusted \([^)]*certificate[^)]*\); .*SSL_CERT_FILE", line), line
    assert tls_model_server.requests == []  # refused before any call


def test_triage_planner_and_solver_over_http(
    pytester: pytest.Pytester, model_server: _ModelServer
) -> None:
    result = inprocess.run(pytester,
        "--budget-suite=triage", "--budget-agent=openai:test-model",
        f"--budget-base-url={model_server.url}/v1", "--budget-pool-size=4",
        "--budget-alpha=0.5", "--budget-unsolvable=0", "--budget-gate=off",
        "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    cells = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert {c["agent"] for c in cells} == {"openai:test-model"}
    # Phase 0 (4 items x 2 pools, by the LLM solver) plus one planner call per cell.
    prompts = [json.dumps(body["messages"]) for body in model_server.requests]
    assert sum("How your plan is used" in p for p in prompts) == 2
    assert len(prompts) == 2 + 8
    assert all(c["plan_status"] == "ok" for c in cells)


def test_role_agents_ini_keeps_the_reference_actor(
    pytester: pytest.Pytester, model_server: _ModelServer
) -> None:
    pytester.makeini("[pytest]\nbudget_role_agents =\n    actor = reference\n")
    result = inprocess.run(pytester,
        "--budget-suite=awareness", "--budget-env=sokoban-6x6", "--budget-rollout-count=4",
        "--budget-agent=openai:test-model", f"--budget-base-url={model_server.url}/v1",
        "--budget-gate=off", "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert cell["actor"] == "reference-actor"
    # Only the estimator went over HTTP: one request per probe.
    assert len(model_server.requests) == cell["scores"]["n_probes"] > 0
    assert all(ESTIMATOR_MARK in json.dumps(b) for b in model_server.requests)


def test_bad_role_agents_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbudget_role_agents =\n    critic = openai:x\n")
    result = pytester.runpytest_subprocess("--budget-suite=triage", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: budget_role_agents (ini): 'critic = openai:x' is not*"])


@pytest.mark.parametrize(
    ("agent", "variable", "base"),
    [("openai/test-model", "OPENAI_BASE_URL", "/v1"),
     ("anthropic/claude-test", "ANTHROPIC_BASE_URL", "")],
)  # fmt: skip
def test_provider_slash_model_and_base_url_from_the_environment(
    pytester: pytest.Pytester,
    model_server: _ModelServer,
    monkeypatch: pytest.MonkeyPatch,
    agent: str,
    variable: str,
    base: str,
) -> None:
    """``provider/model`` as other tools write it; the endpoint from the SDKs' variable."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, f"{model_server.url}{base}")
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", write_chat_file(pytester.path), f"--budget-agent={agent}",
        "--budget-gate=off", "--budget-report=r.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert cell["agent"] == agent.replace("/", ":", 1)
    assert cell["scores"]["n_probes"] == 6 and cell["scores"]["invalid_rate"] == 0.0
    assert len(model_server.requests) == 2  # 2 distinct requests, each sent once
    assert all(body["model"] == agent.split("/")[1] for body in model_server.requests)


@pytest.mark.parametrize("agent", ["mistral/large", "mistral:large", "gpt-4o"])
def test_an_unknown_provider_lists_the_valid_forms(pytester: pytest.Pytester, agent: str) -> None:
    result = inprocess.run(
        pytester, "--budget-suite=triage", f"--budget-agent={agent}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [x for x in result.stderr.lines if x.strip()]
    assert line.startswith(f"ERROR: --budget-agent={agent}: unknown ")
    assert "valid forms: anthropic/MODEL or anthropic:MODEL, openai/MODEL or openai:MODEL" in line
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
