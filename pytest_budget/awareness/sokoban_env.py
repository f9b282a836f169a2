"""Sokoban for the awareness suite: presets, puzzles, the turn protocol and a reference actor.

The awareness suite first rolls an actor out with no budget constraint and logs what every
turn cost; estimators are probed on prefixes later.  This module produces those logged
:class:`~pytest_budget.awareness.rollouts.Rollout` objects for Sokoban (BAGEN App. B).

Turn protocol
    Every turn the actor receives an :class:`ActorObservation` whose ``text`` is a complete,
    self-contained prompt (rules, legend, the grid, coordinates, the answer format), so an
    actor without memory can play; ``state`` is the current :class:`~pytest_budget.sokoban.Level`.
    The actor answers with up to ``max_actions_per_turn`` moves inside
    ``<answer>...</answer>``; the canonical separator is ``" || "`` (BAGEN's), and ``|``,
    ``,``, ``;`` and whitespace are accepted too, case-insensitively.  A reply that cannot be
    read is a no-op turn (reward 0) whose ``info["error"]`` says why; extra moves are dropped
    and listed in ``info["dropped_actions"]``.  Moves use gym-sokoban rewards via
    :func:`pytest_budget.sokoban.step`.

Usage
    One dimension, ``"tokens"``: the tokens of this turn's observation text (what the model
    read; no history is re-sent, as BAGEN counts per-turn input) plus the tokens of the reply,
    both with :func:`~pytest_budget.tokens.count_tokens`, unless the actor reported its own
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

import collections
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from pytest_budget.awareness.rollouts import (
    ActorObservation,
    ActorReply,
    Rollout,
    Turn,
    actor_reply,
)
from pytest_budget.roles import AgentError, call_role
from pytest_budget.sokoban import (
    ACTIONS,
    GenerationError,
    Level,
    dead_boxes,
    generate_level,
    parse_level,
    render,
    solve,
    step,
)
from pytest_budget.textscan import blocks as tag_blocks
from pytest_budget.textscan import count_opens
from pytest_budget.tokens import count_tokens

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

ENV_NAME = "sokoban"
#: The separator the prompt asks for (BAGEN's); see :func:`parse_reply` for what is accepted.
ACTION_SEPARATOR = " || "
_GRID_HEADER = "Current grid:"
# Enough for every preset here (their state spaces are a few thousand positions); a search
# that stops at the limit proves nothing and the rollout simply goes on.
_SOLVE_LIMIT = 200_000
_SEED_ATTEMPTS = 20


# --------------------------------------------------------------------------- presets


@dataclass(frozen=True)
class SokobanPreset:
    """A puzzle family and its token budget.

    ``max_turns`` is a safety stop, not the budget: it is chosen so that
    ``max_turns x`` (the smallest possible observation) already exceeds ``token_cap``, so a
    rollout that reaches it is over budget whatever the actor wrote and the turn limit never
    decides feasibility.
    """

    name: str
    width: int
    height: int
    num_boxes: int
    search_depth: int
    token_cap: int
    max_turns: int
    max_actions_per_turn: int = 3
    #: BAGEN's ``max_actions_per_traj``: executed moves after which a rollout ends.
    max_actions_per_traj: int = 30

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a preset needs a name")
        for field_name in ("num_boxes", "search_depth", "token_cap", "max_turns"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"{field_name} must be >= 1, got {getattr(self, field_name)}")
        if self.width < 3 or self.height < 3:
            raise ValueError(f"a room must be at least 3x3, got {self.width}x{self.height}")
        if self.max_actions_per_turn < 1:
            raise ValueError("max_actions_per_turn must be >= 1")

    @property
    def budget(self) -> dict[str, float]:
        return {"tokens": self.token_cap}


SOKOBAN_PRESETS: dict[str, SokobanPreset] = {
    # BAGEN's main setting (App. B): 8x8, two boxes, search depth 30, 2,500 tokens.
    # 20 turns x >= 230 prompt tokens > 2,500: max_turns is never what makes a rollout
    # infeasible (the reference actor averages about 6 turns).
    "sokoban-8x8": SokobanPreset(
        name="sokoban-8x8",
        width=8,
        height=8,
        num_boxes=2,
        search_depth=30,
        token_cap=2500,
        max_turns=20,
    ),
    # BAGEN's SFT/RL probe task: 6x6, one box, 2,500 tokens.  Depth 30 as in the 8x8 preset
    # (and RAGEN's 6x6 one-box SFT data): a 4x4 interior with one box has at most a few
    # hundred (player, box) states, which a depth-30 DFS all but exhausts (depth 100 gives the
    # same level for 199 of 200 seeds, depth 10 shorter ones), so 30 yields about the hardest
    # puzzles the room allows.  Prompts are >= 200 tokens, so 20 turns also exceed the cap.
    "sokoban-6x6": SokobanPreset(
        name="sokoban-6x6",
        width=6,
        height=6,
        num_boxes=1,
        search_depth=30,
        token_cap=2500,
        max_turns=20,
    ),
}


# --------------------------------------------------------------------------- puzzles


def _hash_int(*parts: object) -> int:
    """A 63-bit integer from sha256 of the parts: same value in every process."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def puzzle_seed(preset: SokobanPreset, seed: int, index: int, attempt: int = 0) -> int:
    """The :func:`~pytest_budget.sokoban.generate_level` seed of puzzle ``index``.

    Derived with sha256 (never Python's salted ``hash``).  ``attempt`` moves on when a seed
    yields no level, which the generator reports by raising.
    """
    shape = f"{preset.width}x{preset.height}x{preset.num_boxes}d{preset.search_depth}"
    return _hash_int("pytest-budget/sokoban-puzzle", shape, seed, index, attempt)


