"""The per-process memos and cheap copies behind the offline speed (issue 21 item 7).

Each memo must give exactly what a fresh computation gives: tool specs after a cost change,
a tool removal or an in-place cost edit; ground truths never shared between tasks, levels,
seeds or tool sets; costs and tool lists handed out as fresh objects; observations copied
lazily but with the same contents as an eager deep copy; the triage oracle over whole values
equal to the per-resample solver.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import anyio
import numpy as np
import pytest

from pytest_budget._run import distribute
from pytest_budget._run.options import BudgetOptions
from pytest_budget._stats.bootstrap import counts_from_indices, resample_indices
from pytest_budget.awareness._options import AwarenessOptions
from pytest_budget.planning import _costs as costs_module
from pytest_budget.planning import _ground_truth as ground_truth
from pytest_budget.planning import _tool_specs as tool_specs
from pytest_budget.planning._costs import query_seed, tool_costs
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import ToolAgentObservation, run_episode
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent
from pytest_budget.planning._tool_specs import copy_json
from pytest_budget.planning._tools import TASKS, atomic_chain, build_tools
from pytest_budget.report._document import finite_cell
from pytest_budget.triage import _intervals as intervals
from pytest_budget.triage._scoring import oracle_value


def _fresh_tools(env: TravelEnv) -> list[dict[str, Any]]:
    """The tool list built from nothing: every memo emptied first."""
    tool_specs._SPEC_MEMO.clear()
    tool_specs._properties.cache_clear()
    return env.tools


# ---------------------------------------------------------------- tool specs


def test_tool_specs_follow_cost_changes_and_removals() -> None:
    env = TravelEnv("dining", 3, "<Query00007>")
    before = env.tools
    env.reseed_costs(query_seed("<Query00007>", 1234))
    after = env.tools
    assert after != before
    assert after == _fresh_tools(TravelEnv("dining", 3, "<Query00007>", seed=1234))
    for spec in after:
        name = spec["function"]["name"]
        assert f"costs {env.costs[name]} units" in spec["function"]["description"]
    env.remove_composites(2)
    removed = env.tools
    assert [s["function"]["name"] for s in removed] == [t.name for t in env.tool_specs]
    assert not any(len(t.components) == 2 for t in env.tool_specs)
    assert removed == _fresh_tools(env)


def test_an_in_place_cost_edit_shows_with_its_own_type() -> None:
    env = TravelEnv("shopping", 1, "<Query00001>")
    name = atomic_chain("shopping", 1)[0].name
    env.costs[name] = 17.0
    assert "costs 17.0 units" in env.tools[0]["function"]["description"]
    env.costs[name] = 17  # equal to 17.0 as a key, but it reads "17"
    assert "costs 17 units" in env.tools[0]["function"]["description"]


def test_tool_lists_handed_out_are_fresh() -> None:
    env = TravelEnv("location", 2, "<Query00003>")
    first = env.tools
    first[0]["function"]["parameters"]["properties"].clear()
    first[0]["function"]["name"] = "vandalised"
    assert env.tools == _fresh_tools(env)
    assert env.tools[0]["function"]["name"] == atomic_chain("location", 2)[0].name


def test_tools_and_chains_are_fresh_lists_and_bad_levels_still_fail() -> None:
    tools = build_tools("dining", 2)
    tools.clear()
    assert len(build_tools("dining", 2)) == 5 + 4 + 3 + 2  # ban_longest drops the 5-run
    chain = atomic_chain("dining", 2)
    chain.pop()
    assert len(atomic_chain("dining", 2)) == 5
    atomic_chain("dining", 1)  # an int level is cached ...
    with pytest.raises(TypeError):
        atomic_chain("dining", True)  # ... and True (== 1) still fails
    with pytest.raises(TypeError):
        build_tools("dining", True)
    with pytest.raises(ValueError, match="unknown task"):
        build_tools("diving", 1)


# ---------------------------------------------------------------- costs


def test_costs_memo_equals_the_computation_and_hands_out_fresh_dicts() -> None:
    tools = build_tools("attraction", 4)
    seed_q = query_seed("<Query00042>", 42)
    first = tool_costs(tools, seed_q, 4)
    first[tools[0].name] = -1.0
    again = tool_costs(tools, seed_q, 4)
    assert again == costs_module._tool_costs(tuple(tools), seed_q, 4, (15, 25), 0.1)
    assert again[tools[0].name] != -1.0
    # Another seed, level or noise never reads the same entry.
    assert tool_costs(tools, seed_q + 1, 4) != again
    assert tool_costs(tools, seed_q, 4, noise_std=0.5) != again
    level3 = build_tools("attraction", 3)
    assert tool_costs(level3, seed_q, 3) == costs_module._tool_costs(
        tuple(level3), seed_q, 3, (15, 25), 0.1
    )


# ---------------------------------------------------------------- ground truth


def test_ground_truth_memo_matches_a_fresh_search_in_every_setting() -> None:
    envs = []
    for task in TASKS:
        for level in (0, 2, 5):
            for seed in (42, 7):
                env = TravelEnv(task, level, "<Query00005>", seed=seed)
                envs.append(env)
    banned = TravelEnv("dining", 5, "<Query00005>")
    banned.ban(banned.optimal_path()[0][0])
    removed = TravelEnv("dining", 5, "<Query00005>")
    removed.remove_composites(3)
    envs += [banned, removed]
    for _ in range(2):  # the second round reads the memo
        for env in envs:
            usable = tuple(env._plannable)
            prices = tuple(env.costs[t.name] for t in usable)
            expected = ground_truth.dijkstra(env.goal, env.initial_state, usable, prices)
            solved = env.solve()
            assert solved is not None and expected is not None
            assert (tuple(solved[0]), solved[1]) == expected


def test_ground_truth_memo_keeps_levels_apart_even_with_the_same_tool_names() -> None:
    # Select_Final_Dining exists at every level with another input: names alone do not
    # identify a tool, so the level is part of the key.
    low = TravelEnv("dining", 2, "<Query00001>")
    names = {t.name for t in low.all_tool_specs}
    high = TravelEnv("dining", 5, "<Query00001>")
    same_names = tuple(t for t in high.all_tool_specs if t.name in names)
    low_tools = tuple(t for t in low.all_tool_specs if t.name in {t.name for t in same_names})
    assert [t.name for t in low_tools] == [t.name for t in same_names]
    prices = tuple(low.costs[t.name] for t in low_tools)
    start = low.initial_state
    ground_truth._SOLVE_MEMO.clear()
    reached = ground_truth.cheapest_path(low.goal, 2, start, low_tools, prices)
    assert reached is not None
    # At level 5 these tools stop at L2: Select_Final needs the L5 output.
    assert ground_truth.cheapest_path(high.goal, 5, start, same_names, prices) is None


def test_each_agent_gets_the_same_ground_truth_as_alone() -> None:
    query = generate_queries("accommodation", 3)[2]

    async def episode(agent: object) -> Any:
        return await run_episode(query, 5, "cost_change", 1, agent)

    ground_truth._SOLVE_MEMO.clear()
    alone = anyio.run(episode, OracleToolAgent())
    anyio.run(episode, GreedyToolAgent())  # fills the memo for the same query and scenario
    shared = anyio.run(episode, OracleToolAgent())
    assert shared == alone
    fresh = ground_truth.dijkstra(
        "TravelAccommodation",
        TravelEnv("accommodation", 5, query.query_id).initial_state,
        tuple(TravelEnv("accommodation", 5, query.query_id).all_tool_specs),
        tuple(TravelEnv("accommodation", 5, query.query_id).costs.values()),
    )
    assert fresh is not None
    first = shared.segments[0].optimal_paths[0]
    assert first and fresh[0][: len(first)] == first  # segment 0: the head of the search


# ---------------------------------------------------------------- observations


class _Keeper:
    """Keeps every observation, reads nothing until asked, and vandalises what it reads."""

    wants_reference = True

    def __init__(self) -> None:
        self.seen: list[ToolAgentObservation] = []
        self.oracle = OracleToolAgent()

    def act(self, observation: ToolAgentObservation) -> Any:
        self.seen.append(observation)
        return self.oracle.act(observation)


def test_observations_are_copied_when_read_with_their_own_turns_contents() -> None:
    query = generate_queries("dining", 1)[0]
    keeper = _Keeper()
    keeper.wants_optimal_next = True  # type: ignore[attr-defined]
    record = anyio.run(lambda: run_episode(query, 2, "remove_tools", 1, keeper))
    first, last = keeper.seen[0], keeper.seen[-1]
    # Read after the episode: each still shows its own turn.
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert len(last.messages) == 2 + 2 * (len(keeper.seen) - 1)
    fresh = TravelEnv("dining", 2, query.query_id)
    assert first.tools == fresh.tools
    assert len(last.tools) < len(first.tools)  # the removal shows in later turns only
    # A read gives the same object twice, and editing it touches nothing else.
    assert first.messages is first.messages
    second_tools = copy.deepcopy(keeper.seen[1].tools)
    first.messages[0]["content"] = "edited"
    first.tools[0]["function"]["name"] = "edited"
    first.tools.clear()
    assert keeper.seen[1].messages[0]["content"] != "edited"
    assert keeper.seen[1].tools == second_tools
    assert keeper.seen[2].tools[0]["function"]["name"] == fresh.tools[0]["function"]["name"]
    with pytest.raises(AttributeError):
        first.messages = []  # type: ignore[misc]
    assert record.answer is not None and record.answer in record.expected_answer


def test_a_vandal_agent_changes_nothing_in_the_run() -> None:
    query = generate_queries("transportation", 2)[1]

    class Vandal(OracleToolAgent):
        def act(self, observation: ToolAgentObservation) -> Any:
            reply = super().act(observation)
            for message in observation.messages:
                message["content"] = "<answer> <TransportationCandidate99999> </answer>"
            for spec in observation.tools:
                spec["function"]["name"] = "gone"
            observation.messages.clear()
            return reply

    async def both() -> tuple[Any, Any]:
        plain = await run_episode(query, 5, "ban_tool", 1, OracleToolAgent())
        vandal = await run_episode(query, 5, "ban_tool", 1, Vandal())
        return plain, vandal

    plain, vandal = anyio.run(both)
    assert vandal == plain


def test_copy_json_is_a_deep_copy() -> None:
    class Box:
        def __init__(self) -> None:
            self.items = [1]

    data: dict[str, Any] = {
        "a": [{"b": "x", "c": [1, 2.5, None, True]}, "s"],
        "box": Box(),
        "t": (1, [2]),
    }
    copied = copy_json(data)
    assert copied["a"] == data["a"] and copied["t"] == data["t"]
    assert copied["a"][0] is not data["a"][0] and copied["a"][0]["c"] is not data["a"][0]["c"]
    assert copied["box"] is not data["box"] and copied["box"].items == [1]
    assert copied["t"][1] is not data["t"][1]  # a tuple is deep-copied as deepcopy does
    assert copy.deepcopy(data)["a"] == copied["a"]


# ---------------------------------------------------------------- report


def test_report_cleaning_finds_every_non_finite_number_with_its_path() -> None:
    cell = {
        "scores": {"a": 1.0, "b": math.inf, "nested": [1, {"c": -math.inf}, [math.nan]]},
        "ok": [1, 2.5, "x", None, True],
    }
    out = finite_cell(cell)
    assert out["scores"] == {"a": 1.0, "b": None, "nested": [1, {"c": None}, [None]]}
    assert out["ok"] == [1, 2.5, "x", None, True]
    assert set(out["notes"]) == {"b", "nested[1].c", "nested[2][0]"}
    assert "inf" in out["notes"]["b"] and "nan" in out["notes"]["nested[2][0]"]


# ---------------------------------------------------------------- triage oracle


@pytest.mark.parametrize("trial", range(12))
def test_whole_value_oracle_equals_the_per_resample_solver(trial: int) -> None:
    rng = np.random.default_rng(trial)
    n = int(rng.integers(1, 35))
    costs = rng.integers(0 if trial % 3 == 0 else 1, 3000, size=n).astype(np.int64)
    solved = rng.random(n) < 0.7
    values = rng.choice([1.0, 2.0, 3.0, 5.0, 8.0, 40.0], size=n)
    indices = resample_indices(n, 200, trial)
    counts = counts_from_indices(indices, n)
    alpha = [0.05, 0.25, 0.5, 0.75, 1.0, 0.33][trial % 6]
    budget = np.floor(alpha * (counts @ costs).astype(np.float64) + 1e-9).astype(np.int64)
    fast = intervals._integer_oracle_values(counts, costs, solved & (values > 0), values, budget)
    assert fast is not None
    slow = [
        oracle_value(costs[row], solved[row], values[row], int(limit)).value
        for row, limit in zip(indices, budget, strict=True)
    ]
    assert fast.tolist() == slow
    assert intervals._oracle_values(indices, counts, costs, solved, values, budget).tolist() == slow


def test_fractional_values_keep_the_per_resample_solver() -> None:
    costs = np.array([10, 20, 30], dtype=np.int64)
    solved = np.array([True, True, True])
    values = np.array([0.5, 1.0, 2.0])
    indices = resample_indices(3, 50, 1)
    counts = counts_from_indices(indices, 3)
    budget = np.full(50, 35, dtype=np.int64)
    assert intervals._integer_oracle_values(counts, costs, solved, values, budget) is None
    expected = [oracle_value(costs[r], solved[r], values[r], 35).value for r in indices]
    assert intervals._oracle_values(indices, counts, costs, solved, values, budget).tolist() == (
        expected
    )


# ---------------------------------------------------------------- xdist groups


def test_groups_of_the_suites_cells() -> None:
    envs = ("sokoban-8x8", "sokoban-6x6", "warehouse", "search", "swe-synthetic")
    suites = "pytest_budget/suites/"
    cases = {
        f"{suites}test_triage.py::test_triage[arith-u0.5-a0.25-A-cheapest-first]": (
            "triage:arith-u0.5"
        ),
        f"{suites}test_triage.py::test_triage[arith-u0.5-a1-A-oracle]": "triage:arith-u0.5",
        f"{suites}test_triage.py::test_triage[sokoban-u0-a1-A-oracle]": "triage:sokoban-u0",
        f"{suites}test_planning.py::test_planning[dining-static-L2-greedy]": "planning:dining-L2",
        f"{suites}test_planning.py::test_planning[shopping-ban_tool1-L5-random-valid]": (
            "planning:shopping-L5"
        ),
        f"{suites}test_planning.py::test_planning[shopping-cost_change1-L5-oracle]": (
            "planning:shopping-L5"
        ),
        f"{suites}test_awareness.py::test_awareness[sokoban-8x8-linear-knows-T]": (
            "awareness:sokoban-8x8"
        ),
        f"{suites}test_awareness.py::test_awareness[search-oracle]": "awareness:search",
    }
    options = BudgetOptions(per_suite={"awareness": AwarenessOptions(envs=envs)})
    for nodeid, group in cases.items():
        assert distribute.group_of(nodeid, options) == group, nodeid
    # Anything else is a group of one: the user's own tests, unknown envs, other suites.
    for nodeid in (
        "tests/test_mine.py::test_planning[dining-static-L2-greedy]",
        f"{suites}test_awareness.py::test_awareness[my-env-oracle]",
        f"{suites}test_triage_resolve.py::test_triage_resolve[arith-u0-a0.5-A-oracle]",
        f"{suites}test_planning.py::test_planning",
    ):
        assert distribute.group_of(nodeid, options) == nodeid


def test_n2_runs_each_group_on_one_worker(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--budget-suite=planning",
        "--budget-task=dining,shopping",
        "--budget-query-count=3",
        "--budget-scenario=static@1,cost_change:1@2",
        "--budget-gate=off",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "-v",
    )
    result.assert_outcomes(passed=16)
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        found = re.search(r"\[(gw\d)\].*test_planning\[(\w+)-.*-L(\d)-", line)
        if found:
            workers.setdefault(f"{found[2]}-L{found[3]}", set()).add(found[1])
    assert sorted(workers) == ["dining-L1", "dining-L2", "shopping-L1", "shopping-L2"]
    assert all(len(on) == 1 for on in workers.values()), workers
    assert len(set().union(*workers.values())) == 2  # both workers had work

    explicit = pytester.runpytest_subprocess(
        "--budget-suite=planning",
        "--budget-task=dining",
        "--budget-query-count=3",
        "--budget-scenario=static@1",
        "--budget-gate=off",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--dist",
        "load",
        "-v",
    )
    explicit.assert_outcomes(passed=4)
    on = {m[1] for m in (re.search(r"\[(gw\d)\]", x) for x in explicit.outlines) if m}
    assert on == {"gw0", "gw1"}  # plain load: the agents of the cell alternate
