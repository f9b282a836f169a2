"""LLM-backed agents (pytest_budget._run.model_agents, the suites' llm modules, models.provider)
against real loopback servers.

Each role is called through a real HTTP client on ``127.0.0.1``: the request the server
received (model, messages, max_tokens, tools) and the value the agent returned are checked,
and what it returned goes through the suite's own parser.  ``ModelServer`` below computes each
reply from the request (for multi-turn loops) and keeps connections alive (HTTP/1.1) like a
real provider; ``ScriptedServer`` (tests/scripted_server.py) serves fixed scripts.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx
import pytest
from scripted_server import Reply, ScriptedServer  # tests/ is on sys.path (prepend import mode)

import pytest_budget._run.agent_names as agents_module
from pytest_budget._core.tokens import count_tokens
from pytest_budget._run.agent_names import resolve_agent
from pytest_budget._run.model_agents import DEFAULT_MAX_TOKENS, make_llm_agent, provider_factory
from pytest_budget.awareness._evaluate import parse_answer
from pytest_budget.awareness._llm import LLMActor, LLMEstimator
from pytest_budget.awareness._prompts import ACTOR_SYSTEMS, actor_system, estimator_system
from pytest_budget.awareness._replay.answers import Interval, Invalid
from pytest_budget.awareness._replay.dialogue import WAREHOUSE_ESTIMATION_SYSTEM
from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._replay.rollouts import ActorObservation, ActorReply, Turn, actor_reply
from pytest_budget.awareness.sokoban._env import (
    SOKOBAN_PRESETS,
    generate_puzzles,
    parse_reply,
    run_rollout,
    sokoban_prompt,
)
from pytest_budget.awareness.warehouse import WarehouseEnv
from pytest_budget.models import (
    AnthropicChatClient,
    ChatClient,
    ChatResult,
    ModelCallError,
    OpenAIChatClient,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from pytest_budget.models._llm_agent import ChatModel
from pytest_budget.models._messages import (
    assistant_message,
    detect_message_format,
    openai_messages_to_anthropic,
    tool_spec_from_openai,
)
from pytest_budget.models._provider import (
    ProviderConfigError,
    build_chat_client,
    key_required,
)
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode import ToolAgentObservation, run_episode, system_prompt
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._llm import LLMToolAgent
from pytest_budget.planning._tools import DIMENSIONS, PREFERENCE_VALUES
from pytest_budget.triage import _arithmetic as arithmetic
from pytest_budget.triage import _puzzles as puzzles
from pytest_budget.triage._graders import grade
from pytest_budget.triage._llm import LLMPlanner, LLMSolver, ModelSolution, extract_solver_answer
from pytest_budget.triage._phase0 import coerce_solution
from pytest_budget.triage._plan_parser import parse_plan
from pytest_budget.triage._prompts import (
    PLANNER_SYSTEM,
    render_plan_prompt,
    render_resolve_banner,
    solver_system,
)
from pytest_budget.triage._types import PlanRequest, PlanStatus, Problem

KEY = "sk-canary-agents-7c41e0-do-not-leak"
MODEL = "gpt-test"


# --------------------------------------------------------------------------- servers


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    json: Any


Responder = Callable[[Seen, int], Any]  # (request, index) -> JSON body or (status, body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real provider
    server: _Server
    timeout = 5

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        seen = Seen(
            self.path,
            {name.lower(): value for name, value in self.headers.items()},
            json.loads(self.rfile.read(length) or b"null"),
        )
        answer = self.server.owner.record(seen)
        status, body = answer if isinstance(answer, tuple) else (200, answer)
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client closing a kept-alive connection is not an error here


class ModelServer:
    """A loopback server whose reply to each POST is ``respond(request, index)``."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def record(self, seen: Seen) -> Any:
        with self._lock:
            index = len(self.requests)
            self.requests.append(seen)
        return self.respond(seen, index)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------- bodies


def openai_body(
    content: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    finish: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


def anthropic_body(
    blocks: list[dict[str, Any]], *, usage: dict[str, Any] | None = None, stop: str = "end_turn"
) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "message", "role": "assistant", "content": blocks}
    body["stop_reason"] = stop
    if usage is not None:
        body["usage"] = usage
    return body


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def openai_client(server: ScriptedServer | ModelServer) -> OpenAIChatClient:
    return OpenAIChatClient(MODEL, server.url + "/v1")


def anthropic_client(server: ScriptedServer | ModelServer) -> AnthropicChatClient:
    return AnthropicChatClient("claude-test", server.url)


def run(client: ChatClient, call: Callable[[ChatClient], Any]) -> Any:
    """Await ``call(client)`` on a fresh event loop, then close the client."""

    async def go() -> Any:
        async with client:
            return await call(client)

    return anyio.run(go)


def one_call(
    reply: dict[str, Any], call: Callable[[ChatClient], Any], *, anthropic: bool = False
) -> tuple[Any, Any, str]:
    """One agent call against a one-reply script: (returned value, request body, path)."""
    with ScriptedServer([Reply(json=reply)]) as server:
        client = anthropic_client(server) if anthropic else openai_client(server)
        value = run(client, call)
    (request,) = server.requests
    return value, request.json, request.path


# --------------------------------------------------------------------------- planner


def plan_request() -> PlanRequest:
    problems = (
        Problem("p1", "What is 2 + 2?", 1.0, "arith"),
        Problem("p2", "What is 17 * 3?", 2.0, "arith"),
    )
    prompt = render_plan_prompt(problems, 500, variant="B", domain="arithmetic problems")
    return PlanRequest(problems, 500, prompt, "B", "tiny")


