"""The awareness suite (BAGEN): progressive interval estimation by rollout-replay.

One test per cell: environment x estimator.  The actor (the reference actor unless your
project supplies one) is rolled out with no budget constraint; every non-terminal turn of
every rollout becomes a probe the estimator answers.  Run with
``pytest --budget-suite=awareness``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from pytest_budget.awareness.environments import file_digest
from pytest_budget.awareness.evaluate import run_awareness_cell, summarize_rollouts
from pytest_budget.awareness.rollouts import Rollout
from pytest_budget.fixtures.awareness import AwarenessCell, AwarenessRollouts, awareness_cells
from pytest_budget.fixtures.core import agent_axis
from pytest_budget.options import BudgetOptions
from pytest_budget.plugin import budget_session
from pytest_budget.roles import agent_name


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = budget_session(metafunc.config)
    cells = awareness_cells(session)
    metafunc.parametrize("awareness_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "awareness", "estimator")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def _rollout_digest(rollouts: Sequence[Rollout]) -> str:
    """Identifies the rollout set a baseline was measured on (ids, outcomes, totals)."""
    summary = [[r.id, r.success, r.total()] for r in rollouts]
    return hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()[:16]


def _budget_fields(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """``budget`` when every rollout has the same caps; ``budget_range`` always."""
    dims = list(rollouts[0].budget) if rollouts else []
    caps = {d: [float(r.budget.get(d, 0.0)) for r in rollouts] for d in dims}
    fields: dict[str, Any] = {"budget_range": {d: [min(v), max(v)] for d, v in caps.items()}}
    if all(min(v) == max(v) for v in caps.values()):
        fields["budget"] = {d: v[0] for d, v in caps.items()}
    return fields


def _context(
    options: BudgetOptions, cell: AwarenessCell, actor: Any, rollouts: Sequence[Rollout]
) -> dict[str, Any]:
    """What a stored baseline depends on besides the cell coordinates."""
    context = {
        "seed": options.seed,
        "actor": "logged" if actor is None else agent_name(actor),
        "rollouts": len(rollouts),
        "rollout_set": _rollout_digest(rollouts),
        "parse": options.parse,
    }
    if cell.env == "warehouse" and options.warehouse_demand and actor is not None:
        context["warehouse_demand"] = file_digest(options.warehouse_demand)
    return context


def test_awareness(
    awareness_cell: AwarenessCell,
    budget_agent: str,
    budget_estimator: Any,
    budget_options: BudgetOptions,
    awareness_rollouts: AwarenessRollouts,
    budget_record: Any,
    budget_snapshot: Any,
    request: pytest.FixtureRequest,
) -> None:
    # Logged rollouts need no actor; otherwise the actor (yours or the reference) rolls out.
    budget_actor = None if budget_options.rollouts else request.getfixturevalue("budget_actor")
    rollouts = awareness_rollouts.for_cell(awareness_cell, budget_actor)
    outcome = anyio.run(
        lambda: run_awareness_cell(
            rollouts,
            budget_estimator,
            policy=budget_options.parse,  # type: ignore[arg-type]
            limiter=anyio.CapacityLimiter(budget_options.concurrency),
        )
    )
    agent = budget_agent if budget_agent != "user" else outcome.estimator
    budget_record(
        {
            "suite": "awareness",
            "cell": awareness_cell.id,
            "env": awareness_cell.env,
            "agent": agent,
            "actor": "logged" if budget_actor is None else agent_name(budget_actor),
            "seed": budget_options.seed,
            "parse": budget_options.parse,
            **_budget_fields(rollouts),
            "outcome": outcome.outcome,
            "reason": outcome.reason,
            "scores": outcome.scores,
            "rollouts": dict(summarize_rollouts(rollouts)),
            "invalid_reasons": outcome.invalid_reasons,
            "first_error": outcome.first_error,
            "sort_key": [awareness_cell.env, agent],
        }
    )
    if outcome.outcome == "error":
        pytest.fail(outcome.reason, pytrace=False)
    payload = {
        "scores": outcome.scores,
        "context": _context(budget_options, awareness_cell, budget_actor, rollouts),
    }
    assert budget_snapshot("awareness") == payload
