"""Blocking events (pytest_budget.planning.blocking): schedule, effects, seeds, solvability."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.planning.blocking import (
    BLOCK_MODES,
    Blocker,
    ban_tolerance,
    block_seed,
    check_mode,
    simulate_reference,
    trigger_step,
)
from pytest_budget.planning.env import TravelEnv, expected_answer, fill_arguments
from pytest_budget.planning.records import Query
from pytest_budget.planning.tools import DIMENSIONS, PREFERENCE_VALUES, TASKS, atomic_chain


def make_query(task: str, i: int = 1) -> Query:
    values = PREFERENCE_VALUES[task]
    prefs = {d: values[d][(i + k) % 4] for k, d in enumerate(DIMENSIONS)}
    location = None if task == "location" else "Lisbon"
    return Query(f"<Query{i:05d}>", task, prefs, "2025-06-01 to 2025-06-04", location, "A trip.")


def _sha_seed(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % (2**31 - 1)


def flat_env(task: str = "dining", level: int = 5, query_id: str = "<Query00001>") -> TravelEnv:
    """Atomics cost 10, a composite of k parts 10k + 5: the atomic chain is optimal."""
    env = TravelEnv(task, level, query_id)
    for tool in env.all_tool_specs:
        env.costs[tool.name] = 10.0 * len(tool.components) + (5 if tool.is_composite else 0)
    return env


# ---------------------------------------------------------------- trigger arithmetic


@pytest.mark.parametrize(
    ("current", "length", "index", "count", "expected"),
    [
        (0, 8, 0, 1, 4),  # one block: the middle of the path
        (0, 8, 0, 3, 2),  # 8 // 4
        (2, 6, 1, 3, 4),  # 2 + 6 // 3
        (4, 4, 2, 3, 6),  # 4 + 4 // 2
        (0, 1, 0, 1, 1),  # 1 // 2 == 0, raised to s + 1
        (3, 2, 0, 2, 4),  # 2 // 3 == 0, raised to s + 1
        (5, 7, 1, 2, 8),  # 5 + 7 // 2
    ],
)
def test_trigger_step_hand_worked(
    current: int, length: int, index: int, count: int, expected: int
) -> None:
    assert trigger_step(current, length, index, count) == expected


def test_trigger_step_rejects_bad_index() -> None:
    with pytest.raises(ValueError, match="block_index"):
        trigger_step(0, 5, 3, 3)


def test_check_mode() -> None:
    check_mode("static", 0)
    for mode in BLOCK_MODES:
        for n in (1, 2, 3):
            check_mode(mode, n)
    with pytest.raises(ValueError, match="unknown mode"):
        check_mode("earthquake", 1)
    with pytest.raises(ValueError, match="static"):
        check_mode("static", 1)
    with pytest.raises(ValueError, match=r"1\.\.3"):
        check_mode("cost_change", 4)
    with pytest.raises(ValueError, match=r"1\.\.3"):
        check_mode("ban_tool", 0)
    with pytest.raises(TypeError):
        check_mode("ban_tool", True)


def test_ban_schedule_hand_worked() -> None:
    """L=5, atomic chain optimal (8 calls), three bans.

    Block 0: 0 + 8 // 4 = step 2 -> Search banned (Decide done).  Re-plan: Search must now be
    covered by one composite (+5); ties on cost go to fewer calls -> Search_to_Final_7Steps
    (L=1).  Block 1: 2 + max(1, 1 // 3) = step 3 -> banned.  Re-plan: Search_Planning_to_Step5
    + Select (L=2).  Block 2: 3 + 2 // 2 = step 4 -> banned.  Re-plan: Search_Planning_to_Step4,
    Step5, Select.  Cost: 10 + 10 + 75 + 65 (banned, still charged) + 55 + 10 + 10 = 235.
    """
    run = simulate_reference(make_query("dining"), 5, "ban_tool", 3, env=flat_env())
    assert run.path == (
        "Decide_Dining_Preference",
        "Search_Dining_Candidates",
        "Dining_Search_to_Final_7Steps",
        "Dining_Search_Planning_to_Step5",
        "Dining_Search_Planning_to_Step4",
        "Dining_Refinement_Step5",
        "Select_Final_Dining",
    )
    assert run.ok == (True, False, False, False, True, True, True)
    assert run.cost == 235.0
    assert [e.step for e in run.events] == [2, 3, 4]
    assert [s.start_step for s in run.segments] == [1, 3, 4, 5]
    assert [s.event for s in run.segments] == [None, "ban_tool", "ban_tool", "ban_tool"]
    # Each closed segment keeps the stretch it covered; its cost adds the banned call's charge.
    assert [s.optimal_paths for s in run.segments] == [
        (("Decide_Dining_Preference",),),
        ((),),
        ((),),
        (("Dining_Search_Planning_to_Step4", "Dining_Refinement_Step5", "Select_Final_Dining"),),
    ]
    assert [s.optimal_cost for s in run.segments] == [20.0, 75.0, 65.0, 75.0]
    assert sum(s.optimal_cost for s in run.segments) == run.cost
    # Greedy relaxed on the first step after an event: 85 / 8 per component beats 75 / 7; the
    # ban takes the call greedy would make, so that is what the stretch charges it.
    assert run.segments[1].greedy_path == ()
    assert run.segments[1].greedy_cost == 85.0
    assert run.segments[3].greedy_path == ("Dining_Complete_8Steps_Pipeline",)
    assert (run.blocks_applied, run.blocks_dropped) == (3, 0)
    assert run.answer == run.expected_answer


def test_cost_change_schedule_hand_worked() -> None:
    """One cost change with an 8-call optimal path lands after step 8 // 2 = 4."""
    query = make_query("dining")
    run = simulate_reference(query, 5, "cost_change", 1, env=flat_env())
    assert [e.step for e in run.events] == [4]
    assert [s.start_step for s in run.segments] == [1, 5]
    assert run.path[:4] == tuple(t.name for t in atomic_chain("dining", 5)[:4])
    # The new costs are those of seed g drawn from the block seed (an independent re-derivation).
    seed_q = _sha_seed(f"42:{query.query_id}")
    g = random.Random(_sha_seed(f"{seed_q}:block:0")).randrange(1, 10000)
    assert run.events[0].detail == f"costs regenerated from seed {g}"
    fresh = TravelEnv("dining", 5, query.query_id, seed=g)
    chain = atomic_chain("dining", 5)
    state = fresh.initial_state | {t.output for t in chain[:4]}
    paths, cost = fresh.optimal_paths(state)
    assert run.segments[0].optimal_paths == (tuple(t.name for t in chain[:4]),)
    assert run.segments[0].optimal_cost == 40.0
    assert run.segments[1].optimal_paths == tuple(tuple(p) for p in paths)
    assert run.segments[1].optimal_cost == cost
    assert run.path[4:] == tuple(paths[0])
    assert run.cost == pytest.approx(40.0 + cost)


def test_block_seed_is_sha256_of_query_seed_and_index() -> None:
    assert block_seed(123, 0) == _sha_seed("123:block:0")
    assert block_seed(123, 2) == _sha_seed("123:block:2")
    assert len({block_seed(123, i) for i in range(3)}) == 3


def test_ban_tolerance_values() -> None:
    assert [ban_tolerance(level) for level in range(6)] == [2, 3, 4, 5, 6, 7]
    assert [ban_tolerance(level, True) for level in range(6)] == [1, 2, 3, 4, 5, 6]


# ---------------------------------------------------------------- effects of each mode


def _drive(
    env: TravelEnv, blocker: Blocker, names: list[str], ids: dict[str, str] | None = None
) -> list[tuple[bool, float]]:
    """Call ``names`` in order with correct arguments, driving the blocker."""
    ids = {} if ids is None else ids
    out = []
    for step, name in enumerate(names, 1):
        tool = next(t for t in env.tool_specs if t.name == name)
        blocker.before_call(step, name)
        result = env.step_detailed(
            {"name": name, "arguments": fill_arguments(tool, blocker.query, ids)}
        )
        if result.ok and result.output_type and result.output_id:
            ids[result.output_type] = result.output_id
        out.append((result.ok, result.cost))
        blocker.after_call(step, result.ok)
    return out


def test_ban_tool_effect() -> None:
    env = flat_env()
    blocker = Blocker(env, make_query("dining"), "ban_tool", 1)
    assert blocker.pending_trigger == 4
    chain = [t.name for t in atomic_chain("dining", 5)]
    results = _drive(env, blocker, chain[:4])
    assert results[3] == (False, 10.0)  # failed and still charged
    assert env.banned == {chain[3]}
    assert chain[3] in {t.name for t in env.tool_specs}  # stays listed
    assert chain[3] in {spec["function"]["name"] for spec in env.tools}
    again = env.step_detailed({"name": chain[3], "arguments": "{not json"})
    assert (again.ok, again.error_kind, again.cost) == (False, "banned", 10.0)
    assert again.observation.startswith(f"[ERROR] {chain[3]}:")
    segment = blocker.segments[1]
    assert segment.start_step == 5 and segment.event == "ban_tool"
    assert all(chain[3] not in path for path in segment.optimal_paths)
    assert blocker.blocks_applied == 1


def test_ban_lands_on_first_call_naming_a_listed_tool() -> None:
    env = flat_env()
    blocker = Blocker(env, make_query("dining"), "ban_tool", 1)
    for step in (1, 2, 3):  # unusable but real tools are fine before the trigger
        assert not blocker.before_call(step, "Select_Final_Dining")
        blocker.after_call(step, False)
    assert not blocker.before_call(4, "No_Such_Tool")  # unknown name: the ban waits
    blocker.after_call(4, False)
    assert not blocker.before_call(5, None)
    blocker.after_call(5, False)
    assert blocker.before_call(6, "Select_Final_Dining")
    event = blocker.after_call(6, False)
    assert event is not None and event.step == 6 and event.detail == "banned Select_Final_Dining"


def test_preference_change_effect() -> None:
    env = flat_env()
    query = make_query("dining")
    blocker = Blocker(env, query, "preference_change", 1)
    chain = [t.name for t in atomic_chain("dining", 5)]
    old_ids: dict[str, str] = {}
    _drive(env, blocker, chain[:4], old_ids)
    event = blocker.events[0]
    assert event.step == 4 and event.user_message is not None
    assert env.state == env.initial_state  # state reset
    new = blocker.query
    assert new.preferences != query.preferences
    assert new.query_id == query.query_id and new.time_info == query.time_info
    for d in DIMENSIONS:
        assert new.preferences[d] in PREFERENCE_VALUES["dining"][d]
        assert new.preferences[d] in event.user_message
    assert new.text == event.user_message
    assert blocker.segments[0].optimal_paths == (tuple(chain[:4]),)
    assert blocker.segments[1].optimal_paths[0] == tuple(chain)  # re-planned from scratch
    # Types held before are gone, and ids issued for the old preferences are refused.
    search = next(t for t in env.tool_specs if t.name == chain[1])
    stale_args = fill_arguments(search, new, old_ids)
    assert env.step_detailed({"name": chain[1], "arguments": stale_args}).error_kind == (
        "inaccessible"
    )
    decide = next(t for t in env.tool_specs if t.name == chain[0])
    assert env.step_detailed({"name": chain[0], "arguments": fill_arguments(decide, new, {})}).ok
    stale = env.step_detailed({"name": chain[1], "arguments": stale_args})
    assert stale.error_kind == "bad_id" and "not returned by an earlier call" in stale.observation


def test_cost_change_effect() -> None:
    query = make_query("attraction", 3)
    env = TravelEnv("attraction", 3, query.query_id)
    before = dict(env.costs)
    blocker = Blocker(env, query, "cost_change", 1)
    step = blocker.pending_trigger
    assert step is not None
    blocker.before_call(step, None)
    env.step_detailed({"name": "Decide_Attraction_Preference", "arguments": {}})  # any call
    event = blocker.after_call(step, False)
    assert event is not None
    new_seed = int(event.detail.rsplit(" ", 1)[1])
    assert env.costs == TravelEnv("attraction", 3, query.query_id, seed=new_seed).costs
    assert env.costs != before
    spec = next(s for s in env.tools if s["function"]["name"] == "Select_Final_Attraction")
    assert f"Cost: {env.costs['Select_Final_Attraction']:.2f}" in spec["function"]["description"]
    assert blocker.segments[1].optimal_cost == env.optimal_path(env.state)[1]


def test_remove_tools_effect_replaces_previous_removal() -> None:
    env = flat_env("shopping", 4)
    blocker = Blocker(env, make_query("shopping"), "remove_tools", 2)
    atomics = {t.name for t in atomic_chain("shopping", 4)}
    chain = [t.name for t in atomic_chain("shopping", 4)]
    _drive(env, blocker, chain)
    assert blocker.blocks_applied == 2
    lengths = [int(e.detail.rsplit(" ", 1)[1]) for e in blocker.events]
    assert lengths[0] != lengths[1]
    assert env.removed_length == lengths[1]
    listed = {t.name for t in env.tool_specs}
    assert atomics <= listed
    for tool in env.all_tool_specs:
        gone = tool.is_composite and len(tool.components) == lengths[1]
        assert (tool.name not in listed) is gone  # the first removal was restored
    removed = next(t for t in env.all_tool_specs if t.name not in listed)
    result = env.step_detailed({"name": removed.name, "arguments": {}})
    assert (result.error_kind, result.cost) == ("unknown_tool", 0.0)


# ---------------------------------------------------------------- dropped blocks


def test_blocks_after_the_goal_are_dropped() -> None:
    """A one-call optimal path: 1 // 2 == 0 -> the block is due after step 1, past the goal."""
    env = flat_env("location", 0)
    env.costs["Location_Complete_3Steps_Pipeline"] = 5.0
    run = simulate_reference(make_query("location"), 0, "cost_change", 2, env=env)
    assert run.path == ("Location_Complete_3Steps_Pipeline",)
    assert (run.blocks_applied, run.blocks_dropped) == (0, 2)
    assert len(run.segments) == 1
    assert all("goal was already reached" in note for note in run.notes)


def test_blocks_past_the_step_limit_are_dropped() -> None:
    run = simulate_reference(make_query("dining"), 5, "cost_change", 1, env=flat_env(), max_steps=3)
    assert (run.blocks_applied, run.blocks_dropped) == (0, 1)
    assert "past the 3-step limit" in run.notes[0]
    assert len(run.path) == 3


def test_removal_with_no_other_length_is_dropped() -> None:
    # Level 0 with the longest tool banned: the only composite length is 2.
    run = simulate_reference(make_query("dining"), 0, "remove_tools", 2, env=_flat_ban_longest_l0())
    assert run.blocks_applied == 1 and run.blocks_dropped == 1
    assert any("no other composite length" in note for note in run.notes)


def _flat_ban_longest_l0() -> TravelEnv:
    env = TravelEnv("dining", 0, "<Query00001>", ban_longest=True)
    for tool in env.all_tool_specs:
        env.costs[tool.name] = 10.0 * len(tool.components) + (5 if tool.is_composite else 0)
    return env


def test_unresolved_blocks_are_dropped_at_finish() -> None:
    env = flat_env()
    blocker = Blocker(env, make_query("dining"), "preference_change", 3)
    blocker.finish(1)
    assert (blocker.blocks_applied, blocker.blocks_dropped) == (0, 3)
    assert "due at step 2, but the episode ended at step 1" in blocker.notes[0]
    assert "never scheduled" in blocker.notes[1]


def test_applied_plus_dropped_is_block_count() -> None:
    for task, level, mode, n in itertools.product(TASKS[:3], (0, 2, 5), BLOCK_MODES, (1, 2, 3)):
        run = simulate_reference(make_query(task, level), level, mode, n)
        assert run.blocks_applied + run.blocks_dropped == n
        assert len(run.segments) == run.blocks_applied + 1
        assert run.answer == run.expected_answer


# ---------------------------------------------------------------- reproducibility


def test_same_inputs_same_run() -> None:
    for mode in BLOCK_MODES:
        runs = [simulate_reference(make_query("transportation", 7), 4, mode, 3) for _ in range(2)]
        assert runs[0] == runs[1]


def test_seed_changes_block_parameters() -> None:
    query = make_query("accommodation", 2)
    details = {
        seed: simulate_reference(query, 5, "cost_change", 2, seed=seed).events
        for seed in (42, 1000)
    }
    assert [e.detail for e in details[42]] != [e.detail for e in details[1000]]


def test_runs_identical_across_processes() -> None:
    code = (
        "import json; from pytest_budget.planning.blocking import simulate_reference;"
        "from pytest_budget.planning.records import Query;"
        "q = Query('<Query00009>', 'shopping', {'category': 'local market', 'tier': 'discount',"
        " 'style': 'fashion', 'feature_package': 'delivery to hotel'}, 'May', 'Oslo', 't');"
        "out = [simulate_reference(q, 5, m, 3) for m in"
        " ('preference_change', 'cost_change', 'remove_tools', 'ban_tool')];"
        "print(json.dumps([[r.path, r.cost, r.notes] for r in out]))"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h)},
        ).stdout
        for h in (1, 2)
    ]
    assert outs[0] == outs[1]
    assert json.loads(outs[0])


