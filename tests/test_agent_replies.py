"""The agent-call layer: replies checked per role, errors with the agent's own traceback,
BaseException, hostile objects, sync helpers inside event loops, model names and URLs,
lone surrogates in model replies."""

from __future__ import annotations

import functools
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_server import ModelServer

from pytest_budget._core.replies import _spelled_out_size, output_limit, reply_problem, safe_repr
from pytest_budget._core.roles import AgentError, InvalidOutput, call_role, collect_agent_errors
from pytest_budget._run.agent_names import (
    UnknownAgentError,
    normalize_agent_name,
    validate_agent_name,
)
from pytest_budget._run.options import OptionError, parse_options
from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._replay.answers import Interval, IntervalMap, Invalid
from pytest_budget.awareness._replay.rollouts import Rollout, Turn
from pytest_budget.models._client import ChatResult, ToolCall
from pytest_budget.models._loop import run_blocking
from pytest_budget.models._provider import build_chat_client, endpoint_settings
from pytest_budget.models._recorder import CallRecorder, request_key, scrub_result
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig
from pytest_budget.models._usage import TokenUsage
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._queries import generate_queries


class RaisingRepr:
    def __repr__(self) -> str:
        raise ValueError("no")


class RecursiveRepr:
    def __repr__(self) -> str:
        return repr(self)


# ------------------------------------------------------------------------ reply checks


@pytest.mark.parametrize(
    ("role", "value", "reason"),
    [
        ("planner", None, "returned NoneType; expected a Plan, a mapping with a 'plan' list, "
                          "a list of entries or text"),
        ("planner", 3.5, "returned float; expected a Plan, *"),
        ("planner", {"steps": 1, 2: 3}, "returned a dict without 'plan' (keys: 'steps', 2); *"),
        ("planner", RaisingRepr(), "returned RaisingRepr; expected a Plan, *"),
        ("solver", {"x": 1}, "returned a dict without 'text' or 'answer' (keys: 'x'); *"),
        ("solver", b"4", "returned bytes; expected a Solution, *"),
        ("estimator", [1, 2], "returned list; expected text, an Interval, an IntervalMap or "
                              "Impossible"),
        ("estimator", True, "returned bool; *"),
        ("tool_agent", 7, "returned int; expected text or an assistant message *"),
        ("tool_agent", {"role": "assistant"}, "returned a dict without 'content' or 'text' or "
                                              "'tool_calls' or 'choices' (keys: 'role'); *"),
        ("tool_agent", RecursiveRepr(), "returned RecursiveRepr; *"),
        ("actor", "x" * 11, "returned str of 11 characters, over the 10-character limit for raw "
                            "outputs (--budget-max-output-chars); not parsed"),
        ("actor", {"text": "x" * 11}, "'text' returned str of 11 characters, over the *"),
        ("estimator", "x" * 11, "returned str of 11 characters, over the 10-character limit *"),
    ],
)  # fmt: skip
def test_replies_a_role_cannot_read_name_their_type(role: str, value: Any, reason: str) -> None:
    import fnmatch

    with output_limit(10):
        found = reply_problem(role, value)
    assert found is not None and fnmatch.fnmatchcase(found, reason), found


@pytest.mark.parametrize(
    ("role", "value"),
    [
        ("planner", "text"), ("planner", {"plan": []}), ("planner", [{"id": "a"}]),
        ("solver", "Answer: 4"), ("solver", {"text": "4"}), ("solver", {"answer": "4"}),
        ("estimator", "impossible"), ("estimator", Interval(1, 2)),
        ("tool_agent", {"content": None, "tool_calls": []}), ("tool_agent", "x" * 10),
        ("actor", None), ("actor", 42), ("actor", {"thoughts": 1}),
    ],
)  # fmt: skip
def test_replies_left_to_the_roles_own_parser(role: str, value: Any) -> None:
    with output_limit(10):
        assert reply_problem(role, value) is None


def test_safe_repr_never_raises_and_stays_short() -> None:
    assert safe_repr(RaisingRepr()) == "<RaisingRepr object; repr() raised ValueError>"
    assert safe_repr(RecursiveRepr()) == "<RecursiveRepr object; repr() raised RecursionError>"
    assert safe_repr(10**5000) == "<int of about 5,001 digits>"  # repr() refuses it
    assert safe_repr("x" * 10_000_000) == "'" + "x" * 196 + "..."
    assert safe_repr("\ud800") == "'\\ud800'"  # escaped: the text stays encodable