def test_planner_sends_the_suite_prompt_and_returns_the_raw_text() -> None:
    request = plan_request()
    raw = (
        'Here you go:\n```json\n{"plan": [{"id": "p2", "tokens": 300}, '
        '{"id": "p1", "tokens": 50}]}\n```'
    )
    value, body, path = one_call(openai_body(raw), lambda c: LLMPlanner(c).plan(request))
    assert path == "/v1/chat/completions"
    assert body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": PLANNER_SYSTEM},
            {"role": "user", "content": request.prompt},
        ],
        "max_tokens": DEFAULT_MAX_TOKENS["planner"],
        "temperature": 0.0,
    }
    assert value == raw  # as the model wrote it: the suite's parser does the reading
    plan = parse_plan(value, ["p1", "p2"])
    assert plan.status is PlanStatus.REPAIRED
    assert [(e.id, e.tokens) for e in plan.entries] == [("p2", 300), ("p1", 50)]


def test_planner_garbage_is_returned_as_is_and_parses_as_unparseable() -> None:
    raw = "I would rather not plan today."
    value, _, _ = one_call(openai_body(raw), lambda c: LLMPlanner(c).plan(plan_request()))
    assert value == raw
    assert parse_plan(value, ["p1", "p2"]).status is PlanStatus.UNPARSEABLE


def test_planner_renders_the_prompt_when_the_request_has_none() -> None:
    problems = plan_request().items
    bare = PlanRequest(problems, 400, "", "C")
    _, body, _ = one_call(openai_body("{}"), lambda c: LLMPlanner(c, max_tokens=300).plan(bare))
    assert body["messages"][1]["content"] == render_plan_prompt(problems, 400, variant="C")
    assert body["max_tokens"] == 300


def test_planner_on_anthropic_lifts_the_system_prompt() -> None:
    request = plan_request()
    reply = anthropic_body([{"type": "text", "text": '{"plan": []}'}])
    value, body, path = one_call(reply, lambda c: LLMPlanner(c).plan(request), anthropic=True)
    assert path == "/v1/messages"
    assert body["system"] == PLANNER_SYSTEM
    assert body["messages"] == [{"role": "user", "content": request.prompt}]
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["planner"]
    assert value == '{"plan": []}'


# --------------------------------------------------------------------------- solver


def arith_item() -> Any:
    return arithmetic.generate(1, 0)[0]


def test_solver_reports_provider_output_tokens_and_the_answer() -> None:
    item = arith_item()
    text = f"Inner brackets first, then the sum.\nAnswer: {item.answer}"
    reply = openai_body(text, usage=usage(180, 37))
    value, body, _ = one_call(reply, lambda c: LLMSolver(c).solve(item.problem, 50))
    assert body["messages"] == [
        {"role": "system", "content": solver_system("arith")},
        {"role": "user", "content": item.text},
    ]
    assert body["max_tokens"] == 50  # Phase 0's cap is the call's cap
    assert isinstance(value, ModelSolution)
    assert (value.text, value.tokens, value.answer) == (text, 37, str(item.answer))
    assert value.tokens_reported and value.finish_reason == "stop" and not value.truncated
    assert coerce_solution(value) is value
    assert grade(item, value.answer)


def test_solver_counts_tokens_when_the_server_reports_no_usage() -> None:
    item = arith_item()
    text = f"Answer: {item.answer}"
    value, body, _ = one_call(openai_body(text), lambda c: LLMSolver(c).solve(item.problem))
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["solver"]
    assert value.tokens == count_tokens(text)
    assert value.tokens_reported is False


def test_solver_cut_at_the_cap_has_no_answer() -> None:
    item = arith_item()
    reply = openai_body("Let me see... Answer: -48", usage=usage(100, 8), finish="length")
    value, _, _ = one_call(reply, lambda c: LLMSolver(c).solve(item.problem, 8))
    assert value.truncated and value.answer is None and value.tokens == 8
    assert not grade(item, value.answer)


def test_resolve_states_the_allocation_without_enforcing_it() -> None:
    item = arith_item()
    problem = Problem(item.id, item.text, item.value, item.domain, stated_tokens=3000)
    value, body, _ = one_call(
        openai_body("Answer: 1", usage=usage(90, 4000)), lambda c: LLMSolver(c).solve(problem)
    )
    # App. C.1: the banner is prepended to the standard solver prompt, verbatim.
    assert body["messages"][1]["content"] == (
        "You have a strict output-token budget of 3000 tokens for solving this problem, "
        "including any reasoning, drafts, or scratch work you produce. Plan your solution to "
        "fit within this limit. Be concise, skip unnecessary explanation, and commit to your "
        f"final answer before exhausting the budget.\n\n{item.text}"
    )
    assert body["messages"][1]["content"].startswith(render_resolve_banner(3000))
    # The baseline run's API-level max_tokens, unchanged (not max(setting, 2 x a_i)).
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["solver"]
    assert value.tokens == 4000  # over the stated 3000: not compliant, as reported
    big = Problem(item.id, item.text, item.value, item.domain, stated_tokens=50_000)
    _, body, _ = one_call(openai_body("Answer: 1"), lambda c: LLMSolver(c).solve(big))
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["solver"]
    _, body, _ = one_call(
        openai_body("Answer: 1"), lambda c: LLMSolver(c, max_tokens=900).solve(big)
    )
    assert body["max_tokens"] == 900

    small = Problem(item.id, item.text, item.value, item.domain, stated_tokens=100)
    _, body, _ = one_call(openai_body("Answer: 1"), lambda c: LLMSolver(c).solve(small))
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["solver"]


