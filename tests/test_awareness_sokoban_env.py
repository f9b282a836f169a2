"""Sokoban rollouts for the awareness suite: presets, puzzles, protocol, usage, reference actor."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget._environments.sokoban import Level, parse_level, render, solve
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
    ActorReply,
    Rollout,
    read_rollouts,
    rollout_to_dict,
    write_rollouts,
)
from pytest_budget.awareness.sokoban._env import (
    SOKOBAN_PRESETS,
    ParsedReply,
    SokobanPreset,
    SokobanReferenceActor,
    generate_puzzles,
    generate_rollouts,
    grid_from_prompt,
    make_rollout_id,
    parse_reply,
    puzzle_seed,
    run_rollout,
    sokoban_prompt,
)

EIGHT = SOKOBAN_PRESETS["sokoban-8x8"]
SIX = SOKOBAN_PRESETS["sokoban-6x6"]
TINY = SokobanPreset(
    "tiny", width=8, height=5, num_boxes=1, search_depth=10, token_cap=1000, max_turns=6
)
# A cap no test rollout reaches: for tests about moves and rewards, not the token cap.
ROOMY = SokobanPreset(
    "roomy", width=8, height=5, num_boxes=1, search_depth=10, token_cap=100_000, max_turns=6
)

CORRIDOR = parse_level("#######\n#P_X_O#\n#######")
# Box 1 starts on its target (1, 2); box 2 at (2, 3) belongs on (1, 2) in the end.
TWO_BOXES = parse_level("########\n#P√__O_#\n#__X___#\n#______#\n########")


class Scripted:
    """Answers turn k with replies[k - 1] (the last reply repeats); records observations."""

    name = "scripted"

    def __init__(self, *replies: Any) -> None:
        self.replies = replies
        self.seen: list[ActorObservation] = []

    def act(self, observation: ActorObservation) -> Any:
        self.seen.append(observation)
        return self.replies[min(observation.turn, len(self.replies)) - 1]


def play(level: Level, actor: object, preset: SokobanPreset = TINY, **kwargs: Any) -> Rollout:
    run = functools.partial(run_rollout, level, actor, preset=preset, rollout_id="t-0000", **kwargs)
    return anyio.run(run)


def batch(preset: SokobanPreset, n: int, seed: int, actor: object, **kwargs: Any) -> list[Rollout]:
    return anyio.run(functools.partial(generate_rollouts, preset, n, seed, actor, **kwargs))


def digest(rollouts: list[Rollout]) -> str:
    payload = json.dumps([rollout_to_dict(r) for r in rollouts], sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "actions"),
    [
        ("<answer>Left || Up</answer>", ("Left", "Up")),
        ("<think>push it right</think>\n<answer>Right</answer>", ("Right",)),
        ("<answer>Left,Up, Down</answer>", ("Left", "Up", "Down")),
        ("<answer>left | UP</answer>", ("Left", "Up")),
        ("<answer> Down\nRight ;Up </answer>", ("Down", "Right", "Up")),
        ("<ANSWER>dOwN||rIGHT</Answer>", ("Down", "Right")),
        # A format example quoted while thinking does not count: the last block does.
        ("<think>format: <answer>Up</answer></think><answer>Left</answer>", ("Left",)),
    ],
)
def test_parse_reply_reads_moves(text: str, actions: tuple[str, ...]) -> None:
    assert parse_reply(text) == ParsedReply(actions)


def test_parse_reply_keeps_first_three_and_flags_the_rest() -> None:
    parsed = parse_reply("<answer>Up || Up || Left || Down || Right</answer>")
    assert parsed == ParsedReply(("Up", "Up", "Left"), dropped=("Down", "Right"), error=None)
    assert parse_reply("<answer>Up Up Left Down</answer>", max_actions=1).actions == ("Up",)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I would go left", "no <answer>...</answer> block"),
        ("", "no <answer>...</answer> block"),
        ("<answer>Left || Up", "unclosed <answer> tag"),
        ("<answer>  </answer>", "empty answer"),
        ("<answer>|| ,</answer>", "empty answer"),
        ("<answer>Left || Jump</answer>", "unknown action 'Jump' (use Up, Down, Left, Right)"),
        ("<answer>move left</answer>", "unknown action 'move' (use Up, Down, Left, Right)"),
        ("<answer>[Left, Up]</answer>", "unknown action '[Left' (use Up, Down, Left, Right)"),
    ],
)
def test_parse_reply_garbage_is_a_no_op_with_reason(text: str, reason: str) -> None:
    assert parse_reply(text) == ParsedReply((), error=reason)


# --------------------------------------------------------------------------- prompt


def test_prompt_shows_grid_coordinates_and_format() -> None:
    text = sokoban_prompt(TWO_BOXES, preset=EIGHT, turn=2, feedback="Last turn you played Up.")
    assert render(TWO_BOXES) in text
    assert "You: (1, 1). Boxes: (1, 2), (2, 3). Targets: (1, 2), (1, 5)." in text
    assert "Turn 2 of at most 20." in text
    assert "Last turn you played Up." in text
    assert "<answer>Left || Up</answer>" in text
    assert grid_from_prompt(text) == TWO_BOXES
    assert "Last turn" not in sokoban_prompt(TWO_BOXES, preset=EIGHT, turn=1)


def test_grid_from_prompt_needs_the_grid_header() -> None:
    with pytest.raises(ValueError, match="no 'Current grid:' line"):
        grid_from_prompt("#####\n#PXO#\n#####")


@pytest.mark.parametrize("preset", list(SOKOBAN_PRESETS.values()), ids=list(SOKOBAN_PRESETS))
def test_max_turns_never_decides_feasibility(preset: SokobanPreset) -> None:
    # Even the shortest observation (turn 1, no feedback) read max_turns times exceeds the cap,
    # so a rollout stopped by max_turns is over budget whatever the actor wrote.
    shortest = min(
        count_tokens(sokoban_prompt(level, preset=preset, turn=1))
        for level in generate_puzzles(preset, 32, seed=5)
    )
    assert preset.max_turns * shortest > preset.token_cap


def test_presets() -> None:
    assert (EIGHT.width, EIGHT.height, EIGHT.num_boxes, EIGHT.search_depth) == (8, 8, 2, 30)
    assert (SIX.width, SIX.height, SIX.num_boxes) == (6, 6, 1)
    for preset in (EIGHT, SIX):
        assert preset.token_cap == 2500 and preset.max_actions_per_turn == 3
        assert preset.budget == {"tokens": 2500}
    with pytest.raises(ValueError, match="max_turns"):
        SokobanPreset("x", width=6, height=6, num_boxes=1, search_depth=5, token_cap=9, max_turns=0)
    with pytest.raises(ValueError, match="3x3"):
        SokobanPreset("x", width=2, height=6, num_boxes=1, search_depth=5, token_cap=9, max_turns=1)


# --------------------------------------------------------------------------- puzzles


@pytest.mark.parametrize("preset", [EIGHT, SIX], ids=["8x8", "6x6"])
def test_every_puzzle_is_solvable_within_its_search_depth(preset: SokobanPreset) -> None:
    puzzles = generate_puzzles(preset, 64, seed=3)
    assert len(puzzles) == 64
    assert len({render(level) for level in puzzles}) >= 60
    for level in puzzles:
        assert (level.width, level.height) == (preset.width, preset.height)
        assert len(level.boxes) == preset.num_boxes and not level.solved
        result = solve(level)
        assert result.moves is not None
        # Reverse play reaches the puzzle in < search_depth pulls, so BFS is no longer.
        assert 1 <= len(result.moves) <= preset.search_depth


def test_puzzles_are_deterministic_and_seed_dependent() -> None:
    assert generate_puzzles(EIGHT, 6, seed=1) == generate_puzzles(EIGHT, 6, seed=1)
    assert generate_puzzles(EIGHT, 6, seed=1) != generate_puzzles(EIGHT, 6, seed=2)
    # A prefix of a batch is the smaller batch: puzzle i depends on (seed, i) only.
    assert generate_puzzles(EIGHT, 3, seed=1) == generate_puzzles(EIGHT, 6, seed=1)[:3]
    assert puzzle_seed(EIGHT, 1, 0) != puzzle_seed(EIGHT, 1, 1) != puzzle_seed(EIGHT, 2, 1)
    assert 0 <= puzzle_seed(EIGHT, -5, 10**6) < 2**63
    assert generate_puzzles(EIGHT, 0, seed=1) == []


def test_puzzles_are_pinned() -> None:
    # Recorded when the module was written: any change to generation (or to sokoban.py's
    # generator, which the triage suite shares) shows up here.  Re-recorded when BAGEN's
    # random player moves after reverse play were added (random_moves=True; issue 18).
    text = "\n\n".join(render(level) for level in generate_puzzles(EIGHT, 16, seed=42))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] == PINNED_8X8_SEED42
    assert render(generate_puzzles(SIX, 1, seed=42)[0]) == PINNED_6X6_SEED42_FIRST


PINNED_8X8_SEED42 = "a394a0f79a36879d"
PINNED_6X6_SEED42_FIRST = "######\n######\n######\n#____#\n#_OXP#\n######"


def test_rollout_ids() -> None:
    assert make_rollout_id(EIGHT, 42, 7) == "sokoban-8x8-s42-0007"
    rollouts = batch(EIGHT, 3, 42, SokobanReferenceActor(0))
    assert [r.id for r in rollouts] == [f"sokoban-8x8-s42-000{i}" for i in range(3)]


# --------------------------------------------------------------------------- protocol


def test_rewards_on_corridor_and_early_stop_when_solved() -> None:
    actor = Scripted("<answer>Right || Right</answer>", "<answer>Right || Left</answer>")
    rollout = play(CORRIDOR, actor)
    assert rollout.success and rollout.T == 2
    first, second = rollout.turns
    # Walk (-0.1), push the box one square (-0.1).
    assert first.info == {"actions": ["Right", "Right"], "reward": -0.2, "boxes_on_target": 0}
    # The push onto the target: -0.1 + 1 + 10; the Left after the win is not played.
    assert second.info == {"actions": ["Right"], "reward": 10.9, "boxes_on_target": 1}
    assert rollout.meta["return"] == pytest.approx(10.7)
    assert rollout.meta["end_reason"] == "solved"
    assert rollout.meta["optimal_moves"] == 3
    assert rollout.meta["final_grid"] == "#######\n#___P√#\n#######"


def test_rewards_box_off_and_on_target_two_boxes() -> None:
    actor = Scripted(
        "<answer>Right || Right || Right</answer>",  # off target (-1), then onto (1, 5) (+1)
        "<answer>Down || Down || Left</answer>",  # walk below the second box
        "<answer>Up || Right || Up</answer>",  # push it up to row 1, walk round
        "<answer>Left</answer>",  # push it onto (1, 2): +1 and solved +10
    )
    rollout = play(TWO_BOXES, actor, ROOMY)
    rewards = [turn.info["reward"] for turn in rollout.turns]
    assert rewards == [-0.3, -0.3, -0.3, 10.9]
    assert [turn.info["boxes_on_target"] for turn in rollout.turns] == [1, 1, 1, 2]
    assert rollout.success
    # 10 moves (-1.0), one box off (-1) and two on (+2), solved (+10).
    assert rollout.meta["return"] == pytest.approx(10.0)
    assert rollout.meta["optimal_moves"] == len(solve(TWO_BOXES).moves or ())


def test_usage_is_observation_plus_reply_tokens() -> None:
    reply = "<answer>Right || Right</answer>"
    # "<", "answer", ">", "Right", "|", "|", "Right", "<", "/", "answer", ">"
    assert count_tokens(reply) == 11
    actor = Scripted(reply, "<answer>Right</answer>")
    rollout = play(CORRIDOR, actor)
    for turn, observation in zip(rollout.turns, actor.seen, strict=True):
        assert turn.observation == observation.text
        assert turn.usage == {
            "tokens": count_tokens(observation.text) + count_tokens(turn.action or "")
        }
    assert rollout.turns[0].usage["tokens"] == count_tokens(actor.seen[0].text) + 11
    assert rollout.turns[0].action == reply
    assert rollout.budget == {"tokens": 1000}


def test_observations_carry_the_state_and_feedback() -> None:
    actor = Scripted(
        "<answer>Right</answer>", "no tags", "<answer>Right Right Right Right</answer>"
    )
    play(CORRIDOR, actor)
    first, second, third = actor.seen[:3]
    assert (first.env, first.rollout_id, first.turn) == ("sokoban", "t-0000", 1)
    assert first.state == CORRIDOR and second.state.player == (1, 2)
    assert "Last turn you played Right (reward -0.1). Boxes on target: 0/1." in second.text
    assert (
        "Your last reply was not played (no <answer>...</answer> block); nothing moved."
        in third.text
    )


def test_reported_tokens_override_the_count() -> None:
    text = "<answer>Right Right</answer>"
    actor = Scripted(
        ActorReply(text, tokens=77),
        {"text": "<answer>Right</answer>", "usage": {"input_tokens": 50, "output_tokens": 7}},
    )
    rollout = play(CORRIDOR, actor)
    assert [turn.usage["tokens"] for turn in rollout.turns] == [77, 57]
    assert rollout.total() == {"tokens": 134.0}


def test_unusable_reported_tokens_fall_back_to_counting() -> None:
    actor = Scripted(ActorReply("<answer>Right Right Right</answer>", tokens=-3))
    (turn,) = play(CORRIDOR, actor).turns
    assert turn.usage["tokens"] == count_tokens(turn.observation or "") + count_tokens(
        turn.action or ""
    )
    assert turn.info["usage_note"] == "reported tokens -3 ignored; counted instead"


def test_malformed_and_overlong_replies() -> None:
    actor = Scripted(
        "Right, obviously.",
        "<answer>Up || Jump</answer>",
        "<answer>Left Right Right Right Right</answer>",
    )
    rollout = play(CORRIDOR, actor)
    no_tag, unknown, overlong, last = rollout.turns
    assert no_tag.info == {
        "actions": [],
        "reward": 0.0,
        "boxes_on_target": 0,
        "error": "no <answer>...</answer> block",
    }
    assert unknown.info["actions"] == [] and unknown.info["reward"] == 0.0
    assert unknown.info["error"] == "unknown action 'Jump' (use Up, Down, Left, Right)"
    # Left bumps the wall (-0.1), then walk (-0.1) and push (-0.1); the rest is dropped.
    assert overlong.info["actions"] == ["Left", "Right", "Right"]
    assert overlong.info["dropped_actions"] == ["Right", "Right"]
    assert overlong.info["reward"] == pytest.approx(-0.3)
    assert "error" not in overlong.info
    # The same reply again: walk back, walk, push onto the target (-0.1 -0.1 +10.9).
    assert last.info["actions"] == ["Left", "Right", "Right"]
    assert last.info["reward"] == pytest.approx(10.7)
    assert rollout.success and rollout.meta["return"] == pytest.approx(10.4)


def test_the_first_turn_over_the_token_cap_ends_the_rollout_and_is_dropped() -> None:
    """BAGEN: the first request over the cap ends the episode as failed; that turn's moves
    are not executed and the estimator never sees it."""
    rollout = play(CORRIDOR, Scripted("<answer>Left</answer>"))  # into the wall every turn
    assert not rollout.success and rollout.meta["end_reason"] == "token_cap"
    used = sum(turn.usage["tokens"] for turn in rollout.turns)
    truncated = rollout.meta["truncated_turn"]
    assert used <= TINY.token_cap < used + truncated["tokens"]
    assert truncated["turn"] == rollout.T + 1 and truncated["used_before"] == used
    assert rollout.meta["return"] == pytest.approx(-0.1 * rollout.T)  # kept turns only


def test_max_turns_ends_a_rollout_that_goes_nowhere() -> None:
    rollout = play(CORRIDOR, Scripted("<answer>Left</answer>"), ROOMY)
    assert rollout.T == ROOMY.max_turns and not rollout.success
    assert rollout.meta["end_reason"] == "max_turns"
    assert rollout.meta["final_grid"] == render(CORRIDOR)
    assert rollout.meta["return"] == pytest.approx(-0.1 * ROOMY.max_turns)


def test_the_action_cap_ends_a_rollout() -> None:
    capped = SokobanPreset(
        "capped", width=8, height=5, num_boxes=1, search_depth=10, token_cap=100_000,
        max_turns=20, max_actions_per_traj=5,
    )  # fmt: skip
    rollout = play(CORRIDOR, Scripted("<answer>Left || Left || Left</answer>"), capped)
    assert rollout.meta["end_reason"] == "action_cap" and not rollout.success
    assert [len(turn.info["actions"]) for turn in rollout.turns] == [3, 2]


def test_stops_when_a_push_makes_the_level_unsolvable() -> None:
    # Pushing the box up puts it against the top wall; its target is below: provably lost.
    level = parse_level("#######\n#_____#\n#__X__#\n#__P__#\n#_O___#\n#######")
    actor = Scripted("<answer>Up</answer>", "<answer>Down</answer>")
    rollout = play(level, actor, stop_when_unsolvable=True)
    assert rollout.T == 1 and not rollout.success
    assert rollout.turns[0].info["unsolvable"] is True
    assert rollout.meta["end_reason"] == "unsolvable"
    # BAGEN's protocol (the default): a deadlock does not end the rollout
    kept_going = play(level, actor, ROOMY)
    assert kept_going.T == ROOMY.max_turns and kept_going.meta["end_reason"] == "max_turns"
    assert all("unsolvable" not in turn.info for turn in kept_going.turns)


def test_an_actor_that_raises_fails_its_rollout_only() -> None:
    def actor(observation: ActorObservation) -> str:
        if observation.rollout_id.endswith("0001") and observation.turn == 2:
            raise RuntimeError("model endpoint down\nsecond line")
        return SokobanReferenceActor(3).act(observation)

    rollouts = batch(EIGHT, 3, 42, actor)
    assert [r.id for r in rollouts] == [make_rollout_id(EIGHT, 42, i) for i in range(3)]
    failed = rollouts[1]
    assert not failed.success and failed.T == 2
    assert failed.meta["end_reason"] == "agent_error"
    assert failed.meta["actor_error"] == "raised RuntimeError: model endpoint down"
    last = failed.turns[-1]
    assert last.action is None and last.info["error"].startswith("agent error: raised Runtime")
    assert last.usage == {"tokens": count_tokens(last.observation or "")}
    others = [r for i, r in enumerate(rollouts) if i != 1]
    assert all("actor_error" not in r.meta for r in others)


def test_an_actor_that_raises_on_the_first_turn_still_logs_a_turn() -> None:
    def actor(observation: ActorObservation) -> str:
        raise ValueError("bad key")

    rollout = play(CORRIDOR, actor)
    assert rollout.T == 1 and not rollout.success
    assert rollout.meta["actor_error"] == "raised ValueError: bad key"


def test_async_actor_and_round_trip_through_jsonl(tmp_path: Path) -> None:
    class Async:
        async def act(self, observation: ActorObservation) -> str:
            await anyio.sleep(0)
            return SokobanReferenceActor(9).act(observation)

    rollouts = batch(SIX, 4, 11, Async())
    assert rollouts == batch(SIX, 4, 11, SokobanReferenceActor(9))
    path = write_rollouts(tmp_path / "sokoban.jsonl", rollouts)
    assert read_rollouts(path) == rollouts


def test_meta_describes_the_puzzle() -> None:
    (rollout,) = batch(EIGHT, 1, 42, SokobanReferenceActor(0))
    (level,) = generate_puzzles(EIGHT, 1, seed=42)
    assert rollout.env == "sokoban" and rollout.budget == {"tokens": 2500}
    meta = rollout.meta
    assert meta["preset"] == "sokoban-8x8" and meta["seed"] == 42 and meta["index"] == 0
    assert meta["puzzle_seed"] == puzzle_seed(EIGHT, 42, 0)
    assert meta["initial_grid"] == render(level)
    assert meta["optimal_moves"] == len(solve(level).moves or ())


# --------------------------------------------------------------------------- reference actor


def observe(level: Level, rollout_id: str = "r-0001", turn: int = 1) -> ActorObservation:
    text = sokoban_prompt(level, preset=EIGHT, turn=turn)
    return ActorObservation("sokoban", rollout_id, turn, text, level)


def test_reference_actor_is_seeded_per_rollout_and_turn() -> None:
    level = generate_puzzles(EIGHT, 1, seed=8)[0]
    actor = SokobanReferenceActor(seed=1)
    reply = actor.act(observe(level))
    assert reply == SokobanReferenceActor(seed=1).act(observe(level))
    # From the text alone (no state) it reads the same grid and answers the same.
    text_only = ActorObservation("sokoban", "r-0001", 1, observe(level).text, None)
    assert actor.act(text_only) == reply
    others = {actor.act(observe(level, turn=t)) for t in range(2, 8)}
    others |= {SokobanReferenceActor(seed=s).act(observe(level)) for s in range(2, 8)}
    assert reply not in others and len(others) == 12
    assert reply.startswith("<think>") and "</think>" in reply


def test_reference_actor_without_slips_plays_an_optimal_solution() -> None:
    actor = SokobanReferenceActor(seed=0, slip_rate=0.0, malformed_rate=0.0)
    solved = 0
    for rollout in batch(EIGHT, 16, 4, actor):
        moves = sum(len(turn.info["actions"]) for turn in rollout.turns)
        if rollout.success:
            solved += 1
            assert moves == rollout.meta["optimal_moves"]
        else:  # a long solution can outlast the 2,500-token cap, never the move cap
            assert rollout.meta["end_reason"] == "token_cap"
            assert moves < rollout.meta["optimal_moves"]
    assert solved >= 8


def test_reference_actor_replies_vary_in_length() -> None:
    rollouts = batch(EIGHT, 16, 42, SokobanReferenceActor(0))
    replies = [count_tokens(turn.action or "") for r in rollouts for turn in r.turns]
    assert min(replies) < 60 and max(replies) > 250
    assert len(set(replies)) > 40


def test_reference_actor_rejects_bad_rates() -> None:
    with pytest.raises(ValueError, match="slip_rate"):
        SokobanReferenceActor(0, slip_rate=1.5)
    with pytest.raises(ValueError, match="verbosity"):
        SokobanReferenceActor(0, verbosity=-1)


def test_reference_rollouts_mix_feasible_and_both_failure_kinds() -> None:
    rollouts = batch(EIGHT, 128, 42, SokobanReferenceActor(0))
    feasible = sum(r.feasible for r in rollouts)
    unsolved = sum(not r.success for r in rollouts)
    over_budget = sum(r.success and not r.feasible for r in rollouts)
    assert 0.35 * 128 <= feasible <= 0.65 * 128
    # BAGEN's token cap ends an episode at the first request over it: a solved rollout is
    # always within budget, and every failure is a stuck or slow actor cut by a cap
    assert unsolved >= 10 and over_budget == 0
    assert feasible + unsolved == 128
    reasons = {r.meta["end_reason"] for r in rollouts if not r.success}
    assert "token_cap" in reasons


# --------------------------------------------------------------------------- determinism


def test_concurrency_does_not_change_results() -> None:
    actor = SokobanReferenceActor(5)
    serial = batch(EIGHT, 24, 9, actor, concurrency=1)
    parallel = batch(EIGHT, 24, 9, actor, concurrency=8)
    assert serial == parallel
    assert digest(serial) == digest(parallel)


_SUBPROCESS = """
import functools, hashlib, json, anyio
from pytest_budget.awareness._replay.rollouts import rollout_to_dict
from pytest_budget.awareness.sokoban._env import (
    SOKOBAN_PRESETS, SokobanReferenceActor, generate_puzzles, generate_rollouts)
