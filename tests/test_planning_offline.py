"""A live planning episode's offline work (environment, ground truth, greedy replay,
scores) runs on the offline thread, never on the event loop that serves the wire
(:mod:`pytest_budget._core.offline`, issue 33).

Checked without timing: a loopback model server holds every answer until the test lets it
go, and an environment's ground-truth work waits until the server counts its calls in
flight.  Had that work run on the event loop, no call could go out while it waited and the
test would fail at its 30 s guard instead of passing.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
from model_server import ModelServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget._core.offline import THREAD_NAME
from pytest_budget.models import OpenAIChatClient
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._llm import LLMToolAgent
from pytest_budget.planning._queries import generate_queries

SLOTS = 3  # calls in flight at most
GUARD_S = 30.0  # a deadlock guard, never reached when the work is off the loop
TOOL_TURNS = 2


def _reply(body: dict[str, Any]) -> str | dict[str, Any]:
    """Call the first listed tool for TOOL_TURNS turns, then answer."""
    made = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    if made < TOOL_TURNS:
        name = body["tools"][0]["function"]["name"]
        call = {"id": f"c{made}", "type": "function",
                "function": {"name": name, "arguments": "{}"}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return "<answer> <DiningCandidate12345> </answer>"


class _Gate:
    """The server holds every answer until ``released``; ``all_out`` is set once it has
    SLOTS calls in flight at once."""

    def __init__(self) -> None:
        self.server = ModelServer(self.answer)
        self.all_out = threading.Event()
        self.released = threading.Event()

    def answer(self, body: dict[str, Any]) -> str | dict[str, Any]:
        if self.server.in_flight >= SLOTS:  # counted before the answer is asked for
            self.all_out.set()
        self.released.wait(GUARD_S)
        return _reply(body)


class _GatedEnv(TravelEnv):
    """An environment whose first greedy path (the ground truth the episode builds before
    its first call) waits until every slot holds another episode's call, then lets the
    server answer; it notes the thread it ran on and the calls it saw in flight."""

    gate: _Gate
    seen: list[tuple[str, bool, int]]

    def greedy_path(self, *args: Any, **kwargs: Any) -> tuple[list[str], float]:
        if not self.gate.released.is_set():
            full = self.gate.all_out.wait(GUARD_S)
            self.seen.append((threading.current_thread().name, full, self.gate.server.in_flight))
            self.gate.released.set()
        return super().greedy_path(*args, **kwargs)


def test_ground_truth_is_built_off_the_loop_while_every_slot_holds_a_call() -> None:
    queries = generate_queries("dining", SLOTS + 1, seed=42)
    gate = _Gate()
    env = _GatedEnv("dining", 2, queries[-1].query_id, seed=42)
    env.gate, env.seen = gate, []
    records: list[Any] = [None] * len(queries)
    with gate.server:
        agent = LLMToolAgent(OpenAIChatClient("m", gate.server.url))

        async def run() -> None:
            limiter = anyio.CapacityLimiter(SLOTS)

            async def one(i: int) -> None:
                # The gated episode is started last: the others' environments come first
                # on the offline thread, so their calls can fill every slot.
                own = env if i == len(queries) - 1 else None
                records[i] = await run_episode(
                    queries[i], 2, "static", 0, agent, limiter=limiter, env=own
                )

            async with agent, anyio.create_task_group() as group:
                for i in range(len(queries)):
                    group.start_soon(one, i)

        anyio.run(run)
        assert env.seen == [(f"{THREAD_NAME}_0", True, SLOTS)]
        assert gate.server.max_in_flight == SLOTS  # the limit held
    # Every episode ran its tool turns and answered (the gate changed no outcome).
    assert [r.tool_turns for r in records] == [TOOL_TURNS] * len(queries)
    assert all(r.error is None and r.answer == "12345" for r in records)
    # The gated episode's record equals one run with a plain environment.
    plain = TravelEnv("dining", 2, queries[-1].query_id, seed=42)
    with ModelServer(_reply) as server:
        again = LLMToolAgent(OpenAIChatClient("m", server.url))

        async def alone() -> Any:
            async with again:
                return await run_episode(queries[-1], 2, "static", 0, again, env=plain)

        assert anyio.run(alone) == records[-1]