def test_solver_reads_sokoban_moves_after_its_reasoning() -> None:
    item = puzzles.generate(1, 0)[0]
    text = "<think>Maybe Answer: Down?</think>\nPush the box up.\nAnswer: 1. Up, 2. Left"
    value, body, _ = one_call(
        openai_body(text, usage=usage(300, 20)), lambda c: LLMSolver(c).solve(item.problem)
    )
    assert body["messages"][0]["content"] == solver_system("sokoban")
    assert value.answer == "Up Left"


def test_solver_on_anthropic_uses_output_tokens() -> None:
    item = arith_item()
    reply = anthropic_body(
        [{"type": "text", "text": f"Answer: {item.answer}"}],
        usage={"input_tokens": 150, "output_tokens": 12},
    )
    value, body, _ = one_call(reply, lambda c: LLMSolver(c).solve(item.problem), anthropic=True)
    assert body["system"] == solver_system("arith")
    assert (value.tokens, value.answer, value.tokens_reported) == (12, str(item.answer), True)


@pytest.mark.parametrize(
    ("text", "domain", "expected"),
    [
        ("Answer: 7/2", "arith", "7/2"),
        ("so x = 3 + 4 = 7\nAnswer: x = 7", "arith", "7"),
        ("Answer: 7/2 (that is 3.5)", "arith", "7/2"),
        ("Answer: -1,234.", "arith", "-1,234"),
        ("The value is \\boxed{\\frac{7}{2}}", "arith", "\\frac{7}{2}"),
        ("<think>Answer: 5</think>I cannot tell.", "arith", None),
        ("Answer: Up Left Left Down", "sokoban", "Up Left Left Down"),
        ("Answer: u l l d", "sokoban", "u l l d"),
        ("Answer: Move Up, then Right.", "sokoban", "Up Right"),
        ("<answer>Paris</answer>", None, "Paris"),
        ("no idea", None, None),
    ],
)
def test_extract_solver_answer(text: str, domain: str | None, expected: str | None) -> None:
    assert extract_solver_answer(text, domain) == expected


# --------------------------------------------------------------------------- estimator


def sokoban_probe() -> Probe:
    # Turn 1: the provider's counts (fresh input 250 + output 50); turn 2: nothing logged
    # but the total, so its split is unknown.
    prefix = (
        Turn(
            {"tokens": 300.0},
            "Current grid: ...",
            "<answer>Up</answer>",
            {"input_tokens": 250, "output_tokens": 50},
        ),
        Turn({"tokens": 280.0}, "Current grid: ...", "<answer>Left || Left</answer>"),
    )
    return Probe("sokoban-6x6-s1-0000", "sokoban", 2, {"tokens": 580.0}, {"tokens": 2500}, prefix)


def test_estimator_sends_the_replayed_chat_and_returns_the_raw_text() -> None:
    """BAGEN §3.4 on the wire: the actor's system prompt, the turns, then the question."""
    probe = sokoban_probe()
    raw = "<think>About 3 more turns of 300.</think><answer>[600, 1200]</answer>"
    value, body, _ = one_call(openai_body(raw), lambda c: LLMEstimator(c).estimate(probe))
    messages = body["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "user", "assistant", "user",
    ]  # fmt: skip
    assert messages[0]["content"] == actor_system("sokoban")
    assert [m["content"] for m in messages[1:5]] == [
        "Current grid: ...",
        "<answer>Up</answer>",
        "Current grid: ...",
        "<answer>Left || Left</answer>",
    ]
    question = messages[5]["content"]
    assert question == probe.question
    assert (
        "Turn 1: input 250 tokens, output 50 tokens, total 300 tokens; "
        "Turn 2: input unknown tokens, output unknown tokens, total 280 tokens."
    ) in question
    assert "2500 tokens" in question
    assert "580" not in question  # BAGEN shows no cumulative sum
    assert "<answer>[low, high]</answer>" in question
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["estimator"]
    assert value == raw
    assert parse_answer(value, probe.dimensions, "bagen") == Interval(600.0, 1200.0)


def test_estimator_chat_on_anthropic_lifts_the_actor_system_prompt() -> None:
    probe = sokoban_probe()
    reply = anthropic_body([{"type": "text", "text": "<answer>impossible</answer>"}])
    value, body, path = one_call(reply, lambda c: LLMEstimator(c).estimate(probe), anthropic=True)
    assert path.endswith("/messages")
    assert body["system"] == actor_system("sokoban")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert body["messages"][-1]["content"] == probe.question
    assert value == "<answer>impossible</answer>"


def test_estimator_without_chat_falls_back_to_the_flat_prompt() -> None:
    class OwnProbe:  # a user's own probe object: text only
        dimensions = ("tokens",)
        text = "How many more tokens? <answer>[low, high]</answer>"

    _, body, _ = one_call(
        openai_body("<answer>[1, 2]</answer>"), lambda c: LLMEstimator(c).estimate(OwnProbe())
    )
    assert body["messages"] == [
        {"role": "system", "content": estimator_system(("tokens",))},
        {"role": "user", "content": OwnProbe.text},
    ]


@pytest.mark.parametrize("raw", ["I think about 300 tokens.", "", "<answer>[lots]</answer>"])
def test_estimator_garbage_is_returned_as_is_and_scored_invalid(raw: str) -> None:
    probe = sokoban_probe()
    value, _, _ = one_call(openai_body(raw), lambda c: LLMEstimator(c).estimate(probe))
    assert value == raw
    parsed = parse_answer(value, probe.dimensions, "bagen")
    assert isinstance(parsed, Invalid) and parsed.reason


