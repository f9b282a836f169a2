"""Sokoban for the awareness suite: presets, puzzles, the turn protocol and a reference actor.

The awareness suite first rolls an actor out with no budget constraint and logs what every
turn cost; estimators are probed on prefixes later.  This module produces those logged
:class:`~pytest_budget.awareness._replay.rollouts.Rollout` objects for Sokoban (BAGEN App. B).

Turn protocol
    Every turn the actor receives an :class:`ActorObservation` whose ``text`` is a complete,
    self-contained prompt (rules, legend, the grid, coordinates, the answer format), so an
    actor without memory can play; ``state`` is the current
    :class:`~pytest_budget._environments.sokoban.Level`.
    The actor answers with up to ``max_actions_per_turn`` moves inside
    ``<answer>...</answer>``; the canonical separator is ``" || "`` (BAGEN's), and ``|``,
    ``,``, ``;`` and whitespace are accepted too, case-insensitively.  A reply that cannot be
    read is a no-op turn (reward 0) whose ``info["error"]`` says why; extra moves are dropped
    and listed in ``info["dropped_actions"]``.  Moves use gym-sokoban rewards via
    :func:`pytest_budget._environments.sokoban.step`.

Usage
    One dimension, ``"tokens"``: the tokens of this turn's observation text (what the model
    read; no history is re-sent, as BAGEN counts per-turn input) plus the tokens of the reply,
    both with :func:`~pytest_budget._core.tokens.count_tokens`, unless the actor reported its own
    count, which then replaces the sum (a reported ``input_tokens``/``output_tokens`` pair
    that adds up to it is kept in ``info``: the per-turn split the estimator is shown).

A rollout ends as BAGEN's actor episodes do (fact sheet §4): when the level is solved; after
``max_actions_per_traj`` (30) executed moves; or at the first turn whose request would take
the rollout over ``token_cap`` (BAGEN re-sends the full history, so its request size is the
cumulative usage): that turn's moves are not played and the turn is dropped from the log,
as BAGEN's estimator drops a truncated turn.  A deadlock does **not** end a rollout (BAGEN
has no deadlock detection): a stuck actor goes on until the move or token cap.
``stop_when_unsolvable=True`` restores the earlier early stop at a provable dead end.
``max_turns`` is only a safety stop.  Puzzles apply BAGEN's random player moves after
reverse play (``generate_level(random_moves=True)``).

Plain Python, numpy and anyio: no pytest here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from pytest_budget._core.roles import AgentError, call_role
from pytest_budget._core.tokens import count_tokens
from pytest_budget._environments.sokoban import (
    Level,
    dead_boxes,
    render,
    solve,
    step,
)
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
    ActorReply,
    Rollout,
    Turn,
    actor_reply,
)
from pytest_budget.awareness.sokoban._actor import SokobanReferenceActor
from pytest_budget.awareness.sokoban._puzzles import (
    _SOLVE_LIMIT,
    ACTION_SEPARATOR,
    ENV_NAME,
    SOKOBAN_PRESETS,
    ParsedReply,
    SokobanPreset,
    _generate_batch,
    generate_puzzles,
    grid_from_prompt,
    make_rollout_id,
    parse_reply,
    puzzle_seed,
    sokoban_prompt,
)

__all__ = [
    "ACTION_SEPARATOR",
    "ENV_NAME",
    "SOKOBAN_PRESETS",
    "ParsedReply",
    "SokobanPreset",
    "SokobanReferenceActor",
    "generate_puzzles",
    "generate_rollouts",
    "grid_from_prompt",
    "make_rollout_id",
    "parse_reply",
    "puzzle_seed",
    "run_rollout",
    "sokoban_prompt",
]

# --------------------------------------------------------------------------- rollouts


def _boxes_on_target(level: Level) -> int:
    return len(level.boxes & level.targets)


def _provably_unsolvable(level: Level) -> bool:
    if dead_boxes(level):
        return True
    result = solve(level, max_states=_SOLVE_LIMIT)
    return result.moves is None and result.exhausted


def _turn_tokens(observation: str, reply: ActorReply) -> tuple[float, str | None]:
    """Tokens for the turn and, when a reported count had to be ignored, why."""
    counted = count_tokens(observation) + count_tokens(reply.text)
    if reply.tokens is None:
        return counted, None
    if not math.isfinite(reply.tokens) or reply.tokens < 0:
        return counted, f"reported tokens {reply.tokens!r} ignored; counted instead"
    reported = reply.tokens
    return (int(reported) if float(reported).is_integer() else reported), None


def _reported_split(raw: Any, tokens: float) -> tuple[float, float] | None:
    """The reported ``(input_tokens, output_tokens)`` when they add up to ``tokens``.

    The observation is self-contained (no history is re-sent), so the reported input is
    all fresh input.
    """
    usage = raw.get("usage") if isinstance(raw, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    raw_read, raw_wrote = usage.get("input_tokens"), usage.get("output_tokens")
    if not (isinstance(raw_read, int | float) and isinstance(raw_wrote, int | float)):
        return None
    if isinstance(raw_read, bool) or isinstance(raw_wrote, bool):
        return None
    try:
        read, wrote = float(raw_read), float(raw_wrote)
    except OverflowError:  # an integer past float's range
        return None
    if not (math.isfinite(read) and math.isfinite(wrote)) or min(read, wrote) < 0:
        return None
    if read + wrote != tokens:
        return None
    return (int(read) if read.is_integer() else read), (int(wrote) if wrote.is_integer() else wrote)


def _feedback(parsed: ParsedReply, reward: float, level: Level, max_actions: int) -> str:
    boxes = f"Boxes on target: {_boxes_on_target(level)}/{len(level.boxes)}."
    if parsed.error is not None:
        return f"Your last reply was not played ({parsed.error}); nothing moved. {boxes}"
    played = ACTION_SEPARATOR.join(parsed.actions)
    text = f"Last turn you played {played} (reward {reward:+.1f}). {boxes}"
    if parsed.dropped:
        text += f" Only {max_actions} actions count per turn; ignored: {', '.join(parsed.dropped)}."
    return text


def _failed_turn(text: str, state: Level, reason: str) -> Turn:
    """The turn of an actor that raised: it read the observation and wrote nothing."""
    failed: dict[str, Any] = {
        "actions": [],
        "reward": 0.0,
        "boxes_on_target": _boxes_on_target(state),
        "error": f"agent error: {reason}",
    }
    return Turn({"tokens": count_tokens(text)}, text, None, failed)


def _play(
    state: Level, actions: Sequence[str], preset: SokobanPreset, executed: int
) -> tuple[Level, list[str], float, bool]:
    """Play a turn's ``actions`` until the trajectory's action cap (``executed`` so far) or
    the solve: (state, the actions played, their reward rounded, solved)."""
    played: list[str] = []
    reward = 0.0
    solved = False
    for action in actions:
        if executed + len(played) >= preset.max_actions_per_traj:
            break
        state, step_reward, solved = step(state, action)
        played.append(action)
        reward += step_reward
        if solved:
            break  # moves after the winning one are not played
    return state, played, round(reward, 6), solved


def _turn_info(
    played: list[str], reward: float, state: Level, parsed: ParsedReply, usage_note: str | None
) -> dict[str, Any]:
    info: dict[str, Any] = {
        "actions": played,
        "reward": reward,
        "boxes_on_target": _boxes_on_target(state),
    }
    if parsed.error is not None:
        info["error"] = parsed.error
    if parsed.dropped:
        info["dropped_actions"] = list(parsed.dropped)
    if usage_note is not None:
        info["usage_note"] = usage_note
    return info


def _meta(
    preset: SokobanPreset,
    level: Level,
    state: Level,
    optimal: Sequence[str] | None,
    end_reason: str,
    total_reward: float,
) -> dict[str, Any]:
    """The rollout's meta: the puzzle, how it ended, its return."""
    return {
        "preset": preset.name,
        "initial_grid": render(level),
        "optimal_moves": None if optimal is None else len(optimal),
        "end_reason": end_reason,
        "return": round(total_reward, 6),
        "final_grid": render(state),
    }


