"""The role Protocols are typed: ``mypy --strict`` checks a user's agent against them.

Two small agent files are checked by a real mypy run: one fills every role correctly
(sync and async), the other returns the wrong type from ``plan`` and takes the wrong
argument in ``estimate``; mypy must pass the first and name both faults of the second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_budget.awareness._replay.answers import Impossible, Interval
from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._replay.rollouts import ActorObservation
from pytest_budget.planning._episode import ToolAgentObservation
from pytest_budget import Actor, Estimator, Planner, Solver, ToolAgent
from pytest_budget.triage._types import Plan, PlanEntry, PlanRequest, Problem, Solution


class MyPlanner:
    def plan(self, request: PlanRequest) -> Plan:
        return Plan(tuple(PlanEntry(p.id, request.budget // 2) for p in request.items[:2]))


class TextPlanner:
    async def plan(self, request: PlanRequest) -> str:
        return '{"plan": []}'


class MySolver:
    def solve(self, problem: Problem, max_tokens: int | None = None) -> Solution:
        return Solution(text="Answer: 4", tokens=3, answer="4")


class MyEstimator:
    def estimate(self, probe: Probe) -> Interval | Impossible:
        return Interval(0.0, 100.0) if probe.k < 3 else Impossible()


class MyActor:
    def act(self, observation: ActorObservation) -> str:
        return "<answer>Up</answer>"


class MyToolAgent:
    async def act(self, observation: ToolAgentObservation) -> Mapping[str, Any]:
        return {"role": "assistant", "content": "done"}


planners: list[Planner] = [MyPlanner(), TextPlanner()]
solver: Solver = MySolver()
estimator: Estimator = MyEstimator()
actor: Actor = MyActor()
tool_agent: ToolAgent = MyToolAgent()
"""

BAD = """
from __future__ import annotations

from pytest_budget import Estimator, Planner
from pytest_budget.triage._types import PlanRequest


class NumberPlanner:
    def plan(self, request: PlanRequest) -> int:
        return 3


class WrongInput:
    def estimate(self, probe: int) -> str:
        return "impossible"


planner: Planner = NumberPlanner()
estimator: Estimator = WrongInput()
"""


def _mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    # The package is found from the repository (an editable install is an import hook mypy
    # does not follow); its own modules are analysed but only the agent file is reported.
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "--no-error-summary", str(path)],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip


def test_mypy_strict_checks_agents_against_the_roles(tmp_path: Path) -> None:
    good = _mypy(tmp_path, "good_agents.py", GOOD)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _mypy(tmp_path, "bad_agents.py", BAD)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    lines = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert len(lines) == 2, bad.stdout
    planner, estimator = lines
    assert planner.startswith("bad_agents.py:18:") and '"NumberPlanner"' in planner
    assert '"Planner"' in planner
    assert estimator.startswith("bad_agents.py:19:") and '"WrongInput"' in estimator
    assert '"Estimator"' in estimator
    # the notes name the method and the expected types
    assert "def plan(self, request: PlanRequest) -> int" in bad.stdout
    assert "def estimate(self, probe: int) -> str" in bad.stdout