def test_estimator_for_several_budgets_says_so() -> None:
    # A user's own multi-dimension budget keeps the flattened prompt.
    budget = {"minutes": 100.0, "dollars": 100.0}
    probe = Probe("own-0000", "own", 1, dict.fromkeys(budget, 1.0), budget, ())
    raw = "<answer>minutes:[2, 4], dollars:[0, 9]</answer>"
    _, body, _ = one_call(openai_body(raw), lambda c: LLMEstimator(c).estimate(probe))
    assert body["messages"] == [
        {"role": "system", "content": estimator_system(("minutes", "dollars"))},
        {"role": "user", "content": probe.text},
    ]
    assert "several budgets" in body["messages"][0]["content"]
    assert "several budgets" not in estimator_system(("tokens",))


def test_warehouse_estimator_chat_on_the_wire() -> None:
    """BAGEN §5: the warehouse estimation system prompt (not the actor's), the replayed
    steps, then one message with weeks/turns, usage, cash and target, history, caps."""
    budget = {"time_weeks": 22.0, "warehouse_item_weeks": 9000.0, "cumulative_cost_usd": 5e5}
    turns = (
        Turn({"time_weeks": 2.0, "warehouse_item_weeks": 100.0, "cumulative_cost_usd": 20000.4},
             "Day 0 state", "<answer>{}</answer>", {"cash": 480000.0}),
        Turn({"time_weeks": 2.0, "warehouse_item_weeks": 250.0, "cumulative_cost_usd": 30000.0},
             "Day 14 state", "<answer>{}</answer>", {"cash": -1500.6}),
    )  # fmt: skip
    used = {"time_weeks": 4.0, "warehouse_item_weeks": 350.0, "cumulative_cost_usd": 50000.4}
    task = {"target_cash_usd": 612345.67}
    probe = Probe("warehouse-s0-0000", "warehouse", 2, used, budget, turns, task)
    raw = (
        "<answer>time_weeks:[2, 4], warehouse_item_weeks:[0, 9], "
        "cumulative_cost_usd:[1, 5]</answer>"
    )
    value, body, _ = one_call(openai_body(raw), lambda c: LLMEstimator(c).estimate(probe))
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": WAREHOUSE_ESTIMATION_SYSTEM}
    assert messages[1:5] == [
        {"role": "user", "content": "Day 0 state"},
        {"role": "assistant", "content": "<answer>{}</answer>"},
        {"role": "user", "content": "Day 14 state"},
        {"role": "assistant", "content": "<answer>{}</answer>"},
    ]
    question = messages[5]["content"]
    lines = [
        "Weeks completed: 4. Turns completed: 2.",
        "Usage so far: time_weeks 4, warehouse_item_weeks 350, cumulative_cost_usd 50000.",
        "Cash now: -1501 USD. Final cash needed to count as finished: 612346 USD.",
        "Usage per step: Day 14: time +2 weeks, warehouse +100 item-weeks, cost +20000 USD; "
        "Day 28: time +2 weeks, warehouse +250 item-weeks, cost +30000 USD.",
        "Budgets: time_weeks <= 22, warehouse_item_weeks <= 9000, cumulative_cost_usd <= 500000.",
    ]
    positions = [question.index(line) for line in lines]
    assert positions == sorted(positions)  # in BAGEN's order
    assert not isinstance(parse_answer(value, probe.dimensions, "bagen"), Invalid)


# --------------------------------------------------------------------------- actor


def sokoban_observation(turn: int = 1) -> ActorObservation:
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    level = generate_puzzles(preset, 1, 7)[0]
    text = sokoban_prompt(level, preset=preset, turn=turn)
    return ActorObservation("sokoban", "sokoban-6x6-s7-0000", turn, text, level)


def test_actor_returns_text_and_reported_tokens() -> None:
    observation = sokoban_observation()
    raw = "<think>box is above</think><answer>Up || Up</answer>"
    value, body, _ = one_call(
        openai_body(raw, usage=usage(310, 25)), lambda c: LLMActor(c).act(observation)
    )
    assert body["messages"] == [
        {"role": "system", "content": ACTOR_SYSTEMS["sokoban"]},
        {"role": "user", "content": observation.text},
    ]
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["actor"]
    assert value == {
        "text": raw,
        "usage": {"tokens": 335, "input_tokens": 310, "output_tokens": 25},
    }
    assert actor_reply(value) == ActorReply(raw, 335.0)
    assert parse_reply(value["text"]).actions == ("Up", "Up")


def test_actor_without_reported_usage_returns_only_the_text() -> None:
    value, _, _ = one_call(openai_body("Up"), lambda c: LLMActor(c).act(sokoban_observation()))
    assert value == {"text": "Up"}
    assert actor_reply(value) == ActorReply("Up", None)  # the environment counts
    assert parse_reply(value["text"]).error is not None  # and reads it as a no-op turn


def test_actor_reply_cap_never_exceeds_the_environment_budget() -> None:
    sokoban = sokoban_observation()
    warehouse = ActorObservation("warehouse", "warehouse-s0-0000", 1, WarehouseEnv().render())
    _, body, _ = one_call(
        openai_body("<answer>{}</answer>"), lambda c: LLMActor(c, max_tokens=5000).act(sokoban)
    )
    assert body["max_tokens"] == 2500  # the Sokoban rollout budget
    _, body, _ = one_call(
        openai_body("<answer>{}</answer>"), lambda c: LLMActor(c, max_tokens=5000).act(warehouse)
    )
    assert body["max_tokens"] == 5000  # Warehouse budgets are not tokens
    assert body["messages"][0]["content"] == actor_system("warehouse")
    assert actor_system("sokoban-8x8") == ACTOR_SYSTEMS["sokoban"]
    assert actor_system("mystery") == ACTOR_SYSTEMS[""]