def _ending(
    state: Level, info: dict[str, Any], solved: bool, capped: bool, boxes_moved: bool
) -> str | None:
    """Why the rollout ends after this turn (None: it goes on); ``boxes_moved`` only when
    unsolvable positions end it."""
    if solved:
        return "solved"
    if capped:
        return "action_cap"
    if boxes_moved and _provably_unsolvable(state):
        info["unsolvable"] = True
        return "unsolvable"
    return None


async def run_rollout(
    level: Level,
    actor: object,
    *,
    preset: SokobanPreset,
    rollout_id: str,
    limiter: anyio.CapacityLimiter | None = None,
    meta: Mapping[str, Any] | None = None,
    stop_when_unsolvable: bool = False,
) -> Rollout:
    """Play ``level`` with ``actor`` (any object filling the ``actor`` role) to the end.

    ``meta`` is merged into the rollout's meta (e.g. the puzzle seed).  An actor that raises
    ends the rollout as failed: the failed call is logged as a last turn that read the
    observation and wrote nothing, and ``meta["actor_error"]`` holds the reason.
    """
    optimal = solve(level, max_states=_SOLVE_LIMIT).moves
    state = level
    turns: list[Turn] = []
    feedback: str | None = None
    end_reason = "max_turns"
    agent_error: str | None = None
    total_reward = 0.0
    k = preset.max_actions_per_turn
    used = 0.0
    executed = 0
    truncated: dict[str, Any] | None = None
    for number in range(1, preset.max_turns + 1):
        text = sokoban_prompt(state, preset=preset, turn=number, feedback=feedback)
        observation = ActorObservation(ENV_NAME, rollout_id, number, text, state)
        try:
            raw = await call_role(actor, "actor", observation, limiter=limiter)
        except AgentError as exc:
            agent_error, end_reason = exc.reason, "agent_error"
            turns.append(_failed_turn(text, state, exc.reason))
            break
        reply = actor_reply(raw)
        tokens, usage_note = _turn_tokens(text, reply)
        if used + tokens > preset.token_cap:
            # BAGEN: the first request over the token cap ends the episode as failed; its
            # moves are not executed and the turn is dropped.
            end_reason = "token_cap"
            truncated = {"turn": number, "tokens": tokens, "used_before": used}
            break
        used += tokens
        parsed = parse_reply(reply.text, k)
        before = state.boxes
        state, played, reward, solved = _play(state, parsed.actions, preset, executed)
        executed += len(played)
        total_reward += reward
        info = _turn_info(played, reward, state, parsed, usage_note)
        split = _reported_split(raw, tokens) if reply.tokens is not None else None
        if split is not None:  # the provider's counts: the estimator sees them (§3.5)
            info["input_tokens"], info["output_tokens"] = split
        capped = executed >= preset.max_actions_per_traj
        ending = _ending(
            state, info, solved, capped, stop_when_unsolvable and state.boxes != before
        )
        turns.append(Turn({"tokens": tokens}, text, reply.text, info))
        if ending is not None:
            end_reason = ending
            break
        feedback = _feedback(parsed, reward, state, k)
    out_meta = _meta(preset, level, state, optimal, end_reason, total_reward)
    if agent_error is not None:
        out_meta["actor_error"] = agent_error
    if truncated is not None:
        out_meta["truncated_turn"] = truncated
    if meta:
        out_meta.update(meta)
    return Rollout(
        id=rollout_id,
        env=ENV_NAME,
        budget=preset.budget,
        success=end_reason == "solved",
        turns=tuple(turns),
        meta=out_meta,
    )