# ---------------------------------------------------------------- segmented ground truth


def test_segments_concatenate_to_the_reference_trajectory() -> None:
    """Eq. 13: the segments' canonical stretches concatenate to the ground truth's successful
    calls, and their costs (ban charges included) add up to what it paid."""
    for task, level, mode, n in itertools.product(TASKS, (0, 1, 3, 5), BLOCK_MODES, (1, 2, 3)):
        for policy in ("optimal", "greedy"):
            run = simulate_reference(make_query(task, level + n), level, mode, n, policy=policy)
            succeeded = tuple(name for name, ok in zip(run.path, run.ok, strict=True) if ok)
            if policy == "optimal":
                concatenated = sum((s.optimal_paths[0] for s in run.segments), ())
                total = sum(round(s.optimal_cost * 100) for s in run.segments)
            else:
                concatenated = sum((s.greedy_path for s in run.segments), ())
                total = sum(round(s.greedy_cost * 100) for s in run.segments)
            assert concatenated == succeeded, (task, level, mode, n, policy)
            assert total == round(run.cost * 100), (task, level, mode, n, policy)
            for segment in run.segments:
                canonical = segment.optimal_paths[0]
                assert list(segment.optimal_paths) == sorted(set(segment.optimal_paths))
                assert all(len(p) == len(canonical) for p in segment.optimal_paths)


