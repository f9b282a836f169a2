"""The triage suite (TRIAGE): plan which problems to attempt under a shared token budget.

One test per cell: pool x unsolvable ratio x alpha x prompt variant x agent.  Run with
``pytest --budget-suite=triage``.
"""

from __future__ import annotations

import threading
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_budget._core.roles import agent_name
from pytest_budget._plugin.state import budget_session
from pytest_budget._run.options import BudgetOptions
from pytest_budget._run.session import BudgetSession
from pytest_budget.fixtures.cells import cell_result, in_background
from pytest_budget.fixtures.core import agent_axis, fail_on_error, repeat_seeds, run_repeats
from pytest_budget.fixtures.triage import (
    TriageCell,
    TriageGroundTruth,
    TriageRunState,
    ground_truth_for,
    triage_cells,
)
from pytest_budget.models._loop import shared_limiter
from pytest_budget.triage._evaluate import (
    CellOutcome,
    TruncationWarning,
    cell_notes,
    run_cell,
    truncation_counts,
    truncation_warning,
)
from pytest_budget.triage._intervals import cell_summary, item_units, warm_shared
from pytest_budget.triage._per_item import per_item_snapshot
from pytest_budget.triage._phase0 import BaselineReport
from pytest_budget.triage._shared_store import SharedTables
from pytest_budget.triage._types import Pool