# ---------------------------------------------------------------- errors and tracebacks


def _helper(request: object) -> object:
    return {"plan": [1 / 0]}


def raising_planner(request: object) -> object:
    return _helper(request)


def test_agent_error_carries_only_the_agents_own_frames() -> None:
    with collect_agent_errors() as log, pytest.raises(AgentError) as info:
        anyio.run(functools.partial(call_role, raising_planner, "planner", None))
    assert info.value.reason == "raised ZeroDivisionError: division by zero"
    lines = info.value.traceback.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "ZeroDivisionError: division by zero"
    files = [line for line in lines if line.startswith("  File ")]
    here = __file__
    assert files == [
        f'  File "{here}", line {raising_planner.__code__.co_firstlineno + 1}, in raising_planner',
        f'  File "{here}", line {_helper.__code__.co_firstlineno + 1}, in _helper',
    ]
    assert log == [info.value]


def test_collecting_is_per_block_and_skips_invalid_outputs() -> None:
    with collect_agent_errors() as outer:
        with collect_agent_errors() as inner, pytest.raises(InvalidOutput):
            anyio.run(functools.partial(call_role, lambda r: None, "planner", None))
        with pytest.raises(AgentError):
            anyio.run(functools.partial(call_role, raising_planner, "planner", None))
    assert inner == [] and len(outer) == 1


class Custom(BaseException):
    pass


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (SystemExit(2), "raised SystemExit: 2"),
        (GeneratorExit(), "raised GeneratorExit"),
        (Custom("mine"), "raised Custom: mine"),
    ],
)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_base_exceptions_are_the_agents_error(error: BaseException, reason: str, kind: str) -> None:
    def sync_agent(request: object) -> None:
        raise error

    async def async_agent(request: object) -> None:
        raise error

    agent = sync_agent if kind == "sync" else async_agent
    with pytest.raises(AgentError) as info:
        anyio.run(functools.partial(call_role, agent, "planner", None))
    assert info.value.reason == reason


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_keyboard_interrupt_passes_through(kind: str) -> None:
    def sync_agent(request: object) -> None:
        raise KeyboardInterrupt

    async def async_agent(request: object) -> None:
        raise KeyboardInterrupt

    agent = sync_agent if kind == "sync" else async_agent
    with pytest.raises(KeyboardInterrupt):
        anyio.run(functools.partial(call_role, agent, "planner", None))


def test_cancellation_is_not_an_agent_error() -> None:
    started = anyio.Event()

    async def slow(request: object) -> str:
        started.set()
        await anyio.sleep(10)
        return "late"

    async def main() -> str:
        with anyio.move_on_after(0.05):
            await call_role(slow, "planner", None)
            return "not cancelled"
        return "cancelled"

    assert anyio.run(main) == "cancelled"


# ------------------------------------------------------------- hostile estimator objects

ROLLOUTS = [
    Rollout(
        id=f"r{i}",
        env="mine",
        budget={"tokens": 1000.0},
        success=True,
        turns=tuple(Turn({"tokens": 100.0}) for _ in range(3)),
    )
    for i in range(3)
]


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        (Interval("a", None), "bound of type str, expected a number"),  # type: ignore[arg-type]
        (Interval(10**400, 1), "bound too large for a float"),
        (Interval(1, float("nan")), "non-finite value (nan/inf)"),
        (IntervalMap((("tokens", 5),)), "tokens: int, expected an Interval"),  # type: ignore[arg-type]
        (RaisingRepr(), "returned RaisingRepr; expected text, an Interval, *"),
        (RecursiveRepr(), "returned RecursiveRepr; expected text, an Interval, *"),
        (Invalid(None, None), "the estimator returned Invalid without a reason"),  # type: ignore[arg-type]
        (None, "returned NoneType; expected text, an Interval, *"),
        ("x" * 10_485_760, "returned str of 10,485,760 characters, over the 1,000,000-*"),
    ],
    ids=["str-bound", "huge-int", "nan", "map-of-int", "raising-repr", "recursive-repr",
         "empty-invalid", "none", "10MB"],
)  # fmt: skip
def test_a_hostile_answer_is_invalid_and_the_other_probes_go_on(hostile: Any, reason: str) -> None:
    import fnmatch

    class Mixed:
        name = "mixed"

        def estimate(self, probe: Any) -> Any:
            return hostile if probe.rollout_id == "r1" else Interval(0, 200)

    outcome = anyio.run(run_awareness_cell, ROLLOUTS, Mixed())
    assert outcome.outcome == "ok" and outcome.n_probes == 6 and outcome.n_errors == 0
    by_rollout = {r.probe.rollout_id: r.estimate for r in outcome.results}
    bad = by_rollout["r1"]
    assert isinstance(bad, Invalid) and fnmatch.fnmatchcase(bad.reason, reason), bad
    assert len(bad.raw) <= 200
    assert by_rollout["r0"] == by_rollout["r2"] == Interval(0.0, 200.0)
    assert outcome.scores["invalid_rate"] == pytest.approx(2 / 6)


