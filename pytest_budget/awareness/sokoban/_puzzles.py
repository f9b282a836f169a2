"""The Sokoban environment's puzzles and text: presets, seeded puzzle batches, the prompt
and the reading of an actor's reply.  Re-exported by
:mod:`pytest_budget.awareness.sokoban._env`.
"""

from __future__ import annotations

import collections
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_budget._core.textscan import blocks as tag_blocks
from pytest_budget._core.textscan import count_opens
from pytest_budget._environments.sokoban import (
    ACTIONS,
    GenerationError,
    Level,
    generate_level,
    parse_level,
    render,
    solve,
)

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
    """The :func:`~pytest_budget._environments.sokoban.generate_level` seed of puzzle ``index``.

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
