"""The planning agent loop (pytest_budget.planning.episode) and the reference tool agents."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any

import anyio
import pytest

from pytest_budget.models.client import ChatResult, ToolCall
from pytest_budget.models.usage import TokenUsage
from pytest_budget.planning.agents import (
    AtomicOnlyToolAgent,
    GreedyToolAgent,
    OracleToolAgent,
    RandomValidToolAgent,
    held_ids,
)
from pytest_budget.planning.blocking import BLOCK_MODES, simulate_reference
from pytest_budget.planning.env import TravelEnv, expected_answer, fill_arguments
from pytest_budget.planning.episode import (
    ToolAgentObservation,
    parse_reply,
    run_episode,
    system_prompt,
)
from pytest_budget.planning.metrics import score_episode, score_episodes
from pytest_budget.planning.records import CALL_ERROR_KINDS, EpisodeRecord, Query
from pytest_budget.planning.tools import DIMENSIONS, PREFERENCE_VALUES, TASKS, atomic_chain

CELLS = [("static", 0)] + [(mode, n) for mode in BLOCK_MODES for n in (1, 2, 3)]


def make_query(task: str, i: int = 1) -> Query:
    values = PREFERENCE_VALUES[task]
    prefs = {d: values[d][(i + k) % 4] for k, d in enumerate(DIMENSIONS)}
    location = None if task == "location" else "Lisbon"
    return Query(
        f"<Query{i:05d}>", task, prefs, "2025-06-01 to 2025-06-04", location, "Plan my trip."
    )


def flat_env(task: str = "dining", level: int = 5, query_id: str = "<Query00001>") -> TravelEnv:
    """Atomics cost 10, a composite of k parts 10k + 5: the atomic chain is optimal."""
    env = TravelEnv(task, level, query_id)
    for tool in env.all_tool_specs:
        env.costs[tool.name] = 10.0 * len(tool.components) + (5 if tool.is_composite else 0)
    return env


def run(*args: Any, **kwargs: Any) -> EpisodeRecord:
    async def main() -> EpisodeRecord:
        return await run_episode(*args, **kwargs)

    return anyio.run(main)


def call(name: Any, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": text}}
    if call_id is not None:
        out["id"] = call_id
    return out


Reply = Any | Callable[[ToolAgentObservation], Any]


class Scripted:
    """Returns the scripted replies in order (a callable is given the observation), then ""."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[ToolAgentObservation] = []

    def act(self, observation: ToolAgentObservation) -> Any:
        self.seen.append(observation)
        if not self.replies:
            return ""
        reply = self.replies.pop(0)
        return reply(observation) if callable(reply) else reply


def correct_call(name: str, query: Query) -> Callable[[ToolAgentObservation], Any]:
    """A reply calling ``name`` with correct arguments read off the conversation."""

    def reply(observation: ToolAgentObservation) -> dict[str, Any]:
        env = TravelEnv(observation.task, observation.refinement_level, observation.query_id)
        tool = next(t for t in env.all_tool_specs if t.name == name)
        args = fill_arguments(tool, query, held_ids(observation.messages))
        return {"content": None, "tool_calls": [call(name, args)]}

    return reply


def answer_from_goal(observation: ToolAgentObservation) -> str:
    return f"<answer>{held_ids(observation.messages)[observation.goal]}</answer>"


# ---------------------------------------------------------------- observation contract


def test_observation_contract() -> None:
    query = make_query("dining")
    agent = Scripted(correct_call("Decide_Dining_Preference", query), "No answer yet.")
    record = run(query, 1, "static", 0, agent)
    first, second = agent.seen
    env = TravelEnv("dining", 1, query.query_id)
    assert (first.query_id, first.task, first.refinement_level) == (query.query_id, "dining", 1)
    assert (first.step, first.turn, first.max_steps, first.goal) == (0, 1, 20, "TravelDining")
    assert first.reference is None
    assert first.tools == env.tools
    system, user = first.messages
    assert system == {"role": "system", "content": system_prompt("dining")}
    assert user["role"] == "user"
    assert user["content"].startswith("Plan my trip.")
    assert "2025-06-01 to 2025-06-04" in user["content"] and "Lisbon" in user["content"]
    assert (second.step, second.turn) == (1, 2)
    assistant, tool = second.messages[2:]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    (sent,) = assistant["tool_calls"]
    assert sent["type"] == "function" and sent["function"]["name"] == "Decide_Dining_Preference"
    assert tool == {
        "role": "tool",
        "tool_call_id": sent["id"],
        "content": tool["content"],
    }
    assert tool["content"].startswith("Decide_Dining_Preference succeeded. DiningPreference: ")
    assert record.answer is None and not record.reached_goal
    with pytest.raises(FrozenInstanceError):
        first.step = 3  # type: ignore[misc]


