"""Run sizes, prices out of the box and the default limit (issue 30 items 3, 5, 6, 8; issue
31 items 3 and 4): ``--budget-size``, ``genai-prices``, ``--budget-max-usd-default``, a dry
run without a key, the forecast against the calls the run then makes in every suite, and
bad input.

Real pytest runs (in-process, tests/inprocess.py) against
:class:`tests.model_server.ModelServer` on loopback (it counts every request); expected counts
are worked out by hand in each test.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_budget._core.sizes import SIZES, parse_size
from pytest_budget.models._prices import PriceTable, library_price
from tests import inprocess
from tests.model_server import ModelServer, role_answer

PRICES = "m = 2 8"  # USD per 1M tokens: input 2, output 8


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ModelServer(role_answer, input_tokens=50, output_tokens=7) as running:
        yield running


def _run(pytester: pytest.Pytester, server: ModelServer, *extra: str, ini: str = "") -> Any:
    pytester.makeini(f"[pytest]\nbudget_prices =\n    {PRICES}\n{ini}")
    return inprocess.run(pytester,
        "--budget-agent=openai:m", f"--budget-base-url={server.url}", "--budget-gate=off",
        "--budget-cache-dir=cache", "-p", "no:cacheprovider", *extra,
    )  # fmt: skip


def _one_line_usage_error(result: Any, pattern: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {pattern}"])
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_sizes_name_the_papers_protocol_and_a_default_that_is_smaller() -> None:
    paper, default = SIZES["paper"], SIZES["default"]
    # CostBench's test split: 381 queries in six tasks; BAGEN's 128; TRIAGE's n_chunk 30.
    assert sum(paper.task_query_counts.values()) == 381
    assert paper.task_query_counts["transportation"] == 102
    assert (paper.rollout_count, paper.pool_size) == (128, 30)
    assert default.query_count < min(paper.task_query_counts.values())
    assert default.rollout_count < paper.rollout_count
    assert parse_size(None) is default and parse_size(" Paper ") is paper
    with pytest.raises(ValueError, match=r"--budget-size: unknown size 'huge'; choose from"):
        parse_size("huge")


def test_genai_prices_prices_a_known_model_offline_and_yours_override_it() -> None:
    # gpt-4o-mini: $0.15 / $0.60 per million tokens, cached input $0.075 (OpenAI's list).
    price = library_price("openai", "gpt-4o-mini")
    assert price is not None
    assert (price.input, price.output, price.cached_read) == pytest.approx((0.15, 0.6, 0.075))
    table = PriceTable({"gpt-4o-mini": price.__class__(input=1, output=2)})
    assert table.lookup("openai", "gpt-4o-mini").input == 1  # type: ignore[union-attr]
    assert table.source("openai", "gpt-4o-mini") == "yours"
    assert str(PriceTable({}).source("openai", "gpt-4o-mini")).startswith("genai-prices 0.2.")
    assert PriceTable({}).lookup("openai", "no-such-model-xyz") is None
    assert PriceTable({}, library=False).lookup("openai", "gpt-4o-mini") is None


def test_genai_prices_never_fetches_at_run_time() -> None:
    # The data ships in the package: pricing works with the network refused outright.
    import socket

    real = socket.socket.connect

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("genai-prices tried to connect")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        library_price.cache_clear()
        assert library_price("anthropic", "claude-3-5-haiku-latest") is not None
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]


def test_a_dry_run_needs_no_key_and_prices_from_genai_prices(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = inprocess.run(pytester,
        "--budget-suite=triage", "--budget-agent=openai:gpt-4o-mini", "--budget-dry-run",
        "--budget-pool-size=4", "--budget-alpha=0.5", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == 0, result.stderr.str()
    out = result.stdout.str()
    assert "no API key" not in out + result.stderr.str()
    result.stdout.fnmatch_lines(
        ["size: default (*", "prices: openai:gpt-4o-mini from genai-prices 0.2.*"]
    )
    # Each row's USD is its tokens at $0.15 in / $0.60 out per million (worked here).
    rows = re.findall(
        r"triage (\w+) \(openai:gpt-4o-mini\): \d+ calls, input ([\d,]+)\.\.([\d,]+) tokens, "
        r"output ([\d,]+)\.\.([\d,]+) tokens, \$([\d.]+)\.\.\$([\d.]+)",
        out,
    )
    assert {row[0] for row in rows} == {"solver", "planner"}
    for _, low_in, high_in, low_out, high_out, usd, worst in rows:
        number = [int(v.replace(",", "")) for v in (low_in, high_in, low_out, high_out)]
        assert float(usd) == pytest.approx((number[0] * 0.15 + number[2] * 0.6) / 1e6, abs=1e-4)
        assert float(worst) == pytest.approx((number[1] * 0.15 + number[3] * 0.6) / 1e6, abs=1e-4)


def test_a_model_with_no_known_price_gets_one_line_saying_how(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    pytester.makeini("[pytest]\n")
    result = inprocess.run(pytester,
        "--budget-suite=triage", "--budget-agent=openai:m", f"--budget-base-url={server.url}",
        "--budget-pool-size=4", "--budget-alpha=0.5", "--budget-dry-run", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == 0
    hints = [line for line in result.stdout.lines if line.startswith("no price for openai:m")]
    assert len(hints) == 1
    assert re.fullmatch(
        r"no price for openai:m \(yours or genai-prices 0\.2\.\d+\): add 'openai:m = "
        r"INPUT_USD OUTPUT_USD' \(USD per million tokens\) to ini budget_prices or "
        r"--budget-price-file",
        hints[0],
    )
    assert server.requests == []


def test_triage_forecast_counts_the_injected_items_solver_calls(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    # One bundled pool of 4 items per domain (arith, sokoban); at u=0.5 two of each are
    # replaced by unsolvable items, which the solver must also solve once: 2 x (4 + 2) = 12
    # solver calls; planner calls: 2 domains x 2 ratios x 1 alpha = 4.
    result = _run(
        pytester, server, "--budget-suite=triage", "--budget-pool-size=4", "--budget-alpha=0.5",
        "--budget-report=r.json",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-2000:]
    forecast = json.loads((pytester.path / "r.json").read_text())["models"]["forecast"]
    by_role = {row["role"]: row["calls"] for row in forecast["rows"]}
    assert by_role == {"solver": 12, "planner": 4}
    assert forecast["calls"] == forecast["calls_worst"] == len(server.requests) == 16
    assert forecast["size"] == "default"


def test_awareness_forecast_equals_the_estimator_calls_made(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    # The reference actor makes the rollouts (no actor calls); the estimator is asked once
    # per probe of them, which the forecast counts from the same rollouts.
    result = _run(
        pytester, server, "--budget-suite=awareness", "--budget-env=sokoban-6x6",
        "--budget-rollout-count=3", "--budget-report=r.json",
        ini="budget_role_agents =\n    actor = reference\n",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-2000:]
    report = json.loads((pytester.path / "r.json").read_text())
    forecast = report["models"]["forecast"]
    assert [row["role"] for row in forecast["rows"]] == ["estimator"]
    probes = sum(1 for body in server.requests if "<answer>impossible</answer>" in json.dumps(body))
    assert probes == len(server.requests) == forecast["calls"] > 0
    # The cell's spend is in its record, per role.
    spent = [cell["spend"] for cell in report["cells"] if cell.get("spend")]
    assert sum(s["roles"]["estimator"]["calls"] for s in spent) == len(server.requests)
    assert all(s["roles"]["estimator"]["input_tokens"] == 50 * s["calls"] for s in spent)


def test_planning_calls_fall_within_the_forecast_range(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    # 2 queries x 1 scenario: 2 episodes; the server's reply ends each at its first turn.
    result = _run(
        pytester, server, "--budget-suite=planning", "--budget-task=dining",
        "--budget-scenario=static@2", "--budget-query-count=2", "--budget-report=r.json",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-2000:]
    forecast = json.loads((pytester.path / "r.json").read_text())["models"]["forecast"]
    (row,) = forecast["rows"]
    assert (row["calls"], row["calls_worst"]) == (2 * 6, 2 * 20)  # 6 expected, 20-turn cap
    assert 2 <= len(server.requests) <= row["calls_worst"]


def test_an_unknown_size_is_one_line_and_spends_nothing(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    result = _run(pytester, server, "--budget-suite=triage", "--budget-size=huge")
    _one_line_usage_error(result, "--budget-size: unknown size 'huge'; choose from default, paper*")
    assert server.requests == [] and server.gets == []
    result = _run(pytester, server, "--budget-suite=triage", ini="budget_size = tiny\n")
    _one_line_usage_error(result, "--budget-size: unknown size 'tiny'*")


def test_a_price_file_that_does_not_parse_is_one_line(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    (pytester.path / "prices.json").write_text('{"m": {"input": 1, ')
    result = _run(pytester, server, "--budget-suite=triage", "--budget-price-file=prices.json")
    _one_line_usage_error(result, "--budget-price-file prices.json: not valid JSON*")
    assert server.requests == [] and server.gets == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--budget-max-usd", "0"),
        ("--budget-max-usd", "-1"),
        ("--budget-max-usd", "five"),
        ("--budget-max-usd-default", "0"),
        ("--budget-max-usd-default", "nan"),
    ],
)
def test_a_limit_that_is_not_a_positive_number_is_one_line(
    pytester: pytest.Pytester, server: ModelServer, option: str, value: str
) -> None:
    result = _run(pytester, server, "--budget-suite=triage", f"{option}={value}")
    _one_line_usage_error(result, f"{option}: '{value}' is not a positive number of dollars*")
    assert server.requests == [] and server.gets == []


def test_the_default_limit_stops_a_run_before_the_first_call(
    pytester: pytest.Pytester, server: ModelServer
) -> None:
    args = ("--budget-suite=triage", "--budget-pool-size=4", "--budget-alpha=0.5")
    result = _run(pytester, server, *args, ini="budget_max_usd_default = 0.01\n")
    _one_line_usage_error(
        result,
        "the forecast's worst case is $*.* (expected $0.*, 16 calls), above the default "
        "limit $0.01 for a run without --budget-max-usd, so the run did not start; give "
        "--budget-max-usd=USD (or raise --budget-max-usd-default / ini "
        "budget_max_usd_default), or narrow the run",
    )
    assert server.requests == [] and server.gets == []
    # The same run under a limit above its worst case starts and makes its calls.
    result = _run(pytester, server, *args, "--budget-max-usd-default=100")
    assert result.ret == 0 and len(server.requests) == 16