def _generate_puzzle(preset: SokobanPreset, seed: int, index: int) -> tuple[int, Level, int]:
    """(level seed, level, optimal solution length) for one puzzle of a batch."""
    for attempt in range(_SEED_ATTEMPTS):
        level_seed = puzzle_seed(preset, seed, index, attempt)
        try:
            level = generate_level(
                seed=level_seed,
                width=preset.width,
                height=preset.height,
                num_boxes=preset.num_boxes,
                search_depth=preset.search_depth,
                random_moves=True,
            )
        except GenerationError:
            continue
        # Reverse play guarantees a solution; checking keeps the promise explicit.
        moves = solve(level, max_states=_SOLVE_LIMIT).moves
        if moves is not None:
            return level_seed, level, len(moves)
    raise GenerationError(
        f"no solvable {preset.name} puzzle for seed={seed}, index={index} after "
        f"{_SEED_ATTEMPTS} attempts"
    )


def _generate_batch(preset: SokobanPreset, n: int, seed: int) -> list[tuple[int, Level, int]]:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return [_generate_puzzle(preset, seed, index) for index in range(n)]


def generate_puzzles(preset: SokobanPreset, n: int, seed: int) -> list[Level]:
    """``n`` solvable puzzles for ``preset``; the same in every process for the same seed."""
    return [level for _, level, _ in _generate_batch(preset, n, seed)]


def make_rollout_id(preset: SokobanPreset, seed: int, index: int) -> str:
    """``sokoban-8x8-s42-0007``: preset, batch seed and index (ids sort in batch order)."""
    return f"{preset.name}-s{seed}-{index:04d}"


# --------------------------------------------------------------------------- prompt


def _coords(cells: Sequence[tuple[int, int]] | frozenset[tuple[int, int]]) -> str:
    return ", ".join(f"({r}, {c})" for r, c in sorted(cells))


def sokoban_prompt(
    level: Level, *, preset: SokobanPreset, turn: int, feedback: str | None = None
) -> str:
    """The text an actor reads on ``turn``: self-contained, so no history is needed."""
    k = preset.max_actions_per_turn
    lines = [
        "You are playing Sokoban. Goal: push every box onto a target.",
        "Each action moves you one square: Up, Down, Left or Right. Walking into a box "
        "pushes it one square the same way if the square beyond is free. You cannot pull "
        "boxes, push two at once, or walk through walls.",
        "Legend: # wall, _ floor, O target, X box, √ box on target, P you, S you on a target.",
        "Coordinates are (row, column), counted from 0 at the top left.",
        "",
        f"Turn {turn} of at most {preset.max_turns}.",
    ]
    if feedback:
        lines.append(feedback)
    lines += [
        _GRID_HEADER,
        render(level),
        "",
        f"You: {_coords([level.player])}. Boxes: {_coords(level.boxes)}. "
        f"Targets: {_coords(level.targets)}.",
        f"Answer with 1 to {k} actions inside answer tags, separated by "
        f"'{ACTION_SEPARATOR.strip()}', e.g. <answer>Left{ACTION_SEPARATOR}Up</answer>. "
        "You may reason first in <think></think>.",
    ]
    return "\n".join(lines)