def test_greedy_reference_follows_chain_rule_within_segments() -> None:
    for task, level, mode in itertools.product(TASKS, (2, 5), BLOCK_MODES):
        run = simulate_reference(make_query(task, 4), level, mode, 2, policy="greedy")
        starts = {s.start_step for s in run.segments}
        env = TravelEnv(task, level, "<Query00004>")
        specs = {t.name: t for t in env.all_tool_specs}
        previous = None
        for step, (name, ok) in enumerate(zip(run.path, run.ok, strict=True), 1):
            if step in starts:
                previous = None
            if previous is not None and ok:
                assert previous in specs[name].inputs
            previous = specs[name].output if ok else previous
        assert run.answer == run.expected_answer


def test_simulate_rejects_unknown_policy() -> None:
    with pytest.raises(ValueError, match="policy"):
        simulate_reference(make_query("dining"), 1, policy="lucky")  # type: ignore[arg-type]


def test_expected_answer_follows_the_last_preferences() -> None:
    query = make_query("dining", 5)
    run = simulate_reference(
        query, 3, "preference_change", 2, env=flat_env("dining", 3, query.query_id)
    )
    assert run.blocks_applied == 2
    last = run.events[-1].query
    assert run.expected_answer == expected_answer(
        "dining", last.preferences, last.time_info, last.location_preference
    )
    assert run.expected_answer != expected_answer(
        "dining", query.preferences, query.time_info, query.location_preference
    )


