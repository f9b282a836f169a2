"""What the estimator is shown (BAGEN §3.4, §3.5, §5), on hand-worked probes and real rollouts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
from pytest_budget.awareness._logs.trajectories import bundled_swe_rollouts, load_trajectories
from pytest_budget.awareness._prompts import actor_system
from pytest_budget.awareness._replay.dialogue import (
    ESTIMATION_SYSTEM,
    NO_TEXT,
    WAREHOUSE_ESTIMATION_SYSTEM,
    turn_tokens,
)
from pytest_budget.awareness._replay.probes import Probe, estimator_prompt_tokens, make_probes
from pytest_budget.awareness._replay.rollouts import ActorObservation, Rollout, Turn
from pytest_budget.awareness.sokoban._env import SOKOBAN_PRESETS, generate_puzzles, run_rollout


def test_token_split_sources_in_order() -> None:
    # A provider's counts: input = usage - output (history already taken out of usage).
    reported = Turn(
        {"tokens": 350}, "x", "y", {"reported_input_tokens": 900, "reported_output_tokens": 50}
    )
    assert turn_tokens(reported) == (300.0, 50.0)
    # Imported chat logs: the fresh input and the completion.
    imported = Turn({"tokens": 150}, "x", "y", {"new_input_tokens": 120, "completion_tokens": 30})
    assert turn_tokens(imported) == (120.0, 30.0)
    # Logged split that adds up to the usage.
    logged = Turn({"tokens": 130}, "x", "y", {"input_tokens": 100, "output_tokens": 30})
    assert turn_tokens(logged) == (100.0, 30.0)
    # A split that does not add up (usage net of re-sent history from a reported total)
    # is not believed, and the texts do not add up either: unknown.
    stale = Turn({"tokens": 90}, "one two", "three", {"input_tokens": 100, "output_tokens": 20})
    assert turn_tokens(stale) == (None, None)
    # A self-contained observation counted by the reference tokenizer: 3 + 2 = 5.
    counted = Turn({"tokens": 5}, "a b c", "d e")
    assert turn_tokens(counted) == (3.0, 2.0)
    # An actor error: the observation was read, nothing written.
    failed = Turn({"tokens": 3}, "a b c", None)
    assert turn_tokens(failed) == (3.0, 0.0)
    assert turn_tokens(Turn({"tokens": 7})) == (None, None)


def _own_token_probe(system: str | None = None) -> Probe:
    turns = (Turn({"tokens": 5}, "a b c", "d e"), Turn({"tokens": 9}, None, None))
    return Probe("own-1", "own-env", 2, {"tokens": 14}, {"tokens": 100}, turns, {}, system)


def test_unknown_env_without_a_system_prompt_uses_the_fallback() -> None:
    probe = _own_token_probe()
    system = f"{ESTIMATION_SYSTEM} The agent works in the environment 'own-env'."
    assert probe.messages[0] == {"role": "system", "content": system}
    # A turn with no logged text still replays (chat APIs refuse empty messages).
    assert probe.messages[3:5] == (
        {"role": "user", "content": NO_TEXT},
        {"role": "assistant", "content": NO_TEXT},
    )
    assert (
        "Turn 1: input 3 tokens, output 2 tokens, total 5 tokens; "
        "Turn 2: input unknown tokens, output unknown tokens, total 9 tokens."
    ) in probe.question
    assert [(t.index, t.input_tokens, t.output_tokens) for t in probe.turns] == [
        (1, 3.0, 2.0),
        (2, None, None),
    ]


def test_a_recorded_actor_system_prompt_comes_first() -> None:
    probe = _own_token_probe("You are my agent.")
    assert probe.messages[0] == {"role": "system", "content": "You are my agent."}
    assert probe.messages[-1] == {"role": "user", "content": probe.question}
    assert len(probe.messages) == 1 + 2 * probe.k + 1


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def test_openai_chat_log_replays_with_history_taken_out(tmp_path: Path) -> None:
    """§3.5 on a hand-worked log: input_i = prompt_i - prompt_(i-1) - visible_(i-1)."""
    record = {
        "id": "t1",
        "resolved": True,
        "messages": [
            {"role": "system", "content": "SYS: fix bugs."},
            {"role": "user", "content": "Issue text"},
            {
                "role": "assistant",
                "content": "look",
                "usage": {
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                    "completion_tokens_details": {"reasoning_tokens": 8},
                },
            },
            {"role": "user", "content": "out 1"},
            # 100 re-sent + 12 visible output re-sent + 30 new
            {"role": "assistant", "content": "edit", "usage": _usage(142, 10)},
            {"role": "user", "content": "out 2"},
            # 142 + 10 + 40 new
            {"role": "assistant", "content": "done", "usage": _usage(192, 5)},
        ],
    }  # fmt: skip
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (rollout,) = load_trajectories(path, budget=1000)
    assert rollout.meta["actor_system_prompt"] == "SYS: fix bugs."
    probe, truth = make_probes(rollout)[-1]  # k = 2 of T = 3
    assert [(t.input_tokens, t.output_tokens) for t in probe.turns] == [(100, 20), (30, 10)]
    assert truth.remaining["tokens"] == 40 + 5
    assert [m["role"] for m in probe.messages] == ["system", "user", "assistant"] * 1 + [
        "user",
        "assistant",
        "user",
    ]
    assert [m["content"] for m in probe.messages[:5]] == [
        "SYS: fix bugs.",
        "Issue text",
        "look",
        "out 1",
        "edit",
    ]
    assert (
        "Turn 1: input 100 tokens, output 20 tokens, total 120 tokens; "
        "Turn 2: input 30 tokens, output 10 tokens, total 40 tokens."
    ) in probe.question
    assert "1000 tokens" in probe.question


class _ReportingActor:
    """Plays Up each turn and reports the provider's counts (300 in, 30 out)."""

    def act(self, observation: ActorObservation) -> dict[str, Any]:
        usage = {"tokens": 330, "input_tokens": 300, "output_tokens": 30}
        return {"text": "<answer>Up</answer>", "usage": usage}