def grid_from_prompt(text: str) -> Level:
    """The level shown in a :func:`sokoban_prompt` (the rows after ``Current grid:``)."""
    lines = text.splitlines()
    try:
        start = lines.index(_GRID_HEADER) + 1
    except ValueError:
        raise ValueError(f"no {_GRID_HEADER!r} line in the observation text") from None
    rows: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(line)
    return parse_level("\n".join(rows))


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ParsedReply:
    """Moves read from a reply: ``actions`` to play, ``dropped`` beyond the per-turn limit,
    or ``error`` (then ``actions`` is empty and the turn is a no-op)."""

    actions: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    error: str | None = None


# "||" and "|" and "," and ";" and any whitespace all separate moves.
_SEPARATORS = re.compile(r"[|,;\s]+")
_ACTION_NAMES = {name.lower(): name for name in ACTIONS}


def parse_reply(text: str, max_actions: int = 3) -> ParsedReply:
    """Read the moves from the last ``<answer>...</answer>`` block of a reply.

    The last block wins so that a format example quoted inside ``<think>`` does not count.
    Any word that is not a move voids the whole answer (no half-applied guesses).
    """
    # linear time, even on hostile text (collections.deque keeps only the last block)
    found = collections.deque(tag_blocks(text, "answer"), maxlen=1)
    last = found[0] if found else None
    if last is None:
        if count_opens(text, "answer"):
            return ParsedReply((), error="unclosed <answer> tag")
        return ParsedReply((), error="no <answer>...</answer> block")
    words = [word for word in _SEPARATORS.split(last.content) if word]
    if not words:
        return ParsedReply((), error="empty answer")
    moves: list[str] = []
    for word in words:
        name = _ACTION_NAMES.get(word.lower())
        if name is None:
            shown = word if len(word) <= 30 else word[:27] + "..."
            return ParsedReply((), error=f"unknown action {shown!r} (use Up, Down, Left, Right)")
        moves.append(name)
    return ParsedReply(tuple(moves[:max_actions]), dropped=tuple(moves[max_actions:]))


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
            agent_error = exc.reason
            end_reason = "agent_error"
            failed: dict[str, Any] = {
                "actions": [],
                "reward": 0.0,
                "boxes_on_target": _boxes_on_target(state),
                "error": f"agent error: {exc.reason}",
            }
            turns.append(Turn({"tokens": count_tokens(text)}, text, None, failed))
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
        played: list[str] = []
        reward = 0.0
        solved = False
        before = state.boxes
        for action in parsed.actions:
            if executed >= preset.max_actions_per_traj:
                break
            state, step_reward, solved = step(state, action)
            played.append(action)
            executed += 1
            reward += step_reward
            if solved:
                break  # moves after the winning one are not played
        reward = round(reward, 6)
        total_reward += reward
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
        split = _reported_split(raw, tokens) if reply.tokens is not None else None
        if split is not None:  # the provider's counts: the estimator sees them (§3.5)
            info["input_tokens"], info["output_tokens"] = split
        ended = False
        if solved:
            end_reason, ended = "solved", True
        elif executed >= preset.max_actions_per_traj:
            end_reason, ended = "action_cap", True
        elif stop_when_unsolvable and state.boxes != before and _provably_unsolvable(state):
            info["unsolvable"] = True
            end_reason, ended = "unsolvable", True
        turns.append(Turn({"tokens": tokens}, text, reply.text, info))
        if ended:
            break
        feedback = _feedback(parsed, reward, state, k)
    out_meta: dict[str, Any] = {
        "preset": preset.name,
        "initial_grid": render(level),
        "optimal_moves": None if optimal is None else len(optimal),
        "end_reason": end_reason,
        "return": round(total_reward, 6),
        "final_grid": render(state),
    }
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


# --------------------------------------------------------------------------- reference actor

