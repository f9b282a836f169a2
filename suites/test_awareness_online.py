"""The awareness suite's online mode: the agent acts under a hard cap and estimates while
it acts (issue 24; BAGEN leaves this to future work, §3.2).

One test per cell: environment x cap level x protocol x agent.  Each cell runs
``--budget-online-episodes`` episodes online (estimates read, stops honoured and measured by
a continuation) and the same episodes in replay mode (no budget shown) with the same agent
answering replay probes, and records both.  Collected with
``pytest --budget-suite=awareness --budget-awareness-mode=online`` (or ``both``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_budget._core.roles import agent_name
from pytest_budget._plugin.state import budget_session
from pytest_budget._run.options import BudgetOptions
from pytest_budget.awareness._options import AwarenessOptions
from pytest_budget.awareness.online._cell import cell_caps, run_online_cell
from pytest_budget.awareness.online._envs import ONLINE_ENVS
from pytest_budget.awareness.online._protocol import PROTOCOLS
from pytest_budget.fixtures.core import agent_axis
from pytest_budget.models._loop import run_on_worker_loop

#: Per-run entries kept in a cell record (the rest are counted).
_RUNS_KEPT = 64


@dataclass(frozen=True)
class OnlineCell:
    env: str
    multiplier: float
    protocol: str

    @property
    def id(self) -> str:
        return f"{self.env}-{self.multiplier:g}x-{self.protocol}"


def online_cells(options: BudgetOptions) -> list[OnlineCell]:
    envs = [env for env in options.of(AwarenessOptions).envs if env in ONLINE_ENVS]
    return [
        OnlineCell(env, multiplier, protocol)
        for env in envs
        for multiplier in options.of(AwarenessOptions).online_caps
        for protocol in options.of(AwarenessOptions).online_protocols
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    options = budget_session(metafunc.config).options
    cells = online_cells(options)
    metafunc.parametrize("online_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "awareness-online", "online_actor")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def test_awareness_online(
    online_cell: OnlineCell,
    budget_agent: str,
    budget_online_actor: Any,
    budget_options: BudgetOptions,
    budget_record: Any,
    budget_snapshot: Any,
) -> None:
    options = budget_options
    own = options.of(AwarenessOptions)
    result = run_on_worker_loop(
        lambda: run_online_cell(
            online_cell.env,
            budget_online_actor,
            n=own.online_episodes,
            seed=options.seed,
            multiplier=online_cell.multiplier,
            protocol=online_cell.protocol,
            charge=own.online_charge,
            policy=own.parse,
            concurrency=options.concurrency,
            success_value=own.online_success_value,
            warehouse_demand=own.warehouse_demand,
        )
    )
    agent = budget_agent if budget_agent != "user" else agent_name(budget_online_actor)
    caps = cell_caps(online_cell.env, online_cell.multiplier)
    runs = [run.summary() for run in result.runs]
    budget_record(
        {
            "suite": "awareness-online",
            "cell": online_cell.id,
            "env": online_cell.env,
            "agent": agent,
            "awareness_mode": "online",
            "protocol": PROTOCOLS[online_cell.protocol],
            "charge": own.online_charge,
            "cap_multiplier": online_cell.multiplier,
            "budget": caps,
            "seed": options.seed,
            "parse": own.parse,
            "episodes": own.online_episodes,
            "cost_model": (
                f"a success is worth {own.online_success_value:g} x an average run's "
                "tokens; net_value = share of all tokens saved by stops - value x successes "
                "lost per run"
            ),
            "outcome": result.outcome,
            "reason": result.reason,
            "scores": result.scores,
            "runs": runs[:_RUNS_KEPT],
            "runs_left_out": max(0, len(runs) - _RUNS_KEPT),
            "invalid_reasons": result.invalid_reasons,
            "notes": result.notes,
            "sort_key": [online_cell.env, online_cell.multiplier, online_cell.protocol, agent],
        }
    )
    if result.outcome == "error":
        pytest.fail(result.reason, pytrace=False)
    payload = {
        "scores": result.scores,
        "context": {
            "seed": options.seed,
            "episodes": own.online_episodes,
            "charge": own.online_charge,
            "parse": own.parse,
            "budget": caps,
        },
    }
    assert budget_snapshot("awareness-online") == payload