async def generate_rollouts(
    preset: SokobanPreset,
    n: int,
    seed: int,
    actor: object,
    *,
    concurrency: int = 8,
    limiter: anyio.CapacityLimiter | None = None,
    stop_when_unsolvable: bool = False,
) -> list[Rollout]:
    """Roll ``actor`` out on ``n`` puzzles of ``preset``; results in id order.

    At most ``concurrency`` rollouts run at once.  ``limiter`` (e.g. the session's
    ``--budget-concurrency`` limiter) additionally bounds agent calls across everything
    sharing it.  A failing actor fails its own rollout, never the batch.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    batch = _generate_batch(preset, n, seed)
    results: list[Rollout | None] = [None] * n
    slots = anyio.Semaphore(concurrency)

    async def one(index: int) -> None:
        level_seed, level, _ = batch[index]
        async with slots:
            results[index] = await run_rollout(
                level,
                actor,
                preset=preset,
                rollout_id=make_rollout_id(preset, seed, index),
                limiter=limiter,
                meta={"seed": seed, "index": index, "puzzle_seed": level_seed},
                stop_when_unsolvable=stop_when_unsolvable,
            )

    async with anyio.create_task_group() as group:
        for index in range(n):
            group.start_soon(one, index)
    return [rollout for rollout in results if rollout is not None]
