"""Each suite's vectorised bootstrap against the slow, obvious one.

For a resample, the obvious computation builds the resampled unit list (every drawn copy of
a rollout, query or pool item is a unit of its own) and calls the suite's ordinary scoring
function on it.  The vectorised code must give the same value for every score.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import numpy as np
import pytest

from pytest_budget._stats.bootstrap import counts_from_indices, resample_indices
from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
from pytest_budget.awareness._estimators import LinearEstimator, OracleEstimator, RandomEstimator
from pytest_budget.awareness._evaluate import ProbeResult, run_awareness_cell, score_results
from pytest_budget.awareness._replay.answers import Impossible, Interval
from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._scoring.intervals import probe_correct, rollout_units
from pytest_budget.awareness._scoring.intervals import resampled_scores as awareness_resampled
from pytest_budget.planning._evaluate import PlanningOutcome, run_planning_cell
from pytest_budget.planning._intervals import outcome_columns
from pytest_budget.planning._intervals import resampled_scores as planning_resampled
from pytest_budget.planning._metrics import score_episodes
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import OracleToolAgent, RandomValidToolAgent
from pytest_budget.triage._evaluate import budget_for, score_plan
from pytest_budget.triage._intervals import item_units, resampled_resolve_scores
from pytest_budget.triage._intervals import resampled_scores as triage_resampled
from pytest_budget.triage._random_orderings import random_values
from pytest_budget.triage._resolve import summarize_records
from pytest_budget.triage._scoring import random_reference
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry

ROWS = 12  # resamples compared one by one with the slow computation


def assert_same(expected: Mapping[str, Any], matrix: Mapping[str, np.ndarray], row: int) -> None:
    assert set(matrix) == set(expected), set(matrix) ^ set(expected)
    for name, value in expected.items():
        got = float(matrix[name][row])
        if value is None:
            assert math.isnan(got), (name, row, got)
        else:
            assert got == pytest.approx(float(value), rel=1e-9, abs=1e-9), (name, row)


# --------------------------------------------------------------------------- planning


@pytest.mark.parametrize("scenario", [("static", 0, 2), ("ban_tool", 1, 5)], ids=str)
def test_planning_equals_scoring_the_resampled_episodes(scenario: tuple[str, int, int]) -> None:
    mode, blocks, level = scenario
    queries = generate_queries("dining", 8, seed=42)
    episodes = []
    for agent in (RandomValidToolAgent(seed=3), OracleToolAgent()):
        outcome = anyio.run(
            lambda agent=agent: run_planning_cell(queries, level, mode, blocks, agent, seed=42)
        )
        episodes.extend(outcome.episodes)  # both agents' episodes: varied outcomes
    indices = resample_indices(len(episodes), ROWS, seed=8)
    matrix = planning_resampled(episodes, counts_from_indices(indices, len(episodes)))
    for row in range(ROWS):
        assert_same(score_episodes([episodes[i] for i in indices[row]]), matrix, row)
    # All ones: the cell's own scores.
    ones = planning_resampled(episodes, np.ones((1, len(episodes)), dtype=np.int64))
    assert_same(score_episodes(episodes), ones, 0)
    # The columns kept on an outcome give the same matrix, and follow its episode list.
    kept = PlanningOutcome("both", {}, {}, episodes=episodes[:-1])
    first = outcome_columns(kept)
    assert outcome_columns(kept) is first and len(first["one"]) == len(episodes) - 1
    kept.episodes.append(episodes[-1])
    counts = counts_from_indices(indices, len(episodes))
    again = planning_resampled(episodes, counts, columns=outcome_columns(kept))
    assert all(np.array_equal(again[k], matrix[k], equal_nan=True) for k in matrix)


# --------------------------------------------------------------------------- awareness


class FlakyEstimator:
    """Raises on every third turn and answers 'impossible' late in a rollout: errors and
    both classes in one cell."""

    name = "flaky"

    def estimate(self, probe: Probe) -> Any:
        if probe.k % 3 == 0:
            raise RuntimeError("model timed out")
        if probe.k > 4:
            return Impossible()
        dims = list(probe.budget)
        return (
            f"<answer>[{10 * probe.k}, {400 + 50 * probe.k}]</answer>"
            if len(dims) == 1
            else ("<answer>" + ", ".join(f"{d}:[0, {probe.budget[d]}]" for d in dims) + "</answer>")
        )


def expanded(results: Sequence[ProbeResult], units: Sequence[str], row: np.ndarray) -> list[Any]:
    """The resampled probe list: copy c of a rollout gets the id ``<id>#c``."""
    by_rollout: dict[str, list[ProbeResult]] = {}
    for result in results:
        by_rollout.setdefault(result.probe.rollout_id, []).append(result)
    out = []
    for copy, unit in enumerate(row.tolist()):
        for result in by_rollout[units[unit]]:
            probe = dataclasses.replace(result.probe, rollout_id=f"{units[unit]}#{copy}")
            out.append(dataclasses.replace(result, probe=probe))
    return out