#: Guards the first replacement of the run's bootstrap cache by its on-disk form.
_CACHE_LOCK = threading.Lock()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = budget_session(metafunc.config)
    cells = triage_cells(session)
    metafunc.parametrize("triage_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "triage", "planner")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def _context(options: BudgetOptions, solver: Any, pool_size: int) -> dict[str, Any]:
    """What a stored baseline depends on besides the cell coordinates."""
    return {
        "seed": options.seed,
        "solver": agent_name(solver),
        "pool_size": pool_size,
        "random_samples": options.random_samples,
    }


def _phase0(
    ground_truth: TriageGroundTruth, cell: TriageCell, solver: Any, record: Any, suite: str
) -> Any:
    """The cell's pool and its Phase 0; a solver that failed on every item fails the cell
    (after recording it, so the report still shows the cell and why)."""
    pool = ground_truth.pool(cell.pool, cell.unsolvable_ratio)
    report = ground_truth.baselines(pool, solver)
    if report.errors and not report.baselines:
        first = next(iter(report.errors.values()))
        reason = (
            f"Phase 0: solver {agent_name(solver)!r} failed on all {len(pool.items)} items "
            f"of pool {pool.name!r} (first: {first})"
        )
        record(
            {
                "suite": suite,
                "cell": cell.id,
                "pool": pool.name,
                "alpha": cell.alpha,
                "agent": "-",
                "solver": agent_name(solver),
                "seed": ground_truth.options.seed,
                "outcome": "error",
                "reason": reason,
                "scores": {},
                "phase0": {"items": len(pool.items), "gradeable": 0, "errors": report.errors},
                "sort_key": [pool.name, cell.unsolvable_ratio, cell.alpha, cell.variant, ""],
            }
        )
        pytest.fail(reason, pytrace=False)
    return pool, report


async def _plan(
    pool: Pool, phase0: BaselineReport, cell: TriageCell, planner: Any, options: BudgetOptions
) -> CellOutcome:
    return await run_cell(
        pool,
        phase0.baselines,
        cell.alpha,
        planner,
        seed=options.seed,
        variant=cell.variant,
        limiter=shared_limiter(options.concurrency),
        samples=options.random_samples,
    )


def prefetch_cell(item: pytest.Item, state: Any) -> tuple[Any, tuple[str, ...]] | None:
    """The cell's Phase 0 and plan, started ahead of its test (:mod:`~pytest_budget.
    fixtures.cells`): what the test computes for repeat 0, with the same agents."""
    from pytest_budget.fixtures.core import role_agent_for

    params = item.callspec.params  # type: ignore[attr-defined]
    cell, name, options = params["triage_cell"], params["budget_agent"], state.options
    planner = role_agent_for(item.config, options, name, "planner", options.seed)
    solver = role_agent_for(item.config, options, name, "solver", options.seed)
    ground_truth = ground_truth_for(state)

    async def work() -> CellOutcome | None:
        pool = ground_truth.pool(cell.pool, cell.unsolvable_ratio)
        phase0 = await ground_truth.abaselines(pool, solver)
        if phase0.errors and not phase0.baselines:
            return None  # the test fails the cell
        # The summary's plan-free tables, computed while the planner call is in flight.
        # (V_oracle, V_random per resample: shared by the cell's plans, same cache entry.)
        in_background(
            lambda: warm_shared(
                **_shared_inputs(pool, phase0, cell, options, "triage", _bootstrap_cache(state))
            )
        )
        return await _plan(pool, phase0, cell, planner, options)

    return work, (agent_name(planner), agent_name(solver))


def _shared_inputs(
    pool: Pool,
    phase0: BaselineReport,
    cell: TriageCell,
    options: BudgetOptions,
    suite: str,
    cache: dict[Any, Any],
) -> dict[str, Any]:
    """What the cell's summary and its tables computed ahead both take: the same
    arguments, so they meet in the same cache entry."""
    return {
        "units": item_units(pool.items, phase0.baselines),
        "baselines": phase0.baselines,
        "alpha": cell.alpha,
        "seed": options.seed,
        "cell_id": cell.id,
        "resamples": options.ci_resamples,
        "suite": suite,
        "cache": cache,
    }


def _bootstrap_cache(state: BudgetSession) -> dict[Any, Any]:
    """The process's bootstrap draws, shared by the cells and their tables computed ahead
    (and, with a cache directory, by later runs and the other workers: SharedTables)."""
    kept = state.state_of(TriageRunState)
    folder = state.options.cache_dir
    if folder is not None and not isinstance(kept.bootstrap_cache, SharedTables):
        with _CACHE_LOCK:  # the first call may come from a cell's background thread
            if not isinstance(kept.bootstrap_cache, SharedTables):
                kept.bootstrap_cache = SharedTables(folder)
    return kept.bootstrap_cache


def _record(
    suite: str, cell: TriageCell, pool: Pool, outcome: CellOutcome, agent: str, solver: Any,
    options: BudgetOptions,
) -> dict[str, Any]:  # fmt: skip
    """The fields every triage cell record shares (the JSON report's cell object)."""
    return {
        "suite": suite,
        "cell": cell.id,
        "pool": pool.name,
        "unsolvable_ratio": cell.unsolvable_ratio,
        "alpha": cell.alpha,
        "variant": cell.variant,
        "budget": outcome.budget,
        "agent": agent if agent != "user" else outcome.agent,
        "solver": agent_name(solver),
        "seed": options.seed,
        "outcome": outcome.outcome,
        "reason": outcome.reason,
        "plan_status": outcome.scores.plan_status,
        "sort_key": [pool.name, cell.unsolvable_ratio, cell.alpha, cell.variant, agent],
    }


def _samples(
    pool: Pool, phase0: BaselineReport, outcome: CellOutcome, options: BudgetOptions
) -> dict[str, Any]:
    """The cell's pool items (first plan) and the planner's reply, for the report."""
    from pytest_budget._core.samples import options_secrets
    from pytest_budget.triage._samples import cell_samples

    if not (options.report_path or options.html_path):
        # Only the JSON report and the HTML page show them: not built for nothing.
        return {"plan_raw": None, "samples": []}
    return cell_samples(
        pool.items, phase0.baselines, phase0.truncated, outcome, options_secrets(options)
    )


def _outcomes(
    request: pytest.FixtureRequest, pool: Pool, phase0: BaselineReport, cell: TriageCell,
    planner: Any, solver: Any, options: BudgetOptions,
) -> list[CellOutcome]:  # fmt: skip
    """The cell's plan (perhaps started ahead), then with ``--budget-repeat`` the planner
    plans again (a reference planner with another seed)."""
    outcome = cell_result(
        request,
        (agent_name(planner), agent_name(solver)),
        lambda: _plan(pool, phase0, cell, planner, options),
    )
    again = run_repeats(
        request, "planner", planner, lambda each: _plan(pool, phase0, cell, each, options)
    )
    return [outcome, *again]


def _truncated(
    cell: TriageCell, outcomes: Sequence[CellOutcome], phase0: BaselineReport
) -> dict[str, int]:
    """Outputs cut at the token cap, counted; a warning names the cell when there are any."""
    calls = sum(source != "file" for source in phase0.sources.values())
    truncated = truncation_counts(outcomes, calls, len(phase0.truncated))
    message = truncation_warning(cell.id, truncated)
    if message is not None:
        warnings.warn(TruncationWarning(message), stacklevel=2)
    return truncated


def _phase0_fields(pool: Pool, phase0: BaselineReport) -> dict[str, Any]:
    """The cell record's ``phase0`` object: the pool's items and their Phase 0 results."""
    sources = phase0.sources.values()
    return {
        "items": len(pool.items),
        "gradeable": len(phase0.baselines),
        # Solved in Phase 0: the base accuracy line of the HTML report's eta bars.
        "solved": sum(b.solved for b in phase0.baselines.values()),
        "errors": phase0.errors,
        # Where the results came from: the Phase 0 cache, the solver, the pool file.
        "from_cache": sum(s == "cache" for s in sources),
        "measured": sum(s == "solver" for s in sources),
        "from_file": sum(s == "file" for s in sources),
    }


def test_triage(
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
    pool, phase0 = _phase0(triage_ground_truth, triage_cell, budget_solver, budget_record, "triage")
    outcomes = _outcomes(
        request, pool, phase0, triage_cell, budget_planner, budget_solver, budget_options
    )
    outcome = outcomes[0]
    cache = _bootstrap_cache(budget_session(request.config))
    # Scores (the mean over repeats), their bootstrap intervals and the repeat spread.
    summary = cell_summary(
        outcomes,
        level=budget_options.ci_level,
        seeds=repeat_seeds(budget_options),
        **_shared_inputs(pool, phase0, triage_cell, budget_options, "triage", cache),
    )
    scores = outcome.scores
    truncated = _truncated(triage_cell, outcomes, phase0)
    budget_record(
        {
            **_record(
                "triage", triage_cell, pool, outcome, budget_agent, budget_solver, budget_options
            ),
            "repairs": list(outcome.repairs),
            # Allocations adding up to more than B are scored as written (regime E stops
            # at the first allocation that no longer fits) and counted here.
            "over_budget": sum(entry.tokens for entry in outcome.plan.planned) > outcome.budget,
            **summary.report_fields(),
            # Unparseable plans excluded from eta, V_oracle = 0, the D.2 convention; D, W counts.
            **cell_notes(outcomes),
            # Outputs cut at the token cap (finish reason "length"): planner and Phase 0.
            "truncated": truncated,
            "v_random_stderr": scores.v_random_stderr,
            "planned_ids": list(scores.planned_ids),
            # Each unsolvable item keeps its own domain label (a generated injection's
            # source, or the pool file's "domain"): counted here next to D and W.
            "unsolvable_domains": dict(
                sorted(Counter(item.domain for item in pool.items if item.unsolvable).items())
            ),
            "executed_ids": {"u": list(scores.executed_u), "e": list(scores.executed_e)},
            # The items behind the scores, for the HTML report's drill-down (issue 23).
            **_samples(pool, phase0, outcome, budget_options),
            "phase0": _phase0_fields(pool, phase0),
        }
    )
    fail_on_error(outcomes)
    payload = {
        **summary.snapshot_fields(),
        # Each pool item's values, for the paired gate (--budget-gate=paired, the default).
        "per_query": per_item_snapshot(outcomes, pool.items, phase0.baselines),
        "context": _context(budget_options, budget_solver, len(pool.items)),
    }
    assert budget_snapshot("triage") == payload