def test_system_prompt_states_costs_objective_and_answer_format() -> None:
    text = system_prompt("shopping")
    assert "Cost: X" in text and "smallest possible total cost" in text
    assert "<answer>THE_ID</answer>" in text and "TravelShopping" in text
    assert "LocationPreference" in text
    assert "LocationPreference" not in system_prompt("location")


def test_observation_is_a_copy() -> None:
    query = make_query("dining")

    def vandal(observation: ToolAgentObservation) -> str:
        observation.messages.clear()
        observation.tools.clear()
        return "thinking..."

    agent = Scripted(vandal)
    record = run(query, 1, "static", 0, agent)
    assert record.calls == () and record.answer is None


def test_reference_channel_only_for_reference_agents() -> None:
    query = make_query("dining")

    class Pretender(Scripted):
        wants_reference = "yes"  # truthy is not enough
        wants_optimal_next = True

    class Declared(Scripted):
        wants_reference = True

    pretender, declared = Pretender("<answer>1</answer>"), Declared("<answer>1</answer>")
    run(query, 1, "static", 0, pretender)
    run(query, 1, "static", 0, declared)
    assert pretender.seen[0].reference is None
    view = declared.seen[0].reference
    assert view is not None and view.optimal_next is None  # not asked for
    assert view.query == query and view.held == TravelEnv("dining", 1, "x").initial_state

    class Peek(OracleToolAgent):
        def __init__(self) -> None:
            self.views: list[Any] = []
            self.texts: list[str] = []

        def act(self, observation: ToolAgentObservation) -> dict[str, Any]:
            self.views.append(observation.reference)
            self.texts.append(json.dumps(observation.messages))
            return super().act(observation)

    peek = Peek()
    record = run(query, 2, "static", 0, peek)
    assert [v.optimal_next for v in peek.views[:-1]] == [c.name for c in record.calls]
    assert peek.views[-1].optimal_next is None  # the goal is held: nothing left to call
    assert "optimal" not in peek.texts[0]
    assert all(query.preferences["style"] not in text for text in peek.texts[:1])


def test_reference_agent_outside_the_loop_fails_clearly() -> None:
    observation = ToolAgentObservation(
        "<Query00001>", "dining", 1, "TravelDining", [], [], 0, 20, 1
    )
    with pytest.raises(RuntimeError, match="reference channel"):
        OracleToolAgent().act(observation)


# ---------------------------------------------------------------- reference agents


