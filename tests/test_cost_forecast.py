"""The cost forecast of a live run (issue 21, item 4): printed before any call, a dry run,
the spend cap's refusal, and the forecast beside the spend afterwards.

Real pytest runs (in-process, tests/inprocess.py) against
:class:`tests.model_server.ModelServer` on loopback (it counts every POST and GET); expected
figures are computed by hand in the tests from what the server received.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget._run.forecast import (
    PROMPT_PAD,
    RoleForecast,
    multi_turn_tokens,
)
from pytest_budget.models._prices import ModelPrice, PriceTable
from tests import inprocess
from tests.model_server import ModelServer
from tests.schemas import validate_report

#: Three items that carry their Phase 0 baselines: no solver call, one planner call per cell.
POOL = [
    {"id": "q1", "text": "What is 2 + 3?", "answer": "5",
     "baseline": {"solved": True, "tokens": 40}},
    {"id": "q2", "text": "Name the capital of France.", "answer": "Paris",
     "baseline": {"solved": True, "tokens": 120}},
    {"id": "q3", "text": "What is 7 * 6?", "answer": "42",
     "baseline": {"solved": False, "tokens": 260}},
]  # fmt: skip
PRICES = "m = 2 8"  # USD per 1M tokens: input 2, output 8
PLANNER_CAP = 16_384  # the planner's default max_tokens


def _run(pytester: pytest.Pytester, server: ModelServer, *extra: str) -> Any:
    pool = pytester.path / "pool.jsonl"
    pool.write_text("".join(json.dumps(item) + "\n" for item in POOL))
    pytester.makeini(f"[pytest]\nbudget_prices =\n    {PRICES}\n")
    return inprocess.run(pytester,
        "--budget-suite=triage", "--budget-agent=openai:m", f"--budget-base-url={server.url}",
        f"--budget-pool={pool}", "--budget-alpha=0.5,1", "--budget-unsolvable=0",
        "--budget-gate=off", "--budget-cache-dir=cache", "-p", "no:cacheprovider", *extra,
    )  # fmt: skip


def _prompt_tokens(body: dict[str, Any]) -> int:
    """Reference tokens of a request as received: every message's text (no tools here)."""
    return sum(count_tokens(message["content"]) for message in body["messages"])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ModelServer(input_tokens=50, output_tokens=7) as running:
        yield running


