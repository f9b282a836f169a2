"""Blocking as CostBench's DynamicBlocker draws it (fact sheet §2), pinned by hand-worked
re-derivations with Python's own ``random`` and ``hashlib``."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import anyio
import pytest

from pytest_budget.planning.agents import GreedyToolAgent, OracleToolAgent
from pytest_budget.planning.blocking import (
    BAN_MESSAGES,
    PREFERENCE_LEAD_INS,
    Blocker,
    block_plan,
    check_mode,
    removal_ranges,
    trigger_step,
)
from pytest_budget.planning.env import TravelEnv
from pytest_budget.planning.episode import run_episode
from pytest_budget.planning.queries import generate_queries, groundtruth_id
from pytest_budget.planning.records import EpisodeRecord

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
    fresh = TravelEnv("dining", 2, QUERY.query_id, seed=int(new_seed))  # type: ignore[call-overload]
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