from pytest_budget._environments.sokoban import render
preset = SOKOBAN_PRESETS["sokoban-8x8"]
print("\\n\\n".join(render(level) for level in generate_puzzles(preset, 10, 77)))
print("==")
rollouts = anyio.run(functools.partial(
    generate_rollouts, preset, 10, 77, SokobanReferenceActor(3), concurrency=4))
payload = json.dumps([rollout_to_dict(r) for r in rollouts], sort_keys=True)
print(hashlib.sha256(payload.encode("utf-8")).hexdigest())
"""


@pytest.mark.parametrize("hashseed", ["0", "31337"])
def test_puzzles_and_rollouts_are_the_same_in_a_fresh_process(hashseed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    result = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS], capture_output=True, text=True, check=True, env=env
    )
    grids, rollout_digest = result.stdout.strip().split("\n==\n")
    assert grids == "\n\n".join(render(level) for level in generate_puzzles(EIGHT, 10, 77))
    assert rollout_digest == digest(batch(EIGHT, 10, 77, SokobanReferenceActor(3)))


def test_random_player_moves_after_reverse_play() -> None:
    """BAGEN (fact sheet §4 step 4): after reverse play the player takes 0-3 random steps
    onto free floor; the boxes, walls and targets stay those of reverse play."""
    from pytest_budget._environments.sokoban import generate_level

    moved = 0
    for seed in range(40):
        plain = generate_level(seed=seed, width=6, height=6, num_boxes=1)
        walked = generate_level(seed=seed, width=6, height=6, num_boxes=1, random_moves=True)
        assert (walked.walls, walked.targets, walked.boxes) == (
            plain.walls,
            plain.targets,
            plain.boxes,
        )
        assert walked.player not in walked.walls and walked.player not in walked.boxes
        steps = abs(walked.player[0] - plain.player[0]) + abs(walked.player[1] - plain.player[1])
        assert steps <= 3
        moved += walked.player != plain.player
    # moving happens with probability 0.5-0.8 per level
    assert 10 <= moved <= 36
