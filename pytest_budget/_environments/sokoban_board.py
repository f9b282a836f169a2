"""Sokoban boards: the level type, board tables and dead-box detection, the text form,
one environment step and the BFS solver.  Re-exported by :mod:`pytest_budget._environments.sokoban`
(which adds the level generators).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache

Cell = tuple[int, int]

ACTIONS: tuple[str, ...] = ("Up", "Down", "Left", "Right")
_DELTAS: tuple[Cell, ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))
_ACTION_INDEX = {name: i for i, name in enumerate(ACTIONS)}
# Index of the opposite action (Up<->Down, Left<->Right): where a pulled box sits.
_OPPOSITE = (1, 0, 3, 2)

# gym-sokoban reward constants.
STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_PENALTY = -1.0
SOLVED_REWARD = 10.0

# Text symbols (the RAGEN grid vocabulary without its padding spaces).
_WALL = "#"
_FLOOR = "_"
_TARGET = "O"
_BOX = "X"
_BOX_ON_TARGET = "√"
_PLAYER = "P"
_PLAYER_ON_TARGET = "S"
_SYMBOLS = _WALL + _FLOOR + _TARGET + _BOX + _BOX_ON_TARGET + _PLAYER + _PLAYER_ON_TARGET

# Random-walk topology parameters from gym-sokoban.
_P_CHANGE_DIRECTION = 0.35
_STEPS_PER_SIDE = 1.7
_WALK_DIRECTIONS: tuple[Cell, ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))
# The five 3x3 masks, written as floor offsets from the walker (the mask centre).
_MASKS: tuple[tuple[Cell, ...], ...] = (
    ((0, -1), (0, 0), (0, 1)),  # horizontal bar
    ((-1, 0), (0, 0), (1, 0)),  # vertical bar
    ((0, -1), (0, 0), (1, 0)),  # elbow: left and down
    ((0, -1), (0, 0), (1, -1), (1, 0)),  # 2x2 block, lower left
    ((0, 0), (0, 1), (1, 0)),  # elbow: right and down
)

# Distinct SeedSequence stream for unsolvable levels, so seed n does not just reuse level n.
_UNSOLVABLE_STREAM = 0x5D0C
_UNSOLVABLE_ATTEMPTS = 25


class GenerationError(Exception):
    """No acceptable level could be generated for the requested seed and size."""


@dataclass(frozen=True)
class Level:
    """An immutable Sokoban position: static board plus box and player positions."""

    width: int
    height: int
    walls: frozenset[Cell]
    targets: frozenset[Cell]
    boxes: frozenset[Cell]
    player: Cell

    def __post_init__(self) -> None:
        # Reject impossible positions early: solver and renderer assume a consistent board.
        if self.width < 1 or self.height < 1:
            raise ValueError(f"level size must be positive, got {self.width}x{self.height}")
        for name, cells in (("wall", self.walls), ("target", self.targets), ("box", self.boxes)):
            for cell in cells:
                if not self._inside(cell):
                    raise ValueError(
                        f"{name} {cell} is outside the {self.width}x{self.height} grid"
                    )
        if not self._inside(self.player):
            raise ValueError(f"player {self.player} is outside the grid")
        if self.targets & self.walls:
            raise ValueError(f"targets on walls: {sorted(self.targets & self.walls)}")
        if self.boxes & self.walls:
            raise ValueError(f"boxes on walls: {sorted(self.boxes & self.walls)}")
        if self.player in self.walls or self.player in self.boxes:
            raise ValueError(f"player {self.player} is on a wall or a box")
        if len(self.boxes) != len(self.targets):
            raise ValueError(
                f"{len(self.boxes)} boxes but {len(self.targets)} targets; they must match"
            )

    def _inside(self, cell: Cell) -> bool:
        return 0 <= cell[0] < self.height and 0 <= cell[1] < self.width

    @property
    def solved(self) -> bool:
        """True when every box is on a target."""
        return self.boxes <= self.targets


@dataclass(frozen=True)
class SolveResult:
    """Outcome of :func:`solve`.

    ``moves`` is a shortest action sequence (``()`` if already solved) or ``None``.  When
    ``moves`` is ``None`` and ``exhausted`` is true, the level is provably unsolvable; when
    ``exhausted`` is false the search stopped at its state limit and nothing is proven.
    """

    moves: tuple[str, ...] | None
    expanded: int
    exhausted: bool


# --------------------------------------------------------------------------- board tables


class _Board:
    """Integer-encoded static board: neighbour table, targets and dead squares."""

    __slots__ = ("dead", "dead_mask", "height", "neighbours", "target_mask", "targets", "width")

    def __init__(
        self, width: int, height: int, walls: frozenset[Cell], targets: frozenset[Cell]
    ) -> None:
        self.width = width
        self.height = height

        def open_cell(r: int, c: int) -> bool:
            return 0 <= r < height and 0 <= c < width and (r, c) not in walls

        # neighbours[i][a] is the cell reached from i by action a, or -1 (wall / outside).
        table: list[tuple[int, ...]] = []
        dead: set[int] = set()
        for r in range(height):
            for c in range(width):
                table.append(
                    tuple(
                        (r + dr) * width + (c + dc) if open_cell(r + dr, c + dc) else -1
                        for dr, dc in _DELTAS
                    )
                )
                if open_cell(r, c) and (r, c) not in targets:
                    up, down, left, right = (not open_cell(r + dr, c + dc) for dr, dc in _DELTAS)
                    if (up or down) and (left or right):
                        dead.add(r * width + c)
        self.neighbours: tuple[tuple[int, ...], ...] = tuple(table)
        self.targets: frozenset[int] = frozenset(r * width + c for r, c in targets)
        # Non-target cells with walls on two orthogonal sides: a box there can never move.
        self.dead: frozenset[int] = frozenset(dead)
        # The same sets as bit masks (bit i = cell i): the solver's states are integers.
        self.target_mask = sum(1 << i for i in self.targets)
        self.dead_mask = sum(1 << i for i in self.dead)

    def index(self, cell: Cell) -> int:
        return cell[0] * self.width + cell[1]

    def cell(self, index: int) -> Cell:
        return divmod(index, self.width)


@lru_cache(maxsize=512)
def _board(width: int, height: int, walls: frozenset[Cell], targets: frozenset[Cell]) -> _Board:
    return _Board(width, height, walls, targets)


def _board_of(level: Level) -> _Board:
    return _board(level.width, level.height, level.walls, level.targets)


def _is_corner(level: Level, cell: Cell) -> bool:
    r, c = cell

    def blocked(rr: int, cc: int) -> bool:
        return not (0 <= rr < level.height and 0 <= cc < level.width) or (rr, cc) in level.walls

    vertical = blocked(r - 1, c) or blocked(r + 1, c)
    horizontal = blocked(r, c - 1) or blocked(r, c + 1)
    return vertical and horizontal


def dead_boxes(level: Level) -> frozenset[Cell]:
    """Boxes on a non-target corner cell (walls on two orthogonal sides).

    Such a box can never be pushed again, so a non-empty result proves the level unsolvable.
    """
    return frozenset(
        box for box in level.boxes if box not in level.targets and _is_corner(level, box)
    )


# --------------------------------------------------------------------------- text form


def render(level: Level) -> str:
    """Grid text, one row per line, no trailing newline.

    ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on target, ``P`` player,
    ``S`` player on target.
    """
    rows: list[str] = []
    for r in range(level.height):
        chars: list[str] = []
        for c in range(level.width):
            cell = (r, c)
            on_target = cell in level.targets
            if cell in level.walls:
                chars.append(_WALL)
            elif cell == level.player:
                chars.append(_PLAYER_ON_TARGET if on_target else _PLAYER)
            elif cell in level.boxes:
                chars.append(_BOX_ON_TARGET if on_target else _BOX)
            else:
                chars.append(_TARGET if on_target else _FLOOR)
        rows.append("".join(chars))
    return "\n".join(rows)


def parse_level(text: str) -> Level:
    """Inverse of :func:`render`.  Blank lines around the grid are ignored.

    Raises ``ValueError`` naming the offending row/column (0-based) for unknown symbols,
    ragged rows, a missing or repeated player, or box/target counts that differ.
    """
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ValueError("empty level text")
    width = len(lines[0])
    walls: set[Cell] = set()
    targets: set[Cell] = set()
    boxes: set[Cell] = set()
    players: list[Cell] = []
    for r, line in enumerate(lines):
        if len(line) != width:
            raise ValueError(f"row {r} has {len(line)} cells, expected {width}: {line!r}")
        for c, ch in enumerate(line):
            cell = (r, c)
            if ch == _WALL:
                walls.add(cell)
            elif ch == _FLOOR:
                pass
            elif ch == _TARGET:
                targets.add(cell)
            elif ch == _BOX:
                boxes.add(cell)
            elif ch == _BOX_ON_TARGET:
                boxes.add(cell)
                targets.add(cell)
            elif ch == _PLAYER:
                players.append(cell)
            elif ch == _PLAYER_ON_TARGET:
                players.append(cell)
                targets.add(cell)
            else:
                raise ValueError(
                    f"row {r}, column {c}: unexpected character {ch!r} in {line!r}; "
                    f"expected one of {_SYMBOLS!r}"
                )
    if len(players) != 1:
        where = ", ".join(f"row {r} column {c}" for r, c in players) or "none"
        raise ValueError(f"expected exactly one player ('P' or 'S'), found {where}")
    if len(boxes) != len(targets):
        raise ValueError(f"{len(boxes)} boxes but {len(targets)} targets; they must match")
    return Level(
        width=width,
        height=len(lines),
        walls=frozenset(walls),
        targets=frozenset(targets),
        boxes=frozenset(boxes),
        player=players[0],
    )


# --------------------------------------------------------------------------- environment


def step(level: Level, action: str) -> tuple[Level, float, bool]:
    """Apply one move with gym-sokoban rewards; returns ``(new_level, reward, solved)``.

    Every call costs :data:`STEP_PENALTY`.  A push that raises the number of boxes on
    targets adds :data:`BOX_ON_TARGET_REWARD`, one that lowers it adds
    :data:`BOX_OFF_TARGET_PENALTY`, and the move that completes the level adds
    :data:`SOLVED_REWARD` (only on that transition, so stepping an already solved level
    does not pay again).  Walking into a wall or an unpushable box leaves the level as is.
    """
    try:
        dr, dc = _DELTAS[_ACTION_INDEX[action]]
    except KeyError:
        raise ValueError(f"unknown action {action!r}; expected one of {ACTIONS}") from None
    reward = STEP_PENALTY

    def blocked(cell: Cell) -> bool:
        return not level._inside(cell) or cell in level.walls

    pr, pc = level.player
    target = (pr + dr, pc + dc)
    if blocked(target):
        return level, reward, level.solved
    boxes = level.boxes
    if target in boxes:
        beyond = (target[0] + dr, target[1] + dc)
        if blocked(beyond) or beyond in boxes:
            return level, reward, level.solved
        boxes = (boxes - {target}) | {beyond}
        before = len(level.boxes & level.targets)
        after = len(boxes & level.targets)
        if after > before:
            reward += BOX_ON_TARGET_REWARD
        elif after < before:
            reward += BOX_OFF_TARGET_PENALTY
    new_level = Level(
        width=level.width,
        height=level.height,
        walls=level.walls,
        targets=level.targets,
        boxes=boxes,
        player=target,
    )
    if new_level.solved and not level.solved:
        reward += SOLVED_REWARD
    return new_level, reward, new_level.solved


# --------------------------------------------------------------------------- solver


def solve(level: Level, *, max_states: int = 200_000) -> SolveResult:
    """Breadth-first search over ``(player, boxes)``; the result is shortest in moves.

    Pushes onto dead squares (non-target corners) are pruned, which never loses a solution.
    At most ``max_states`` states are expanded.
    """
    return _solved(level, max_states)


# A rollout solves its start position three times (the generator's check, the optimal
# length, the actor's first turn) and the environment's dead-end check solves the position
# the actor solves next turn: remembered, each is searched once.  Levels and results are
# immutable; 4,096 positions cover a default run's 256 puzzles and their turns.
@lru_cache(maxsize=4096)
def _solved(level: Level, max_states: int) -> SolveResult:
    if level.solved:
        return SolveResult(moves=(), expanded=0, exhausted=False)
    board = _board_of(level)
    nbr = board.neighbours
    dead = board.dead_mask
    targets = board.target_mask
    # A state is one integer: the boxes' bit mask above the player's cell index (hashing
    # and comparing it is several times cheaper than a (player, sorted boxes) tuple; the
    # search visits states in the same order either way).
    bits = len(nbr).bit_length()
    low = (1 << bits) - 1
    start = (sum(1 << board.index(b) for b in level.boxes) << bits) | board.index(level.player)
    parents: dict[int, tuple[int, int] | None] = {start: None}
    queue: deque[int] = deque([start])
    expanded = 0
    while queue:
        if expanded >= max_states:
            return SolveResult(moves=None, expanded=expanded, exhausted=False)
        state = queue.popleft()
        expanded += 1
        boxes = state >> bits
        moves_from = nbr[state & low]
        for a in range(4):
            nxt = moves_from[a]
            if nxt < 0:
                continue
            if boxes >> nxt & 1:
                beyond = nbr[nxt][a]
                if beyond < 0 or (boxes | dead) >> beyond & 1:
                    continue
                new_boxes = boxes ^ (1 << nxt) ^ (1 << beyond)
                child = (new_boxes << bits) | nxt
                if child in parents:
                    continue
                parents[child] = (state, a)
                # Goal test on generation is still shortest: BFS generates nodes in depth
                # order.
                if new_boxes & targets == new_boxes:
                    return SolveResult(
                        moves=_path(parents, child), expanded=expanded, exhausted=False
                    )
            else:
                child = (boxes << bits) | nxt
                if child in parents:
                    continue
                parents[child] = (state, a)
            queue.append(child)
    return SolveResult(moves=None, expanded=expanded, exhausted=True)


def _path(parents: dict[int, tuple[int, int] | None], end: int) -> tuple[str, ...]:
    actions: list[str] = []
    link = parents[end]
    while link is not None:
        prev, a = link
        actions.append(ACTIONS[a])
        link = parents[prev]
    return tuple(reversed(actions))