def test_a_dry_run_prints_the_forecast_and_calls_nothing(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    result = _run(pytester, server, "--budget-dry-run")
    assert result.ret == 0
    assert server.requests == [] and server.gets == []  # not even the preflight
    result.stdout.fnmatch_lines(
        [
            "*budget: cost forecast*",
            "triage planner (openai:m): 2 calls, input * tokens, output 800..32,768 tokens, *",
            "total: 2..2 live calls, $* expected, $* worst case",
        ]
    )


def test_the_forecast_equals_what_the_run_then_sends_and_spends(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    result = _run(pytester, server, "--budget-report=r.json")
    result.assert_outcomes(passed=2)
    models = json.loads((pytester.path / "r.json").read_text())["models"]
    forecast = models["forecast"]
    # Hand computation from the requests the server received: 2 planner calls (one per alpha).
    assert len(server.requests) == 2 == forecast["calls"] == forecast["calls_worst"]
    sent = sum(_prompt_tokens(body) for body in server.requests)
    assert forecast["input_tokens"] == sent
    assert forecast["input_worst"] == sum(
        math.ceil(_prompt_tokens(body) * PROMPT_PAD) for body in server.requests
    )
    assert forecast["output_tokens"] == 2 * 400  # the planner's declared output_tokens
    assert forecast["output_worst"] == 2 * PLANNER_CAP
    assert forecast["usd"] == pytest.approx((2 * sent + 8 * 2 * 400) / 1e6, abs=1e-6)
    worst_in = forecast["input_worst"]
    assert forecast["usd_worst"] == pytest.approx((2 * worst_in + 8 * 2 * PLANNER_CAP) / 1e6)
    # The actual spend: the server's reported usage (50 in, 7 out per call) at the prices.
    assert models["spent_usd"] == pytest.approx(2 * (50 * 2 + 7 * 8) / 1e6)
    result.stdout.fnmatch_lines(
        [
            f"forecast: 2..2 calls, input {sent:,}..{worst_in:,}, output 800..32,768 tokens, *",
            "actual:   2 calls, input 100, output 14 tokens, $0.0003",
        ]
    )


def test_recorded_calls_are_left_out_of_the_forecast(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    _run(pytester, server).assert_outcomes(passed=2)
    before = len(server.requests)
    result = _run(pytester, server, "--budget-dry-run")
    assert len(server.requests) == before
    result.stdout.fnmatch_lines(
        ["triage planner (openai:m): 0 calls, * (2 more recorded: free)", "total: 0..0 live *"]
    )


def test_a_spend_cap_below_the_worst_case_refuses_to_start(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    result = _run(pytester, server, "--budget-max-usd=0.01", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert server.requests == [] and server.gets == []
    result.stderr.fnmatch_lines(
        [
            "ERROR: --budget-max-usd=0.01: the forecast's worst case is $0.* (expected $0.*), "
            "so the run did not start; raise the cap, *--budget-max-usd-mode=stop-at-cap*"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_stop_at_cap_runs_and_a_cap_above_the_worst_case_runs(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    result = _run(pytester, server, "--budget-max-usd=1", "-n", "2", "--budget-report=r.json")
    result.assert_outcomes(passed=2)
    # Forecast once (in the controller), spend summed over both workers.
    assert result.stdout.str().count("budget: cost forecast") == 1
    models = json.loads((pytester.path / "r.json").read_text())["models"]
    assert models["calls"] == len(server.requests) == 2
    result = _run(
        pytester, server, "--budget-max-usd=0.0002", "--budget-max-usd-mode=stop-at-cap",
        "--budget-cache-dir=other", "--budget-report=r2.json",
    )  # fmt: skip
    report = json.loads((pytester.path / "r2.json").read_text())
    validate_report(report)
    models = report["models"]
    assert models["cap_reached"] is True
    assert models["spent_usd"] <= 0.0002 + 1e-12
    # The planner's worst-case reservation is over the cap: no call, both cells reported.
    assert server.requests[2:] == []
    skipped = models["cells_incomplete"]
    assert len(skipped) == 2 == models["cells_skipped_for_spend"]
    assert all("budget spend cap $0.0002 reached" in cell["reason"] for cell in skipped)
    assert {cell["nodeid"].rsplit("-a", 1)[1] for cell in skipped} == {
        "0.5-A-openai:m]",
        "1-A-openai:m]",
    }


def test_multi_turn_episodes_are_forecast_by_hand() -> None:
    # 3 turns re-sending a 100-token prompt that grows by 10 per earlier turn: 100+110+120.
    assert multi_turn_tokens(100, 3, 10) == 330
    row = RoleForecast("planning", "tool_agent", "openai:m")
    row.add_episode(100, cap=1000, max_turns=20)
    assert not row.exact
    expected_out = 250  # the tool agent's declared output_tokens per turn; 6 turns
    assert (row.calls, row.calls_worst) == (6, 20)
    assert row.input_tokens == sum(100 + k * (expected_out + 200) for k in range(6))
    assert row.input_worst == math.ceil(sum(100 + k * 1200 for k in range(20)) * 1.5)
    assert (row.output_tokens, row.output_worst) == (6 * expected_out, 20 * 1000)
    prices = PriceTable({"m": ModelPrice(input=1, output=2)})
    usd, worst = row.usd(prices)
    assert usd == pytest.approx((row.input_tokens + 2 * row.output_tokens) / 1e6)
    assert worst == pytest.approx((row.input_worst + 2 * row.output_worst) / 1e6)
    assert RoleForecast("x", "planner", "openai:unknown").usd(prices) == (None, None)


def test_estimated_calls_take_the_largest_prompt_for_the_worst_case() -> None:
    row = RoleForecast("awareness", "actor", "openai:m")
    row.add_estimated([10, 30, 20], cap=100, worst_calls=5)
    assert not row.exact
    assert (row.calls, row.calls_worst) == (3, 5)
    assert (row.input_tokens, row.input_worst) == (60, math.ceil(5 * 30 * 1.5))
    assert (row.output_tokens, row.output_worst) == (3 * 100, 5 * 100)  # 150 typical > cap


def test_awareness_estimator_prompts_are_forecast_as_sent_and_then_recorded(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    """Logged rollouts: the counted prompts equal what the server receives, and the
    recorded requests (looked up from the built messages) cost nothing afterwards."""
    pytester.makeini(f"[pytest]\nbudget_prices =\n    {PRICES}\n")
    args = (
        "--budget-suite=awareness", "--budget-env=swe-synthetic", "--budget-agent=openai:m",
        f"--budget-base-url={server.url}", "--budget-gate=off", "--budget-cache-dir=cache",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    before = inprocess.run(pytester, *args, "--budget-dry-run")
    assert server.requests == []
    inprocess.run(pytester, *args)
    sent = [_prompt_tokens(body) for body in server.requests]
    assert len(sent) > 10
    before.stdout.fnmatch_lines(
        [f"awareness estimator (openai:m): {len(sent)} calls, input {sum(sent):,}..* tokens, *"]
    )
    after = inprocess.run(pytester, *args, "--budget-dry-run")
    after.stdout.fnmatch_lines(
        [f"awareness estimator (openai:m): 0 calls, * ({len(sent)} more recorded: free)"]
    )