def _sha(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % (2**31 - 1)


def _rederive_segments(record: EpisodeRecord, seed: int = 42) -> list[tuple[Any, float]]:
    """Independent re-derivation of every segment (App. B.2 eqs. 12-13): rebuild the tools,
    costs and state in force when it opened, re-plan with a fresh environment, cut it to the
    stretch the run covered and price it.  Returns (optimal_paths, optimal_cost) per segment."""
    seed_q = _sha(f"{seed}:{record.query_id}")
    applied = (re.match(r"block (\d+)/\d+ at step ", note) for note in record.notes)
    block_of = [int(m.group(1)) - 1 for m in applied if m]
    global_seed, removed, reset_step = seed, None, 1
    out: list[tuple[Any, float]] = []
    segments = record.segments
    for k, segment in enumerate(segments):
        if segment.event is not None:
            rng = random.Random(_sha(f"{seed_q}:block:{block_of[k - 1]}"))
            if segment.event == "cost_change":
                new_seed = rng.randrange(1, 10000)
                while new_seed == global_seed:
                    new_seed = rng.randrange(1, 10000)
                global_seed = new_seed
            elif segment.event == "remove_tools":
                lengths = {n for n in range(2, record.refinement_level + 4)} - {removed}
                removed = rng.choice(sorted(lengths))
            elif segment.event == "preference_change":
                reset_step = segment.start_step
        env = TravelEnv(record.task, record.refinement_level, record.query_id, seed=global_seed)
        for c in record.calls:
            if c.error_kind == "banned" and c.step < segment.start_step:
                env.ban(c.name)
        env.remove_composites(removed)
        state = env.initial_state | {
            c.output_type
            for c in record.calls
            if c.ok and c.output_type and reset_step <= c.step < segment.start_step
        }
        paths, cost = env.optimal_paths(state)
        if k == len(segments) - 1:
            out.append((tuple(tuple(p) for p in paths), cost))
            continue
        end = segments[k + 1].start_step
        n = sum(1 for c in record.calls if c.ok and segment.start_step <= c.step < end)
        canonical = paths[0][: n + (segments[k + 1].event == "ban_tool")]
        portions = tuple(sorted({tuple(p[:n]) for p in paths}))
        out.append((portions, sum(round(env.costs[x] * 100) for x in canonical) / 100))
    return out


@pytest.mark.parametrize(("mode", "count"), CELLS)
def test_oracle_scores_the_segmented_ground_truth(mode: str, count: int) -> None:
    oracle = OracleToolAgent()
    for task, level in itertools.product(TASKS, range(6)):
        for i in (level + 1, level + 11):
            query = make_query(task, i)
            record = run(query, level, mode, count, oracle)
            assert record.error is None
            assert record.reached_goal and not record.steps_exhausted
            assert record.answer == record.expected_answer
            rederived = _rederive_segments(record)
            assert [(s.optimal_paths, s.optimal_cost) for s in record.segments] == rederived
            # The oracle's successful calls are the concatenated ground truth, and it pays
            # exactly the segmented ground-truth cost (ban charges included).
            succeeded = tuple(c.name for c in record.calls if c.ok)
            assert succeeded == sum((s.optimal_paths[0] for s in record.segments), ())
            gt_cents = sum(round(cost * 100) for _, cost in rederived)
            assert round(record.total_cost * 100) == gt_cents, (task, level, i)
            assert record.blocks_applied + record.blocks_dropped == count
            assert len(record.segments) == record.blocks_applied + 1
            reference = simulate_reference(query, level, mode, count)
            assert record.total_cost == reference.cost
            assert record.segments == reference.segments
            invalid = [c for c in record.calls if not c.ok]
            assert all(c.error_kind == "banned" for c in invalid)
            assert len(invalid) == (record.blocks_applied if mode == "ban_tool" else 0)


@pytest.mark.parametrize(("mode", "count"), CELLS)
def test_greedy_agent_matches_the_greedy_reference(mode: str, count: int) -> None:
    greedy = GreedyToolAgent()
    for task, level in itertools.product(TASKS, (0, 2, 5)):
        query = make_query(task, level + 3)
        record = run(query, level, mode, count, greedy)
        reference = simulate_reference(query, level, mode, count, policy="greedy")
        assert tuple(c.name for c in record.calls) == reference.path
        assert record.total_cost == reference.cost
        assert record.answer == record.expected_answer
        if mode == "static":
            env = TravelEnv(task, level, query.query_id)
            assert list(reference.path) == env.greedy_path()[0]
            assert record.segments[0].greedy_path == tuple(env.greedy_path()[0])


@pytest.mark.parametrize(("mode", "count"), CELLS)
def test_random_and_atomic_agents_finish_correctly(mode: str, count: int) -> None:
    for agent in (RandomValidToolAgent(seed=7), AtomicOnlyToolAgent()):
        for task, level in itertools.product(TASKS, (0, 3, 5)):
            record = run(make_query(task, level + 5), level, mode, count, agent)
            assert record.error is None
            assert record.reached_goal and record.answer == record.expected_answer
            assert all(c.ok or c.error_kind == "banned" for c in record.calls)


def test_atomic_only_agent_walks_the_chain() -> None:
    query = make_query("attraction", 4)
    record = run(query, 4, "static", 0, AtomicOnlyToolAgent())
    assert [c.name for c in record.calls] == [t.name for t in atomic_chain("attraction", 4)]


def test_atomic_only_agent_uses_a_composite_when_its_atomic_is_banned() -> None:
    query = make_query("dining")
    record = run(query, 5, "ban_tool", 1, AtomicOnlyToolAgent(), env=flat_env())
    names = [c.name for c in record.calls]
    chain = [t.name for t in atomic_chain("dining", 5)]
    assert names[:4] == chain[:4] and not record.calls[3].ok  # step 8 // 2 = 4 is banned
    assert names[4] == "Dining_Refine_to_Step3"  # shortest composite starting with Step2
    assert record.answer == record.expected_answer


def test_random_agent_depends_on_seed_only() -> None:
    def paths(seed: int) -> list[tuple[str, ...]]:
        agent = RandomValidToolAgent(seed=seed)
        return [
            tuple(c.name for c in run(make_query("shopping", i), 5, "static", 0, agent).calls)
            for i in range(1, 6)
        ]

    assert paths(1) == paths(1)
    assert paths(1) != paths(2)


# ---------------------------------------------------------------- events in the loop


def test_ban_is_recorded_in_the_old_segment_and_charged() -> None:
    record = run(make_query("dining"), 5, "ban_tool", 2, OracleToolAgent(), env=flat_env())
    banned = [c for c in record.calls if c.error_kind == "banned"]
    # Block 0 at 0 + 8 // 3 = 2 (Search); the re-plan is one call, so block 1 at 2 + 1 = 3.
    assert [(c.step, c.name) for c in banned] == [
        (2, "Search_Dining_Candidates"),
        (3, "Dining_Search_to_Final_7Steps"),
    ]
    for c in banned:
        assert not c.ok and c.cost > 0
    assert [s.start_step for s in record.segments] == [1, *(c.step + 1 for c in banned)]
    for c in record.calls:
        expected = sum(1 for s in record.segments[1:] if s.start_step <= c.step)
        assert c.segment == expected


def test_preference_change_mid_turn() -> None:
    """The change lands after step 4 (8 // 2); the rest of that turn is not run, a user turn
    follows, the state resets and the agent must start over with the new preferences."""
    query = make_query("dining")
    inner = AtomicOnlyToolAgent()
    extra = call("Decide_Dining_Preference", {}, "extra")

    class Eager(AtomicOnlyToolAgent):
        def act(self, observation: ToolAgentObservation) -> dict[str, Any]:
            reply = inner.act(observation)
            if observation.step == 3:
                reply["tool_calls"].append(extra)
            self.last = observation
            return reply

    agent = Eager()
    record = run(query, 5, "preference_change", 1, agent, env=flat_env())
    assert record.blocks_applied == 1
    messages = agent.last.messages
    not_run = next(m for m in messages if m.get("tool_call_id") == "extra")
    assert not_run["content"].startswith("[ERROR] Not run: the user changed the requirements")
    change = messages[messages.index(not_run) + 1]
    assert change["role"] == "user" and "start over" in change["content"]
    assert [c.step for c in record.calls] == list(range(1, len(record.calls) + 1))
    assert len(record.calls) == 4 + 8  # the cancelled call is no step
    assert record.calls[4].name == "Decide_Dining_Preference" and record.calls[4].segment == 1
    assert record.answer == record.expected_answer
    assert record.segments[1].start_step == 5


def test_cost_change_is_silent_but_the_tools_show_new_costs() -> None:
    class Watch(OracleToolAgent):
        seen: list[ToolAgentObservation]

        def act(self, observation: ToolAgentObservation) -> dict[str, Any]:
            self.seen.append(observation)
            return super().act(observation)

    watch = Watch()
    watch.seen = []
    record = run(make_query("dining"), 5, "cost_change", 1, watch, env=flat_env())
    assert record.blocks_applied == 1
    before, after = watch.seen[3], watch.seen[4]  # turns before and after step 4
    assert before.tools != after.tools
    assert len(after.messages) == len(before.messages) + 2  # no user turn: just the call
    assert all(m["role"] != "user" for m in after.messages[2:])


def test_removed_tool_is_unknown() -> None:
    query = make_query("dining")
    env = flat_env()
    record = run(query, 5, "remove_tools", 1, OracleToolAgent(), env=env)
    length = env.removed_length
    assert length is not None and record.blocks_applied == 1
    gone = next(t for t in env.all_tool_specs if t.is_composite and len(t.components) == length)
    env2 = flat_env()
    followup = Scripted(
        *[correct_call(n, query) for n in [t.name for t in atomic_chain("dining", 5)][:4]],
        {"tool_calls": [call(gone.name, {})]},
        "stop",
    )
    record = run(query, 5, "remove_tools", 1, followup, env=env2)
    last = record.calls[-1]
    assert (last.name, last.ok, last.error_kind) == (gone.name, False, "unknown_tool")


# ---------------------------------------------------------------- bad input never crashes

DECIDE = "Decide_Dining_Preference"
SEARCH = "Search_Dining_Candidates"


def _decide_args(query: Query) -> dict[str, str]:
    tool = next(t for t in atomic_chain("dining", 1) if t.name == DECIDE)
    return fill_arguments(tool, query, {})


def _search(pref_id: str) -> dict[str, Any]:
    return {"tool_calls": [call(SEARCH, {"DiningPreference": pref_id, **_free()})]}


def _free() -> dict[str, str]:
    return {"LocationPreference": "Lisbon", "TimeInfo": "2025-06-01 to 2025-06-04"}


QUERY = make_query("dining")
BAD_CALLS: dict[str, tuple[list[Any], str]] = {
    "unknown name": ([{"tool_calls": [call("Book_Flight", {})]}], "unknown_tool"),
    "no name": (
        [{"tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}],
        "unknown_tool",
    ),
    "call not an object": ([{"tool_calls": ["Decide_Dining_Preference"]}], "unknown_tool"),
    "missing parameter": (
        [{"tool_calls": [call(DECIDE, {"DiningTier": "budget"})]}],
        "wrong_parameters",
    ),
    "extra parameter": (
        [{"tool_calls": [call(DECIDE, {**_decide_args(QUERY), "Colour": "red"})]}],
        "wrong_parameters",
    ),
    "odd parameter keys": (
        [{"tool_calls": [{"name": DECIDE, "arguments": {1: "x", "a": 2}}]}],
        "wrong_parameters",
    ),
    "value not allowed": (
        [{"tool_calls": [call(DECIDE, {**_decide_args(QUERY), "DiningTier": "cheap"})]}],
        "wrong_parameters",
    ),
    "value not a string": (
        [{"tool_calls": [call(DECIDE, {**_decide_args(QUERY), "DiningTier": 3})]}],
        "wrong_parameters",
    ),
    "malformed JSON": ([{"tool_calls": [call(DECIDE, "{oops")]}], "bad_arguments"),
    "JSON not an object": ([{"tool_calls": [call(DECIDE, "[1, 2]")]}], "bad_arguments"),
    "deeply nested JSON": ([{"tool_calls": [call(DECIDE, "[" * 100_000)]}], "bad_arguments"),
    "inputs not held": (
        [{"tool_calls": [call("Select_Final_Dining", {"DiningCandidate_L1_Available": "x"})]}],
        "inaccessible",
    ),
    "wrong id format": (
        [correct_call(DECIDE, QUERY), _search("pref-1")],
        "bad_id",
    ),
    "id of another type": (
        [correct_call(DECIDE, QUERY), _search("DiningCandidate_Raw-0123abcd")],
        "bad_id",
    ),
    "id never returned": (
        [correct_call(DECIDE, QUERY), _search("DiningPreference-00000000")],
        "bad_id",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_calls_are_errors_not_crashes(case: str) -> None:
    replies, kind = BAD_CALLS[case]
    assert kind in CALL_ERROR_KINDS
    agent = Scripted(*replies, "stop")
    record = run(QUERY, 1, "static", 0, agent)
    assert record.error is None and record.answer is None
    bad = record.calls[-1]
    assert (bad.ok, bad.error_kind, bad.cost, bad.output_type) == (False, kind, 0.0, None)
    assert bad.step == len(replies)
    tool_message = agent.seen[-1].messages[-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("[ERROR]")


class Exploding:
    @property
    def tool_calls(self) -> Any:
        raise KeyError("no")


@pytest.mark.parametrize(
    "reply",
    [42, None, {"content": 5}, {"tool_calls": "Decide"}, {"content": [1, 2]}, Exploding()],
    ids=["int", "none", "content-int", "calls-str", "content-list", "exploding"],
)
def test_unreadable_reply_costs_an_invalid_step(reply: Any) -> None:
    agent = Scripted(reply, "stop")
    record = run(QUERY, 1, "static", 0, agent)
    (bad,) = record.calls
    assert (bad.step, bad.name, bad.ok, bad.error_kind) == (1, "", False, "bad_arguments")
    last = agent.seen[1].messages[-1]
    assert last["role"] == "user" and last["content"].startswith("[ERROR] Your last reply")
    assert record.answer is None and record.error is None


def _to_goal(query: Query, level: int = 1) -> list[Reply]:
    return [correct_call(t.name, query) for t in atomic_chain(query.task, level)]


def test_answers() -> None:
    # The last <answer> of the content counts (tags in any case, whitespace stripped).
    agent = Scripted(*_to_goal(QUERY), lambda o: "<answer>x</answer> no, " + answer_from_goal(o))
    record = run(QUERY, 1, "static", 0, agent)
    assert record.answer == record.expected_answer and len(record.calls) == 4
    record = run(QUERY, 1, "static", 0, Scripted("Let me think about it."))
    assert record.answer is None and record.calls == ()
    assert any("neither a tool call nor an answer" in n for n in record.notes)


BAD_ANSWERS = {
    "not an id": ("done", "wrong id format"),
    "bad hex": ("TravelDining-zzzzzzzz", "wrong id format"),
    "another type": ("DiningPreference-0123abcd", "wrong id format"),
    "never returned": ("TravelDining-0123abcd", "not returned by a tool call"),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
@pytest.mark.parametrize("reached", [False, True], ids=["early", "at-goal"])
def test_bad_answer_is_an_invalid_step_not_the_end(case: str, reached: bool) -> None:
    """An answer that is not a goal id a tool returned gets an [ERROR] observation, costs a
    step, counts as an invalid call (ITUR, bad ids) and the episode goes on."""
    text, reason = BAD_ANSWERS[case]
    calls = _to_goal(QUERY) if reached else []
    agent = Scripted(*calls, f"<answer>{text}</answer>", answer_from_goal if reached else "stop")
    record = run(QUERY, 1, "static", 0, agent)
    bad = record.calls[len(calls)]
    assert (bad.name, bad.ok, bad.error_kind, bad.cost) == ("<answer>", False, "bad_id", 0.0)
    assert bad.step == len(calls) + 1 and json.loads(bad.arguments) == {"answer": text}
    assert bad.after_goal is reached
    error = agent.seen[-1].messages[-1]
    assert error["role"] == "user" and error["content"].startswith("[ERROR] Answer: ")
    assert reason in error["content"] and "TravelDining" in error["content"]
    assert agent.seen[-1].step == len(calls) + 1
    if reached:  # it may answer again, correctly
        assert record.answer == record.expected_answer and len(record.calls) == 5
    else:
        assert record.answer is None and len(record.calls) == 1
    scores = score_episodes([record])
    assert scores["bad_id_calls"] == 1 and scores["invalid_calls"] == 1
    assert scores["itur"] == 1 / len(record.calls)
    if reached:  # the rejected answer is no tool: path and cost metrics ignore it
        assert scores["uihr"] == 1.0 and scores["n_path"] == scores["n_cost"] == 1
        chain = tuple(t.name for t in atomic_chain("dining", 1))
        assert score_episode(record).agent_path == chain
        assert score_episode(record).agent_cost == record.total_cost


def test_a_returned_goal_id_for_other_preferences_is_accepted_and_missed() -> None:
    """Answering with the goal id of wrongly chosen preferences is a valid answer: the
    episode ends and UIHR scores the miss."""
    other = Query(
        QUERY.query_id,
        "dining",
        {d: PREFERENCE_VALUES["dining"][d][3] for d in DIMENSIONS},
        QUERY.time_info,
        QUERY.location_preference,
        QUERY.text,
    )
    assert other.preferences != QUERY.preferences
    record = run(QUERY, 1, "static", 0, Scripted(*_to_goal(other), answer_from_goal))
    assert record.reached_goal and record.answer is not None
    assert record.answer != record.expected_answer
    scores = score_episodes([record])
    assert scores["uihr"] == 0.0 and scores["itur"] == 0.0


def test_an_agent_that_keeps_answering_badly_stops_at_the_step_limit() -> None:
    class Stubborn:
        def act(self, observation: ToolAgentObservation) -> str:
            return "<answer>finished</answer>"

    record = run(QUERY, 1, "static", 0, Stubborn())
    assert len(record.calls) == 20 and record.steps_exhausted and record.answer is None
    assert all(c.error_kind == "bad_id" for c in record.calls)
    assert score_episodes([record])["itur"] == 1.0


def test_a_bad_answer_with_no_step_left_ends_the_episode() -> None:
    def twenty(observation: ToolAgentObservation) -> dict[str, Any]:
        reply = {"tool_calls": [call("Nope", {}) for _ in range(20)]}
        return {**reply, "content": "<answer>done</answer>"}

    record = run(QUERY, 1, "static", 0, Scripted(twenty, "<answer>again</answer>"))
    assert len(record.calls) == 20 and record.steps_exhausted and record.answer is None
    assert any("rejected with no step left" in n for n in record.notes)


def test_held_ids_ignore_error_messages() -> None:
    messages = [
        {"role": "user", "content": "Plan my trip."},
        {"role": "tool", "tool_call_id": "a", "content": "X succeeded. DiningPreference: "
         "DiningPreference-0123abcd"},
        {"role": "user", "content": "[ERROR] Answer: wrong id format"},
    ]  # fmt: skip
    assert held_ids(messages) == {"DiningPreference": "DiningPreference-0123abcd"}
    messages.append({"role": "user", "content": "Sorry, I changed my mind."})
    assert held_ids(messages) == {}


def test_answer_after_the_calls_of_its_turn() -> None:
    query = make_query("location", 2)

    def both(observation: ToolAgentObservation) -> dict[str, Any]:
        reply = correct_call("Location_Complete_3Steps_Pipeline", query)(observation)
        # The id the call in this same turn returns: checked after the calls have run.
        goal_id = expected_answer("location", query.preferences, query.time_info)
        reply["content"] = f"<answer>{goal_id}</answer>"
        return reply

    agent = Scripted(both)
    record = run(query, 0, "static", 0, agent)
    assert record.reached_goal and record.answer == record.expected_answer
    assert len(record.calls) == 1 and len(agent.seen) == 1


def test_reply_formats() -> None:
    query = make_query("location", 3)
    name = "Location_Complete_3Steps_Pipeline"
    tool = next(t for t in TravelEnv("location", 0, "q").all_tool_specs if t.name == name)
    args = fill_arguments(tool, query, {})
    chat = ChatResult("", (ToolCall("c1", name, args, json.dumps(args)),), TokenUsage(), "stop")
    formats: list[Any] = [
        {"content": None, "tool_calls": [call(name, args, "c1")]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": [call(name, args)]}}]},
        {"tool_calls": [{"name": name, "arguments": args}]},
        chat,
    ]
    for reply in formats:
        record = run(query, 0, "static", 0, Scripted(reply, answer_from_goal))
        assert record.reached_goal and record.answer == record.expected_answer, reply
    parsed = parse_reply({"content": [{"type": "text", "text": "<answer>A</answer>"}]})
    assert parsed.answer == "A" and parsed.problem is None


def test_duplicate_call_ids_are_made_unique() -> None:
    agent = Scripted({"tool_calls": [call("X", {}, "same"), call("Y", {}, "same")]}, "")
    run(QUERY, 1, "static", 0, agent)
    ids = [m["tool_call_id"] for m in agent.seen[1].messages if m["role"] == "tool"]
    assert len(set(ids)) == 2
    assistant = agent.seen[1].messages[2]
    assert [c["id"] for c in assistant["tool_calls"]] == ids


# ---------------------------------------------------------------- ending the episode


def test_agent_raising_ends_with_error() -> None:
    def boom(observation: ToolAgentObservation) -> Any:
        raise ValueError("boom\nsecond line")

    agent = Scripted(correct_call(DECIDE, QUERY), boom)
    record = run(QUERY, 1, "static", 0, agent)
    assert record.error == "raised ValueError: boom"
    assert len(record.calls) == 1 and record.calls[0].ok
    assert record.answer is None and not record.steps_exhausted


def test_async_agent_raising() -> None:
    class Async:
        async def act(self, observation: ToolAgentObservation) -> Any:
            raise RuntimeError("down")

    record = run(QUERY, 1, "ban_tool", 2, Async())
    assert record.error == "raised RuntimeError: down"
    assert record.blocks_dropped == 2 and record.blocks_applied == 0


def test_step_limit() -> None:
    class Stubborn:
        def act(self, observation: ToolAgentObservation) -> Any:
            return {"tool_calls": [call("Book_Flight", {})]}

    record = run(QUERY, 1, "static", 0, Stubborn())
    assert len(record.calls) == 20 and record.steps_exhausted and record.answer is None
    assert all(c.error_kind == "unknown_tool" for c in record.calls)


def test_step_limit_inside_one_turn() -> None:
    agent = Scripted({"tool_calls": [call("Book_Flight", {}) for _ in range(25)]})
    record = run(QUERY, 1, "static", 0, agent, max_steps=20)
    assert len(record.calls) == 20 and record.steps_exhausted
    assert sum("not run" in n for n in record.notes) == 5


def test_several_calls_per_turn_are_steps() -> None:
    query = make_query("dining", 4)
    decide = correct_call(DECIDE, query)

    def two(observation: ToolAgentObservation) -> dict[str, Any]:
        reply = decide(observation)
        reply["tool_calls"].append(call("Nope", {}))
        return reply

    record = run(query, 1, "static", 0, Scripted(two))
    assert [(c.step, c.ok) for c in record.calls] == [(1, True), (2, False)]


def test_repeated_and_after_goal_flags() -> None:
    query = make_query("dining", 6)
    chain = [t.name for t in atomic_chain("dining", 0)]
    agent = Scripted(
        *[correct_call(n, query) for n in chain],
        correct_call(chain[-1], query),
        correct_call(chain[0], query),
        answer_from_goal,
    )
    record = run(query, 0, "static", 0, agent)
    flags = [(c.ok, c.repeated, c.after_goal) for c in record.calls]
    assert flags == [
        (True, False, False),
        (True, False, False),
        (True, False, False),
        (True, True, True),
        (True, True, True),
    ]
    assert record.answer == record.expected_answer
    assert record.total_cost == round(
        sum(TravelEnv("dining", 0, query.query_id).costs[c.name] for c in record.calls), 2
    )


def test_bad_arguments_to_run_episode() -> None:
    with pytest.raises(ValueError, match="static"):
        run(QUERY, 1, "static", 2, OracleToolAgent())
    with pytest.raises(ValueError, match="does not match"):
        run(QUERY, 1, "static", 0, OracleToolAgent(), env=flat_env("dining", 2))


# ---------------------------------------------------------------- concurrency


def test_concurrency_does_not_change_results() -> None:
    agents = [OracleToolAgent(), GreedyToolAgent(), RandomValidToolAgent(3), AtomicOnlyToolAgent()]
    jobs = [
        (make_query(task, i), level, mode, n, agent)
        for (task, level, i), (mode, n), agent in itertools.product(
            [("dining", 5, 1), ("location", 2, 2), ("shopping", 4, 3)], CELLS[::3], agents
        )
    ]
    sequential = [run(*job) for job in jobs]

    async def together() -> list[EpisodeRecord | None]:
        out: list[EpisodeRecord | None] = [None] * len(jobs)
        limiter = anyio.CapacityLimiter(6)

        async def one(index: int) -> None:
            out[index] = await run_episode(*jobs[index], limiter=limiter)

        async with anyio.create_task_group() as tg:
            for index in range(len(jobs)):
                tg.start_soon(one, index)
        return out

    assert anyio.run(together) == sequential


def test_sdk_message_objects_are_read_through_model_dump() -> None:
    from pytest_budget.planning.episode import parse_reply

    class SdkMessage:
        """Shaped like an OpenAI SDK ChatCompletionMessage: the name sits under .function."""

        tool_calls = ("not read directly",)

        def model_dump(self) -> dict[str, object]:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "Decide_Dining_Preference", "arguments": "{}"}}
                ],
            }  # fmt: skip

    parsed = parse_reply(SdkMessage())
    assert parsed.problem is None
    assert [call.name for call in parsed.calls] == ["Decide_Dining_Preference"]
