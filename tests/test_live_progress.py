"""Progress of a live run (issue 21, item 6): one line per finished cell off a terminal,
with the run's calls, tokens and spend so far and the cell's own, with and without xdist.

Real runs against :class:`tests.model_server.ModelServer` on loopback (50 input and 7 output
tokens per call; at 2 and 8 USD per million tokens a call costs $0.000156).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.model_server import ModelServer

POOL = [
    {"id": f"q{i}", "text": f"What is {i} + {i}?", "answer": str(2 * i),
     "baseline": {"solved": True, "tokens": 40 + i}}
    for i in range(3)
]  # fmt: skip


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ModelServer(input_tokens=50, output_tokens=7) as running:
        yield running


def _run(pytester: pytest.Pytester, *args: str) -> Any:
    pool = pytester.path / "pool.jsonl"
    pool.write_text("".join(json.dumps(item) + "\n" for item in POOL))
    pytester.makeini("[pytest]\nbudget_prices =\n    m = 2 8\n")
    return pytester.runpytest_subprocess(
        "--budget-suite=triage", f"--budget-pool={pool}", "--budget-alpha=0.25,0.5,1",
        "--budget-unsolvable=0", "--budget-gate=off", "-p", "no:cacheprovider", *args,
    )  # fmt: skip


@pytest.mark.parametrize("workers", ["0", "2"])
def test_one_progress_line_per_finished_cell(
    pytester: pytest.Pytester, server: ModelServer, workers: str
) -> None:
    result = _run(
        pytester, "--budget-agent=openai:m", f"--budget-base-url={server.url}",
        "--budget-cache-dir=cache", "-n", workers,
    )  # fmt: skip
    result.assert_outcomes(passed=3)
    lines = [line for line in result.outlines if line.startswith("budget: model calls ")]
    assert len(lines) == 3, result.stdout.str()  # not a terminal: exactly one per cell
    done = sorted(int(m) for line in lines for m in re.findall(r"\(tests (\d)/3\)", line))
    assert done == [1, 2, 3]
    for alpha in ("0.25", "0.5", "1"):
        cell = [line for line in lines if f"-a{alpha}-A-openai:m: " in line]
        assert len(cell) == 1, lines
        # One planner call per cell: the server's usage, at the prices.
        assert cell[0].endswith(": 1 calls, 50 in / 7 out tokens, $0.0002"), cell[0]
    last = next(line for line in lines if "(tests 3/3)" in line)
    assert "tokens 150 in / 21 out; spent $0.0005" in last  # the run: all three calls


def test_offline_runs_print_no_progress_or_forecast(pytester: pytest.Pytester) -> None:
    result = _run(pytester)
    result.assert_outcomes(passed=4 * 3)  # four reference planners x three alphas
    output = result.stdout.str()
    assert "budget: model calls" not in output and "cost forecast" not in output
