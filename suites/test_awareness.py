"""The awareness suite (BAGEN): progressive interval estimation by rollout-replay.

One test per cell: environment x estimator.  The actor (the reference actor unless your
project supplies one) is rolled out with no budget constraint; every non-terminal turn of
every rollout becomes a probe the estimator answers.  Run with
``pytest --budget-suite=awareness``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_budget._core.fingerprint import fingerprint
from pytest_budget._core.roles import agent_name
from pytest_budget._plugin.state import budget_session
from pytest_budget._run.options import BudgetOptions
from pytest_budget.awareness._environments import WAREHOUSE_PRESETS, file_digest
from pytest_budget.awareness._evaluate import (
    AwarenessOutcome,
    awareness_outcome,
    run_awareness_cell,
    summarize_rollouts,
)
from pytest_budget.awareness._options import AwarenessOptions
from pytest_budget.awareness._replay.floor import trivial_floor
from pytest_budget.awareness._replay.probes import Probe, ProbeTruth, make_probes
from pytest_budget.awareness._replay.rollouts import Rollout
from pytest_budget.awareness._replay.subsample import LOGGED_ENVS, cell_probes
from pytest_budget.awareness._scoring.intervals import cell_summary
from pytest_budget.awareness._scoring.per_probe import per_probe_parts, per_probe_snapshot
from pytest_budget.awareness.warehouse import LEAKING_PRESETS
from pytest_budget.fixtures.awareness import (
    AwarenessCell,
    AwarenessRollouts,
    RolloutGenerationError,
    awareness_cells,
)
from pytest_budget.fixtures.cells import cell_result
from pytest_budget.fixtures.core import agent_axis, fail_on_error, repeat_seeds, run_repeats
from pytest_budget.fixtures.sequential import SequentialCell, sequential_cell, sequential_record
from pytest_budget.models._loop import shared_limiter


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    session = budget_session(metafunc.config)
    cells = awareness_cells(session)
    metafunc.parametrize("awareness_cell", cells, ids=[cell.id for cell in cells])
    agents = agent_axis(metafunc, "awareness", "estimator")
    metafunc.parametrize("budget_agent", agents, ids=agents)


def _rollout_digest(rollouts: Sequence[Rollout]) -> str:
    """Identifies the rollout set a baseline was measured on (ids, outcomes, totals)."""
    # Canonical: the same set gives the same digest whether it was generated in this process
    # or read back from the rollout cache (2500 vs 2500.0).
    return fingerprint([[r.id, r.success, r.total(), dict(r.budget)] for r in rollouts])


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
        "parse": options.of(AwarenessOptions).parse,
    }
    if (
        cell.env.startswith("warehouse")
        and (demand := options.of(AwarenessOptions).warehouse_demand)
        and actor is not None
    ):
        context["warehouse_demand"] = file_digest(demand)
    return context


def _samples(rollouts: Sequence[Rollout], outcome: Any, options: BudgetOptions) -> dict[str, Any]:
    """Every asked probe (first repeat) and the rollout prefixes they replayed."""
    from pytest_budget._core.samples import options_secrets, scrubber
    from pytest_budget.awareness._samples import sample_fields

    if not outcome.results or not (options.report_path or options.html_path):
        # Only the JSON report and the HTML page show them: not built for nothing.
        return {"samples": [], "sample_rollouts": {}}
    dimensions = tuple(outcome.results[0].probe.budget)
    scrub = scrubber(options_secrets(options))
    return dict(sample_fields(rollouts, outcome.results, dimensions, scrub, outcome.tables))


def _asked(rollouts: Sequence[Rollout]) -> list[tuple[Probe, ProbeTruth]]:
    """Every probe the cell asks, in order."""
    probes = cell_probes(rollouts)
    return probes if probes is not None else [p for r in rollouts for p in make_probes(r)]


async def _cell(
    rollouts_of: AwarenessRollouts,
    cell: AwarenessCell,
    actor: Any,
    search_url: str | None,
    estimator: Any,
    options: BudgetOptions,
    item: pytest.Item,
) -> tuple[list[Rollout], Any, Any]:
    """The cell's rollouts (generated, or the process's memo) and the estimator's answers
    to their probes (repeat 0): all of them, or under the sequential gate the first batch
    (then also the cell's plan, :mod:`~pytest_budget.fixtures.sequential`)."""
    rollouts = await rollouts_of.afor_cell(cell, actor, search_url)
    asked = _asked(rollouts)
    metered = getattr(estimator, "metered", False) is True
    context = _context(options, cell, actor, rollouts)
    plan = sequential_cell(item, options, "awareness", len(asked), metered, context)
    if isinstance(plan, SequentialCell):
        lo, hi = plan.batches()[0]
        return rollouts, await _ask(rollouts, asked[lo:hi], estimator, options), plan
    return rollouts, await _ask(rollouts, cell_probes(rollouts), estimator, options), plan


async def _ask(
    rollouts: Sequence[Rollout],
    probes: Sequence[tuple[Probe, ProbeTruth]] | None,
    estimator: Any,
    options: BudgetOptions,
) -> AwarenessOutcome:
    return await run_awareness_cell(
        rollouts,
        estimator,
        policy=options.of(AwarenessOptions).parse,
        limiter=shared_limiter(options.concurrency),
        probes=probes,
    )


def _run_sequential(
    plan: SequentialCell,
    rollouts: Sequence[Rollout],
    first: AwarenessOutcome,
    estimator: Any,
    options: BudgetOptions,
) -> AwarenessOutcome:
    """The cell's probes batch by batch after the first, deciding after each; the outcome
    of the probes asked."""
    from functools import partial

    from pytest_budget.models._loop import run_on_worker_loop

    asked = _asked(rollouts)
    dimensions = tuple(asked[0][0].budget)
    results = list(first.results)
    outcome = first
    for index, (lo, hi) in enumerate(plan.batches()):
        if index > 0:
            batch = asked[lo:hi]
            part = run_on_worker_loop(partial(_ask, rollouts, batch, estimator, options))
            results += part.results
            outcome = awareness_outcome(first.estimator, results, list(rollouts), dimensions)
        if outcome.outcome == "error":
            break
        if plan.look(per_probe_parts([outcome])).decision != "continue":
            break
    return outcome


def prefetch_cell(item: pytest.Item, state: Any) -> tuple[Any, tuple[str, ...]] | None:
    """The cell's rollouts and probes, started ahead of its test (:mod:`~pytest_budget.
    fixtures.cells`): what the test computes for repeat 0, with the same agents."""
    from pytest_budget.fixtures.core import role_agent_for

    params = item.callspec.params  # type: ignore[attr-defined]
    cell, name, options = params["awareness_cell"], params["budget_agent"], state.options
    logged = _logged(options, cell)
    estimator = role_agent_for(item.config, options, name, "estimator", options.seed)
    actor = None if logged else role_agent_for(item.config, options, name, "actor", options.seed)
    search_url = (
        options.of(AwarenessOptions).search_url if cell.env == "search" and not logged else None
    )
    rollouts_of = AwarenessRollouts(state)
    if cell.env == "search" and not logged and not search_url:
        if not rollouts_of.stored(cell, actor):
            return None  # the search server the suite starts is the test's fixture
    return (
        lambda: _cell(rollouts_of, cell, actor, search_url, estimator, options, item)
    ), _identity(estimator, actor)


def _identity(estimator: Any, actor: Any) -> tuple[str, ...]:
    return (agent_name(estimator), "logged" if actor is None else agent_name(actor))


def _logged(options: BudgetOptions, cell: AwarenessCell) -> bool:
    """Whether the cell replays logged rollouts (no actor rolls out)."""
    return bool(options.of(AwarenessOptions).rollouts) or cell.env in LOGGED_ENVS


def _search_url(
    request: pytest.FixtureRequest, cell: AwarenessCell, options: BudgetOptions,
    rollouts_of: AwarenessRollouts, actor: Any, logged: bool,
) -> str | None:  # fmt: skip
    """The search server a search cell's actor rolls out against, else None."""
    if cell.env != "search" or logged:
        return None
    # The bundled server (corpus, index) starts only when the rollouts must be generated.
    if options.of(AwarenessOptions).search_url or not rollouts_of.stored(cell, actor):
        url: str = request.getfixturevalue("awareness_search_url")
        return url
    return None


def _first_run(
    request: pytest.FixtureRequest, rollouts_of: AwarenessRollouts, cell: AwarenessCell,
    actor: Any, search_url: str | None, estimator: Any, options: BudgetOptions,
) -> tuple[list[Rollout], Any, Any]:  # fmt: skip
    """:func:`_cell` for the test (perhaps started ahead); a rollout that could not be
    generated fails the cell."""
    try:
        return cell_result(
            request,
            _identity(estimator, actor),
            lambda: _cell(rollouts_of, cell, actor, search_url, estimator, options, request.node),
        )
    except RolloutGenerationError as exc:
        pytest.fail(str(exc), pytrace=False)


def _floor(
    asked: Sequence[tuple[Probe, ProbeTruth]], cell: AwarenessCell, logged: bool
) -> dict[str, Any]:
    """The trivial estimators' floor on the asked probes, naming a leaking preset."""
    floor = trivial_floor(asked).as_dict()
    preset = None if logged else WAREHOUSE_PRESETS.get(cell.env)
    if preset in LEAKING_PRESETS:
        floor["leaking_preset"] = preset
    return floor


def _outcomes(
    request: pytest.FixtureRequest, rollouts: Sequence[Rollout], first: AwarenessOutcome,
    estimator: Any, options: BudgetOptions,
) -> list[AwarenessOutcome]:  # fmt: skip
    """The cell's outcome, then with ``--budget-repeat`` the estimator answers the same
    probes again (a reference estimator with another seed; a model is asked again, in
    calls of that repeat)."""
    probes = cell_probes(rollouts)
    again = run_repeats(
        request, "estimator", estimator, lambda each: _ask(rollouts, probes, each, options)
    )
    return [first, *again]


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
    logged = _logged(budget_options, awareness_cell)
    budget_actor = None if logged else request.getfixturevalue("budget_actor")
    search_url = _search_url(
        request, awareness_cell, budget_options, awareness_rollouts, budget_actor, logged
    )
    rollouts, outcome, plan = _first_run(
        request,
        awareness_rollouts,
        awareness_cell,
        budget_actor,
        search_url,
        budget_estimator,
        budget_options,
    )
    asked = _asked(rollouts)
    if isinstance(plan, SequentialCell):  # --budget-sequential: the next batches, if needed
        outcome = _run_sequential(plan, rollouts, outcome, budget_estimator, budget_options)
        asked = asked[: len(outcome.results)]
    floor = _floor(asked, awareness_cell, logged)
    outcomes = _outcomes(request, rollouts, outcome, budget_estimator, budget_options)
    summary = cell_summary(
        outcomes,
        seed=budget_options.seed,
        cell_id=awareness_cell.id,
        level=budget_options.ci_level,
        resamples=budget_options.ci_resamples,
        seeds=repeat_seeds(budget_options),
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
            "parse": budget_options.of(AwarenessOptions).parse,
            **_budget_fields(rollouts),
            "outcome": outcome.outcome,
            "reason": outcome.reason,
            **summary.report_fields(),
            "rollouts": dict(summarize_rollouts(rollouts)),
            "trivial_floor": floor,
            "invalid_reasons": outcome.invalid_reasons,
            "notes": outcome.notes,
            "curves": outcome.curves,
            "first_error": outcome.first_error,
            # The probes behind the scores, for the HTML report's drill-down (issue 23).
            **_samples(rollouts, outcome, budget_options),
            "sequential": sequential_record(plan),
            "sort_key": [awareness_cell.env, agent],
        }
    )
    fail_on_error(outcomes)
    payload = {
        **summary.snapshot_fields(),
        # Each probe's values, for the paired gate (--budget-gate=paired, the default).
        "per_query": per_probe_snapshot(outcomes),
        "context": _context(budget_options, awareness_cell, budget_actor, rollouts),
    }
    if isinstance(plan, SequentialCell):
        payload["sequential"] = plan.payload()
    assert budget_snapshot("awareness") == payload