def test_sokoban_keeps_a_providers_split_and_replays_the_actor_protocol() -> None:
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    (level,) = generate_puzzles(preset, 1, seed=3)
    rollout = anyio.run(
        lambda: run_rollout(level, _ReportingActor(), preset=preset, rollout_id="sokoban-6x6-r")
    )
    assert rollout.T == 2500 // 330  # the 8th request would go over the cap
    probe, _ = make_probes(rollout)[2]
    assert [(t.input_tokens, t.output_tokens) for t in probe.turns] == [(300, 30)] * 3
    assert probe.messages[0] == {"role": "system", "content": actor_system("sokoban-6x6")}
    assert [m["content"] for m in probe.messages[1:7:2]] == [t.observation for t in probe.prefix]
    assert [m["content"] for m in probe.messages[2:7:2]] == ["<answer>Up</answer>"] * 3


class _HostileReporter:
    """Reports counts that cannot be a split: the turn keeps no split (and does not crash)."""

    def __init__(self) -> None:
        self.usages = iter(
            [
                {"tokens": 330, "input_tokens": 10**400, "output_tokens": 30},
                {"tokens": 330, "input_tokens": True, "output_tokens": 30},
                {"tokens": 330, "input_tokens": 200, "output_tokens": 30},  # 230 != 330
                {"tokens": 330, "input_tokens": -300, "output_tokens": 630},
            ]
        )

    def act(self, observation: ActorObservation) -> dict[str, Any]:
        usage = next(self.usages, {"tokens": 330})
        return {"text": "<answer>Up</answer>", "usage": usage}


def test_sokoban_ignores_a_split_that_is_not_one() -> None:
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    (level,) = generate_puzzles(preset, 1, seed=3)
    rollout = anyio.run(
        lambda: run_rollout(level, _HostileReporter(), preset=preset, rollout_id="sokoban-6x6-h")
    )
    assert all("input_tokens" not in turn.info for turn in rollout.turns)
    assert [turn.usage["tokens"] for turn in rollout.turns] == [330] * rollout.T


def test_reference_sokoban_probes_show_counted_splits() -> None:
    rollouts = anyio.run(
        lambda: generate_env_rollouts("sokoban-8x8", 2, seed=42, actor=ReferenceActor(42))
    )
    for rollout in rollouts:
        for probe, _ in make_probes(rollout):
            for turn in probe.turns:
                assert turn.input_tokens is not None and turn.output_tokens is not None
                assert turn.input_tokens + turn.output_tokens == turn.total_tokens
            assert "used so far" not in probe.question.lower()  # no cumulative sum (§3.4)


@pytest.fixture(scope="module")
def warehouse_rollouts() -> list[Rollout]:
    return anyio.run(lambda: generate_env_rollouts("warehouse", 2, seed=5, actor=ReferenceActor(5)))


