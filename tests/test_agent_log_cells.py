"""An agent's traceback is attached to the test of the cell whose call raised it.

In a live run the work of every cell of a process starts ahead on the worker loop, while the
first test waits; a process-wide error log gave that first test every other cell's errors
too (and the other tests none).  Real runs against :class:`tests.model_server.ModelServer`
on loopback, which rejects each planner request with a message naming the request.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from tests.model_server import ModelServer

PLANNER = "How your plan is used"


def _reject_planner(body: dict[str, Any]) -> str | None:
    text = json.dumps(body.get("messages", []), sort_keys=True)
    if PLANNER not in text:
        return None
    return f"rejected-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


@pytest.mark.parametrize("workers", ["0", "2"])
def test_each_failed_cell_shows_only_its_own_agent_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ModelServer(reject=_reject_planner, latency=0.5) as server:
        result = pytester.runpytest_subprocess(
            "--budget-suite=triage", "--budget-agent=openai:m", f"--budget-base-url={server.url}",
            "--budget-pool-size=4", "--budget-alpha=0.25,0.5,0.75,1", "--budget-unsolvable=0",
            "--budget-gate=off", "--budget-cache-dir=cache", "-p", "no:cacheprovider",
            "-n", workers,
        )  # fmt: skip
    result.assert_outcomes(failed=8)  # 2 pools x 4 alphas: every planner call was rejected
    output = result.stdout.str()
    # Each failed test's report: its own section of agent tracebacks.
    reports = re.split(r"\n_{3,} test_triage\[", output)[1:]
    assert len(reports) == 8, output[-3000:]
    seen: list[str] = []
    for report in reports:
        section = report.split("agent error traceback", 1)
        assert len(section) == 2, report[:2000]
        names = set(re.findall(r"rejected-[0-9a-f]{10}", section[1].split("budget: re-run")[0]))
        assert len(names) == 1, report[:3000]  # its own error, and no other cell's
        seen.extend(names)
    assert len(set(seen)) == 8  # eight cells, eight different requests
