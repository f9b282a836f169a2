"""Sokoban puzzles as triage problems, with a reference solver and estimator.

Each item shows a level from :mod:`pytest_budget._environments.sokoban` between a ``BEGIN GRID``
and an
``END GRID`` line and asks for a move sequence; the ``sokoban`` grader replays the moves
on that grid, so items need no stored answer.  Sizes are mixed (6x6 with one box, 7x7 and
8x8 with two) so solution lengths and search effort vary.  Unsolvable look-alikes have a
box pushed into a corner that is not a goal.

The reference solver is a breadth-first search with a small search budget: it writes the
shortest solution in chunks with the position after each, or a search log and an honest
give-up when the budget runs out.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import pytest_budget._environments.sokoban as sokoban
from pytest_budget.triage._solutions import Estimate, capped_solution
from pytest_budget.triage._types import Item, Problem, Solution

__all__ = [
    "GRID_BEGIN",
    "GRID_END",
    "SIZES",
    "SokobanSolver",
    "estimate",
    "generate",
    "generate_unsolvable",
    "grid_from_text",
    "level_from_text",
    "looks_like_puzzle",
    "problem_text",
]

GRID_BEGIN = "BEGIN GRID"
GRID_END = "END GRID"

#: (width, height, boxes) of the bundled puzzles, drawn with equal odds per item.
SIZES: tuple[tuple[int, int, int], ...] = ((6, 6, 1), (7, 7, 2), (8, 8, 2))
_SEARCH_DEPTH = 30

_INSTRUCTIONS = (
    "Solve this Sokoban puzzle. You are the worker P and must push every box X onto a "
    "goal square O. Symbols: # wall, _ floor, O goal, X box, \u221a box already on a goal, "
    "P you, S you standing on a goal. Each move takes one step Up, Down, Left or Right. "
    "Walking into a box pushes it one square further if that square is floor or a goal; "
    "boxes cannot be pulled and you cannot push two boxes at once. Reply with the "
    "complete sequence of moves that leaves every box on a goal, for example: "
    "Up Left Left Down."
)


def problem_text(level: sokoban.Level) -> str:
    """The item text for ``level``: instructions, then the grid between marker lines."""
    grid = sokoban.render(level)
    return (
        f"{_INSTRUCTIONS}\n\nThe puzzle has {level.width} columns and {level.height} rows:\n"
        f"{GRID_BEGIN}\n{grid}\n{GRID_END}"
    )


_GRID_CHARS = frozenset("#_OX\u221aPS")


def grid_from_text(text: str) -> str:
    """The grid block of a puzzle text; ``ValueError`` if there is none.

    Takes the lines between ``BEGIN GRID`` and ``END GRID``; failing markers, the longest
    run of at least three lines made only of grid symbols.
    """
    lines = text.splitlines()
    stripped = [line.strip() for line in lines]
    if GRID_BEGIN in stripped:
        start = stripped.index(GRID_BEGIN) + 1
        if GRID_END not in stripped[start:]:
            raise ValueError(f"puzzle text has {GRID_BEGIN!r} but no {GRID_END!r} line")
        end = stripped.index(GRID_END, start)
        return "\n".join(stripped[start:end])
    best: list[str] = []
    run: list[str] = []
    for line in [*stripped, ""]:
        if line and set(line) <= _GRID_CHARS:
            run.append(line)
            continue
        if len(run) > len(best):
            best = run
        run = []
    if len(best) < 3:
        raise ValueError("no Sokoban grid found in the text")
    return "\n".join(best)


def level_from_text(text: str) -> sokoban.Level:
    """The level drawn in a puzzle text; ``ValueError`` if absent or malformed."""
    return sokoban.parse_level(grid_from_text(text))


def looks_like_puzzle(text: str) -> bool:
    """Whether ``text`` contains a well-formed Sokoban grid."""
    try:
        level_from_text(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------
# Generation


def _seed(*parts: object) -> int:
    # sha256, never hash(): the same seed must give the same items in every process.
    key = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") >> 1


def _generate_one(seed: int, index: int) -> sokoban.Level:
    width, height, boxes = SIZES[_seed(seed, "sokoban-size", index) % len(SIZES)]
    for attempt in range(20):  # a failed topology search just moves on to the next seed
        try:
            return sokoban.generate_level(
                seed=_seed(seed, "sokoban", index, attempt),
                width=width,
                height=height,
                num_boxes=boxes,
                search_depth=_SEARCH_DEPTH,
            )
        except sokoban.GenerationError:
            continue
    raise sokoban.GenerationError(f"no {width}x{height} level for item {index} (seed={seed})")


def generate(n: int, seed: int) -> tuple[Item, ...]:
    """``n`` puzzle items ``sokoban-000``... graded by replay, deterministic per seed."""
    return tuple(
        Item(
            id=f"sokoban-{index:03d}",
            text=problem_text(_generate_one(seed, index)),
            value=1.0,
            answer=None,
            grader="sokoban",
            domain="sokoban",
        )
        for index in range(n)
    )


def generate_unsolvable(n: int, seed: int) -> tuple[Item, ...]:
    """``n`` look-alike items ``sokoban-u000``... with a box stuck in a non-goal corner."""
    items = []
    for index in range(n):
        width, height, boxes = SIZES[_seed(seed, "sokoban-u-size", index) % len(SIZES)]
        level = None
        for attempt in range(20):
            try:
                level = sokoban.generate_unsolvable_level(
                    seed=_seed(seed, "sokoban-u", index, attempt),
                    width=width,
                    height=height,
                    num_boxes=boxes,
                )
                break
            except sokoban.GenerationError:
                continue
        if level is None:
            raise sokoban.GenerationError(f"no unsolvable level for item {index} (seed={seed})")
        items.append(
            Item(
                id=f"sokoban-u{index:03d}",
                text=problem_text(level),
                value=1.0,
                answer=None,
                grader="sokoban",
                unsolvable=True,
                domain="sokoban",
            )
        )
    return tuple(items)


# ---------------------------------------------------------------------------
# The reference solver


def _where(level: sokoban.Level) -> str:
    boxes = ", ".join(f"({r}, {c})" for r, c in sorted(level.boxes))
    r, c = level.player
    return f"me at ({r}, {c}); boxes at {boxes}"


class SokobanSolver:
    """Reference solver for puzzles: breadth-first search with a bounded budget.

    ``max_states`` bounds the positions it examines; it is set so that the hardest
    quarter or so of the bundled puzzles is beyond it.  ``chunk`` is how many moves it
    writes between position reports, ``log_every`` how often a failed search reports.
    """

    name = "reference-sokoban"

    def __init__(self, max_states: int = 250, chunk: int = 4, log_every: int = 25) -> None:
        self.max_states = max_states
        self.chunk = chunk
        self.log_every = log_every

    def solve(self, problem: Problem, max_tokens: int | None = None) -> Solution:
        try:
            level = level_from_text(problem.text)
        except ValueError as exc:
            text = f"I cannot read the puzzle grid ({exc}), so I cannot solve it."
            return capped_solution(text, None, max_tokens)
        count = len(level.boxes)
        lines = [
            f"The grid is {level.width} by {level.height} with {count} "
            f"box{'es' if count != 1 else ''}; positions are (row, column) from the top left.",
            f"Start: {_where(level)}; goals at "
            + ", ".join(f"({r}, {c})" for r, c in sorted(level.targets))
            + ".",
            "I search positions breadth first, so the first solution I find is shortest.",
        ]
        result = sokoban.solve(level, max_states=self.max_states)
        if result.moves is None:
            lines.extend(self._search_log(result))
            return capped_solution("\n".join(lines), None, max_tokens)
        lines.append(
            f"Found a {len(result.moves)}-move solution after examining "
            f"{result.expanded} positions."
        )
        lines.extend(self._chunks(level, result.moves))
        answer = " ".join(result.moves)
        lines.append(f"Answer: {answer}")
        return capped_solution("\n".join(lines), answer, max_tokens)

    def _chunks(self, level: sokoban.Level, moves: Sequence[str]) -> list[str]:
        lines = []
        for start in range(0, len(moves), self.chunk):
            part = moves[start : start + self.chunk]
            for move in part:
                level, _, _ = sokoban.step(level, move)
            span = f"{start + 1}-{start + len(part)}" if len(part) > 1 else f"{start + 1}"
            lines.append(f"Moves {span}: {' '.join(part)} -> {_where(level)}")
        return lines

    def _search_log(self, result: sokoban.SolveResult) -> list[str]:
        lines = [
            f"{done} positions examined, no solution yet."
            for done in range(self.log_every, result.expanded + 1, self.log_every)
        ]
        if result.exhausted:
            lines.append(
                f"All {result.expanded} reachable positions are examined and none has every "
                "box on a goal: no sequence of moves solves this puzzle."
            )
        else:
            lines.append(
                f"I stop after {result.expanded} positions; this puzzle is beyond my search."
            )
        lines.append("I cannot solve this puzzle.")
        return lines


# ---------------------------------------------------------------------------
# The estimator


def _floor_cells(level: sokoban.Level) -> int:
    return level.width * level.height - len(level.walls)


def estimate(problem: Problem) -> Estimate:
    """Cost and odds from the grid alone (the solver is never run).

    The moves needed are guessed from box-to-goal and worker-to-box distances, the search
    effort from the floor area and box count.  A box in a corner that is not a goal can
    never move again, so such a puzzle gets odds near zero.
    """
    try:
        level = level_from_text(problem.text)
    except ValueError:
        return Estimate(tokens=30, p_solve=0.02)
    if sokoban.dead_boxes(level):
        return Estimate(tokens=110, p_solve=0.02)  # roughly the cost of a fruitless search
    loose = [box for box in level.boxes if box not in level.targets]
    free = [goal for goal in level.targets if goal not in level.boxes]

    def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
        return abs(a[0] - b[0]) + abs(a[1] - b[1])

    push = sum(min(manhattan(box, goal) for goal in free) for box in loose)
    walk = min((manhattan(level.player, box) for box in loose), default=0)
    moves = push + walk + 2 * max(0, len(loose) - 1)  # re-positioning between boxes
    per_chunk = 14 + 6 * len(level.boxes)  # tokens of one "Moves a-b: ... -> ..." line
    tokens = 55 + moves + math.ceil(moves / 4) * per_chunk
    # Positions to search grow like floor^(boxes + 1); a longer push shortens the odds.
    space = math.log(max(2, _floor_cells(level))) * (len(level.boxes) + 1)
    p_solve = 1.0 / (1.0 + math.exp((space + 0.15 * moves - 10.5) / 0.8))
    return Estimate(tokens=tokens, p_solve=round(min(0.95, max(0.05, p_solve)), 3))
