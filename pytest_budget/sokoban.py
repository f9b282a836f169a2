"""Sokoban puzzles: generation, text rendering, gym-style stepping and a BFS solver.

One module serves two suites.  The triage suite uses :func:`generate_level` and
:func:`generate_unsolvable_level` to build problem pools and :func:`solve` as the reference
solver; the awareness suite plays levels interactively through :func:`step`.

Generation follows the public BAGEN/RAGEN code (itself adapted from gym-sokoban):

1. *Topology*: a random walk of ``int(1.7 * (width + height))`` steps through the room
   interior; at each step the direction changes with probability 0.35 and one of five 3x3
   floor masks is stamped around the walker.  The outer ring is always wall.
2. *Placement*: the player and then one target per box go on random floor cells.
3. *Reverse play*: every box starts on its target and the player pulls boxes around with a
   depth-limited DFS (``ttl = search_depth``, at most ``max_states`` distinct states, states
   never revisited).  A state scores ``box swaps x sum of Manhattan displacements`` and
   scores 0 while any target is covered (by a box or the player, as in the public code).
   The best-scoring state becomes the puzzle; if the best score is 0 a new topology is drawn.

Because the puzzle is reached from the solved position by pulls, it is solvable by pushes.
Unlike the public code, which reseeds through Python's salted ``hash``, every random draw
comes from ``numpy.random.default_rng(seed)`` so a seed gives the same level in any process.

Coordinates are ``(row, col)`` with ``(0, 0)`` at the top left.  Internally the generator
and the solver use integer cell indices ``row * width + col`` for speed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "ACTIONS",
    "BOX_OFF_TARGET_PENALTY",
    "BOX_ON_TARGET_REWARD",
    "SOLVED_REWARD",
    "STEP_PENALTY",
    "GenerationError",
    "Level",
    "SolveResult",
    "dead_boxes",
    "generate_level",
    "generate_unsolvable_level",
    "parse_level",
    "render",
    "solve",
    "step",
]

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

    __slots__ = ("dead", "height", "neighbours", "targets", "width")

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

_State = tuple[int, tuple[int, ...]]


def solve(level: Level, *, max_states: int = 200_000) -> SolveResult:
    """Breadth-first search over ``(player, boxes)``; the result is shortest in moves.

    Pushes onto dead squares (non-target corners) are pruned, which never loses a solution.
    At most ``max_states`` states are expanded.
    """
    if level.solved:
        return SolveResult(moves=(), expanded=0, exhausted=False)
    board = _board_of(level)
    nbr = board.neighbours
    dead = board.dead
    targets = board.targets
    start: _State = (board.index(level.player), tuple(sorted(board.index(b) for b in level.boxes)))
    parents: dict[_State, tuple[_State, int] | None] = {start: None}
    queue: deque[_State] = deque([start])
    expanded = 0
    while queue:
        if expanded >= max_states:
            return SolveResult(moves=None, expanded=expanded, exhausted=False)
        state = queue.popleft()
        expanded += 1
        player, boxes = state
        moves_from = nbr[player]
        for a in range(4):
            nxt = moves_from[a]
            if nxt < 0:
                continue
            new_boxes = boxes
            if nxt in boxes:
                beyond = nbr[nxt][a]
                if beyond < 0 or beyond in boxes or beyond in dead:
                    continue
                new_boxes = tuple(sorted(beyond if b == nxt else b for b in boxes))
            child: _State = (nxt, new_boxes)
            if child in parents:
                continue
            parents[child] = (state, a)
            # Goal test on generation is still shortest: BFS generates nodes in depth order.
            if new_boxes is not boxes and all(b in targets for b in new_boxes):
                return SolveResult(moves=_path(parents, child), expanded=expanded, exhausted=False)
            queue.append(child)
    return SolveResult(moves=None, expanded=expanded, exhausted=True)


def _path(parents: dict[_State, tuple[_State, int] | None], end: _State) -> tuple[str, ...]:
    actions: list[str] = []
    link = parents[end]
    while link is not None:
        prev, a = link
        actions.append(ACTIONS[a])
        link = parents[prev]
    return tuple(reversed(actions))


# --------------------------------------------------------------------------- generator


def _room_topology(rng: np.random.Generator, width: int, height: int) -> frozenset[Cell]:
    """Floor cells carved by the gym-sokoban random walk; the outer ring stays wall."""
    num_steps = int(_STEPS_PER_SIDE * (width + height))
    direction = _WALK_DIRECTIONS[int(rng.integers(len(_WALK_DIRECTIONS)))]
    # Start anywhere but the first row/column (as the public code); clamping fixes the rest.
    r = int(rng.integers(1, height))
    c = int(rng.integers(1, width))
    floor: set[Cell] = set()
    for _ in range(num_steps):
        if rng.random() < _P_CHANGE_DIRECTION:
            direction = _WALK_DIRECTIONS[int(rng.integers(len(_WALK_DIRECTIONS)))]
        r = min(max(r + direction[0], 1), height - 2)
        c = min(max(c + direction[1], 1), width - 2)
        for mr, mc in _MASKS[int(rng.integers(len(_MASKS)))]:
            floor.add((r + mr, c + mc))
    return frozenset((fr, fc) for fr, fc in floor if 1 <= fr <= height - 2 and 1 <= fc <= width - 2)


def _reverse_play(
    board: _Board, player: int, targets: tuple[int, ...], search_depth: int, max_states: int
) -> tuple[int, int, tuple[int, ...]]:
    """Depth-limited DFS of pull moves from the solved position; best (score, player, boxes).

    Mirrors the public recursive search (pre-order, global visited set, first best kept on
    ties) with an explicit stack, so deep ``search_depth`` values cannot hit the recursion
    limit.  Box ``i`` starts on ``targets[i]``; the stack holds
    ``(player, boxes, swaps, last_pulled_box, ttl)``.
    """
    nbr = board.neighbours
    width = board.width
    ncells = board.width * board.height
    target_set = frozenset(targets)
    target_rc = [divmod(t, width) for t in targets]
    visited: set[int] = set()
    best_score, best_player, best_boxes = -1, player, targets
    start = (player, targets, 0, -1, search_depth)
    stack: list[tuple[int, tuple[int, ...], int, int, int]] = [start]
    while stack:
        pos, boxes, swaps, last, ttl = stack.pop()
        ttl -= 1
        if ttl <= 0:
            continue
        if len(visited) >= max_states:
            break
        # Box identity does not matter for "seen before" (the public code hashes the grid).
        key = pos
        for b in sorted(boxes):
            key = key * ncells + b
        if key in visited:
            continue
        visited.add(key)
        if pos in target_set or any(b in target_set for b in boxes):
            score = 0
        else:
            displacement = 0
            for b, (tr, tc) in zip(boxes, target_rc, strict=True):
                br, bc = divmod(b, width)
                displacement += abs(br - tr) + abs(bc - tc)
            score = swaps * displacement
        if score > best_score:
            best_score, best_player, best_boxes = score, pos, boxes
        children: list[tuple[int, tuple[int, ...], int, int, int]] = []
        moves_from = nbr[pos]
        for a in range(4):
            nxt = moves_from[a]
            if nxt < 0 or nxt in boxes:
                continue
            behind = moves_from[_OPPOSITE[a]]
            if behind >= 0 and behind in boxes:
                # Moving away from an adjacent box always pulls it along (RAGEN's 4 actions).
                i = boxes.index(behind)
                pulled = (*boxes[:i], pos, *boxes[i + 1 :])
                children.append((nxt, pulled, swaps + (i != last), i, ttl))
            else:
                children.append((nxt, boxes, swaps, last, ttl))
        # Reverse so the first action is explored first, as in the recursive original.
        stack.extend(reversed(children))
    return best_score, best_player, best_boxes


def _random_player_moves(
    rng: np.random.Generator,
    floor: frozenset[Cell] | set[Cell],
    boxes: frozenset[Cell],
    targets: frozenset[Cell],
    player: Cell,
    target_cells: Sequence[Cell],
    box_indices: Sequence[int],
    board: _Board,
) -> Cell:
    """BAGEN's random player moves after reverse play (gym-sokoban's generator).

    With probability 0.8 when the boxes' total Manhattan displacement from their targets is
    1, else 0.5, the player starts moving: up to 3 random steps onto free floor or targets
    (never a box or a wall) without revisiting a cell, continuing after each step with
    probability 0.5.  Box ``i`` started on ``target_cells[i]``.
    """
    displacement = sum(
        abs(board.cell(b)[0] - t[0]) + abs(board.cell(b)[1] - t[1])
        for b, t in zip(box_indices, target_cells, strict=True)
    )
    if rng.random() >= (0.8 if displacement == 1 else 0.5):
        return player
    visited = {player}
    for _ in range(3):
        options = [
            (player[0] + dr, player[1] + dc)
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
            if (player[0] + dr, player[1] + dc) in floor
            and (player[0] + dr, player[1] + dc) not in boxes
            and (player[0] + dr, player[1] + dc) not in visited
        ]
        if not options:
            break
        player = options[int(rng.integers(len(options)))]
        visited.add(player)
        if rng.random() >= 0.5:
            break
    return player


def generate_level(
    *,
    seed: int,
    width: int = 8,
    height: int = 8,
    num_boxes: int = 2,
    search_depth: int = 30,
    max_states: int = 300_000,
    max_retries: int = 10,
    random_moves: bool = False,
) -> Level:
    """Generate a solvable level by reverse play (see the module docstring).

    ``random_moves``: after reverse play, the player takes 1-3 random steps as BAGEN's
    generator does (fact sheet §4 step 4; :func:`_random_player_moves`).  Off by default so
    levels generated before it existed stay the same.

    ``max_retries`` is the total number of topologies tried; a topology fails when it has
    too few floor cells or when no reachable pull position scores above 0.  Raises
    :class:`GenerationError` when every attempt fails.  Same seed and arguments give the
    same level in any process.
    """
    if width < 3 or height < 3:
        raise ValueError(f"level must be at least 3x3, got {width}x{height}")
    if num_boxes < 1:
        raise ValueError(f"num_boxes must be >= 1, got {num_boxes}")
    if search_depth < 1 or max_states < 1 or max_retries < 1:
        raise ValueError("search_depth, max_states and max_retries must be >= 1")
    rng = np.random.default_rng(seed)
    too_small = 0
    for _ in range(max_retries):
        floor = _room_topology(rng, width, height)
        cells = sorted(floor)  # row-major, like numpy.where in the public code
        if len(cells) <= num_boxes + 1:
            too_small += 1
            continue
        player_cell = cells.pop(int(rng.integers(len(cells))))
        target_cells = [cells.pop(int(rng.integers(len(cells)))) for _ in range(num_boxes)]
        walls = frozenset(
            (r, c) for r in range(height) for c in range(width) if (r, c) not in floor
        )
        targets = frozenset(target_cells)
        board = _board(width, height, walls, targets)
        score, player, boxes = _reverse_play(
            board,
            board.index(player_cell),
            tuple(board.index(t) for t in target_cells),
            search_depth,
            max_states,
        )
        if score > 0:
            box_cells = frozenset(board.cell(b) for b in boxes)
            player_cell = board.cell(player)
            if random_moves:
                player_cell = _random_player_moves(
                    rng, floor, box_cells, targets, player_cell, target_cells, boxes, board
                )
            return Level(
                width=width,
                height=height,
                walls=walls,
                targets=targets,
                boxes=box_cells,
                player=player_cell,
            )
    raise GenerationError(
        f"no level with a positive reverse-play score after {max_retries} topologies "
        f"(seed={seed}, {width}x{height}, {num_boxes} boxes, search_depth={search_depth}; "
        f"{too_small} had too few floor cells); try another seed, more retries or a "
        f"larger room"
    )


def _reachable(board: _Board, start: int, boxes: Iterable[int]) -> set[int]:
    """Cells the player can walk to without pushing anything."""
    blocked = set(boxes)
    seen = {start}
    frontier = [start]
    while frontier:
        cell = frontier.pop()
        for nxt in board.neighbours[cell]:
            if nxt >= 0 and nxt not in blocked and nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


def _trap_one_box(level: Level, rng: np.random.Generator) -> Level | None:
    """Move one box onto a dead corner without cutting the player off; None if impossible."""
    board = _board_of(level)
    player = board.index(level.player)
    boxes = [board.index(b) for b in sorted(level.boxes)]
    # Corners in the player's own floor area, so the dead box sits where it could have been
    # pushed from and the level still looks like an ordinary puzzle.
    area = _reachable(board, player, ())
    walkable_before = _reachable(board, player, boxes)
    corners = sorted((board.dead & area) - set(boxes) - {player})
    if not corners:
        return None
    for i in rng.permutation(len(boxes)):
        for j in rng.permutation(len(corners)):
            corner = corners[int(j)]
            moved = [corner if k == int(i) else b for k, b in enumerate(boxes)]
            walkable_after = _reachable(board, player, moved)
            if not (walkable_before - {corner}) <= walkable_after:
                continue  # the box would wall the player in: too obviously broken
            candidate = Level(
                width=level.width,
                height=level.height,
                walls=level.walls,
                targets=level.targets,
                boxes=frozenset(board.cell(b) for b in moved),
                player=level.player,
            )
            if not dead_boxes(candidate):
                continue
            result = solve(candidate)
            if result.moves is None and result.exhausted:
                return candidate
    return None


def generate_unsolvable_level(
    *, seed: int, width: int = 7, height: int = 7, num_boxes: int = 2
) -> Level:
    """A provably unsolvable level that looks ordinary.

    A solvable level is generated, then one box is moved onto a non-target corner of the
    player's floor area (a dead square) such that the player can still walk everywhere it
    could before.  The result has a non-empty :func:`dead_boxes` and an exhaustive
    :func:`solve` finds no solution; both are checked before returning.
    """
    rng = np.random.default_rng([seed, _UNSOLVABLE_STREAM])
    for _ in range(_UNSOLVABLE_ATTEMPTS):
        base_seed = int(rng.integers(2**63))
        try:
            base = generate_level(seed=base_seed, width=width, height=height, num_boxes=num_boxes)
        except GenerationError:
            continue
        trapped = _trap_one_box(base, rng)
        if trapped is not None:
            return trapped
    raise GenerationError(
        f"no unsolvable {width}x{height} level with {num_boxes} boxes after "
        f"{_UNSOLVABLE_ATTEMPTS} attempts (seed={seed})"
    )