# ---------------------------------------------------------------- solvability (App. B.5)


def _min_cut(env: TravelEnv, limit: int) -> int | None:
    """Fewest bans (at most ``limit``) that make the goal unreachable from the initial state."""
    names = [t.name for t in env.all_tool_specs]
    for size in range(1, limit + 1):
        for banned in itertools.combinations(names, size):
            if not _with_bans(env, banned).reachable():
                return size
    return None


def _with_bans(env: TravelEnv, banned: tuple[str, ...]) -> TravelEnv:
    probe = copy.deepcopy(env)
    for name in banned:
        probe.ban(name)
    return probe


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("ban_longest", [False, True])
def test_ban_bound_of_appendix_b5_by_exhaustion(level: int, ban_longest: bool) -> None:
    """The fewest bans that cut every path is m (m - 1 with "ban longest"), m = L + 3."""
    env = TravelEnv("location", level, "<Query00001>", ban_longest=ban_longest)
    tolerance = ban_tolerance(level, ban_longest)
    assert _min_cut(env, tolerance + 1) == tolerance + 1
    # The proof's hitting set: every tool that starts with Decide (the full one included).
    first = atomic_chain("location", level)[0].name
    starters = tuple(t.name for t in env.all_tool_specs if t.components[0] == first)
    assert len(starters) == tolerance + 1
    assert not _with_bans(env, starters).reachable()