def test_warehouse_probe_shows_cash_target_history_and_caps(
    warehouse_rollouts: list[Rollout],
) -> None:
    rollout = warehouse_rollouts[0]
    probe, _ = make_probes(rollout)[3]  # k = 4
    assert probe.messages[0] == {"role": "system", "content": WAREHOUSE_ESTIMATION_SYSTEM}
    assert len(probe.messages) == 1 + 2 * 4 + 1
    question = probe.question
    cash = round(rollout.turns[3].info["cash"])
    target = round(rollout.meta["target_cash_usd"])
    assert f"Cash now: {cash} USD. Final cash needed to count as finished: {target} USD." in (
        question
    )
    assert question.startswith("Weeks completed: 8. Turns completed: 4.")
    steps = question.split("Usage per step: ", 1)[1].split(".\n", 1)[0].split("; ")
    assert [s.split(":")[0] for s in steps] == ["Day 14", "Day 28", "Day 42", "Day 56"]
    for step, turn in zip(steps, rollout.turns[:4], strict=True):
        assert f"warehouse +{round(turn.usage['warehouse_item_weeks'])} item-weeks" in step
        assert f"cost +{round(turn.usage['cumulative_cost_usd'])} USD" in step
    order = ["Weeks completed", "Usage so far", "Cash now", "Usage per step", "Budgets:"]
    positions = [question.index(part) for part in order]
    assert positions == sorted(positions)
    caps = ", ".join(f"{d} <= {round(c)}" for d, c in rollout.budget.items())
    assert f"Budgets: {caps}." in question


def _built_count(probe: Probe) -> int:
    """The second method: build the whole chat and count every message."""
    return sum(count_tokens(message["content"]) for message in probe.messages)


def test_counted_estimator_prompts_equal_the_built_ones(
    warehouse_rollouts: list[Rollout],
) -> None:
    sokoban = anyio.run(
        lambda: generate_env_rollouts("sokoban-6x6", 3, seed=7, actor=ReferenceActor(7))
    )
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    (level,) = generate_puzzles(preset, 1, seed=3)
    hostile = anyio.run(  # splits unknown: "unknown" items in the question
        lambda: run_rollout(level, _HostileReporter(), preset=preset, rollout_id="h")
    )
    swe = bundled_swe_rollouts()[:3]  # recorded system prompts, providers' splits
    # One turn object three times, no text logged: NO_TEXT replayed.
    silent = Rollout("silent", "sokoban-6x6", {"tokens": 9}, False, (Turn({"tokens": 5.0}),) * 3)
    own = _own_token_probe()
    steps = Probe("s-1", "own-env", 1, {"steps": 1}, {"steps": 9}, own.prefix[:1])  # flattened
    rollouts = [*sokoban, hostile, *warehouse_rollouts, *swe, silent]
    probes = [probe for rollout in rollouts for probe, _ in make_probes(rollout)]
    assert len(probes) > 50
    assert {probe.env for probe in probes} >= {"sokoban-6x6", "warehouse"}
    # Out of turn order and with repeats: the prefix sums must not depend on the order.
    mixed = [*probes[::-1], *probes[::3], own, steps]
    assert estimator_prompt_tokens(mixed) == [_built_count(probe) for probe in mixed]


def _chat_digest(probes: list[Probe]) -> str:
    chats = [[dict(message) for message in probe.messages] for probe in probes]
    text = json.dumps(chats, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_estimators_chats_are_pinned(warehouse_rollouts: list[Rollout]) -> None:
    """Byte-equal chats on fixed seeds: moving the Probe-taking functions from dialogue.py to
    probes.py (issue 35, circle 1) changed no prompt text.  The digest was taken on main
    (8d4661f) before the move; a deliberate prompt change updates it (and says so in
    docs/reference/scores-changed.md)."""
    sokoban = anyio.run(
        lambda: generate_env_rollouts("sokoban-6x6", 2, seed=7, actor=ReferenceActor(7))
    )
    swe = bundled_swe_rollouts()[:3]
    own = _own_token_probe()
    steps = Probe("s-1", "own-env", 1, {"steps": 1}, {"steps": 9}, own.prefix[:1])
    rollouts = [*sokoban, *warehouse_rollouts, *swe]
    probes = [probe for rollout in rollouts for probe, _ in make_probes(rollout)]
    probes += [own, _own_token_probe("recorded system"), steps]
    assert len(probes) > 30
    assert {probe.env for probe in probes} == {"sokoban", "warehouse", "swe-synthetic", "own-env"}
    assert _chat_digest(probes) == PINNED_CHATS
    # The digest sees a one-character change.
    changed = Probe("s-1", "own-env", 1, {"steps": 2}, {"steps": 9}, own.prefix[:1])
    assert _chat_digest([*probes[:-1], changed]) != PINNED_CHATS


PINNED_CHATS = "c2243d7daf536f8a1788b4f53306b319b71149b308738e6661f3d2d95b8962af"
