"""What the HTTP tool agent sends on the wire in a planning episode (CostBench fact sheet §4.3).

CostBench makes one request per turn with ``temperature``, ``max_tokens``, the task's tools,
``tool_choice="auto"`` and ``parallel_tool_calls=False``.  Each test runs a real episode
through :class:`~pytest_budget.planning._llm.LLMToolAgent` against the loopback
``ScriptedServer`` and checks every request body the server received.
"""

from __future__ import annotations

from typing import Any

import anyio
from scripted_server import Reply, ScriptedServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget._run.model_agents import make_llm_agent
from pytest_budget.models import AnthropicChatClient, OpenAIChatClient
from pytest_budget.models._llm_agent import assistant_message
from pytest_budget.planning._episode import ONE_TOOL_MESSAGE, run_episode
from pytest_budget.planning._episode_records import EpisodeRecord
from pytest_budget.planning._llm import LLMToolAgent
from pytest_budget.planning._queries import generate_queries

QUERY = generate_queries("dining", 1)[0]


def _openai_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _openai_replies() -> list[Reply]:
    """Turn 1: two calls (only the first runs); turn 2: text without calls ends the episode."""
    calls = [
        _openai_call("call_1", "Decide_Dining_Preference"),
        _openai_call("call_2", "Search_Dining_Candidates"),
    ]
    first = {"role": "assistant", "content": None, "tool_calls": calls}
    second = {"role": "assistant", "content": "I stop here."}
    return [
        Reply(json={"choices": [{"index": 0, "message": m, "finish_reason": "stop"}]})
        for m in (first, second)
    ]


def _anthropic_replies() -> list[Reply]:
    blocks = [
        {"type": "tool_use", "id": "toolu_1", "name": "Decide_Dining_Preference", "input": {}},
        {"type": "tool_use", "id": "toolu_2", "name": "Search_Dining_Candidates", "input": {}},
    ]
    first = {"type": "message", "role": "assistant", "content": blocks, "stop_reason": "tool_use"}
    second = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "I stop here."}],
        "stop_reason": "end_turn",
    }
    return [Reply(json=first), Reply(json=second)]


def _episode(agent: LLMToolAgent) -> EpisodeRecord:
    async def go() -> EpisodeRecord:
        async with agent:
            return await run_episode(QUERY, 2, "static", 0, agent)

    return anyio.run(go)


def test_openai_tool_agent_asks_for_one_call_per_turn_at_temperature_0_and_16384_tokens() -> None:
    with ScriptedServer(_openai_replies()) as server:
        client = OpenAIChatClient("gpt-test", server.url + "/v1")
        record = _episode(LLMToolAgent(client))
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 2  # one request per turn
    for body in bodies:
        assert body["parallel_tool_calls"] is False
        assert body["tool_choice"] == "auto"
        assert body["temperature"] == 0
        assert body["max_tokens"] == 16384
        assert len(body["tools"]) == 14  # dining at L=2 with the longest tool banned
    # Had the model still sent two calls, only the first ran; the second got the error.
    assert [c.name for c in record.calls] == ["Decide_Dining_Preference"]
    tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]
    assert tool_messages[1]["content"] == ONE_TOOL_MESSAGE


def test_anthropic_tool_agent_disables_parallel_tool_use() -> None:
    with ScriptedServer(_anthropic_replies()) as server:
        client = AnthropicChatClient("claude-test", server.url)
        record = _episode(LLMToolAgent(client))
    bodies = [r.json for r in server.requests]
    assert [r.path for r in server.requests] == ["/v1/messages"] * 2
    for body in bodies:
        assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
        assert "parallel_tool_calls" not in body  # not an Anthropic field
        assert body["temperature"] == 0
        assert body["max_tokens"] == 16384
    assert [c.name for c in record.calls] == ["Decide_Dining_Preference"]
    results = bodies[1]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert results[1]["content"] == ONE_TOOL_MESSAGE


def test_cap_and_temperature_can_be_changed_and_reach_the_wire() -> None:
    with ScriptedServer(_openai_replies()) as server:
        client = OpenAIChatClient("gpt-test", server.url + "/v1")
        settings = {"max_tokens": {"tool_agent": 8192}, "temperature": 0.7}
        agent = make_llm_agent("tool_agent", client, settings=settings)
        assert isinstance(agent, LLMToolAgent)
        _episode(agent)
    for request in server.requests:
        body = request.json
        assert (body["max_tokens"], body["temperature"]) == (8192, 0.7)
        assert body["parallel_tool_calls"] is False