#: The reference actor's slip rate (a move replaced by a random other one).
DEFAULT_SLIP_RATE = 0.15
#: Per preset: 6x6 one-box puzzles are easy, so the actor slips more there (BAGEN's 6x6
#: actor is a small model, and its 6x6 probe set is balanced); 0.35 gives the built-in
#: set 220 feasible / 224 impossible probes instead of a nearly single-class set.
REFERENCE_SLIP_RATES: dict[str, float] = {"sokoban-6x6": 0.35}

_RECHECKS = (
    "Wait, let me recount the columns to be sure of the positions.",
    "Let me double-check that before answering.",
    "Hmm, let me go over the board once more.",
)
_DIRECTION_WORDS = {"Up": "up", "Down": "down", "Left": "left", "Right": "right"}
_OPPOSITE = {"Up": "Down", "Down": "Up", "Left": "Right", "Right": "Left"}
_DELTA = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


@dataclass(frozen=True)
class _Push:
    box: tuple[int, int]
    direction: str
    stand: tuple[int, int]
    walk: int


def _first_push(level: Level, plan: Sequence[str]) -> _Push | None:
    """The first push of ``plan``: which box, which way, from where, after how many steps."""
    state = level
    for i, move in enumerate(plan):
        after, _, _ = step(state, move)
        if after.boxes != state.boxes:
            (box,) = state.boxes - after.boxes
            return _Push(box, move, state.player, i)
        state = after
    return None


def _corners(level: Level) -> list[tuple[int, int]]:
    """Non-target floor cells with walls on two orthogonal sides (box traps)."""

    def wall(r: int, c: int) -> bool:
        return (r, c) in level.walls or not (0 <= r < level.height and 0 <= c < level.width)

    out = []
    for r in range(level.height):
        for c in range(level.width):
            if (r, c) in level.walls or (r, c) in level.targets:
                continue
            if (wall(r - 1, c) or wall(r + 1, c)) and (wall(r, c - 1) or wall(r, c + 1)):
                out.append((r, c))
    return out


def _manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


