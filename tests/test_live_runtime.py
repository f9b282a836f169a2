"""A live run's runtime (issue 21): cells share one loop and one concurrency limit, and
shared work (Phase 0) is done once per run, with or without xdist.

Real pytest runs in subprocesses against :class:`tests.model_server.ModelServer` on
loopback; counts are read off what the server received.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import pytest

from tests.model_server import ModelServer, role_answer

PLANNER = "How your plan is used"


def _triage(pytester: pytest.Pytester, url: str, *extra: str) -> Any:
    return pytester.runpytest_subprocess(
        "--budget-suite=triage", "--budget-agent=openai:m", f"--budget-base-url={url}",
        "--budget-pool-size=6", "--budget-gate=off", "-p", "no:cacheprovider", *extra,
    )  # fmt: skip


def _scores(path: Any) -> dict[str, Any]:
    cells = json.loads(path.read_text())["cells"]
    return {cell["cell"]: cell["scores"] for cell in cells}


def test_a_live_run_makes_the_same_calls_with_and_without_xdist(
    pytester: pytest.Pytester,
) -> None:
    # Under -n 2 both workers used to run Phase 0 of every pool (and paid for it twice).
    runs: dict[str, list[dict[str, Any]]] = {}
    for workers in ("0", "2"):
        with ModelServer(latency=0.02) as server:
            result = _triage(
                pytester, server.url, "--budget-alpha=0.5,1", "--budget-unsolvable=0,0.5",
                f"--budget-cache-dir=cache-{workers}", f"--budget-report=r{workers}.json",
                "-n", workers,
            )  # fmt: skip
            result.assert_outcomes(passed=8)
            runs[workers] = list(server.requests)
    bodies = {n: Counter(json.dumps(b, sort_keys=True) for b in runs[n]) for n in runs}
    assert bodies["0"] == bodies["2"]  # the same requests, each as often
    assert set(bodies["0"].values()) == {1}  # and none twice
    # Phase 0: 6 items x 2 pools, plus 6 injected items per pool at u=0.5; 8 planner calls.
    assert sum(PLANNER in body for body in bodies["0"]) == 8
    assert len(runs["0"]) == 8 + 2 * (6 + 3)
    assert _scores(pytester.path / "r0.json") == _scores(pytester.path / "r2.json")


def test_the_calls_of_different_cells_are_in_flight_together(pytester: pytest.Pytester) -> None:
    # One planner call per cell: run one cell after another, they never overlapped.
    lock = threading.Lock()
    planners = {"now": 0, "most": 0}

    def answer(body: dict[str, Any]) -> str:
        planner = PLANNER in json.dumps(body)
        if planner:
            with lock:
                planners["now"] += 1
                planners["most"] = max(planners["most"], planners["now"])
        time.sleep(0.3)
        if planner:
            with lock:
                planners["now"] -= 1
        return role_answer(body)

    with ModelServer(answer) as server:
        result = _triage(
            pytester, server.url, "--budget-alpha=0.25,0.5,0.75,1", "--budget-unsolvable=0",
            "--budget-concurrency=8", "--budget-report=r.json",
        )  # fmt: skip
        result.assert_outcomes(passed=8)
        assert server.max_in_flight <= 8  # one limit for every cell
    assert planners["most"] >= 4