@settings(max_examples=60, deadline=None)
@given(
    task=st.sampled_from(TASKS),
    level=st.integers(1, 5),
    ban_longest=st.booleans(),
    data=st.data(),
)
def test_three_bans_never_cut_the_task(
    task: str, level: int, ban_longest: bool, data: st.DataObject
) -> None:
    """Within the bound, any three bans keep the goal reachable from every state."""
    if ban_tolerance(level, ban_longest) < 3:
        level += 1
    env = TravelEnv(task, level, "<Query00001>", ban_longest=ban_longest)
    names = sorted(t.name for t in env.all_tool_specs)
    for name in data.draw(st.lists(st.sampled_from(names), min_size=3, max_size=3, unique=True)):
        env.ban(name)
    chain = atomic_chain(task, level)
    done = data.draw(st.integers(0, len(chain) - 1))
    state = env.initial_state | {t.output for t in chain[:done]}
    assert env.reachable(state)
    path, _ = env.optimal_path(state)
    assert path and not set(path) & env.banned


@settings(max_examples=120, deadline=None)
@given(
    task=st.sampled_from(TASKS),
    level=st.integers(0, 5),
    query=st.integers(1, 500),
    ban_longest=st.booleans(),
    choices=st.lists(st.integers(0, 10**6), min_size=20, max_size=20),
)
def test_ban_events_keep_the_goal_reachable(
    task: str, level: int, query: int, ban_longest: bool, choices: list[int]
) -> None:
    """An adversarial agent (any listed tool, usable or not) under three ban events: after
    every step the goal stays reachable, and within the App. B.5 bound no ban is refused."""
    q = make_query(task, query)
    env = TravelEnv(task, level, q.query_id, ban_longest=ban_longest)
    blocker = Blocker(env, q, "ban_tool", 3)
    ids: dict[str, str] = {}
    for step, choice in enumerate(choices, 1):
        listed = sorted(t.name for t in env.tool_specs)
        name = listed[choice % len(listed)]
        tool = next(t for t in env.tool_specs if t.name == name)
        try:
            arguments = fill_arguments(tool, q, ids)
        except KeyError:
            arguments = {}
        blocker.before_call(step, name)
        result = env.step_detailed({"name": name, "arguments": arguments})
        if result.ok and result.output_type and result.output_id:
            ids[result.output_type] = result.output_id
        blocker.after_call(step, result.ok)
        assert env.reachable()
        if env.done:
            break
    blocker.finish(step)
    assert len(env.banned) == blocker.blocks_applied <= 3
    refused = [n for n in blocker.notes if "unreachable" in n]
    if ban_tolerance(level, ban_longest) >= 3:
        assert not refused
    last = blocker.segments[-1]  # full plans from where the last event left the run
    assert last.optimal_paths[0] and last.greedy_path


