"""The planning agent loop (CostBench's run.py protocol, fact sheet §4) and the reference
tool agents."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any

import anyio
import pytest

from pytest_budget.models._client import ChatResult, ToolCall
from pytest_budget.models._usage import TokenUsage
from pytest_budget.planning._blocking import BLOCK_MODES
from pytest_budget.planning._env import TravelEnv, fill_arguments, id_kind
from pytest_budget.planning._episode import (
    ONE_TOOL_MESSAGE,
    ToolAgentObservation,
    example_paths,
    final_answer,
    parse_reply,
    run_episode,
    system_prompt,
)
from pytest_budget.planning._episode_records import CALL_ERROR_KINDS, EpisodeRecord, Query
from pytest_budget.planning._metrics import score_episodes
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import (
    AtomicOnlyToolAgent,
    GreedyToolAgent,
    OracleToolAgent,
    RandomValidToolAgent,
    held_ids,
)
from pytest_budget.planning._tools import atomic_chain

CELLS = [("static", 0)] + [(mode, n) for mode in BLOCK_MODES for n in (1, 2, 3)]
QUERY = generate_queries("dining", 1)[0]
DECIDE = "Decide_Dining_Preference"


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


def _args(name: str, query: Query, observation: ToolAgentObservation) -> dict[str, str]:
    env = TravelEnv(observation.task, observation.refinement_level, observation.query_id)
    tool = next(t for t in env.all_tool_specs if t.name == name)
    kinds = held_ids(observation.messages)
    ids = {t: kinds[id_kind(query.task, t)] for t in tool.inputs if id_kind(query.task, t) in kinds}
    return fill_arguments(tool, query, ids)


def correct_call(name: str, query: Query = QUERY) -> Callable[[ToolAgentObservation], Any]:
    def reply(observation: ToolAgentObservation) -> dict[str, Any]:
        return {"content": None, "tool_calls": [call(name, _args(name, query, observation))]}

    return reply


def answer_from_goal(observation: ToolAgentObservation) -> str:
    kind = id_kind(observation.task, observation.goal)
    return f"<answer> {held_ids(observation.messages)[kind]} </answer>"


def _to_goal(query: Query = QUERY, level: int = 1) -> list[Reply]:
    return [correct_call(t.name, query) for t in atomic_chain(query.task, level)]


# ---------------------------------------------------------------- observation contract


def test_observation_contract() -> None:
    agent = Scripted(correct_call(DECIDE), "No answer yet.")
    record = run(QUERY, 1, "static", 0, agent)
    first, second = agent.seen
    env = TravelEnv("dining", 1, QUERY.query_id)
    assert (first.query_id, first.task, first.refinement_level) == (QUERY.query_id, "dining", 1)
    assert (first.step, first.turn, first.max_steps, first.goal) == (0, 1, 20, "TravelDining")
    assert first.reference is None
    assert first.tools == env.tools  # the task's tools only, in registry order
    system, user = first.messages
    assert system == {"role": "system", "content": system_prompt("dining", 1)}
    assert user == {"role": "user", "content": QUERY.text}  # query.input, exactly
    assert (second.step, second.turn) == (1, 2)
    assistant, tool = second.messages[2:]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    (sent,) = assistant["tool_calls"]
    assert tool == {"role": "tool", "tool_call_id": sent["id"], "content": tool["content"]}
    assert re.search(r"<DiningPreference\d{5}>", tool["content"])
    assert tool["content"].endswith(f" Cost: {env.costs[DECIDE]}")
    # The second turn had no tool call: the episode ends there, no answer.
    assert record.answer is None and not record.reached_goal
    assert (record.turns, record.tool_turns) == (2, 1)
    with pytest.raises(FrozenInstanceError):
        first.step = 3  # type: ignore[misc]


def test_system_prompt_carries_costbench_content() -> None:
    text = system_prompt("shopping", 2)
    assert "TravelShopping" in text and "<ShoppingCandidate{Candidate_ID}>" in text
    assert "lowest total cost" in text and "fewer calls" in text
    assert "only the first call of a turn is executed" in text
    assert "Decide_Shopping_Preference, Search_Shopping_Candidates, Shopping_Refinement_Step1" in (
        text
    )
    assert "availability and seasonality; transportation convenience." in text
    assert "<answer> <ShoppingCandidate{Candidate_ID}> </answer>" in text
    assert "LocationPreference" in text and "LocationPreference" not in system_prompt("location")
    # The abstract example lists all 2^(n-1) - 1 paths (n = L + 3, the full tool excluded).
    assert len(re.findall(r"<path> \d+\.", text)) == 2**4 - 1
    assert "3 stages" in system_prompt("dining", 0)


def test_example_path_order() -> None:
    # More segments first; then the earlier first multi-letter segment; then sizes.
    assert example_paths(3) == [[1, 1, 1], [2, 1], [1, 2]]
    four = example_paths(4)
    assert four[0] == [1, 1, 1, 1]
    assert four[1:4] == [[2, 1, 1], [1, 2, 1], [1, 1, 2]]
    assert four[4:] == [[2, 2], [3, 1], [1, 3]]
    assert len(example_paths(8)) == 2**7 - 1


def test_observation_is_a_copy() -> None:
    def vandal(observation: ToolAgentObservation) -> str:
        observation.messages.clear()
        observation.tools.clear()
        return "thinking..."

    record = run(QUERY, 1, "static", 0, Scripted(vandal))
    assert record.calls == () and record.answer is None


def test_reference_channel_only_for_reference_agents() -> None:
    class Pretender(Scripted):
        wants_reference = "yes"  # truthy is not enough
        wants_optimal_next = True

    class Declared(Scripted):
        wants_reference = True

    pretender, declared = Pretender("x"), Declared("x")
    run(QUERY, 1, "static", 0, pretender)
    run(QUERY, 1, "static", 0, declared)
    assert pretender.seen[0].reference is None
    view = declared.seen[0].reference
    assert view is not None and view.optimal_next is None  # not asked for
    assert view.query == QUERY and view.held == TravelEnv("dining", 1, "x").initial_state


def test_reference_agent_outside_the_loop_fails_clearly() -> None:
    observation = ToolAgentObservation(
        "<Query00001>", "dining", 1, "TravelDining", [], [], 0, 20, 1
    )
    with pytest.raises(RuntimeError, match="reference channel"):
        OracleToolAgent().act(observation)


# ---------------------------------------------------------------- the turn protocol


def test_only_the_first_call_of_a_turn_runs() -> None:
    def two(observation: ToolAgentObservation) -> dict[str, Any]:
        reply = correct_call(DECIDE)(observation)
        reply["tool_calls"].append(call("Search_Dining_Candidates", {}))
        return reply

    agent = Scripted(two, "stop")
    record = run(QUERY, 1, "static", 0, agent)
    assert [(c.step, c.name, c.ok) for c in record.calls] == [(1, DECIDE, True)]
    first, second = agent.seen[1].messages[-2:]
    assert first["role"] == second["role"] == "tool"
    assert second["content"] == ONE_TOOL_MESSAGE
    assert "DiningCandidate_Raw" not in TravelEnv("dining", 1, "q").initial_state


def test_a_well_formed_answer_ends_the_episode_and_calls_beside_it_do_not_run() -> None:
    def answer_and_call(observation: ToolAgentObservation) -> dict[str, Any]:
        reply = correct_call("Dining_Preference_and_Search")(observation)
        reply["content"] = "<answer> <DiningCandidate{Candidate_ID: 12345}> </answer>"
        return reply

    record = run(QUERY, 1, "static", 0, Scripted(answer_and_call))
    (only,) = record.calls
    assert (only.executed, only.ok, only.cost) == (False, True, 0.0)
    assert record.answer == "12345" and not record.reached_goal
    assert (record.turns, record.tool_turns) == (1, 1)


def test_a_wrong_answer_gets_no_feedback() -> None:
    agent = Scripted(*_to_goal(), "<answer> <DiningCandidate00001> </answer>", "never asked")
    record = run(QUERY, 1, "static", 0, agent)
    assert record.reached_goal and record.answer == "00001"
    assert len(agent.seen) == 5  # the episode ended at the answer
    assert score_episodes([record])["uihr"] == 0.0


def test_a_malformed_answer_without_calls_ends_the_episode() -> None:
    agent = Scripted(*_to_goal(), "<answer>DiningCandidate1234</answer>", answer_from_goal)
    record = run(QUERY, 1, "static", 0, agent)
    assert record.answer is None and len(agent.seen) == 5


def test_answer_feedback_option_goes_on() -> None:
    agent = Scripted(*_to_goal(), "<answer>DiningCandidate1234</answer>", answer_from_goal)
    record = run(QUERY, 1, "static", 0, agent, answer_feedback=True)
    assert record.answer == record.expected_answer[-6:-1]
    feedback = agent.seen[-1].messages[-1]
    assert feedback["role"] == "user" and feedback["content"].startswith("[ERROR]")


def test_twenty_turns_counting_every_turn() -> None:
    class Stubborn:
        def act(self, observation: ToolAgentObservation) -> Any:
            return {"tool_calls": [call("Book_Flight", {})] * 3}

    record = run(QUERY, 1, "static", 0, Stubborn())
    assert len(record.calls) == 20 and record.steps_exhausted and record.turns == 20
    assert all(c.error_kind == "unknown_tool" for c in record.calls)
    assert score_episodes([record])["itur"] == 1.0


def test_final_answer_scan_as_costbench() -> None:
    def msg(content: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": content}

    # The last message mentioning <answer> or Candidate is parsed; earlier ones are not.
    assert final_answer([msg("<answer><DiningCandidate00042></answer>"), msg("thanks")]) == "00042"
    assert final_answer([msg("<answer><DiningCandidate00042></answer>"), msg("Candidate?")]) is None
    # A message with no content stops the scan.
    assert final_answer([msg("<answer><DiningCandidate00042></answer>"), msg(None)]) is None
    think = "<think>maybe <answer><XCandidate11111></answer></think><answer>Candidate22222</answer>"
    assert final_answer([msg(think)]) == "22222"


# ---------------------------------------------------------------- bad input never crashes

BAD_CALLS: dict[str, tuple[list[Any], str]] = {
    "unknown name": ([{"tool_calls": [call("Book_Flight", {})]}], "unknown_tool"),
    "no name": (
        [{"tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}],
        "unknown_tool",
    ),
    "call not an object": ([{"tool_calls": ["Decide_Dining_Preference"]}], "unknown_tool"),
    "missing parameter": (
        [{"tool_calls": [call(DECIDE, {"DiningTier": "x"})]}],
        "wrong_parameters",
    ),
    "value not allowed": (
        [lambda o: {"tool_calls": [call(DECIDE, {**_args(DECIDE, QUERY, o), "DiningTier": "x"})]}],
        "wrong_parameters",
    ),
    "malformed JSON": ([{"tool_calls": [call(DECIDE, "{oops")]}], "bad_arguments"),
    "JSON not an object": ([{"tool_calls": [call(DECIDE, "[1, 2]")]}], "bad_arguments"),
    "deeply nested JSON": ([{"tool_calls": [call(DECIDE, "[" * 100_000)]}], "bad_arguments"),
    "inputs not held": (
        [{"tool_calls": [call("Select_Final_Dining", {"DiningCandidate_L1_Available": "x"})]}],
        "inaccessible",
    ),
    "four-digit id": (
        [
            correct_call(DECIDE),
            {
                "tool_calls": [
                    call(
                        "Search_Dining_Candidates",
                        {
                            "DiningPreference": "<DiningPreference1234>",
                            "LocationPreference": QUERY.location_preference,
                            "TimeInfo": QUERY.time_info,
                        },
                    )
                ]
            },
        ],
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
def test_unreadable_reply_ends_the_episode_with_a_note(reply: Any) -> None:
    agent = Scripted(correct_call(DECIDE), reply, "never asked")
    record = run(QUERY, 1, "static", 0, agent)
    assert len(agent.seen) == 2 and len(record.calls) == 1
    assert record.error is None and any("unreadable reply" in n for n in record.notes)


def test_reply_formats() -> None:
    query = generate_queries("location", 3)[2]
    name = "Location_Complete_3Steps_Pipeline"
    env = TravelEnv("location", 0, query.query_id, ban_longest=False)
    tool = next(t for t in env.all_tool_specs if t.name == name)
    args = fill_arguments(tool, query, {})
    chat = ChatResult("", (ToolCall("c1", name, args, json.dumps(args)),), TokenUsage(), "stop")
    formats: list[Any] = [
        {"content": None, "tool_calls": [call(name, args, "c1")]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": [call(name, args)]}}]},
        {"tool_calls": [{"name": name, "arguments": args}]},
        chat,
    ]
    for reply in formats:
        fresh = TravelEnv("location", 0, query.query_id, ban_longest=False)
        record = run(query, 0, "static", 0, Scripted(reply, answer_from_goal), env=fresh)
        assert record.reached_goal and record.answer == record.expected_answer[-6:-1], reply
    parsed = parse_reply({"content": [{"type": "text", "text": "<answer>Candidate12345</answer>"}]})
    assert parsed.answer == "12345" and parsed.problem is None


def test_duplicate_call_ids_are_made_unique() -> None:
    agent = Scripted({"tool_calls": [call("X", {}, "same"), call("Y", {}, "same")]}, "")
    run(QUERY, 1, "static", 0, agent)
    ids = [m["tool_call_id"] for m in agent.seen[1].messages if m["role"] == "tool"]
    assert len(set(ids)) == 2
    assistant = agent.seen[1].messages[2]
    assert [c["id"] for c in assistant["tool_calls"]] == ids


def test_agent_raising_ends_with_error() -> None:
    def boom(observation: ToolAgentObservation) -> Any:
        raise ValueError("boom\nsecond line")

    record = run(QUERY, 1, "static", 0, Scripted(correct_call(DECIDE), boom))
    assert record.error == "raised ValueError: boom"
    assert len(record.calls) == 1 and record.calls[0].ok
    assert record.answer is None and not record.steps_exhausted


def test_bad_arguments_to_run_episode() -> None:
    with pytest.raises(ValueError, match="static"):
        run(QUERY, 1, "static", 2, OracleToolAgent())
    with pytest.raises(ValueError, match="does not match"):
        run(QUERY, 1, "static", 0, OracleToolAgent(), env=TravelEnv("dining", 2, "q"))


# ---------------------------------------------------------------- reference agents


@pytest.mark.parametrize("task", ["location", "dining", "shopping"])
@pytest.mark.parametrize("level", [0, 2, 5])
def test_oracle_follows_the_ground_truth_and_greedy_the_stimulation(task: str, level: int) -> None:
    for query in generate_queries(task, 4):
        env = TravelEnv(task, level, query.query_id)
        truth, _ = env.optimal_path()
        greedy, _ = env.greedy_path()
        oracle = run(query, level, "static", 0, OracleToolAgent())
        assert [c.name for c in oracle.calls] == truth
        assert oracle.answer == oracle.expected_answer[-6:-1]
        record = run(query, level, "static", 0, GreedyToolAgent())
        assert [c.name for c in record.calls] == greedy
        assert record.segments[0].greedy_path == tuple(greedy)
        scores = score_episodes([record])
        assert scores["uihr"] == 1.0 and scores["itur"] == 0.0


@pytest.mark.parametrize(("mode", "count"), CELLS)
def test_reference_agents_finish_in_every_cell(mode: str, count: int) -> None:
    queries = generate_queries("attraction", 5)
    for agent in (OracleToolAgent(), GreedyToolAgent(), RandomValidToolAgent(3)):
        for query in queries[:2]:
            record = run(query, 2, mode, count, agent, pool=queries)
            assert record.error is None
            assert record.turns <= 20


def test_random_agent_depends_on_seed_only() -> None:
    first = [c.name for c in run(QUERY, 3, "static", 0, RandomValidToolAgent(7)).calls]
    assert first == [c.name for c in run(QUERY, 3, "static", 0, RandomValidToolAgent(7)).calls]


def test_atomic_only_agent_walks_the_chain() -> None:
    record = run(QUERY, 2, "static", 0, AtomicOnlyToolAgent())
    assert [c.name for c in record.calls] == [t.name for t in atomic_chain("dining", 2)]


def test_concurrency_does_not_change_results() -> None:
    agents = [OracleToolAgent(), GreedyToolAgent(), RandomValidToolAgent(3), AtomicOnlyToolAgent()]
    queries = generate_queries("shopping", 3)
    jobs = [
        (query, level, mode, n, agent)
        for (query, level), (mode, n), agent in itertools.product(
            [(queries[0], 5), (queries[1], 2)], CELLS[::3], agents
        )
    ]
    sequential = [run(*job, pool=queries) for job in jobs]

    async def together() -> list[EpisodeRecord | None]:
        out: list[EpisodeRecord | None] = [None] * len(jobs)
        limiter = anyio.CapacityLimiter(6)

        async def one(index: int) -> None:
            out[index] = await run_episode(*jobs[index], limiter=limiter, pool=queries)

        async with anyio.create_task_group() as tg:
            for index in range(len(jobs)):
                tg.start_soon(one, index)
        return out

    assert anyio.run(together) == sequential


def test_sdk_message_objects_are_read_through_model_dump() -> None:
    class SdkMessage:
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
    assert [c.name for c in parsed.calls] == ["Decide_Dining_Preference"]


def test_answer_parsing_is_linear_on_hostile_text() -> None:
    import time

    from pytest_budget.planning._ids import parse_answer

    start = time.perf_counter()
    assert parse_answer("<answer>" * 200_000) is None
    assert parse_answer("<answer>" + "Candidate" * 100_000 + "</answer>") is None
    assert parse_answer("<answer>" + "x" * 2_000_000 + "Candidate12345 </answer>") == "12345"
    assert time.perf_counter() - start < 5.0  # quadratic parsing would take minutes
    assert parse_answer("<answer> <DiningCandidate123456> </answer>") is None  # 6 digits
