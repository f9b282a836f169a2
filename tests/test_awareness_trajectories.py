"""Coding-agent trajectory importers and long-rollout probe subsampling, on hand-made files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_budget.awareness._logs.trajectories import (
    MAX_TEXT_CHARS,
    SYNTHETIC_COUNT,
    SYNTHETIC_ENV,
    bundled_swe_path,
    bundled_swe_rollouts,
    detect_format,
    family_budget,
    family_label,
    load_trajectories,
    synthesize_swe_trajectories,
    synthetic_swe_text,
)
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import Rollout, RolloutFileError, Turn, write_rollouts
from pytest_budget.awareness._replay.subsample import length_buckets, subsample_probes

# ----------------------------------------------------------------------------- builders


def _usage(prompt: Any, completion: Any, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, **extra}


def _mini_call(content: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if usage is not None:
        message["extra"] = {"actions": [], "response": {"id": "r", "usage": usage}}
    return message


def _mini(
    usages: list[dict[str, Any] | None],
    *,
    exit_status: str | None = "Submitted",
    instance_id: str | None = "repo__pkg-1",
    model: str | None = "anthropic/claude-sonnet-4-5",
    **top: Any,
) -> dict[str, Any]:
    """A mini-swe-agent trajectory: system, task, then (assistant, observation) per call."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug."},
    ]
    for number, usage in enumerate(usages, start=1):
        messages.append(_mini_call(f"act {number}", usage))
        messages.append({"role": "user", "content": f"obs {number}", "extra": {"returncode": 0}})
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": exit_status}})
    info: dict[str, Any] = {"exit_status": exit_status, "submission": ""}
    if model is not None:
        info["config"] = {"model": {"model_name": model}}
    data: dict[str, Any] = {
        "info": info,
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    if instance_id is not None:
        data["instance_id"] = instance_id
    data.update(top)
    return data


def _chat(usages: list[dict[str, Any] | None], **top: Any) -> dict[str, Any]:
    """An openai-chat transcript: user task, then (assistant, tool) per call."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    for number, usage in enumerate(usages, start=1):
        message: dict[str, Any] = {"role": "assistant", "content": f"act {number}"}
        if usage is not None:
            message["usage"] = usage
        messages.append(message)
        messages.append({"role": "tool", "content": f"out {number}", "tool_call_id": "t"})
    return {"messages": messages, **top}


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2))  # pretty-printed, as mini-swe-agent saves
    return path


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _tokens(rollout: Rollout) -> list[float]:
    return [turn.usage["tokens"] for turn in rollout.turns]


# ----------------------------------------------------------------------------- usage


def test_mini_swe_per_turn_usage_excludes_resent_history(tmp_path: Path) -> None:
    data = _mini(
        [
            _usage(1000, 100, total_tokens=1100),
            _usage(1300, 50, total_tokens=1350),
            _usage(1200, 80),  # history trimmed: 1200 - 1300 - 50 < 0, clamped to 0
            _usage(1500, 20, prompt_tokens_details={"cached_tokens": 1200}),
        ]
    )
    path = _write_json(tmp_path / "repo__pkg-1.traj.json", data)
    [rollout] = load_trajectories([path])
    # 1000 + 100;  (1300 - 1000 - 100) + 50;  0 + 80;  (1500 - 1200 - 80) + 20
    assert _tokens(rollout) == [1100, 250, 80, 240]
    assert rollout.T == 4 and rollout.dimensions == ("tokens",)
    first, second, third, fourth = (dict(turn.info) for turn in rollout.turns)
    assert first == {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "total_tokens": 1100,
        "new_input_tokens": 1000,
        "message_index": 2,
    }
    assert second["new_input_tokens"] == 200 and "clamped" not in second
    assert third["new_input_tokens"] == 0 and third["clamped"] is True
    assert third["total_tokens"] == 1280  # not logged: prompt + completion
    assert fourth["cached_tokens"] == 1200 and fourth["new_input_tokens"] == 220
    assert rollout.meta["clamped_turns"] == 1
    # observation = the new user content since the last call; action = the call's content
    assert [turn.observation for turn in rollout.turns] == [
        "Fix the bug.",
        "obs 1",
        "obs 2",
        "obs 3",
    ]
    assert [turn.action for turn in rollout.turns] == ["act 1", "act 2", "act 3", "act 4"]
    assert rollout.id == "repo__pkg-1" and rollout.env == "swe-claude-sonnet-4-5"
    assert rollout.meta["format"] == "mini-swe-agent" and rollout.meta["source"] == str(path)
    assert rollout.meta["assistant_calls"] == 4 and rollout.meta["truncated"] is False


def test_openai_chat_reasoning_tokens_are_not_resent(tmp_path: Path) -> None:
    reasoning = {"completion_tokens_details": {"reasoning_tokens": 200}}
    records = [
        _chat(
            [
                _usage(500, 300, **reasoning),  # visible output 300 - 200 = 100
                _usage(700, 40, completion_tokens_details=None),
                _usage(900, 60),
            ],
            id="t-1",
            model="openai/gpt-5.2",
            success=True,
        )
    ]
    path = _write_jsonl(tmp_path / "chats.jsonl", records)
    [rollout] = load_trajectories([path])
    # 500 + 300;  (700 - 500 - 100) + 40;  (900 - 700 - 40) + 60
    assert _tokens(rollout) == [800, 140, 220]
    assert rollout.turns[0].info["reasoning_tokens"] == 200
    assert [turn.observation for turn in rollout.turns] == ["Fix the bug.", "out 1", "out 2"]
    assert rollout.id == "t-1" and rollout.env == "swe-gpt-5.2" and rollout.success
    assert rollout.meta["line"] == 1 and rollout.meta["success_rule"] == "success"


def test_content_parts_tool_calls_and_long_text_clipping(tmp_path: Path) -> None:
    long = "H" * 1500 + "M" * 3000 + "T" * 1500
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "part one"}, "part two"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}],
            "usage": _usage(10, 5),
        },
        {"role": "tool", "content": long},
        {"role": "assistant", "content": "done", "usage": _usage(20, 5)},
    ]
    path = _write_jsonl(tmp_path / "c.jsonl", [{"messages": messages, "resolved": False}])
    [rollout] = load_trajectories([path])
    assert rollout.turns[0].observation == "part one\npart two"
    assert rollout.turns[0].action == '[tool call] bash({"cmd": "ls"})'
    clipped = rollout.turns[1].observation
    assert clipped is not None and len(clipped) < MAX_TEXT_CHARS + 60
    assert clipped.startswith("H" * 1000) and clipped.endswith("T" * 1000)
    assert "[... 4000 characters omitted ...]" in clipped
    assert rollout.id == "c"  # no id, only record: the file stem


# ----------------------------------------------------------------------------- success


@pytest.mark.parametrize(
    ("top", "info", "expected", "rule"),
    [
        ({}, {"exit_status": "Submitted"}, True, "exit_status == 'Submitted'"),
        ({}, {"exit_status": "LimitsExceeded"}, False, "exit_status == 'Submitted'"),
        ({}, {"exit_status": None}, False, "exit_status == 'Submitted'"),
        ({}, {"exit_status": "Submitted", "resolved": False}, False, "info.resolved"),
        ({}, {"exit_status": "LimitsExceeded", "resolved": True}, True, "info.resolved"),
        ({"resolved": False}, {"exit_status": "Submitted", "resolved": True}, False, "resolved"),
    ],
)
def test_mini_swe_success_rule(
    tmp_path: Path, top: dict[str, Any], info: dict[str, Any], expected: bool, rule: str
) -> None:
    data = _mini([_usage(10, 1), _usage(12, 1)], **top)
    data["info"].update(info)
    [rollout] = load_trajectories([_write_json(tmp_path / "t.traj.json", data)])
    assert rollout.success is expected and rollout.meta["success_rule"] == rule


def test_caller_resolved_mapping_overrides_and_chat_rules(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "t.traj.json", _mini([_usage(10, 1)], exit_status="Submitted"))
    [rollout] = load_trajectories([path], resolved={"repo__pkg-1": False})
    assert not rollout.success and rollout.meta["success_rule"] == "resolved (given by the caller)"
    chats = _write_jsonl(
        tmp_path / "c.jsonl",
        [
            _chat([_usage(1, 1)], id="a", resolved=True, success=False),
            _chat([_usage(1, 1)], id="b", success=False),
        ],
    )
    a, b = load_trajectories([chats])
    assert a.success and a.meta["success_rule"] == "resolved"
    assert not b.success and b.meta["success_rule"] == "success"


# ----------------------------------------------------------------------------- budgets


def test_family_median_budget_and_overrides(tmp_path: Path) -> None:
    # One-call trajectories: total = prompt + completion.
    totals = {"a": 100, "b": 400, "c": 250, "d": 1000}
    records = [
        _mini([_usage(total - 10, 10)], instance_id=rid, model="m/alpha")
        for rid, total in totals.items()
    ]
    other = _mini([_usage(60, 10)], instance_id="z", model="beta")
    path = _write_jsonl(tmp_path / "runs.traj.jsonl", [*records, other])
    rollouts = load_trajectories([path])
    by_id = {r.id: r for r in rollouts}
    assert [r.id for r in rollouts] == ["a", "b", "c", "d", "z"]  # file order
    # family swe-alpha: totals 100, 250, 400, 1000 -> median (250 + 400) / 2
    assert {by_id[rid].budget["tokens"] for rid in totals} == {325.0}
    assert by_id["a"].env == "swe-alpha" and by_id["z"].env == "swe-beta"
    assert by_id["z"].budget == {"tokens": 70.0}
    assert by_id["a"].meta["budget_rule"] == "family median"
    assert by_id["a"].meta["family_size"] == 4
    assert by_id["b"].feasible is False  # 400 > 325, though it submitted
    assert by_id["c"].feasible is True
    # env relabels everything into one family: median of 70, 100, 250, 400, 1000
    merged = load_trajectories([path], env="swe-mine")
    assert {r.env for r in merged} == {"swe-mine"}
    assert {r.budget["tokens"] for r in merged} == {250.0}
    capped = load_trajectories([path], budget=300)
    assert {r.budget["tokens"] for r in capped} == {300.0}
    assert capped[0].meta["budget_rule"] == "given"


def test_family_budget_is_bagens_median_low_when_not_whole(tmp_path: Path) -> None:
    # bagen.md §3.5 / logs.md §1.6: statistics.median, median_low if not a whole number.
    # Middle totals 7,836 and 8,017: the mean 7,926.5 is not whole, so 7,836.
    totals = {"a": 5000, "b": 7836, "c": 8017, "d": 9000}
    records = [
        _mini([_usage(total - 10, 10)], instance_id=rid, model="gpt-5.2")
        for rid, total in totals.items()
    ]
    path = _write_jsonl(tmp_path / "runs.traj.jsonl", records)
    assert {r.budget["tokens"] for r in load_trajectories([path])} == {7836.0}
    assert family_budget([1, 2, 4, 6]) == 3.0  # (2 + 4) / 2 is whole: kept
    assert family_budget([1, 2, 3]) == 2.0
    assert family_budget([10, 11]) == 10.0


def test_family_label() -> None:
    assert family_label(None) == "swe"
    assert family_label("") == "swe"
    assert family_label("anthropic/Claude Opus 4.7") == "swe-claude-opus-4.7"
    assert family_label("gpt-5.2") == "swe-gpt-5.2"
    assert family_label("vendor/!!!") == "swe"


# ----------------------------------------------------------------------------- detection


def test_detect_format_by_content(tmp_path: Path) -> None:
    mini = _write_json(tmp_path / "a.json", _mini([_usage(1, 1)]))
    mini_lines = _write_jsonl(tmp_path / "b.jsonl", [_mini([_usage(1, 1)], instance_id="x")])
    bare_mini = _mini([_usage(1, 1)])
    del bare_mini["trajectory_format"], bare_mini["info"]  # only messages[].extra is left
    bare = _write_json(tmp_path / "c.json", bare_mini)
    chat = _write_jsonl(tmp_path / "d.jsonl", [_chat([_usage(1, 1)], success=True)])
    ours = write_rollouts(
        tmp_path / "e.jsonl",
        [Rollout("r", "sokoban", {"tokens": 9}, True, (Turn({"tokens": 1}),))],
    )
    assert detect_format(mini) == "mini-swe-agent"
    assert detect_format(mini_lines) == "mini-swe-agent"
    assert detect_format(bare) == "mini-swe-agent"
    assert detect_format(chat) == "openai-chat"
    assert detect_format(ours) == "pytest-budget"
    unknown = _write_jsonl(tmp_path / "f.jsonl", [{"messages": [{"role": "user"}]}])
    with pytest.raises(RolloutFileError, match=r"f\.jsonl:1: cannot tell the trajectory format"):
        detect_format(unknown)


def test_mixed_files_and_our_format_pass_through(tmp_path: Path) -> None:
    ours = Rollout("r", "sokoban", {"tokens": 9}, True, (Turn({"tokens": 1}),))
    mine = write_rollouts(tmp_path / "ours.jsonl", [ours])
    mini = _write_json(tmp_path / "t.traj.json", _mini([_usage(5, 1)]))
    loaded = load_trajectories([mine, mini], budget=1000)
    assert loaded[0] == ours  # untouched: budget, env and max_turns apply to imports only
    assert loaded[1].budget == {"tokens": 1000.0}
    assert load_trajectories(mini)[0].id == "repo__pkg-1"  # a single path is accepted
    forced = load_trajectories([mini], fmt="mini-swe-agent")
    assert forced[0].id == "repo__pkg-1"


# ----------------------------------------------------------------------------- bad input


def _bad_usage(data: dict[str, Any], index: int, **changes: Any) -> None:
    data["messages"][index]["extra"]["response"]["usage"].update(changes)


BAD_MINI = [
    (lambda d: d["messages"].insert(3, {"role": "robot", "content": "x"}), "messages[3]",
     "unknown role 'robot'"),
    (lambda d: d["messages"].insert(1, "hello"), "messages[1]", "must be an object"),
    (lambda d: d["messages"][1].update(content=7), "messages[1].content",
     "must be a string, a list of parts or null"),
    (lambda d: _bad_usage(d, 4, completion_tokens=-3), "messages[4].extra.response.usage",
     "completion_tokens must not be negative"),
    (lambda d: _bad_usage(d, 2, prompt_tokens="12"), "messages[2].extra.response.usage",
     "prompt_tokens must be a number"),
    (lambda d: _bad_usage(d, 2, prompt_tokens=None), "messages[2].extra.response.usage",
     "has no 'prompt_tokens'"),
    (lambda d: _bad_usage(d, 4, completion_tokens_details={"reasoning_tokens": -1}),
     "messages[4].extra.response.usage.completion_tokens_details.reasoning_tokens",
     "must not be negative"),
    (lambda d: d["messages"][4]["extra"]["response"].update(usage=[1, 2]),
     "messages[4].extra.response.usage", "must be an object"),
    (lambda d: d["messages"][4]["extra"]["response"].pop("usage"),
     "messages[4] (assistant)", "has no usage at extra.response.usage"),
    (lambda d: d["info"].update(resolved="yes"), "", "'info.resolved' must be true or false"),
    (lambda d: d.update(messages={}), "", "'messages' must be a list"),
    (lambda d: d.update(messages=[{"role": "user", "content": "x"}]), "",
     "no assistant message"),
    (lambda d: d.update(info=[]), "", "'info' must be an object"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "position", "message"), BAD_MINI)
def test_bad_mini_swe_input_is_one_line_with_file_and_position(
    tmp_path: Path, mutate: Any, position: str, message: str
) -> None:
    good = _mini([_usage(10, 1), _usage(12, 1)], instance_id="good")
    bad = _mini([_usage(10, 1), _usage(12, 1)], instance_id="bad")
    mutate(bad)
    # As a JSON Lines file: the error names the line ...
    path = _write_jsonl(tmp_path / "runs.traj.jsonl", [good, bad])
    with pytest.raises(RolloutFileError) as info:
        load_trajectories([path])
    text = str(info.value)
    assert text.startswith(f"{path}:2: {position}") and message in text and "\n" not in text
    # ... and as one .traj.json file: the file alone.
    single = _write_json(tmp_path / "bad.traj.json", bad)
    with pytest.raises(RolloutFileError) as info:
        load_trajectories([single], fmt="mini-swe-agent")
    text = str(info.value)
    assert text.startswith(f"{single}: {position}") and message in text and "\n" not in text


BAD_CHAT = [
    (lambda d: d["messages"][1].pop("usage"), "messages[1] (assistant)",
     "has no usage at usage"),
    (lambda d: d["messages"][3]["usage"].update(prompt_tokens=float("inf")),
     "messages[3].usage", "prompt_tokens must be finite"),
    (lambda d: d["messages"].append({"role": "exit", "content": ""}), "messages[5]",
     "unknown role 'exit'"),
    (lambda d: d.pop("success"), "", "no outcome, give 'resolved' or 'success'"),
    (lambda d: d.update(success="true"), "", "'success' must be true or false"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "position", "message"), BAD_CHAT)
def test_bad_chat_input_is_one_line_with_file_and_position(
    tmp_path: Path, mutate: Any, position: str, message: str
) -> None:
    good = _chat([_usage(1, 1), _usage(2, 1)], id="good", success=True)
    bad = _chat([_usage(1, 1), _usage(2, 1)], id="bad", success=True)
    mutate(bad)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")  # blank line skipped
    with pytest.raises(RolloutFileError) as info:
        load_trajectories([path], fmt="openai-chat")
    text = str(info.value)
    assert text.startswith(f"{path}:3: {position}") and message in text and "\n" not in text


def test_unreadable_files(tmp_path: Path) -> None:
    pretty = json.dumps(_mini([_usage(1, 1)]), indent=2)
    cut = tmp_path / "cut.traj.json"
    cut.write_text(pretty[: len(pretty) // 2])
    cases: list[tuple[Path, str]] = [
        (cut, f"{cut}: not valid JSON, truncated or corrupt?"),
        (tmp_path / "absent.json", "no such trajectory file"),
    ]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(_chat([_usage(1, 1)], success=True)) + '\n{"messages": [\n')
    cases.append((broken, f"{broken}:2: not valid JSON"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    cases.append((empty, "empty file"))
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    cases.append((array, "got a JSON list"))
    scalar = tmp_path / "scalar.jsonl"
    scalar.write_text(json.dumps(_chat([_usage(1, 1)], success=True)) + "\n3\n")
    cases.append((scalar, f"{scalar}:2: a trajectory must be a JSON object"))
    for path, message in cases:
        with pytest.raises(RolloutFileError) as info:
            load_trajectories([path], fmt="openai-chat")
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RolloutFileError, match="no such trajectory file"):
        detect_format(tmp_path / "absent.json")


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    a = _write_json(tmp_path / "a.traj.json", _mini([_usage(1, 1)], instance_id="same"))
    b = _write_json(tmp_path / "b.traj.json", _mini([_usage(1, 1)], instance_id="same"))
    with pytest.raises(RolloutFileError) as info:
        load_trajectories([a, b])
    assert str(info.value) == f"{b}: duplicate trajectory id 'same' (first in {a})"


def test_missing_usage_skip_policy(tmp_path: Path) -> None:
    data = _mini([_usage(1000, 100), None, _usage(1600, 40)])
    path = _write_json(tmp_path / "t.traj.json", data)
    with pytest.raises(RolloutFileError, match=r"messages\[4\] \(assistant\) has no usage"):
        load_trajectories([path])
    [rollout] = load_trajectories([path], on_missing_usage="skip")
    # The skipped call is dropped; the next is differenced against the last kept call.
    assert _tokens(rollout) == [1100, (1600 - 1000 - 100) + 40]
    assert rollout.meta["skipped_turns"] == 1 and rollout.meta["assistant_calls"] == 3
    assert [turn.action for turn in rollout.turns] == ["act 1", "act 3"]
    nothing = _write_json(tmp_path / "n.traj.json", _mini([None, None]))
    with pytest.raises(RolloutFileError, match="every assistant call lacks usage"):
        load_trajectories([nothing], on_missing_usage="skip")


def test_turn_cap_truncates_and_fails_the_rollout(tmp_path: Path) -> None:
    def calls(n: int) -> list[dict[str, Any] | None]:
        return [_usage(100 + 20 * i, 10) for i in range(n)]

    long = _mini(calls(170), instance_id="long")
    exact = _mini(calls(160), instance_id="exact")
    path = _write_jsonl(tmp_path / "t.jsonl", [long, exact])
    truncated, at_cap = load_trajectories([path])
    assert truncated.T == 160 and truncated.meta["truncated"] is True
    assert truncated.meta["assistant_calls"] == 170 and truncated.meta["max_turns"] == 160
    assert not truncated.success and truncated.meta["logged_success"] is True
    assert at_cap.T == 160 and at_cap.meta["truncated"] is False and at_cap.success
    # usage: 110, then (120 - 100 - 10) + 10 = 20 for every later call
    assert _tokens(truncated) == [110] + [20] * 159
    small = load_trajectories([path], max_turns=5)
    assert [r.T for r in small] == [5, 5]
    # bad input past the cap is still reported
    long["messages"][-3]["extra"]["response"]["usage"]["prompt_tokens"] = -1
    _write_jsonl(path, [long])
    with pytest.raises(RolloutFileError, match=r"messages\[340\]"):
        load_trajectories([path])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fmt": "csv"}, "fmt must be"),
        ({"budget": 0}, "budget must be positive"),
        ({"budget": True}, "budget must be a number"),
        ({"max_turns": 0}, "max_turns must be a positive integer"),
        ({"on_missing_usage": "ignore"}, "on_missing_usage must be"),
        ({"env": ""}, "env must be a non-empty string"),
    ],
)
def test_argument_errors(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    path = _write_json(tmp_path / "t.traj.json", _mini([_usage(1, 1)]))
    with pytest.raises(ValueError, match=message):
        load_trajectories([path], **kwargs)


# ----------------------------------------------------------------------------- bundled data


def test_bundled_file_is_the_generator_output() -> None:
    path = bundled_swe_path()
    assert path.name == "swe_synthetic.traj.jsonl" and "synthetic" in path.name
    assert path.read_text(encoding="utf-8") == synthetic_swe_text()
    assert path.stat().st_size < 600_000
    assert synthesize_swe_trajectories(7) != synthesize_swe_trajectories()  # seed matters
    assert detect_format(path) == "mini-swe-agent"


def test_bundled_rollouts() -> None:
    records = synthesize_swe_trajectories()
    assert all(record["info"]["synthetic"] is True for record in records)
    rollouts = bundled_swe_rollouts()
    assert len(rollouts) == SYNTHETIC_COUNT
    assert {r.env for r in rollouts} == {SYNTHETIC_ENV}
    assert all(r.meta["synthetic"] is True for r in rollouts)
    lengths = [r.T for r in rollouts]
    assert min(lengths) == 10 and max(lengths) == 160
    assert not any(r.meta["truncated"] or r.meta["clamped_turns"] for r in rollouts)
    outcomes = Counter(r.success for r in rollouts)
    assert outcomes[True] >= 8 and outcomes[False] >= 4
    totals = [r.total()["tokens"] for r in rollouts]
    assert rollouts[0].budget == {"tokens": float(np.median(totals))}
    # usage grows per call as a chat API reports it: each prompt re-reads the history
    for rollout in rollouts:
        prompts = [turn.info["prompt_tokens"] for turn in rollout.turns]
        assert prompts == sorted(prompts) and prompts[-1] > prompts[0]
    longest = max(rollouts, key=lambda r: r.T)
    assert longest.meta["exit_status"] == "LimitsExceeded" and not longest.success
    assert bundled_swe_rollouts(budget=5000)[0].budget == {"tokens": 5000.0}


# ----------------------------------------------------------------------------- subsampling


def _r(rid: str, turns: int, env: str = "swe") -> Rollout:
    return Rollout(
        rid, env, {"tokens": 1e9}, True, tuple(Turn({"tokens": 10.0}) for _ in range(turns))
    )


def _keys(pairs: list[Any]) -> list[tuple[str, str, int]]:
    return [(probe.env, probe.rollout_id, probe.k) for probe, _ in pairs]


def test_length_buckets_near_equal_sorted_by_turns() -> None:
    rollouts = [_r(f"r{i}", 2 + (i * 7) % 10) for i in range(10)]
    buckets = length_buckets(reversed(rollouts), 8)
    assert [len(bucket) for bucket in buckets] == [2, 2, 1, 1, 1, 1, 1, 1]
    flat = [r for bucket in buckets for r in bucket]
    assert flat == sorted(rollouts, key=lambda r: (r.T, r.id))
    assert [len(b) for b in length_buckets(rollouts[:3], 8)] == [1, 1, 1]
    assert length_buckets([], 8) == []


def test_hand_worked_selection() -> None:
    # The documented draws for this case, from numpy.random.default_rng(42):
    rng = np.random.default_rng(42)
    draws = [rng.permutation(n).tolist() for n in (2, 2, 2, 1, 2, 3, 4)]
    assert draws == [[1, 0], [0, 1], [0, 1], [0], [0, 1], [1, 2, 0], [0, 3, 2, 1]]
    # Rollouts a..d with T = 2..5 (1..4 probes); 2 buckets: B0 = [a, b], B1 = [c, d].
    # Draws: visit order [B1, B0]; rotations B0 = [a, b], B1 = [c, d]; probe orders
    # a: [1], b: [1, 2], c: [2, 3, 1], d: [1, 4, 3, 2].
    # Round 1: B1 -> c k=2, B0 -> a k=1.  Round 2: B1 -> d k=1, B0 -> b k=1.
    # Round 3: B1 -> c k=3 (5 taken), B0 -> a is spent, so b k=2.  Round 4: B1 -> d k=4.
    rollouts = [_r("d", 5), _r("b", 3), _r("a", 2), _r("c", 4)]
    five = subsample_probes(rollouts, max_probes=5, buckets=2)
    assert _keys(five) == [("swe", "a", 1), ("swe", "b", 1), ("swe", "c", 2), ("swe", "c", 3),
                           ("swe", "d", 1)]  # fmt: skip
    seven = subsample_probes(rollouts, max_probes=7, buckets=2)
    assert [(rid, k) for _, rid, k in _keys(seven)] == [
        ("a", 1), ("b", 1), ("b", 2), ("c", 2), ("c", 3), ("d", 1), ("d", 4)
    ]  # fmt: skip
    # The pairs are make_probes' own, ground truth included.
    probe, truth = five[2]
    assert (probe, truth) == make_probes(rollouts[3])[1]


def test_cap_buckets_and_balance_on_bundled_family() -> None:
    rollouts = bundled_swe_rollouts()
    assert sum(r.T - 1 for r in rollouts) > 512
    chosen = subsample_probes(rollouts)
    assert len(chosen) == 512
    assert len(set(_keys(chosen))) == 512 and _keys(chosen) == sorted(_keys(chosen))
    by_id = {r.id: r for r in rollouts}
    per_rollout = Counter(probe.rollout_id for probe, _ in chosen)
    buckets = length_buckets(rollouts, 8)
    shares = []
    for bucket in buckets:
        counts = [per_rollout[r.id] for r in bucket]
        assert all(count >= 1 for count in counts)  # every bucket, every rollout sampled
        # within a bucket: a rollout with probes left has at most one fewer than any other
        open_counts = [per_rollout[r.id] for r in bucket if per_rollout[r.id] < r.T - 1]
        assert not open_counts or max(counts) - min(open_counts) <= 1
        shares.append((sum(counts), sum(r.T - 1 for r in bucket)))
    # across buckets: a bucket that is not spent gets at least as much as any other - 1
    biggest = max(share for share, _ in shares)
    for share, available in shares:
        assert share == available or share >= biggest - 1
    assert shares[0][0] == shares[0][1]  # the shortest bucket is spent entirely
    for probe, truth in chosen:
        assert probe.k <= by_id[probe.rollout_id].T - 1
        assert truth.T == by_id[probe.rollout_id].T


def test_deterministic_order_independent_and_per_family() -> None:
    rollouts = bundled_swe_rollouts()
    first = _keys(subsample_probes(rollouts, max_probes=100))
    assert first == _keys(subsample_probes(rollouts, max_probes=100))
    shuffled = [rollouts[int(i)] for i in np.random.default_rng(3).permutation(len(rollouts))]
    assert _keys(subsample_probes(shuffled, max_probes=100)) == first
    assert _keys(subsample_probes(rollouts, max_probes=100, seed=7)) != first
    # A second family is capped separately and leaves the first one's selection alone.
    other = [_r(f"o{i}", 30, env="other") for i in range(5)]
    both = _keys(subsample_probes([*other, *rollouts], max_probes=100))
    assert [key for key in both if key[0] == SYNTHETIC_ENV] == first
    assert sum(1 for key in both if key[0] == "other") == 100


def test_small_families_keep_everything_and_edge_cases() -> None:
    rollouts = [_r("a", 3), _r("b", 1), _r("c", 4)]  # b has no probe
    everything = subsample_probes(rollouts)
    assert _keys(everything) == [("swe", "a", 1), ("swe", "a", 2), ("swe", "c", 1),
                                 ("swe", "c", 2), ("swe", "c", 3)]  # fmt: skip
    assert subsample_probes([]) == []
    with pytest.raises(ValueError, match="duplicate rollout id 'a'"):
        subsample_probes([_r("a", 3), _r("a", 4)])
    for kwargs in ({"max_probes": 0}, {"buckets": 0}, {"seed": -1}, {"max_probes": True}):
        with pytest.raises(ValueError):
            subsample_probes(rollouts, **kwargs)