def test_actor_rollout_is_charged_what_the_provider_reported() -> None:
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    level = generate_puzzles(preset, 1, 7)[0]

    def respond(seen: Seen, index: int) -> Any:
        return openai_body("<answer>Up</answer>", usage=usage(100, 5))

    with ModelServer(respond) as server:
        actor = LLMActor(openai_client(server), name="openai:gpt-test")

        async def go() -> Any:
            async with actor:
                return await run_rollout(level, actor, preset=preset, rollout_id="r-0")

        rollout = anyio.run(go)
    assert rollout.T == len(server.requests) >= 1
    assert all(turn.usage["tokens"] == 105 for turn in rollout.turns)
    assert all(
        seen.json["messages"][1]["content"].startswith("You are playing Sokoban")
        for seen in server.requests
    )


# --------------------------------------------------------------------------- tool agent


def make_query(task: str = "dining") -> Query:
    values = PREFERENCE_VALUES[task]
    prefs = {d: values[d][k % 4] for k, d in enumerate(DIMENSIONS)}
    place = None if task == "location" else "<LocationPreference00001>"
    return Query("<Query00001>", task, prefs, "<TimeInfo00001>", place, "Plan dinner.")


HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "SYS"},
    {"role": "user", "content": "Find me a restaurant."},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call:1",
                "type": "function",
                "function": {"name": "Search", "arguments": '{"City": "Lisbon"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "Rank", "arguments": "{oops"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call:1", "content": "DiningList-1a2b3c4d"},
    {"role": "tool", "tool_call_id": "call_2", "content": "[ERROR] Rank: bad arguments."},
    {"role": "user", "content": "Actually, make it vegan."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_3",
                "type": "function",
                "function": {"name": "Search", "arguments": {"City": "Porto"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_3", "content": "DiningList-9f9f9f9f"},
]

HISTORY_ANTHROPIC: list[dict[str, Any]] = [
    {"role": "system", "content": "SYS"},
    {"role": "user", "content": "Find me a restaurant."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "Search", "input": {"City": "Lisbon"}},
            {"type": "tool_use", "id": "call_2", "name": "Rank", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "DiningList-1a2b3c4d"},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": "[ERROR] Rank: bad arguments.",
            },
            {"type": "text", "text": "Actually, make it vegan."},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_3", "name": "Search", "input": {"City": "Porto"}}
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_3", "content": "DiningList-9f9f9f9f"}
        ],
    },
]


def test_openai_history_converts_to_anthropic_blocks_by_hand() -> None:
    before = json.dumps(HISTORY)
    assert openai_messages_to_anthropic(HISTORY) == HISTORY_ANTHROPIC
    assert json.dumps(HISTORY) == before  # the observation's list is not touched
    body = AnthropicChatClient("c", "http://127.0.0.1:9").build_request(
        openai_messages_to_anthropic(HISTORY), max_tokens=10
    )
    assert body["system"] == "SYS"
    assert body["messages"] == HISTORY_ANTHROPIC[1:]


def test_conversion_edge_cases() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": "S1"}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": None},  # said nothing: dropped
        {"role": "user", "content": ""},  # empty: nothing to send
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "T"}}]},
        {"role": "tool", "tool_call_id": None, "content": [{"type": "text", "text": "r"}]},
    ]
    assert openai_messages_to_anthropic(messages) == [
        {"role": "system", "content": "S1"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
                {"type": "text", "text": "c"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_0", "name": "T", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call", "content": "r"}],
        },
    ]


def observation(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> ToolAgentObservation:
    return ToolAgentObservation(
        "<Query00001>", "dining", 5, "TravelDining", messages, tools, 3, 20, 4
    )


def travel_tools() -> list[dict[str, Any]]:
    return TravelEnv("dining", 5, "<Query00001>").tools


def test_tool_agent_openai_sends_history_and_tools_and_keeps_bad_arguments_raw() -> None:
    tools = travel_tools()
    obs = observation([dict(m) for m in HISTORY], tools)
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "Search", "arguments": '{"City":"Faro"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "Rank", "arguments": "{oops"}},
        {"id": "call_c", "type": "function", "function": {"name": "Rank", "arguments": "[1, 2]"}},
    ]
    reply = openai_body(None, tool_calls=calls, usage=usage(900, 40), finish="tool_calls")
    value, body, _ = one_call(reply, lambda c: LLMToolAgent(c).act(obs))
    assert body["messages"] == HISTORY  # sent as the suite built it
    assert body["tools"] == tools  # OpenAI specs round-trip through ToolSpec unchanged
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS["tool_agent"]
    assert value == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "Search", "arguments": '{"City": "Faro"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "Rank", "arguments": "{oops"},
            },
            {
                "id": "call_c",
                "type": "function",
                "function": {"name": "Rank", "arguments": "[1, 2]"},
            },
        ],
    }