class SokobanReferenceActor:
    """An offline actor that plays like a careful but fallible model.

    It BFS-solves the current position and answers with the next 1-3 moves of the plan; each
    move slips to a random other move with probability ``slip_rate`` (default: the preset's
    :data:`REFERENCE_SLIP_RATES` entry, else 0.15).  Its reply starts with
    a ``<think>`` deliberation about the board whose length is drawn per turn (lognormal,
    longer when more of the puzzle remains), so tokens per turn vary like a model's.  With
    probability ``malformed_rate`` the answer tag is left out (a no-op turn).

    Every draw is seeded by sha256 of ``(seed, rollout_id, turn)``: the actor keeps no state,
    so one instance can serve concurrent rollouts and results do not depend on scheduling.
    """

    name = "sokoban-reference"

    def __init__(
        self,
        seed: int = 0,
        slip_rate: float | None = None,
        *,
        verbosity: float = 1.0,
        malformed_rate: float = 0.02,
    ) -> None:
        for label, value in (("slip_rate", slip_rate), ("malformed_rate", malformed_rate)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {value}")
        if verbosity < 0:
            raise ValueError(f"verbosity must be >= 0, got {verbosity}")
        self.seed = seed
        self.slip_rate = slip_rate
        self.verbosity = verbosity
        self.malformed_rate = malformed_rate

    def _rng(self, observation: ActorObservation) -> np.random.Generator:
        return np.random.default_rng(
            _hash_int("pytest-budget/sokoban-actor", self.seed, observation.rollout_id,
                      observation.turn)
        )  # fmt: skip

    def act(self, observation: ActorObservation) -> str:
        level = observation.state
        if not isinstance(level, Level):
            level = grid_from_prompt(observation.text)
        rng = self._rng(observation)
        slip_rate = self.slip_rate
        if slip_rate is None:  # the preset's default, read from the rollout id
            preset = observation.rollout_id.rsplit("-s", 1)[0]
            slip_rate = REFERENCE_SLIP_RATES.get(preset, DEFAULT_SLIP_RATE)
        result = solve(level, max_states=_SOLVE_LIMIT)
        plan = list(result.moves) if result.moves else []
        # Models usually send the full three moves, sometimes fewer.
        count = int(rng.choice([1, 2, 3], p=[0.1, 0.2, 0.7]))
        if plan:
            chosen = plan[:count]
        else:  # stuck or unsure: flail, as a model that has not noticed the dead end would
            chosen = [ACTIONS[int(i)] for i in rng.integers(len(ACTIONS), size=count)]
        moves = []
        for move in chosen:
            if rng.random() < slip_rate:
                others = [a for a in ACTIONS if a != move]
                move = others[int(rng.integers(len(others)))]
            moves.append(move)
        think = self._deliberate(level, plan, moves, rng)
        if rng.random() < self.malformed_rate:
            return f"<think>{think}</think>\nI will go {', '.join(moves).lower()}."
        return f"<think>{think}</think>\n<answer>{ACTION_SEPARATOR.join(moves)}</answer>"

    def _deliberate(
        self, level: Level, plan: list[str], moves: list[str], rng: np.random.Generator
    ) -> str:
        """Plausible sentences about this board; how many is drawn per turn.

        Sentences keep the pool's order (situation, box, push, route) so the text reads as
        one line of thought; a long deliberation goes over the board again after a recheck.
        """
        pool = self._sentences(level, plan, rng)
        # Median ~4-6 sentences early in a puzzle, ~2 near the end, heavy right tail.  These
        # constants put ~45-50% of 8x8 rollouts within the 2,500-token cap (see the benchmark).
        remaining = len(plan) if plan else 12
        n = 0
        if self.verbosity > 0:
            mu = math.log(self.verbosity * (2.0 + 0.23 * remaining))
            n = round(math.exp(rng.normal(mu, 0.55)))
        picked: list[str] = []
        while len(picked) < n:
            if picked:
                picked.append(_RECHECKS[int(rng.integers(len(_RECHECKS)))])
            take = min(n - len(picked), len(pool))
            picked += [pool[int(i)] for i in sorted(rng.choice(len(pool), take, replace=False))]
        picked.append(f"So the next moves are {', '.join(moves)}.")
        return " ".join(picked)

    @staticmethod
    def _sentences(level: Level, plan: list[str], rng: np.random.Generator) -> list[str]:
        off = sorted(level.boxes - level.targets)
        free = sorted(level.targets - level.boxes)
        player = level.player
        out = [
            f"I am standing at {_coords([player])}.",
            f"{len(off)} of {len(level.boxes)} boxes still need a target.",
            "Let me look at the grid row by row.",
            "I must not push a box against a wall unless its target is on that wall.",
        ]
        rows = render(level).splitlines()
        r = int(rng.integers(1, max(2, level.height - 1)))
        out.append(f"Row {r} reads {rows[r]}, so I can see where the walls are.")
        for box in off:
            if free:
                target = min(free, key=lambda t: (_manhattan(box, t), t))
                out.append(
                    f"The box at {_coords([box])} is {_manhattan(box, target)} squares from "
                    f"the target at {_coords([target])}."
                )
        push = _first_push(level, plan)
        if push is not None:
            word = _DIRECTION_WORDS[push.direction]
            side = _DIRECTION_WORDS[_OPPOSITE[push.direction]]
            out += [
                f"To push the box at {_coords([push.box])} {word} I have to stand on its "
                f"{side} side, at {_coords([push.stand])}.",
                f"Getting there takes {push.walk} steps before the first push.",
                f"After that push the box moves to {_coords([_shift(push.box, push.direction)])}.",
            ]
        corners = _corners(level)
        if corners:
            corner = corners[int(rng.integers(len(corners)))]
            out.append(f"The square {_coords([corner])} is a corner; a box there is stuck.")
        if plan:
            preview = ", ".join(plan[:6])
            out.append(f"A route that works from here starts {preview}.")
            out.append(f"I count about {len(plan)} moves in total to finish.")
        else:
            out.append("I cannot see a clean way to finish from here; let me try something.")
        wrong = ACTIONS[int(rng.integers(len(ACTIONS)))]
        out.append(f"Going {_DIRECTION_WORDS[wrong]} first would probably waste moves.")
        return out


def _shift(cell: tuple[int, int], direction: str) -> tuple[int, int]:
    dr, dc = _DELTA[direction]
    return cell[0] + dr, cell[1] + dc