# --------------------------------------------------------------- tool agent refusals


@pytest.mark.parametrize(
    ("reply", "reason"),
    [(None, "NoneType"), (7, "int"), ({"role": "assistant"}, "a dict without 'content'")],
)
def test_a_tool_agent_reply_of_no_known_shape_ends_the_episode_naming_its_type(
    reply: Any, reason: str
) -> None:
    # CostBench's loop ends an episode at a turn without a tool call; a reply of no known
    # shape has none, so it ends there too, with its type named in the notes.
    query = generate_queries("dining", 1, seed=3)[0]
    record = anyio.run(
        functools.partial(run_episode, query, 1, "static", 0, lambda obs: reply, max_steps=2)
    )
    assert record.error is None and record.answer is None
    assert record.calls == () and record.turns == 1
    (note,) = [note for note in record.notes if "unreadable" in note]
    assert note.startswith(f"turn 1: unreadable reply (the agent returned {reason}")
    assert note.endswith("; ended")


# --------------------------------------------------------------- sync helpers in loops


def test_run_blocking_inside_a_running_loop_uses_the_worker_loop() -> None:
    seen: list[int] = []

    async def work() -> str:
        seen.append(threading.get_ident())
        await anyio.sleep(0)
        return "done"

    async def main() -> str:
        return run_blocking(work)  # anyio.run here would raise "already running"

    assert anyio.run(main) == "done"
    assert seen and seen[0] != threading.get_ident()
    assert run_blocking(work) == "done"  # no loop running: the same worker loop
    assert seen[-1] == seen[0] != threading.get_ident()


def test_run_blocking_passes_errors_through() -> None:
    async def broken() -> None:
        raise LookupError("gone")

    async def main() -> None:
        run_blocking(broken)

    with pytest.raises(LookupError, match="gone"):
        anyio.run(main)


# ----------------------------------------------------------------- names and endpoints


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("openai/gpt-4o-mini", "openai:gpt-4o-mini"),
        ("anthropic/claude-3-5-haiku-latest", "anthropic:claude-3-5-haiku-latest"),
        ("openai/meta-llama/Llama-3-8B", "openai:meta-llama/Llama-3-8B"),
        ("openai/llama3:8b", "openai:llama3:8b"),
        ("openai:gpt-4o", "openai:gpt-4o"),
        ("openai:org/model", "openai:org/model"),
        ("oracle", "oracle"),
    ],
)
def test_provider_slash_model_names(given: str, expected: str) -> None:
    assert normalize_agent_name(given) == expected


def _options(**values: Any) -> Any:
    def get(name: str) -> Any:
        return values.get(name)

    return parse_options(get, lambda name: values.get(name, ""), rootdir=".", invocation_dir=".")


def test_unknown_provider_lists_the_valid_forms() -> None:
    with pytest.raises(UnknownAgentError) as info:
        normalize_agent_name("mistral/large")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("--budget-agent=mistral/large: unknown provider 'mistral'; valid")
    assert "anthropic/MODEL or anthropic:MODEL, openai/MODEL or openai:MODEL" in message
    assert "a reference agent (always-feasible, " in message and "or 'user'" in message
    with pytest.raises(UnknownAgentError, match="unknown provider 'mistral'; valid forms"):
        validate_agent_name("mistral:large")
    with pytest.raises(OptionError, match="no model name after openai/"):
        _options(budget_agent="openai/")