def test_tool_agent_anthropic_converts_history_and_maps_tools() -> None:
    tools = travel_tools()
    obs = observation([dict(m) for m in HISTORY], tools)
    reply = anthropic_body(
        [
            {"type": "text", "text": "Searching again."},
            {"type": "tool_use", "id": "toolu_9", "name": "Search", "input": {"City": "Braga"}},
        ],
        usage={"input_tokens": 800, "output_tokens": 30},
        stop="tool_use",
    )
    value, body, path = one_call(reply, lambda c: LLMToolAgent(c).act(obs), anthropic=True)
    assert path == "/v1/messages"
    assert body["system"] == "SYS"
    assert body["messages"] == HISTORY_ANTHROPIC[1:]
    assert body["tools"] == [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]
    assert value == {
        "role": "assistant",
        "content": "Searching again.",
        "tool_calls": [
            {
                "id": "toolu_9",
                "type": "function",
                "function": {"name": "Search", "arguments": '{"City": "Braga"}'},
            }
        ],
    }


def test_tool_agent_episode_scores_bad_json_as_an_invalid_call() -> None:
    def respond(seen: Seen, index: int) -> Any:
        if index == 0:
            name = seen.json["tools"][0]["function"]["name"]
            call = {
                "id": "call_x",
                "type": "function",
                "function": {"name": name, "arguments": "{oops"},
            }
            return openai_body(None, tool_calls=[call], finish="tool_calls")
        # No tool call and no answer: the episode ends (an answer with an id no tool returned
        # would be rejected as an invalid call and the episode would go on).
        return openai_body("I give up.")

    with ModelServer(respond) as server:
        agent = LLMToolAgent(openai_client(server), name="openai:gpt-test")

        async def go() -> Any:
            async with agent:
                return await run_episode(make_query(), 5, "static", 0, agent)

        record = anyio.run(go)
    assert record.error is None
    (call,) = record.calls
    assert (call.ok, call.error_kind, call.arguments) == (False, "bad_arguments", "{oops")
    assert record.answer is None
    second = server.requests[1].json["messages"]
    assert second[0] == {"role": "system", "content": system_prompt("dining", 5)}
    assert second[2]["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == "call_x"
    assert second[3]["content"].startswith("[ERROR]")


def test_tool_agent_episode_on_anthropic_pairs_tool_use_and_result() -> None:
    def respond(seen: Seen, index: int) -> Any:
        if index == 0:
            name = seen.json["tools"][0]["name"]
            block = {"type": "tool_use", "id": "toolu_01", "name": name, "input": {}}
            return anthropic_body([block], stop="tool_use")
        return anthropic_body([{"type": "text", "text": "I cannot finish this."}])

    with ModelServer(respond) as server:
        agent = LLMToolAgent(anthropic_client(server))

        async def go() -> Any:
            async with agent:
                return await run_episode(make_query(), 5, "static", 0, agent)

        record = anyio.run(go)
    assert record.error is None and record.answer is None
    assert len(record.calls) == 1 and not record.calls[0].ok
    second = server.requests[1].json
    assert second["system"] == system_prompt("dining", 5)
    user, assistant, results = second["messages"]
    assert user["role"] == "user" and isinstance(user["content"], str)
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_01", "name": second["tools"][0]["name"], "input": {}}
        ],
    }
    (result,) = results["content"]
    assert results["role"] == "user" and result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_01" and result["content"].startswith("[ERROR]")


def test_tool_helpers() -> None:
    spec = {"type": "function", "function": {"name": "f", "description": "d"}}
    assert tool_spec_from_openai(spec) == ToolSpec("f", "d")
    assert tool_spec_from_openai({"name": "g", "parameters": {"type": "object"}}) == ToolSpec(
        "g", "", {"type": "object"}
    )
    assert tool_spec_from_openai({"type": "function", "function": {}}) is None
    result = ChatResult("done", (), TokenUsage(), "stop")
    assert assistant_message(result) == {"role": "assistant", "content": "done"}
    bad = ChatResult("", (ToolCall("i", "n", None, '"x"'),), TokenUsage(), None)
    assert assistant_message(bad)["tool_calls"][0]["function"]["arguments"] == '"x"'


# --------------------------------------------------------------------------- make / detect


