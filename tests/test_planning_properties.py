"""Properties of the CostBench environment and the oracle, checked with hypothesis.

Each property is checked against an independent computation: random valid paths (a walk
over tools whose inputs are held), the composition rule recomputed from the atomic chain,
and the oracle's episode scored by the metrics module.
"""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._metrics import score_episodes
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import OracleToolAgent
from pytest_budget.planning._tools import TASKS, atomic_chain, build_tools

tasks = st.sampled_from(TASKS)
levels = st.integers(min_value=0, max_value=5)
query_numbers = st.integers(min_value=1, max_value=500)


@settings(max_examples=60, deadline=None)
@given(tasks, levels, query_numbers, st.booleans(), st.randoms(use_true_random=False))
def test_dijkstra_is_never_above_a_random_valid_path(
    task: str, level: int, number: int, ban_longest: bool, rng: object
) -> None:
    env = TravelEnv(task, level, f"<Query{number:05d}>", ban_longest=ban_longest)
    _, optimum = env.optimal_path()
    state = set(env.initial_state)
    cost = 0.0
    while env.goal not in state:
        usable = [t for t in env.tool_specs if set(t.inputs) <= state and t.output not in state]
        tool = rng.choice(usable)  # type: ignore[attr-defined]
        cost += env.costs[tool.name]
        state.add(tool.output)
    assert optimum <= round(cost, 2) + 1e-9
    greedy_path, greedy_cost = env.greedy_path()
    assert greedy_cost >= optimum - 1e-9 and greedy_path


@settings(max_examples=30, deadline=None)
@given(tasks, levels, st.booleans())
def test_composites_follow_the_union_rule_and_names_are_unique(
    task: str, level: int, ban_longest: bool
) -> None:
    tools = build_tools(task, level, ban_longest=ban_longest)
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    atomics = {t.name: t for t in atomic_chain(task, level)}
    chain = [t.name for t in atomic_chain(task, level)]
    n = len(chain)
    expected_runs = n * (n - 1) // 2 - (1 if ban_longest else 0)
    composites = [t for t in tools if t.is_composite]
    assert len(composites) == expected_runs
    for tool in composites:
        start = chain.index(tool.components[0])
        assert list(tool.components) == chain[start : start + len(tool.components)]
        parts = [atomics[c] for c in tool.components]
        produced = {p.output for p in parts[:-1]}
        needed: list[str] = []
        for part in parts:
            needed += [i for i in part.inputs if i not in produced and i not in needed]
        assert set(tool.inputs) == set(needed)
        assert tool.output == parts[-1].output


@settings(max_examples=25, deadline=None)
@given(tasks, levels, st.integers(min_value=0, max_value=59))
def test_the_oracle_matches_the_ground_truth_exactly(task: str, level: int, index: int) -> None:
    query = generate_queries(task, index + 1)[index]
    episode = anyio.run(lambda: run_episode(query, level, "static", 0, OracleToolAgent()))
    scores = score_episodes([episode])
    assert scores["emr"] == 1.0 and scores["aned"] == 0.0 and scores["cost_gap"] == 0.0
    assert scores["uihr"] == 1.0 and scores["itur"] == 0.0
    _, optimum = TravelEnv(task, level, query.query_id).optimal_path()
    assert sum(call.cost for call in episode.calls) == pytest.approx(optimum)
