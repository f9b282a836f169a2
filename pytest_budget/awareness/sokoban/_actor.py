"""The Sokoban environment's reference actor: plays a solver's plan with seeded slips and
re-checks, so its rollouts succeed, fail and run out of budget in realistic shares.
Re-exported by :mod:`pytest_budget.awareness.sokoban._env`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_budget._environments.sokoban import (
    ACTIONS,
    Level,
    render,
    solve,
    step,
)
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
)
from pytest_budget.awareness.sokoban._puzzles import (
    _SOLVE_LIMIT,
    ACTION_SEPARATOR,
    _coords,
    _hash_int,
    grid_from_prompt,
)

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