def test_requests_without_tools_carry_no_tool_choice() -> None:
    """The planner, solver, estimator and actor send no tools, so no tool fields either."""
    with ScriptedServer() as server:
        body = OpenAIChatClient("m", server.url + "/v1").build_request(
            [{"role": "user", "content": "hi"}], max_tokens=5
        )
        anthropic = AnthropicChatClient("c", server.url).build_request(
            [{"role": "user", "content": "hi"}], max_tokens=5
        )
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(body)
    assert not {"tools", "tool_choice"} & set(anthropic)


def test_a_turn_waiting_for_another_cells_identical_request_takes_no_slot(tmp_path: Any) -> None:
    # Cells B and C open with A's request (same query, tools and costs: their blocks come
    # later), so they wait for A's answer and replay it.  With two slots, the other task's
    # cell D must not wait behind them: its call is on the wire beside A's.  Before, B and C
    # held a slot of the cell limiter while they waited, so D went out after A's answer.
    from model_server import ModelServer

    from pytest_budget.models._loop import run_on_worker_loop, shared_limiter
    from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig
    from pytest_budget.planning._evaluate import run_planning_cell

    other = generate_queries("shopping", 1)[0]
    with ModelServer(lambda body: "<answer>00000</answer>", latency=1.0) as server:
        runtime = ModelRuntime(RuntimeConfig(cache_dir=str(tmp_path), concurrency=2))
        agent = LLMToolAgent(runtime.wrap(OpenAIChatClient("m", server.url)))
        assert agent.limits_own_calls

        async def cells() -> list[Any]:
            limiter = shared_limiter(2)
            out: list[Any] = [None] * 4
            plan = [
                (QUERY, "ban_tool", 1), (QUERY, "cost_change", 1),
                (QUERY, "remove_tools", 1), (other, "static", 0),
            ]  # fmt: skip

            async def one(i: int) -> None:
                query, mode, blocks = plan[i]
                out[i] = await run_planning_cell([query], 5, mode, blocks, agent, limiter=limiter)

            async with anyio.create_task_group() as group:
                for i in range(4):
                    group.start_soon(one, i)
            return out

        outcomes = run_on_worker_loop(cells)
    assert [o.outcome for o in outcomes] == ["ok"] * 4
    assert len(server.requests) == 2  # A's and D's; B and C replayed A's
    assert runtime.stats.replayed == 2
    assert server.max_in_flight == 2  # D's call was on the wire beside A's


def test_the_tool_list_sent_each_turn_is_the_observations_as_costs_change() -> None:
    # The agent converts the loop's shared tool list once per distinct list (memoized by
    # identity); a second method reads the observation's own fresh copy every turn, as the
    # agent once did.  Both send the same bodies, turn by turn, through a cost change.
    from model_server import ModelServer

    from pytest_budget.models._messages import tool_spec_from_openai

    class CopyingAgent(LLMToolAgent):
        async def act(self, observation: Any) -> dict[str, Any]:
            specs = [tool_spec_from_openai(spec) for spec in observation.tools]
            tools = [spec for spec in specs if spec is not None]
            result = await self._complete(self.messages(observation), self.max_tokens, tools)
            return assistant_message(result)

    def answer(body: dict[str, Any]) -> Any:
        made = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if made < 4:
            name = body["tools"][made]["function"]["name"]
            call = {
                "id": f"c{made}",
                "type": "function",
                "function": {"name": name, "arguments": "{}"},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return "<answer>00000</answer>"

    bodies = []
    for kind in (LLMToolAgent, CopyingAgent):
        with ModelServer(answer) as server:
            agent = kind(OpenAIChatClient("m", server.url))

            async def go(agent: LLMToolAgent = agent) -> EpisodeRecord:
                async with agent:
                    return await run_episode(QUERY, 5, "cost_change", 1, agent)

            record = anyio.run(go)
        assert record.blocks_applied == 1
        bodies.append(server.requests)
    assert len(bodies[0]) == 5
    assert bodies[0] == bodies[1]
    assert bodies[0][0]["tools"] != bodies[0][-1]["tools"]  # the costs changed on the way