@settings(max_examples=40, deadline=None)
@given(
    task=st.sampled_from(TASKS),
    level=st.integers(0, 5),
    query=st.integers(1, 10_000),
    mode=st.sampled_from(BLOCK_MODES),
    count=st.integers(1, 3),
    ban_longest=st.booleans(),
)
def test_reference_runs_always_reach_the_goal(
    task: str, level: int, query: int, mode: str, count: int, ban_longest: bool
) -> None:
    for policy in ("optimal", "greedy"):
        run = simulate_reference(
            make_query(task, query), level, mode, count, policy=policy, ban_longest=ban_longest
        )
        assert run.answer == run.expected_answer
        assert run.blocks_applied + run.blocks_dropped == count
        assert len(run.path) <= 20


def test_ban_that_would_cut_the_task_is_dropped() -> None:
    """L=0 with "ban longest" tolerates one ban (m - 2 = 1).  Decide is banned at step 1
    (Preference_and_Search still works); banning Preference_and_Search at step 2, or Select at
    step 3 (the search output is held but its preference is not), would cut every path."""
    env = _flat_ban_longest_l0()
    blocker = Blocker(env, make_query("dining"), "ban_tool", 3)
    names = ["Decide_Dining_Preference", "Dining_Preference_and_Search", "Select_Final_Dining"]
    results = _drive(env, blocker, names)
    assert [ok for ok, _ in results] == [False, True, True]
    assert env.banned == {"Decide_Dining_Preference"} and env.done
    assert (blocker.blocks_applied, blocker.blocks_dropped) == (1, 2)
    assert sum("would leave the goal unreachable" in n for n in blocker.notes) == 2
