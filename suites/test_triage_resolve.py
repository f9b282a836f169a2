"""Triage re-solve cells (TRIAGE App. C.1): does the solver keep to its planner's allocations?

Collected only with ``pytest --budget-suite=triage --budget-resolve``.  Each planned item
of the alpha = 1 plan is solved again with its allocation stated; compliance and the four
outcome counts are scored and gated like any other cell.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_budget._plugin.state import budget_session
from pytest_budget._run.options import BudgetOptions
from pytest_budget.fixtures.core import agent_axis, fail_on_error, repeat_seeds, run_repeats
from pytest_budget.fixtures.triage import TriageCell, TriageGroundTruth, triage_cells
from pytest_budget.models._loop import run_on_worker_loop, shared_limiter
from pytest_budget.suites.test_triage import _context, _phase0, _plan, _record
from pytest_budget.triage._evaluate import TRUNCATION_WARN_SHARE, TruncationWarning
from pytest_budget.triage._intervals import resolve_cell_summary
from pytest_budget.triage._resolve import resolve_records, summarize_records

#: The paper re-solves the plans made with the full baseline budget.
RESOLVE_ALPHA = 1.0


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = budget_session(metafunc.config)
    seen: set[tuple[str, str]] = set()
    cells = []
    for cell in triage_cells(session):
        if (cell.pool, cell.variant) not in seen:
            seen.add((cell.pool, cell.variant))
            cells.append(TriageCell(cell.pool, 0.0, RESOLVE_ALPHA, cell.variant))
    metafunc.parametrize("triage_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "triage", "planner")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def test_resolve(
    triage_cell: TriageCell,
    budget_agent: str,
    budget_planner: Any,
    budget_solver: Any,
    budget_options: BudgetOptions,
    triage_ground_truth: TriageGroundTruth,
    budget_record: Any,
    budget_snapshot: Any,
    request: pytest.FixtureRequest,
) -> None:
    pool, phase0 = _phase0(
        triage_ground_truth, triage_cell, budget_solver, budget_record, "triage-resolve"
    )

    async def both(planner: Any = budget_planner) -> Any:
        limiter = shared_limiter(budget_options.concurrency)
        outcome = await _plan(pool, phase0, triage_cell, planner, budget_options)
        records = await resolve_records(
            pool.items, phase0.baselines, outcome.plan, budget_solver, limiter=limiter,
            truncated=cut,
        )  # fmt: skip
        return outcome, records

    cut: list[str] = []  # ids of re-solve replies cut at the cap, over every repeat

    outcome, resolved = run_on_worker_loop(both)
    # --budget-repeat: plan and re-solve again (a reference planner with another seed).
    runs = [(outcome, resolved), *run_repeats(request, "planner", budget_planner, both)]
    calls = sum(len(records) for _, records in runs)
    truncated = {"resolve": len(cut), "resolve_calls": calls}
    if calls and len(cut) / calls > TRUNCATION_WARN_SHARE:
        warnings.warn(
            TruncationWarning(
                f"{triage_cell.id}: {len(cut)} of {calls} re-solve calls were cut at the "
                "solver's token cap; raise max_tokens for this model"
            ),
            stacklevel=1,
        )
    summary = resolve_cell_summary(
        [(o.outcome, summarize_records(records).as_scores(), records) for o, records in runs],
        seed=budget_options.seed,
        cell_id=triage_cell.id,
        level=budget_options.ci_level,
        resamples=budget_options.ci_resamples,
        seeds=repeat_seeds(budget_options),
    )
    budget_record(
        {
            **_record(
                "triage-resolve",
                triage_cell,
                pool,
                outcome,
                budget_agent,
                budget_solver,
                budget_options,
            ),
            **summary.report_fields(),
            "truncated": truncated,
        }
    )
    fail_on_error([o for o, _ in runs])
    payload = {
        **summary.snapshot_fields(),
        "context": _context(budget_options, budget_solver, len(pool.items)),
    }
    assert budget_snapshot("triage-resolve") == payload
