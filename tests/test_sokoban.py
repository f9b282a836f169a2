"""Sokoban generator, text form, gym-style rewards and BFS solver
(pytest_budget._environments.sokoban)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget._environments.sokoban import (
    ACTIONS,
    GenerationError,
    Level,
    SolveResult,
    dead_boxes,
    generate_level,
    generate_unsolvable_level,
    parse_level,
    render,
    solve,
    step,
)

SYMBOLS = set("#_OX√PS")


def grid(*rows: str) -> str:
    """Join rows so hand-made levels stay readable as a picture."""
    return "\n".join(rows)


def _naive_bfs(level: Level, limit: int = 200_000) -> int | None:
    """Shortest solution length using only the public ``step`` (no pruning), or None."""
    if level.solved:
        return 0
    seen = {(level.player, level.boxes)}
    queue: deque[tuple[Level, int]] = deque([(level, 0)])
    while queue:
        current, depth = queue.popleft()
        for action in ACTIONS:
            nxt, _, solved = step(current, action)
            if solved:
                return depth + 1
            key = (nxt.player, nxt.boxes)
            if key not in seen:
                seen.add(key)
                queue.append((nxt, depth + 1))
        assert len(seen) < limit, "naive search ran away"
    return None


def _replay(level: Level, moves: tuple[str, ...]) -> tuple[Level, float, bool]:
    total = 0.0
    solved = level.solved
    for action in moves:
        level, reward, solved = step(level, action)
        total += reward
    return level, total, solved


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_level_across_calls() -> None:
    for seed in (0, 1, 7, 12345, 2**40 + 3):
        assert render(generate_level(seed=seed)) == render(generate_level(seed=seed))
        assert generate_level(seed=seed) == generate_level(seed=seed)


def test_different_seeds_give_different_levels() -> None:
    renders = {render(generate_level(seed=seed)) for seed in range(20)}
    assert len(renders) == 20


@pytest.mark.parametrize("hashseed", ["0", "4242"])
def test_same_level_in_a_fresh_process(hashseed: str) -> None:
    code = (
        "from pytest_budget._environments.sokoban import generate_level,"
        " generate_unsolvable_level, render\n"
        "print(render(generate_level(seed=31)))\n"
        "print('--')\n"
        "print(render(generate_level(seed=5, width=6, height=6, num_boxes=1)))\n"
        "print('--')\n"
        "print(render(generate_unsolvable_level(seed=9)))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    expected = "\n--\n".join(
        [
            render(generate_level(seed=31)),
            render(generate_level(seed=5, width=6, height=6, num_boxes=1)),
            render(generate_unsolvable_level(seed=9)),
        ]
    )
    assert result.stdout.rstrip("\n") == expected


# --------------------------------------------------------------------------- generated levels


@pytest.mark.parametrize(
    ("width", "height", "num_boxes"), [(8, 8, 2), (6, 6, 1), (7, 7, 2), (6, 8, 2)]
)
def test_generated_levels_are_well_formed_and_solvable(
    width: int, height: int, num_boxes: int
) -> None:
    for seed in range(10):
        level = generate_level(seed=seed, width=width, height=height, num_boxes=num_boxes)
        assert (level.width, level.height) == (width, height)
        assert len(level.boxes) == len(level.targets) == num_boxes
        # Reverse play keeps only states with every target uncovered.
        assert not level.boxes & level.targets
        assert level.player not in level.targets
        assert not level.solved
        # Wall border all round.
        for r in range(height):
            assert (r, 0) in level.walls and (r, width - 1) in level.walls
        for c in range(width):
            assert (0, c) in level.walls and (height - 1, c) in level.walls
        assert set(render(level)) <= SYMBOLS | {"\n"}
        result = solve(level)
        assert result.moves is not None, render(level)
        assert not result.exhausted
        final, total, solved = _replay(level, result.moves)
        assert solved and final.solved
        # Net boxes-on-target change is num_boxes; +10 once; -0.1 per move.
        assert total == pytest.approx(10 + num_boxes - 0.1 * len(result.moves))


def test_solver_matches_unpruned_search_on_generated_levels() -> None:
    for seed in range(12):
        level = generate_level(seed=seed, width=7, height=7, num_boxes=2)
        result = solve(level)
        assert result.moves is not None
        assert len(result.moves) == _naive_bfs(level)


def test_difficulty_spread_8x8_two_boxes() -> None:
    lengths = []
    for seed in range(30):
        moves = solve(generate_level(seed=seed)).moves
        assert moves is not None
        lengths.append(len(moves))
    # Observed on seeds 0-29: 2..19 moves, 15 distinct lengths.
    assert min(lengths) <= 4
    assert max(lengths) >= 15
    assert len(set(lengths)) >= 8


def test_search_depth_limits_puzzle_length() -> None:
    # Reverse play keeps states at most search_depth - 2 moves from the solved position, and
    # replaying those pulls backwards is a solution, so BFS can only be shorter.
    built = 0
    for seed in range(20):
        try:
            shallow = generate_level(seed=seed, num_boxes=1, search_depth=8)
        except GenerationError:
            continue
        built += 1
        moves = solve(shallow).moves
        assert moves is not None
        assert len(moves) <= 6
    assert built >= 10


def test_generation_error_when_room_is_too_small() -> None:
    with pytest.raises(GenerationError, match=r"after 3 topologies.*seed=1, 3x3"):
        generate_level(seed=1, width=3, height=3, num_boxes=1, max_retries=3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"width": 2},
        {"height": 1},
        {"num_boxes": 0},
        {"search_depth": 0},
        {"max_states": 0},
        {"max_retries": 0},
    ],
)
def test_generate_level_rejects_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        generate_level(seed=0, **kwargs)


# --------------------------------------------------------------------------- text form


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**63 - 1),
    size=st.sampled_from([(6, 6, 1), (8, 8, 2), (7, 6, 2)]),
    actions=st.lists(st.sampled_from(ACTIONS), max_size=12),
)
def test_parse_render_round_trip(seed: int, size: tuple[int, int, int], actions: list[str]) -> None:
    width, height, num_boxes = size
    level = generate_level(seed=seed, width=width, height=height, num_boxes=num_boxes)
    # Random play reaches boxes on targets and the player on a target too.
    for action in actions:
        assert parse_level(render(level)) == level
        level, _, _ = step(level, action)
    assert parse_level(render(level)) == level


def test_render_symbols_on_hand_made_level() -> None:
    text = "#######\n#S√_X_#\n#O_X__#\n#######"
    level = parse_level(text)
    assert level.player == (1, 1)
    assert level.targets == {(1, 1), (1, 2), (2, 1)}
    assert level.boxes == {(1, 2), (1, 4), (2, 3)}
    assert render(level) == text
    assert parse_level("\n" + text + "\n\n") == level


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("####\n#P?#\n####", r"row 1, column 2: unexpected character '\?'"),
        ("####\n#PXO#\n####", r"row 1 has 5 cells, expected 4"),
        ("#####\n#_XO#\n#####", r"exactly one player.*none"),
        ("#####\n#PXO#\n#P__#\n#####", r"exactly one player.*row 1 column 1, row 2 column 1"),
        ("#####\n#PX_#\n#####", r"1 boxes but 0 targets"),
        ("", r"empty level text"),
        (" \n\n", r"empty level text"),
        ("#####\n#P X O#", r"row 1 has 7 cells"),
        ("###\n#P #\n###", r"row 1 has 4 cells"),
        ("####\n#P #\n####", r"row 1, column 2: unexpected character ' '"),
    ],
)
def test_parse_rejects_malformed_text(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_level(text)


def test_level_rejects_inconsistent_positions() -> None:
    walls = frozenset({(0, 0)})
    with pytest.raises(ValueError, match="player"):
        Level(3, 3, walls, frozenset(), frozenset(), (0, 0))
    with pytest.raises(ValueError, match="outside"):
        Level(3, 3, walls, frozenset({(5, 5)}), frozenset({(1, 1)}), (2, 2))
    with pytest.raises(ValueError, match="boxes on walls"):
        Level(3, 3, walls, frozenset({(1, 1)}), frozenset({(0, 0)}), (2, 2))


# --------------------------------------------------------------------------- step / rewards


def test_step_rewards_on_hand_made_level() -> None:
    level = parse_level(
        grid(
            "#######",
            "#_____#",
            "#P√___#",
            "#_____#",
            "#######",
        )
    )
    script = [
        ("Left", -0.1, True),  # wall: unchanged, still solved
        ("Right", -1.1, False),  # push the box off its target
        ("Up", -0.1, False),
        ("Right", -0.1, False),
        ("Right", -0.1, False),
        ("Down", -0.1, False),
        ("Left", 10.9, True),  # push back on: +1, solved: +10
    ]
    assert step(level, "Left")[0] == level
    total = 0.0
    for action, expected_reward, expected_solved in script:
        level, reward, solved = step(level, action)
        assert reward == pytest.approx(expected_reward), action
        assert solved is expected_solved
        total += reward
    assert total == pytest.approx(9.3)
    assert render(level) == "#######\n#_____#\n#_√P__#\n#_____#\n#######"


def test_step_two_boxes_totals() -> None:
    # Two boxes in a corridor: push one on, walk round, push the other on.
    level = parse_level(
        grid(
            "########",
            "#______#",
            "#PX__O_#",
            "#__X_O_#",
            "#______#",
            "########",
        )
    )
    moves = ("Right", "Right", "Right", "Left", "Left", "Down", "Right", "Right")
    rewards = []
    for action in moves:
        level, reward, _ = step(level, action)
        rewards.append(round(reward, 10))
    assert rewards == [-0.1, -0.1, 0.9, -0.1, -0.1, -0.1, -0.1, 10.9]
    assert level.solved
    assert sum(rewards) == pytest.approx(11.2)


def test_step_blocked_pushes_leave_level_unchanged() -> None:
    level = parse_level("#########\n#PXX_OO_#\n#########")
    after, reward, solved = step(level, "Right")  # box behind box
    assert after == level and reward == pytest.approx(-0.1) and not solved
    wall = parse_level("#####\n#_PX#\n#O__#\n#####")
    after, reward, _ = step(wall, "Right")  # box against wall
    assert after == wall and reward == pytest.approx(-0.1)
    edge = parse_level("PX\nO_")  # no border: outside the grid counts as wall
    assert step(edge, "Right")[0] == edge
    assert step(edge, "Up")[0] == edge


def test_step_rejects_unknown_action() -> None:
    level = parse_level("####\n#PX#\n#O_#\n####")
    for bad in ("up", "UP", "Noop", "", "Left "):
        with pytest.raises(ValueError, match="unknown action"):
            step(level, bad)


# --------------------------------------------------------------------------- solver


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("######\n#PX_O#\n######", ("Right", "Right")),
        ("######\n#O_XP#\n######", ("Left", "Left")),
        ("#####\n#___#\n#PX_#\n#___#\n#_O_#\n#####", ("Up", "Right", "Down", "Down")),
    ],
)
def test_bfs_finds_known_unique_shortest(text: str, expected: tuple[str, ...]) -> None:
    result = solve(parse_level(text))
    assert result.moves == expected


def test_bfs_two_boxes_known_length() -> None:
    # Box pushes: 3 + 3; walking: 1 (start) + 4 (back round to the upper row) = 11.
    level = parse_level(
        grid(
            "########",
            "#__X__O#",
            "#P_X__O#",
            "#______#",
            "########",
        )
    )
    result = solve(level)
    assert result.moves is not None
    assert len(result.moves) == 11
    assert _naive_bfs(level) == 11
    assert _replay(level, result.moves)[2]


def test_solve_already_solved_and_state_limit() -> None:
    done = parse_level("####\n#P√#\n####")
    assert solve(done) == SolveResult(moves=(), expanded=0, exhausted=False)
    level = generate_level(seed=3)
    limited = solve(level, max_states=1)
    assert limited.moves is None and not limited.exhausted and limited.expanded == 1


def test_solve_proves_unsolvable_hand_made() -> None:
    # Box against the top wall can only slide sideways; the target is below it.
    level = parse_level("######\n#_X__#\n#P___#\n#__O_#\n######")
    result = solve(level)
    assert result.moves is None and result.exhausted and result.expanded > 0
    assert _naive_bfs(level) is None
    assert dead_boxes(level) == frozenset()  # not a corner case: only the search proves it


def test_dead_boxes() -> None:
    level = parse_level("######\n#X__O#\n#P_XO#\n######")
    assert dead_boxes(level) == {(1, 1)}
    on_target = parse_level("######\n#√_XO#\n#P___#\n######")
    assert dead_boxes(on_target) == frozenset()


# --------------------------------------------------------------------------- unsolvable


@pytest.mark.parametrize(("width", "height", "num_boxes"), [(7, 7, 2), (8, 8, 2), (6, 6, 1)])
def test_unsolvable_levels_are_provably_unsolvable(width: int, height: int, num_boxes: int) -> None:
    for seed in range(8):
        level = generate_unsolvable_level(
            seed=seed, width=width, height=height, num_boxes=num_boxes
        )
        assert len(level.boxes) == len(level.targets) == num_boxes
        assert dead_boxes(level)
        result = solve(level)
        assert result.moves is None and result.exhausted
        assert _naive_bfs(level) is None
        # Looks ordinary: same symbols, round-trips, player can still move.
        text = render(level)
        assert set(text) <= SYMBOLS | {"\n"}
        assert parse_level(text) == level
        assert any(step(level, a)[0] != level for a in ACTIONS)


def test_unsolvable_levels_are_deterministic_and_differ_from_solvable() -> None:
    assert generate_unsolvable_level(seed=4) == generate_unsolvable_level(seed=4)
    assert generate_unsolvable_level(seed=4) != generate_unsolvable_level(seed=5)
    # A separate seed stream: not just level n with a box moved.
    plain = generate_level(seed=4, width=7, height=7)
    assert generate_unsolvable_level(seed=4).walls != plain.walls