@pytest.fixture(scope="module")
def rollout_sets() -> dict[str, Any]:
    return {
        env: anyio.run(
            lambda env=env, n=n: generate_env_rollouts(env, n, seed=42, actor=ReferenceActor(42))
        )
        for env, n in (("sokoban-8x8", 12), ("warehouse", 6))
    }


@pytest.mark.parametrize("env", ["sokoban-8x8", "warehouse"])
@pytest.mark.parametrize("estimator", ["random", "linear", "oracle", "flaky"])
def test_awareness_equals_scoring_the_resampled_rollouts(
    rollout_sets: dict[str, Any], env: str, estimator: str
) -> None:
    agent = {
        "random": RandomEstimator(seed=5),
        "linear": LinearEstimator(),
        "oracle": OracleEstimator(),
        "flaky": FlakyEstimator(),
    }[estimator]
    outcome = anyio.run(lambda: run_awareness_cell(rollout_sets[env], agent))
    results = outcome.results
    dims = tuple(results[0].probe.budget)
    units = rollout_units(results)
    indices = resample_indices(len(units), ROWS, seed=3)
    matrix = awareness_resampled(results, dims, counts_from_indices(indices, len(units)), units)
    for row in range(ROWS):
        resampled = expanded(results, units, indices[row])
        expected = score_results(resampled, dims)
        expected["n_errors"] = sum(r.estimate is None for r in resampled)
        assert_same(expected, matrix, row)
    ones = awareness_resampled(results, dims, np.ones((1, len(units)), dtype=np.int64), units)
    assert_same(outcome.scores, ones, 0)


def test_probe_correct_by_hand(rollout_sets: dict[str, Any]) -> None:
    outcome = anyio.run(lambda: run_awareness_cell(rollout_sets["sokoban-8x8"], OracleEstimator()))
    # The oracle is right on every probe; the same probes answered otherwise are not.
    assert all(probe_correct(r) for r in outcome.results)
    feasible = next(r for r in outcome.results if r.truth.feasible)
    infeasible = next(r for r in outcome.results if not r.truth.feasible)
    remaining = feasible.truth.total["tokens"] - feasible.probe.used["tokens"]
    assert not probe_correct(dataclasses.replace(feasible, estimate=Impossible()))
    above = Interval(remaining + 1, remaining + 2)
    assert not probe_correct(dataclasses.replace(feasible, estimate=above))
    assert probe_correct(dataclasses.replace(feasible, estimate=Interval(0, remaining)))
    assert not probe_correct(dataclasses.replace(infeasible, estimate=Interval(0, 10**9)))
    assert not probe_correct(dataclasses.replace(feasible, estimate=None, error="boom"))


# --------------------------------------------------------------------------- triage