class Recorder:
    """A ChatModel that is not a client: records calls, answers from a list."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self,
        messages: Any,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        tools: Any = None,
    ) -> ChatResult:
        self.calls.append({"messages": messages, "max_tokens": max_tokens, "tools": tools})
        return ChatResult(self.texts.pop(0), (), TokenUsage(), "stop")


def test_every_llm_role_has_its_suite_adapter_and_a_role_method() -> None:
    """The role table joins each suite's adapters; each fills a role the harness calls, with
    that role's method, and the online actor reads the actor's ``max_tokens`` setting."""
    from pytest_budget._core.registry import registered_roles, registered_suites
    from pytest_budget._run.model_agents import LLM_ROLES, ROLES
    from pytest_budget.awareness.online._llm import LLMOnlineActor

    assert set(ROLES) == {"planner", "solver", "estimator", "actor", "tool_agent", "online_actor"}
    for role, cls in LLM_ROLES.items():
        assert cls.role == role and role in registered_roles()
        assert callable(getattr(cls, registered_roles()[role].method))
    # Each suite's adapters come from its own package.
    for name, suite in registered_suites().items():
        assert suite.llm_roles is not None
        for cls in suite.llm_roles().values():
            assert cls.__module__.startswith(f"pytest_budget.{name}."), (name, cls)
    model = Recorder()
    online = make_llm_agent("online_actor", model, settings={"max_tokens": {"actor": 77}})
    assert type(online) is LLMOnlineActor and online.max_tokens == 77
    assert make_llm_agent("online_actor", model).max_tokens == 1024
    assert make_llm_agent("online_actor", model, settings={"max_tokens": 5}).max_tokens == 5
    with pytest.raises(ValueError, match="positive integer"):
        make_llm_agent("online_actor", model, settings={"max_tokens": {"actor": -1}})


def test_make_llm_agent_builds_each_role_with_settings() -> None:
    model = Recorder()
    assert isinstance(model, ChatModel)
    kinds = {
        "planner": LLMPlanner,
        "solver": LLMSolver,
        "estimator": LLMEstimator,
        "actor": LLMActor,
        "tool_agent": LLMToolAgent,
    }
    settings = {"max_tokens": {"solver": 777}, "temperature": 0.3, "base_url": None}
    for role, cls in kinds.items():
        agent = make_llm_agent(role, model, name="openai:m", settings=settings)
        assert type(agent) is cls and agent.name == "openai:m"
        assert agent.max_tokens == (777 if role == "solver" else DEFAULT_MAX_TOKENS[role])
        assert agent.temperature == 0.3
    assert make_llm_agent("actor", model, settings={"max_tokens": 99}).max_tokens == 99
    with pytest.raises(ValueError, match="unknown role 'judge'"):
        make_llm_agent("judge", model)
    with pytest.raises(ValueError, match="positive integer"):
        make_llm_agent("planner", model, settings={"max_tokens": 0})
    with pytest.raises(ValueError, match="message_format"):
        make_llm_agent("tool_agent", model, settings={"message_format": "gemini"})


def test_agents_work_on_any_chat_model_and_detect_the_wire_format() -> None:
    model = Recorder("<answer>impossible</answer>")
    agent = LLMEstimator(model)
    assert agent.name == "Recorder"
    assert anyio.run(agent.estimate, sokoban_probe()) == "<answer>impossible</answer>"
    assert model.calls[0]["max_tokens"] == DEFAULT_MAX_TOKENS["estimator"]

    class Runtime:  # a wrapper exposing its client, as a runtime would
        def __init__(self, client: ChatClient) -> None:
            self.client = client

        async def complete(self, *args: Any, **kwargs: Any) -> ChatResult:
            return await self.client.complete(*args, **kwargs)

    anthropic = AnthropicChatClient("claude-x", "http://127.0.0.1:9")
    openai = OpenAIChatClient("gpt-x", "http://127.0.0.1:9/v1")
    assert detect_message_format(Runtime(anthropic)) == "anthropic"
    assert detect_message_format(openai) == "openai"
    assert detect_message_format(model) == "openai"
    assert LLMToolAgent(Runtime(anthropic)).message_format == "anthropic"
    assert LLMToolAgent(Runtime(anthropic)).name == "anthropic:claude-x"
    assert LLMToolAgent(anthropic, message_format="openai").message_format == "openai"

    async def close() -> None:
        await anthropic.aclose()
        await openai.aclose()

    anyio.run(close)


# --------------------------------------------------------------------------- provider


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_MODEL_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def test_key_is_read_from_the_environment_and_sent_only_in_the_header(
    no_keys: pytest.MonkeyPatch,
) -> None:
    no_keys.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer([Reply(json=openai_body("{}"))]) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1")
        agent = LLMPlanner(client, name="openai:gpt-test")
        assert KEY not in repr(client) and KEY not in repr(agent)
        run(client, lambda c: agent.plan(plan_request()))
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in request.body.decode()


def test_named_key_variable_for_anthropic(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv("MY_MODEL_KEY", KEY)
    reply = anthropic_body([{"type": "text", "text": "x"}])
    with ScriptedServer([Reply(json=reply)]) as server:
        # One --budget-base-url for both providers: a trailing /v1 is dropped for Anthropic.
        client = build_chat_client(
            "anthropic", "claude-test", base_url=server.url + "/v1/", api_key_env="MY_MODEL_KEY"
        )
        run(client, lambda c: LLMEstimator(c).estimate(sokoban_probe()))
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY


def test_key_echoed_by_the_server_never_reaches_the_error(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv("OPENAI_API_KEY", KEY)
    echo = Reply(status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}})
    with ScriptedServer([echo]) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1")
        with pytest.raises(ModelCallError) as info:
            run(client, lambda c: LLMSolver(c).solve(arith_item().problem))
    assert KEY not in str(info.value) and "***" in str(info.value)
    assert info.value.status == 401


@pytest.mark.parametrize(
    ("provider", "variable", "host"),
    [
        ("openai", "OPENAI_API_KEY", "api.openai.com"),
        ("anthropic", "ANTHROPIC_API_KEY", "api.anthropic.com"),
    ],
)
def test_missing_key_for_the_hosted_api_is_a_one_line_error(
    no_keys: pytest.MonkeyPatch, provider: str, variable: str, host: str
) -> None:
    with pytest.raises(ProviderConfigError) as info:
        build_chat_client(provider, "m")
    message = str(info.value)
    assert "\n" not in message
    assert variable in message and host in message and "--budget-api-key-env" in message
    with pytest.raises(ProviderConfigError, match=variable):
        build_chat_client(provider, "m", base_url=f"https://{host}/v1")
    assert key_required(f"https://{host}") and not key_required("http://127.0.0.1:8000/v1")


def test_local_server_needs_no_key_but_a_named_variable_must_be_set(
    no_keys: pytest.MonkeyPatch,
) -> None:
    with ScriptedServer([Reply(json=openai_body("x"))]) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1")
        run(client, lambda c: LLMPlanner(c).plan(plan_request()))
    assert "authorization" not in server.requests[0].headers
    with pytest.raises(ProviderConfigError, match="MY_MODEL_KEY is not set"):
        build_chat_client(
            "openai", MODEL, base_url="http://127.0.0.1:1/v1", api_key_env="MY_MODEL_KEY"
        )


def test_a_key_passed_as_the_variable_name_is_refused_without_echo(
    no_keys: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ProviderConfigError) as info:
        build_chat_client("openai", MODEL, api_key_env=KEY)
    assert KEY not in str(info.value) and "name an environment variable" in str(info.value)
    with pytest.raises(ProviderConfigError, match="unknown model provider 'gemini'"):
        build_chat_client("gemini", MODEL)
    with pytest.raises(ProviderConfigError, match="unknown model provider"):
        provider_factory("gemini")


def test_provider_factory_builds_named_agents_and_wraps_the_client(
    no_keys: pytest.MonkeyPatch,
) -> None:
    wrapped: list[ChatClient] = []

    def chat_model(client: ChatClient) -> ChatModel:
        wrapped.append(client)
        return client

    reply = anthropic_body([{"type": "tool_use", "id": "t1", "name": "Search", "input": {}}])
    with ScriptedServer([Reply(json=reply)]) as server:
        factory = provider_factory("anthropic")
        settings = {"base_url": server.url, "api_key_env": None, "chat_model": chat_model}
        agent = factory("claude-test", "tool_agent", settings)
        assert isinstance(agent, LLMToolAgent)
        assert agent.name == "anthropic:claude-test" and agent.message_format == "anthropic"
        assert wrapped and agent.model is wrapped[0]
        obs = observation([dict(m) for m in HISTORY], travel_tools())

        async def go() -> Any:
            async with agent:
                return await agent.act(obs)

        message = anyio.run(go)
    assert message["tool_calls"][0]["function"] == {"name": "Search", "arguments": "{}"}
    assert server.requests[0].json["messages"] == HISTORY_ANTHROPIC[1:]
    assert factory("claude-test", "judge", settings) is None


def test_provider_resolves_through_the_agent_registry(
    no_keys: pytest.MonkeyPatch,
) -> None:
    no_keys.setitem(agents_module._PROVIDERS, "openai", provider_factory("openai"))
    settings = {"base_url": "http://127.0.0.1:1/v1", "api_key_env": None}
    solver = resolve_agent("openai:gpt-test", "solver", seed=0, settings=settings)
    planner = resolve_agent("openai:gpt-test", "planner", seed=0, settings=settings)
    assert isinstance(solver, LLMSolver) and isinstance(planner, LLMPlanner)
    assert solver.name == planner.name == "openai:gpt-test"


def test_one_client_serves_several_event_loops(no_keys: pytest.MonkeyPatch) -> None:
    """Phase 0 and each cell run in their own anyio.run: no pooled connection may cross."""

    def respond(seen: Seen, index: int) -> Any:
        return openai_body(f"Answer: {index}", usage=usage(10, 2))

    with ModelServer(respond) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1")
        solver = LLMSolver(client)
        problem = arith_item().problem

        async def batch() -> list[ModelSolution]:
            results: list[ModelSolution] = []

            async def one() -> None:
                results.append(await solver.solve(problem))

            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(one)
            return results

        for _ in range(3):
            assert len(anyio.run(batch)) == 3
        anyio.run(solver.aclose)
        gc.collect()  # an unclosed transport would warn here (filterwarnings = error)
    assert len(server.requests) == 9


def test_keep_alive_client_is_closed_with_the_agent(no_keys: pytest.MonkeyPatch) -> None:
    with ScriptedServer([Reply(json=openai_body("x"))]) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1", keep_alive=True)
        agent = LLMPlanner(client)

        async def go() -> str:
            async with agent:
                return await agent.plan(plan_request())

        assert anyio.run(go) == "x"
    assert isinstance(client._http, httpx.AsyncClient) and client._http.is_closed


@pytest.mark.parametrize("domain", ["", "arith", "sokoban"])
def test_solver_prompts_are_neutral_about_length(domain: str) -> None:
    # TRIAGE measures c_i in a baseline solve: asking for brevity would shrink every cost.
    prompt = solver_system(domain).lower()
    for phrase in ("brief", "concise", "short", "only the working", "only as much", "detail"):
        assert phrase not in prompt, (domain, phrase)
    assert "answer:" in prompt


def test_a_provider_client_makes_its_own_httpx_client_only_when_it_needs_one(
    no_keys: pytest.MonkeyPatch,
) -> None:
    # An httpx client builds an SSL context (~10 ms of CPU, a third of a live planning
    # run's CPU when every cell's agent made one): on the worker loop the calls use the
    # loop's pooled client, so the client's own is made on first use elsewhere only.
    from pytest_budget.models._loop import run_on_worker_loop

    made: list[int] = []
    real = httpx.AsyncClient.__init__

    def counting(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        made.append(1)
        real(self, *args, **kwargs)

    no_keys.setattr(httpx.AsyncClient, "__init__", counting)
    messages = [{"role": "user", "content": "hi"}]
    with ScriptedServer([Reply(json=openai_body("a")), Reply(json=openai_body("b"))]) as server:
        client = build_chat_client("openai", MODEL, base_url=server.url + "/v1")
        assert made == []
        on_loop = run_on_worker_loop(lambda: client.complete(messages, max_tokens=5))
        assert on_loop.text == "a"
        assert client._own_http is None  # the worker loop's pool carried the call
        elsewhere = anyio.run(lambda: client.complete(messages, max_tokens=5))
        assert elsewhere.text == "b"
        assert client._own_http is not None and len(server.requests) == 2
        anyio.run(client.aclose)
        assert client._own_http.is_closed
