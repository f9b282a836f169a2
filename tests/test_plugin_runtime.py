"""The model runtime end to end: suites run through ``--budget-agent=openai:...`` against a
real local model server.  Runs whose claim needs a real process (a kill, the process's stderr,
secrets in its output) start a pytest subprocess; the others run in this process."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_server import Fault, ModelServer

from tests import inprocess
from tests.schemas import validate_report

CANARY = "sk-CANARY-e2e-91c2"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def _rollouts(path: Path, envs: tuple[str, ...] = ("e1", "e2", "e3")) -> str:
    """Three logged rollouts of four turns per env (minimal format): 9 probes per env."""
    lines = []
    for env in envs:
        for i in range(3):
            turns = [{"usage": {"tokens": 100 * (k + 1) + i}} for k in range(4)]
            rollout = {
                "id": f"{env}-{i}",
                "env": env,
                "budget": {"tokens": 2000},
                "success": i != 1,
                "turns": turns,
            }
            lines.append(json.dumps(rollout))
    path.write_text("\n".join(lines) + "\n")
    return f"--budget-rollouts={path.name}"


def _args(pytester: pytest.Pytester, server: ModelServer, *extra: str) -> list[str]:
    return [
        "--budget-suite=awareness",
        _rollouts(pytester.path / "ro.jsonl"),
        "--budget-agent=openai:m",
        f"--budget-base-url={server.url}",
        "--budget-gate=off",
        "--budget-cache-dir=cache",
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def _report(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    return dict(json.loads((pytester.path / name).read_text()))


def _scores(report: dict[str, Any]) -> dict[str, Any]:
    return {cell["cell"]: cell["scores"] for cell in report["cells"]}


def test_a_recorded_run_replays_without_the_server(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    live = inprocess.run(pytester, *_args(pytester, server, "--budget-report=live.json"))
    live.assert_outcomes(passed=3)
    calls = len(server.requests)
    assert calls == 27
    server.stop()
    replay = inprocess.run(
        pytester,
        *_args(pytester, server, "--budget-report=replay.json", "--budget-record-mode=none"),
    )
    replay.assert_outcomes(passed=3)
    first, again = _report(pytester, "live.json"), _report(pytester, "replay.json")
    assert _scores(first) == _scores(again)
    assert again["models"]["replayed"] == 27 and again["models"]["calls"] == 0
    assert first["models"]["calls"] == 27 and first["models"]["input_tokens"] == 27 * 50


def test_a_killed_run_resumes_without_paying_twice(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    with ModelServer() as server:
        # The reference: an uninterrupted run with its own cache (against an instant server).
        reference = inprocess.run(
            pytester,
            *_args(pytester, server, "--budget-report=ref.json", "--budget-cache-dir=refcache"),
        )
        reference.assert_outcomes(passed=3)
        server.requests.clear()
        # 0.15 s a call, one at a time: the run is still paying when it is killed.
        server.latency = 0.15
        args = _args(pytester, server, "--budget-report=r.json", "--budget-concurrency=1")
        with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
            process = pytester.popen(
                [sys.executable, "-m", "pytest", *args], stdout=out, stderr=err
            )
            deadline = time.monotonic() + 60
            while len(server.requests) < 4 and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
        paid_before_kill = len(server.requests)
        assert 4 <= paid_before_kill < 27
        # The resumed run's claim is what it replays, not its pace: an instant server again.
        server.latency = 0.0
        resumed = inprocess.run(pytester, *args)
        resumed.assert_outcomes(passed=3)
    # Every completed call was replayed; at most the one in flight at the kill is paid twice.
    assert len(server.requests) <= 27 + 1
    report = _report(pytester)
    assert report["models"]["replayed"] >= paid_before_kill - 1
    assert _scores(report) == _scores(_report(pytester, "ref.json"))


def test_the_spend_cap_holds_across_workers_and_skips_the_rest(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    # 1000 $/M tokens: a call costs (50 + 7) x 1e-3 = 0.057 $ and reserves its 1024-token cap
    # plus the prompt (about 1.3 $), so a 2 $ cap admits a few calls and then closes.
    pytester.makeini("[pytest]\nbudget_prices =\n    m = 1000 1000\n")
    envs = ("e1", "e2", "e3", "e4", "e5", "e6")
    result = inprocess.run(pytester,
        "--budget-suite=awareness", _rollouts(pytester.path / "ro.jsonl", envs),
        "--budget-agent=openai:m", f"--budget-base-url={server.url}", "--budget-gate=off",
        "--budget-cache-dir=cache", "-p", "no:cacheprovider", "--budget-max-usd=2",
        "--budget-max-usd-mode=stop-at-cap",
        "--budget-report=r.json", "-n", "2", "-rs",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 1
    result.stdout.fnmatch_lines(["*budget spend cap $2 reached*"])
    models = _report(pytester)["models"]
    assert models["cap_reached"] is True and models["max_usd"] == 2.0
    assert models["spent_usd"] <= 2.0
    assert models["spent_usd"] == pytest.approx(0.057 * len(server.requests))
    assert models["cells_skipped_for_spend"] == outcomes["skipped"]
    result.stdout.fnmatch_lines(["*spend cap reached: * calls refused, * cells skipped*"])


def test_secrets_never_reach_any_file_or_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", CANARY)
    with ModelServer(api_key=CANARY) as server:
        server.fail(Fault.http(429, {"retry-after": "0"}), Fault.http(500))
        result = pytester.runpytest_subprocess(
            *_args(pytester, server, "--budget-api-key-env=MY_KEY", "--budget-report=r.json",
                   "--junitxml=junit.xml", "-v"),
        )  # fmt: skip
    result.assert_outcomes(passed=3)
    report = _report(pytester)
    assert report["models"]["retries"] == 2
    validate_report(report)
    written = [path for path in pytester.path.rglob("*") if path.is_file()]
    assert any("models" in path.parts for path in written)  # recordings were written
    for path in written:
        assert CANARY not in path.read_text(errors="replace"), path
    assert CANARY not in result.stdout.str() + result.stderr.str()


def test_progress_and_summary_lines(pytester: pytest.Pytester, server: ModelServer) -> None:
    loud = inprocess.run(pytester, *_args(pytester, server))
    loud.stdout.fnmatch_lines(
        [
            "budget: model calls *(tests */3): *",  # e.g. 9/~27 after one cell of 9 probes
            "*budget: model calls*",
            "model calls: 27 live, 0 replayed, 0 retries (0 rate-limited), 0 failed; tokens "
            "1,350 in / 189 out; spent unknown (no price for 27 calls; see budget_prices)",
        ]
    )
    quiet = inprocess.run(pytester, *_args(pytester, server), "-q")
    assert not re.search(r"^budget: model calls \d", quiet.stdout.str(), re.MULTILINE)
    quiet.stdout.fnmatch_lines(["model calls: 0 live, 27 replayed*"])


def test_a_server_without_usage_is_reported_as_such(pytester: pytest.Pytester) -> None:
    with ModelServer(report_usage=False) as server:
        result = inprocess.run(pytester, *_args(pytester, server, "--budget-report=r.json"))
    result.assert_outcomes(passed=3)
    models = _report(pytester)["models"]
    assert models["usage_reported"] is False and models["unreported_usage"] == 27
    assert models["input_tokens"] == 0
    result.stdout.fnmatch_lines(["usage not reported by the server for 27 calls*"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _usage_error(result: pytest.RunResult, pattern: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([pattern])
    assert len([line for line in result.stderr.lines if line.startswith("ERROR:")]) == 1


def test_an_endpoint_that_does_not_answer_stops_the_run_up_front(
    pytester: pytest.Pytester,
) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", _rollouts(pytester.path / "ro.jsonl"),
        "--budget-agent=openai:m", f"--budget-base-url={url}", "-p", "no:cacheprovider",
    )  # fmt: skip
    _usage_error(result, f"ERROR: --budget-agent=openai:m: openai:m: cannot reach {url} (*)*")


@pytest.mark.parametrize(
    ("setup", "agent", "pattern"),
    [
        ("key", "openai:m", "*rejected the API key (HTTP 401); check the key in $MY_KEY"),
        ("html", "openai:m", "*answered with an HTML page, not the API*"),
        ("none", "openai:gpt-nope", "*does not serve model 'gpt-nope' (it serves: m)"),
        ("none", "anthropic:claude-nope", "*does not know model 'claude-nope'"),
    ],
)
def test_endpoint_problems_are_one_line_usage_errors(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    agent: str,
    pattern: str,
) -> None:
    monkeypatch.setenv("MY_KEY", "wrong-key")
    with ModelServer(api_key="right" if setup == "key" else None) as server:
        server.html = setup == "html"
        result = pytester.runpytest_subprocess(
            "--budget-suite=awareness", _rollouts(pytester.path / "ro.jsonl"),
            f"--budget-agent={agent}", f"--budget-base-url={server.url}",
            "--budget-api-key-env=MY_KEY", "-p", "no:cacheprovider",
        )  # fmt: skip
        assert server.requests == []  # nothing was spent
    _usage_error(result, f"ERROR: --budget-agent={agent}: {pattern}")
    assert "wrong-key" not in result.stderr.str()


def test_a_spend_cap_needs_a_price(pytester: pytest.Pytester, server: ModelServer) -> None:
    result = pytester.runpytest_subprocess(*_args(pytester, server, "--budget-max-usd=1"))
    _usage_error(result, "ERROR: --budget-max-usd: no price for openai:m; add a line*")


def test_a_price_typo_is_a_usage_error(pytester: pytest.Pytester, server: ModelServer) -> None:
    pytester.makeini("[pytest]\nbudget_prices =\n    m = 0.15 O.6\n")
    result = pytester.runpytest_subprocess(*_args(pytester, server))
    _usage_error(
        result, "ERROR: budget_prices (ini) line 1: m: output price 'O.6' is not a number*"
    )