def small_pool(n: int, seed: int, values: bool) -> tuple[list[Item], dict[str, Baseline], Plan]:
    rng = np.random.default_rng(seed)
    items = [
        Item(
            id=f"i{j}",
            text="",
            value=float(rng.integers(1, 4)) if values else 1.0,
            unsolvable=bool(rng.random() < 0.3),
        )
        for j in range(n)
    ]
    baselines = {
        item.id: Baseline(solved=bool(rng.random() < 0.7), tokens=int(rng.integers(1, 60)))
        for item in items
    }
    order = rng.permutation(n)[: max(2, 2 * n // 3)]
    # Some allocations below the cost (E scores nothing there), some 0 (not planned).
    entries = tuple(PlanEntry(items[j].id, int(rng.integers(0, 70))) for j in order)
    return items, baselines, Plan(entries=entries)


def resampled_cell(
    items: Sequence[Item], baselines: Mapping[str, Baseline], plan: Plan, row: np.ndarray
) -> tuple[list[Item], dict[str, Baseline], Plan]:
    """Copies of an item become items of their own, next to each other in the plan."""
    copies: dict[str, list[str]] = {}
    pool, truth = [], {}
    for copy, unit in enumerate(sorted(row.tolist())):
        item = items[unit]
        new_id = f"{item.id}#{copy}"
        pool.append(dataclasses.replace(item, id=new_id))
        truth[new_id] = baselines[item.id]
        copies.setdefault(item.id, []).append(new_id)
    entries = tuple(
        PlanEntry(new_id, entry.tokens)
        for entry in plan.entries
        for new_id in copies.get(entry.id, [])
    )
    return pool, truth, Plan(entries=entries)


@pytest.mark.parametrize("values", [False, True], ids=["equal-values", "values"])
@pytest.mark.parametrize("alpha", [0.25, 0.5, 1.0])
def test_triage_equals_scoring_the_resampled_pool(values: bool, alpha: float) -> None:
    # n <= 8: the random reference is exact on both sides, so every score must agree.
    items, baselines, plan = small_pool(7, seed=int(alpha * 100) + values, values=values)
    units = item_units(items, baselines)
    indices = resample_indices(len(units), ROWS, seed=2)
    counts = counts_from_indices(indices, len(units))
    matrix = triage_resampled(plan, units, baselines, alpha, indices, counts, seed=1)
    for row in range(ROWS):
        pool, truth, resampled_plan = resampled_cell(units, baselines, plan, indices[row])
        budget = budget_for([truth[item.id].tokens for item in pool], alpha)
        expected = score_plan(resampled_plan, pool, truth, budget, seed=1).as_scores()
        assert_same(expected, matrix, row)


def test_triage_random_reference_inside_the_bootstrap_is_unbiased() -> None:
    # 12 items: the bootstrap draws orderings; the exact expectation (all 2^12 subsets)
    # of each resampled pool is the reference.
    items, baselines, plan = small_pool(12, seed=4, values=False)
    units = item_units(items, baselines)
    indices = resample_indices(len(units), 10, seed=6)
    counts = counts_from_indices(indices, len(units))
    matrix = triage_resampled(
        plan, units, baselines, 0.5, indices, counts, seed=3, inner_samples=4000
    )
    for row in range(10):
        pool, truth, _ = resampled_cell(units, baselines, plan, indices[row])
        costs = [truth[item.id].tokens for item in pool]
        solved = [truth[item.id].solved and not item.unsolvable for item in pool]
        exact = random_reference(
            costs, solved, None, budget_for(costs, 0.5), seed=0, exact_limit=12
        ).mean
        assert matrix["v_random"][row] == pytest.approx(exact, abs=0.15)


@pytest.mark.parametrize("fraction", [0.0, 0.25], ids=["whole-values", "fractional-values"])
def test_triage_random_values_run_each_ordering_of_each_resample(fraction: float) -> None:
    # 20 items: the orderings are drawn; each resample's value is the mean over the same
    # orderings of the value earned while the running cost fits, computed here one by one.
    # Whole values take the position-by-position path, fractional ones the blockwise one.
    rng = np.random.default_rng(8)
    n, rows, orderings, seed = 20, 15, 30, 5
    costs = rng.integers(1, 50, size=n)
    earn = np.where(rng.random(n) < 0.6, rng.integers(1, 4, size=n) + fraction, 0.0)
    indices = resample_indices(n, rows, seed=9)
    counts = counts_from_indices(indices, n)
    budget = (counts @ costs) // 2
    got = random_values(indices, counts, costs, earn, budget, inner_samples=orderings, seed=seed)
    perms = np.argsort(np.random.default_rng(seed).random((orderings, n)), axis=1, kind="stable")
    for row in range(rows):
        values = []
        for perm in perms:
            spent, earned = 0, 0.0
            for position in perm:
                spent += int(costs[indices[row, position]])
                earned += float(earn[indices[row, position]]) if spent <= budget[row] else 0.0
            values.append(earned)
        if fraction == 0.0:
            assert got[row] == np.mean(values)  # whole numbers: exact
        else:
            assert got[row] == pytest.approx(np.mean(values), rel=1e-12)


def test_triage_shared_work_is_cached_per_pool_not_per_plan() -> None:
    items, baselines, plan = small_pool(30, seed=1, values=False)
    units = item_units(items, baselines)
    indices = resample_indices(len(units), 50, seed=6)
    counts = counts_from_indices(indices, len(units))
    cache: dict[str, Any] = {}
    first = triage_resampled(plan, units, baselines, 0.5, indices, counts, seed=3, cache=cache)
    other = Plan(entries=plan.entries[::-1])
    second = triage_resampled(other, units, baselines, 0.5, indices, counts, seed=3, cache=cache)
    assert len(cache) == 1
    assert np.array_equal(first["v_random"], second["v_random"])
    assert not np.array_equal(first["v_u"], second["v_u"])
    uncached = triage_resampled(other, units, baselines, 0.5, indices, counts, seed=3)
    assert all(np.array_equal(second[k], uncached[k], equal_nan=True) for k in second)


def test_resolve_equals_summarizing_the_resampled_items() -> None:
    records = [(50, 40, True, True), (50, 70, True, False), None, (20, 20, False, True),
               (30, 10, False, False), (10, 11, True, True)]  # fmt: skip
    indices = resample_indices(len(records), ROWS, seed=1)
    matrix = resampled_resolve_scores(records, counts_from_indices(indices, len(records)))
    for row in range(ROWS):
        expected = summarize_records([records[i] for i in indices[row]]).as_scores()
        assert_same(expected, matrix, row)
