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

from collections.abc import Iterable, Sequence

import numpy as np

from pytest_budget._environments.sokoban_board import (
    _MASKS,
    _OPPOSITE,
    _P_CHANGE_DIRECTION,
    _STEPS_PER_SIDE,
    _UNSOLVABLE_ATTEMPTS,
    _UNSOLVABLE_STREAM,
    _WALK_DIRECTIONS,
    ACTIONS,
    BOX_OFF_TARGET_PENALTY,
    BOX_ON_TARGET_REWARD,
    SOLVED_REWARD,
    STEP_PENALTY,
    Cell,
    GenerationError,
    Level,
    SolveResult,
    _Board,
    _board,
    _board_of,
    dead_boxes,
    parse_level,
    render,
    solve,
    step,
)

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
    ``(player, boxes, swaps, last_pulled_box, ttl)``.  The per-cell tables (moves with the
    cell behind each, distance of each cell to each target) are built once per call; the
    states visited and the result are those of the plain search
    (``tests/test_sokoban_generation_speed.py`` compares the two).
    """
    nbr = board.neighbours
    width = board.width
    ncells = board.width * board.height
    target_set = frozenset(targets)
    # moves[cell]: (next cell, cell behind) per open action, in action order.
    moves = [tuple((row[a], row[_OPPOSITE[a]]) for a in range(4) if row[a] >= 0) for row in nbr]
    # distance[i][cell]: Manhattan distance from cell to box i's target.
    distance = []
    for t in targets:
        tr, tc = divmod(t, width)
        distance.append(
            [abs(cell // width - tr) + abs(cell % width - tc) for cell in range(ncells)]
        )
    pairs = len(targets) == 2
    visited: set[int] = set()
    best_score, best_player, best_boxes = -1, player, targets
    start = (player, targets, 0, -1, search_depth)
    stack: list[tuple[int, tuple[int, ...], int, int, int]] = [start]
    pop, push, seen = stack.pop, stack.append, visited.add
    while stack:
        pos, boxes, swaps, last, ttl = pop()
        ttl -= 1
        if ttl <= 0:
            continue
        if len(visited) >= max_states:
            break
        # Box identity does not matter for "seen before" (the public code hashes the grid).
        if pairs:
            a, b = boxes
            key = (pos * ncells + a) * ncells + b if a <= b else (pos * ncells + b) * ncells + a
        else:
            key = pos
            for b in sorted(boxes):
                key = key * ncells + b
        if key in visited:
            continue
        seen(key)
        if pos in target_set or not target_set.isdisjoint(boxes):
            score = 0
        else:
            displacement = 0
            for i, b in enumerate(boxes):
                displacement += distance[i][b]
            score = swaps * displacement
        if score > best_score:
            best_score, best_player, best_boxes = score, pos, boxes
        # Children pushed in reverse so the first action is explored first, as in the
        # recursive original.
        children = []
        for nxt, behind in moves[pos]:
            if nxt in boxes:
                continue
            if behind >= 0 and behind in boxes:
                # Moving away from an adjacent box always pulls it along (RAGEN's 4 actions).
                i = boxes.index(behind)
                pulled = (*boxes[:i], pos, *boxes[i + 1 :])
                children.append((nxt, pulled, swaps + (i != last), i, ttl))
            else:
                children.append((nxt, boxes, swaps, last, ttl))
        for child in reversed(children):
            push(child)
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
