"""Blocking as CostBench's DynamicBlocker draws it (fact sheet §2), pinned by hand-worked
re-derivations with Python's own ``random`` and ``hashlib``."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import anyio
import pytest

from pytest_budget.planning._blocking import (
    BAN_MESSAGES,
    PREFERENCE_LEAD_INS,
    Blocker,
    block_plan,
    check_mode,
    removal_ranges,
    trigger_step,
)
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._episode_records import EpisodeRecord
from pytest_budget.planning._metrics import greedy_scores
from pytest_budget.planning._queries import generate_queries, groundtruth_id
from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent

QUERIES = generate_queries("dining", 8)
QUERY = QUERIES[2]


def stable(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % (2**31 - 1)


BASE = stable(f"42:{QUERY.query_id}")


def run(*args: Any, **kwargs: Any) -> EpisodeRecord:
    async def main() -> EpisodeRecord:
        return await run_episode(*args, **kwargs)

    return anyio.run(main)


def test_trigger_formula() -> None:
    # t_b = t_{b-1} + max(1, P_b // (N - b + 1)).
    assert trigger_step(0, 3, 0, 1) == 1  # 3 // 2
    assert trigger_step(0, 4, 0, 1) == 2
    assert trigger_step(0, 2, 0, 3) == 1  # max(1, 2 // 4)
    assert trigger_step(1, 6, 1, 3) == 1 + 6 // 3
    assert trigger_step(5, 0, 2, 3) == 6
    with pytest.raises(ValueError):
        trigger_step(0, 3, 3, 3)


def test_cost_change_seeds_hand_worked() -> None:
    plan = block_plan(QUERY, "cost_change", 3, 2)
    expected = [random.Random(BASE + 100 * b).choice(list(range(1, 10000))) for b in range(3)]
    assert plan == expected


def test_preference_sources_hand_worked() -> None:
    plan = block_plan(QUERY, "preference_change", 2, 2, pool=QUERIES)
    pool = [q for q in QUERIES if q.query_id != QUERY.query_id]  # file order, self excluded
    assert plan == [random.Random(BASE + 100 * b).choice(pool) for b in range(2)]
    # A task with only the query itself falls back to the full same-task list.
    assert block_plan(QUERY, "preference_change", 1, 2, pool=[QUERY]) == [QUERY]


def _pairs(seed: int, lo: int, hi: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    width = min(hi // 2, hi - lo)
    out = []
    for _ in range(count):
        s = rng.randint(lo, hi - width)
        out.append([s, rng.randint(s + width, hi)])
    return out


def test_removal_ranges_hand_worked() -> None:
    # L=2: lo 2, hi 5, width 2; s in {2, 3}, e in [s + 2, 5].
    draws = _pairs(BASE, 2, 5, 300)
    assert all(s in (2, 3) and s + 2 <= e <= 5 for s, e in draws)
    # N = 1: the disjoint branch takes the first pair.
    assert removal_ranges(BASE, 2, 1) == [draws[0]]
    # N = 2 at L = 2: the second range can never be disjoint, so it is draw #102
    # (100 rejected pairs, then the fallback).
    assert removal_ranges(BASE, 2, 2) == [draws[0], draws[101]]
    # N = 3 at L = 2: 2N > hi - 1, the N pairs are taken as drawn.
    assert removal_ranges(BASE, 2, 3) == draws[:3]
    # L = 5, N = 2: hi 8, width 4; the first pair covers at least 5 of 7 values, again no
    # disjoint second range: pair #102.
    wide = _pairs(BASE, 2, 8, 110)
    assert removal_ranges(BASE, 5, 2) == [wide[0], wide[101]]
    # L = 0, N = 2: hi 3, width 1, direct branch.
    assert removal_ranges(BASE, 0, 2) == _pairs(BASE, 2, 3, 2)


def test_removal_removes_the_lower_bound_length_from_the_original_set() -> None:
    (s, _e), *_ = removal_ranges(BASE, 3, 1)
    record = run(QUERY, 3, "remove_tools", 1, OracleToolAgent(), pool=QUERIES)
    (t,) = record.block_steps
    env = TravelEnv("dining", 3, QUERY.query_id)
    blocker = Blocker(env, QUERY, "remove_tools", 1, pool=QUERIES)
    blocker.after_call(blocker.pending_trigger or 0, True)
    removed = {x.name for x in env.all_tool_specs if x.is_composite and len(x.components) == s}
    assert env.removed == removed
    assert all(not x.is_composite or len(x.components) != s for x in env.tool_specs)
    assert t == trigger_step(0, len(env.solve(env.initial_state, use_bans=False)[0]), 0, 1)  # type: ignore[index]


def test_cost_change_regenerates_every_cost_from_the_drawn_seed() -> None:
    (new_seed,) = block_plan(QUERY, "cost_change", 1, 2)
    record = run(QUERY, 2, "cost_change", 1, OracleToolAgent(), pool=QUERIES)
    # The drawn seed is the query's own cost seed (fact sheet §2.4), not a global seed.
    fresh = TravelEnv("dining", 2, QUERY.query_id)
    fresh.reseed_costs(int(new_seed))  # type: ignore[call-overload]
    assert fresh.costs != TravelEnv("dining", 2, QUERY.query_id, seed=int(new_seed)).costs  # type: ignore[call-overload]
    first, second = record.segments
    # The second segment is solved under the new costs, from the snapshot.
    assert sum(fresh.costs[n] for n in second.optimal_paths[0]) == pytest.approx(
        second.optimal_cost
    )
    assert record.block_steps == (
        trigger_step(0, len(TravelEnv("dining", 2, QUERY.query_id).optimal_path()[0]), 0, 1),
    )
    assert first.optimal_paths[0] == tuple(
        TravelEnv("dining", 2, QUERY.query_id).optimal_path()[0][: record.block_steps[0]]
    )


def test_preference_change_message_source_and_reset() -> None:
    (source,) = block_plan(QUERY, "preference_change", 1, 2, pool=QUERIES)
    record = run(QUERY, 2, "preference_change", 1, OracleToolAgent(), pool=QUERIES)
    (t,) = record.block_steps
    lead = random.Random(stable(f"42:{t}:preference_change_message")).choice(PREFERENCE_LEAD_INS)
    agent_msgs: list[Any] = []

    class Watch(OracleToolAgent):
        def act(self, observation: Any) -> Any:
            agent_msgs.append(observation.messages)
            return super().act(observation)

    run(QUERY, 2, "preference_change", 1, Watch(), pool=QUERIES)
    user = [m for m in agent_msgs[-1] if m["role"] == "user"][-1]["content"]
    assert user.startswith(lead)
    assert f"This time I want to go to {source.location_preference}.{source.user_requirements}" in (
        user
    )
    assert user.endswith("The time I gave before (TimeInfo) stays the same.")
    # The answer to reach is now the source's groundtruth, and the oracle reaches it.
    digits = groundtruth_id("dining", source.preferences, source.location_preference)[-6:-1]
    assert record.expected_answer[-6:-1] == digits == record.answer
    # The ground truth after a preference change restarts from the initial state: S_1 = S_0.
    _first, second = record.segments
    assert second.optimal_paths[0] == tuple(
        TravelEnv("dining", 2, QUERY.query_id).optimal_path()[0]
    )


def test_ban_hand_worked() -> None:
    env = TravelEnv("dining", 2, QUERY.query_id)
    truth, _ = env.optimal_path()
    record = run(QUERY, 2, "ban_tool", 1, GreedyToolAgent(), pool=QUERIES)
    (t,) = record.block_steps
    assert t == max(1, len(truth) // 2)
    banned = record.calls[t - 1]
    assert (banned.ok, banned.error_kind) == (False, "banned")
    assert banned.cost == env.costs[banned.name]  # charged
    # The ground truth bans its own tool at that step and re-solves from its snapshot.
    first, second = record.segments
    assert first.optimal_paths[0] == tuple(truth[:t])
    assert truth[t - 1] not in second.optimal_paths[0]


def test_ban_message_at_the_trigger_and_later() -> None:
    (t,) = run(QUERY, 2, "ban_tool", 1, GreedyToolAgent(), pool=QUERIES).block_steps
    seen: list[Any] = []

    class Again(GreedyToolAgent):
        def act(self, observation: Any) -> Any:
            seen.append(observation.messages)
            if len(seen) == t + 1:  # call the banned tool once more
                last = observation.messages[-2]["tool_calls"][0]
                return {"content": None, "tool_calls": [last]}
            return super().act(observation)

    record = run(QUERY, 2, "ban_tool", 1, Again(), pool=QUERIES)
    assert record.block_steps == (t,)
    at_trigger = seen[t][-1]["content"]
    pick = random.Random(stable(f"42:{t}:ban_tool_message")).choice(BAN_MESSAGES)
    assert at_trigger.startswith(pick) and at_trigger.startswith("[ERROR]")
    later = seen[t + 1][-1]["content"]
    assert later.startswith(random.Random(BASE).choice(BAN_MESSAGES))
    assert [c.error_kind for c in record.calls[t - 1 : t + 1]] == ["banned", "banned"]


@pytest.mark.parametrize("mode", ["ban_tool", "preference_change", "cost_change", "remove_tools"])
@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("level", [0, 2, 5])
def test_every_mode_count_and_level_runs(mode: str, count: int, level: int) -> None:
    for agent in (OracleToolAgent(), GreedyToolAgent()):
        record = run(QUERY, level, mode, count, agent, pool=QUERIES)
        assert record.error is None
        steps = list(record.block_steps)
        assert steps == sorted(steps) and len(set(steps)) == len(steps)
        assert len(record.segments) == len(steps) + 1


def test_check_mode() -> None:
    check_mode("static", 0)
    with pytest.raises(ValueError, match="unknown mode"):
        check_mode("mixed", 1)
    with pytest.raises(ValueError, match=r"1\.\.3"):
        check_mode("ban_tool", 4)


# ------------------------------------------------------------------ greedy replay (§5.4)
LOCATIONS = generate_queries("location", 8)
PS, FS = "Location_Preference_and_Search", "Location_Finalize_from_Search"
D, S, SEL = "Decide_Location_Preference", "Search_Location_Candidates", "Select_Final_Location"
# L=0, hand-set costs: greedy scores D 20, S 18, Sel 25, PS 30/2 = 15, FS 40/2 = 20.
# Ground truth from the start: [PS, Sel] (55) against [D, FS] (60) and [D, S, Sel] (63).
L0_COSTS = {D: 20.0, S: 18.0, SEL: 25.0, PS: 30.0, FS: 40.0}


def hand_env(query: Any, level: int, costs: dict[str, float]) -> TravelEnv:
    env = TravelEnv("location", level, query.query_id)
    assert set(env.costs) == set(costs)
    env.costs.update(costs)
    return env


def blocked(query: Any, level: int, costs: dict[str, float], mode: str, n: int) -> Any:
    env = hand_env(query, level, costs)
    record = run(query, level, mode, n, GreedyToolAgent(), env=env, pool=LOCATIONS)
    return record


def greedy_of(record: EpisodeRecord) -> tuple[tuple[str, ...], float, bool]:
    path = tuple(n for seg in record.segments for n in seg.greedy_path)
    cost = sum(seg.greedy_cost for seg in record.segments)
    return path, cost, record.segments[-1].greedy_reached


def test_greedy_replays_a_ban_hand_worked() -> None:
    query = LOCATIONS[0]
    record = blocked(query, 0, L0_COSTS, "ban_tool", 1)
    # t0 = max(1, 2 // 2) = 1: the agent's PS is banned at turn 1.
    assert record.block_steps == (1,)
    # Ground truth: S0[:1] = [PS], then (PS banned) [D, FS] = 60 from the start.
    assert [s.optimal_paths[0] for s in record.segments] == [(PS,), (D, FS)]
    # Greedy: step 1 PS is banned (charged 30, kept on the path, no state change); step 2
    # D (20); step 3 S (18) beats FS (20 per component); step 4 Sel (25).
    assert greedy_of(record) == ((PS, D, S, SEL), 93.0, True)
    row = greedy_scores([record])
    # ED([PS, D, S, Sel], [PS, D, FS]) = 2, NED 2/4; gap 93 - (30 + 60).
    assert (row["aed"], row["aned"], row["emr"]) == (2.0, 0.5, 0.0)
    assert row["cost_gap"] == pytest.approx(3.0)


def test_greedy_replays_two_bans_and_misses_the_goal() -> None:
    record = blocked(LOCATIONS[0], 0, L0_COSTS, "ban_tool", 2)
    # t0 = max(1, 2 // 3) = 1 (PS), t1 = 1 + max(1, len([D, FS]) // 2) = 2 (D).
    assert record.block_steps == (1, 2)
    # Greedy: PS banned at step 1, D banned at step 2, then nothing qualifies.
    assert greedy_of(record) == ((PS, D), 50.0, False)
    row = greedy_scores([record])
    # The ground truth is [PS] + [D] + [] (nothing reachable after both bans): ED raw 0,
    # but NED forced to 1 and no exact match because the greedy missed the goal.
    assert (row["aed"], row["aned"], row["emr"]) == (0.0, 1.0, 0.0)


def test_greedy_replays_a_preference_change_hand_worked() -> None:
    record = blocked(LOCATIONS[0], 0, L0_COSTS, "preference_change", 1)
    assert record.block_steps == (1,)
    # Step 1 PS (30), then the reset: PS again (30) and Sel (25).
    assert greedy_of(record) == ((PS, PS, SEL), 85.0, True)
    # The ground truth restarts from the initial state too: [PS] + [PS, Sel].
    assert greedy_scores([record])["emr"] == 1.0


def test_greedy_cost_change_at_turn_1_switches_to_the_new_costs() -> None:
    query = LOCATIONS[0]
    (new_seed,) = block_plan(query, "cost_change", 1, 0, pool=LOCATIONS)
    record = blocked(query, 0, L0_COSTS, "cost_change", 1)
    assert record.block_steps == (1,)
    new = TravelEnv("location", 0, query.query_id)
    new.reseed_costs(int(new_seed))  # type: ignore[call-overload]
    # Step 1 PS at the old 30; then only Select consumes the raw set, at its new cost.
    path, cost, reached = greedy_of(record)
    assert (path, reached) == ((PS, SEL), True)
    assert cost == 30.0 + new.costs[SEL]


def test_greedy_cost_change_at_turn_2_keeps_the_old_costs_as_coded() -> None:
    # L=1, atomics 10, composites 100: the ground truth is the 4 atomics, t0 = 4 // 2 = 2.
    env = TravelEnv("location", 1, LOCATIONS[1].query_id)
    costs = {t.name: (100.0 if t.is_composite else 10.0) for t in env.all_tool_specs}
    record = blocked(LOCATIONS[1], 1, costs, "cost_change", 1)
    assert record.block_steps == (2,)
    # The 1st cost change switches to "the costs after the agent's 1st tool turn": still
    # the old ones (the change fired at turn 2), so the greedy pays 4 x 10 exactly.
    path, cost, reached = greedy_of(record)
    assert path == (D, S, "Location_Refinement_Step1", SEL) and reached
    assert cost == 40.0


def test_greedy_removal_removes_lengths_outside_the_range() -> None:
    # A query whose range at L=2 is [3, 5]: the blocker removes the 3-component composites
    # (the lower bound), the greedy every composite whose length is outside [3, 5].
    query = next(
        q for q in LOCATIONS if removal_ranges(stable(f"42:{q.query_id}"), 2, 1) == [[3, 5]]
    )
    env = TravelEnv("location", 2, query.query_id)
    price = {1: 10.0, 2: 16.0, 3: 60.0, 4: 80.0}
    costs = {t.name: price[len(t.components)] for t in env.all_tool_specs}
    record = blocked(query, 2, costs, "remove_tools", 1)
    # Ground truth: 2 pairs + 1 atomic (42, 3 calls): t0 = 3 // 2 = 1.
    assert record.block_steps == (1,)
    # Greedy: PS (8 per component), then the pairs are gone: Step1, Step2, Sel at 10 each.
    # (Removing only the 3-component tools would let it take Refine_to_Step2: 42, 3 calls.)
    path, cost, reached = greedy_of(record)
    assert path == (PS, "Location_Refinement_Step1", "Location_Refinement_Step2", SEL)
    assert (cost, reached) == (46.0, True)


def test_greedy_without_fired_blocks_is_the_static_greedy() -> None:
    class Silent:
        def act(self, observation: Any) -> Any:
            return {"content": "no"}

    env = hand_env(LOCATIONS[0], 0, L0_COSTS)
    record = run(LOCATIONS[0], 0, "ban_tool", 1, Silent(), env=env, pool=LOCATIONS)
    assert record.block_steps == ()
    assert greedy_of(record) == ((PS, SEL), 55.0, True)
