"""Offline work of a live cell (an episode's environment and ground truth, its re-solves
after a block, its record with the greedy replay, the cell's scores) runs only when the
event loop has nothing else ready (:mod:`pytest_budget._core.offline`, issue 33): answers
read and requests that got a slot go first.  Checked by order, never by timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from model_server import ModelServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget._core.offline import CALL_RANK, MAX_YIELDS, offline, offline_submit
from pytest_budget.models import OpenAIChatClient
from pytest_budget.planning._blocking import Blocker
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._llm import LLMToolAgent
from pytest_budget.planning._queries import generate_queries


def test_jobs_wait_for_every_ready_callback_then_run_lowest_rank_first() -> None:
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        jobs = []
        for rank, name in ((2, "job 2"), (0, "job 0a"), (0, "job 0b"), (1, "job 1")):
            CALL_RANK.set(rank)
            jobs.append(offline_submit(order.append, name))

        def wire(n: int) -> None:  # answers read, requests sent: each readies the next
            order.append(f"ready {n}")
            if n < 5:
                loop.call_soon(wire, n + 1)

        loop.call_soon(wire, 0)
        await asyncio.gather(*jobs)

    asyncio.run(main())
    ready = [f"ready {n}" for n in range(6)]
    assert order == [*ready, "job 0a", "job 0b", "job 1", "job 2"]


def test_a_loop_never_idle_still_runs_a_job_after_max_yields_turns() -> None:
    order: list[str] = []
    busy = 4 * MAX_YIELDS

    async def main() -> None:
        loop = asyncio.get_running_loop()
        job = offline_submit(order.append, "job")

        def wire(n: int) -> None:
            order.append(f"ready {n}")
            if n < busy:
                loop.call_soon(wire, n + 1)

        loop.call_soon(wire, 0)
        await job
        while len(order) < busy + 2:
            await asyncio.sleep(0)

    asyncio.run(main())
    # The job waited MAX_YIELDS turns of the loop, not until the wire went quiet.
    assert MAX_YIELDS - 2 <= order.index("job") <= MAX_YIELDS + 2


def test_a_job_raising_fails_only_its_waiter_and_outside_a_loop_a_job_runs_now() -> None:
    async def main() -> tuple[str, int]:
        try:
            await offline(int, "not a number")
        except ValueError as exc:
            caught = str(exc)
        return caught, await offline(int, "7")

    caught, value = asyncio.run(main())
    assert "not a number" in caught and value == 7

    outside = offline_submit(len, "abc")  # no running loop (trio's would be the same)
    assert outside.done() and outside.result() == 3


def _reply(body: dict[str, Any]) -> str | dict[str, Any]:
    """Call the first listed tool for two turns, then answer."""
    made = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    if made < 2:
        name = body["tools"][0]["function"]["name"]
        call = {"id": f"c{made}", "type": "function",
                "function": {"name": name, "arguments": "{}"}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return "<answer> <DiningCandidate12345> </answer>"


def test_a_blocked_episode_run_live_is_the_one_computed_inline() -> None:
    # Three cost changes: each re-solve is deferred past the next call.  The record equals
    # the one built from the same calls by a Blocker that solves at once, step by step.
    query = generate_queries("dining", 1, seed=42)[0]
    with ModelServer(_reply) as server:
        agent = LLMToolAgent(OpenAIChatClient("m", server.url))

        async def go() -> Any:
            async with agent:
                return await run_episode(query, 5, "cost_change", 3, agent)

        record = anyio.run(go)
    assert record.tool_turns == 2 and record.answer == "12345"
    env = TravelEnv("dining", 5, query.query_id)
    blocker = Blocker(env, query, "cost_change", 3)
    for call in record.calls:
        blocker.before_call(call.step, call.name)
        env.step_detailed({"name": call.name, "arguments": call.arguments})
        blocker.after_call(call.step, call.ok)
    blocker.finish(record.turns)
    assert record.blocks_applied == blocker.blocks_applied >= 1
    assert record.segments == tuple(blocker.segments)