def test_both_forms_are_one_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_budget._run.agent_names import register_provider
    from pytest_budget._run.model_agents import provider_factory
    from pytest_budget.models._provider import PROVIDERS

    for provider in PROVIDERS:
        register_provider(provider, provider_factory(provider))
    options = _options(budget_agent="openai/m1, openai:m1, anthropic/c2")
    assert options.agents == ("openai:m1", "anthropic:c2")


def test_base_url_variables_are_read_when_the_option_is_absent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert endpoint_settings("openai", "m", None, None) == ("http://127.0.0.1:9/v1", None)
    assert endpoint_settings("anthropic", "c", None, None) == ("http://127.0.0.1:8", None)
    assert endpoint_settings("openai", "m", "http://10.0.0.1/v1", None)[0] == "http://10.0.0.1/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "  ")
    with pytest.raises(ValueError, match=r"no API key for api\.openai\.com"):
        endpoint_settings("openai", "m", None, None)  # blank: the hosted API, which needs a key


# ------------------------------------------------------------------ lone surrogates


def _result(text: str) -> ChatResult:
    call = ToolCall("c\ud800", "move", {"to": "A\udfff", "k\ud800": ["\udc00"]}, '{"to": "A"}')
    return ChatResult(text, (call,), TokenUsage(input=3, output=2, reported=True), "stop")


def test_a_lone_surrogate_is_recorded_and_replays(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi \u00fc"}]}
    key = request_key("openai", body)
    CallRecorder(tmp_path).store("openai", "m", key, body, _result("ok \ud800 then"))
    assert CallRecorder(tmp_path).load("openai", "m", key) == _result("ok \ud800 then")


def test_scrub_result_replaces_lone_surrogates_only() -> None:
    clean = ChatResult("fine \U0001f600", (), TokenUsage(), None)
    assert scrub_result(clean) is clean
    scrubbed = scrub_result(_result("a\ud800b"))
    assert scrubbed.text == "a\ufffdb"
    (call,) = scrubbed.tool_calls
    assert call.id == "c\ufffd" and call.arguments == {"to": "A\ufffd", "k\ufffd": ["\ufffd"]}
    assert scrubbed.usage == _result("").usage


def test_a_model_reply_with_a_lone_surrogate_is_kept(tmp_path: Path) -> None:
    """The server sends ``"\\ud800"`` in its JSON: the paid call is returned and recorded."""
    with ModelServer(lambda body: "<answer>[1, 2]</answer> \ud800") as server:
        config = RuntimeConfig(cache_dir=str(tmp_path / "models"))
        model = ModelRuntime(config).wrap(
            build_chat_client("openai", "m", base_url=server.url, timeout=5)
        )
        messages = [{"role": "user", "content": "How far?"}]
        first = anyio.run(lambda: model.complete(messages, max_tokens=8))
        assert first.text == "<answer>[1, 2]</answer> \ufffd"
        replayed = anyio.run(lambda: model.complete(messages, max_tokens=8))
        assert replayed == first
        assert model.runtime.stats.calls == 1 and model.runtime.stats.replayed == 1
    assert sys.getrecursionlimit() > 0


def test_spelled_out_size_hand_worked() -> None:
    # {"a": ["xy", 1]}: braces 2, key "a" 1 + 2 quotes, the list 2 brackets, "xy" 2 + 2,
    # the number 4, a separator per item (3): 19.
    assert _spelled_out_size({"a": ["xy", 1]}, 1000) == 19
    cycle: list[Any] = []
    cycle.append(cycle)  # the list 2, its one item 1 + the cut cycle 4
    assert _spelled_out_size(cycle, 1000) == 7
    shared = ["abcd"] * 3  # 2 + 3 x (1 + 6) = 23, counted at each of its 4 references
    assert _spelled_out_size([shared] * 4, 1000) == 2 + 4 * (1 + 23)
    assert _spelled_out_size([shared] * 4, 50) > 50  # stops past the limit
