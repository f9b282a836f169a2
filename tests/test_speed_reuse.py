"""Work the main job no longer repeats (issue 33): each shortcut gives the same values.

- a rerun whose ``search`` rollouts are in the rollout cache starts no retrieval server
  (no corpus, no index) and scores the same;
- a rollout's probes are built once and handed out as fresh lists;
- the Sokoban solver (integer states) finds what a plain tuple-state BFS finds.
"""

from __future__ import annotations

import json
import random
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from pytest_budget._environments.sokoban import generate_level
from pytest_budget._environments.sokoban_board import ACTIONS, Level, solve, step
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import Rollout, Turn


def _cells(path: Path) -> list[dict[str, Any]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:  # durations differ between any two runs
        for key in [k for k in cell if "duration" in k]:
            del cell[key]
    return sorted(cells, key=lambda c: str(c.get("cell")) + str(c.get("agent")))


def test_cached_search_rollouts_start_no_server(pytester: pytest.Pytester) -> None:
    args = ("--budget-suite=awareness", "--budget-env=search", "--budget-rollout-count=4",
            "--budget-agent=oracle", "--budget-gate=off", "--setup-show")  # fmt: skip
    first = pytester.runpytest_subprocess(*args, "--budget-report=a.json")
    first.assert_outcomes(passed=1)
    assert any("awareness_search_url" in line for line in first.outlines)
    second = pytester.runpytest_subprocess(*args, "--budget-report=b.json")
    second.assert_outcomes(passed=1)
    assert not any("awareness_search_url" in line for line in second.outlines)
    assert _cells(pytester.path / "a.json") == _cells(pytester.path / "b.json")


def _rollout(turns: int) -> Rollout:
    rng = random.Random(turns)
    return Rollout(
        id=f"r{turns}",
        env="sokoban-6x6",
        budget={"tokens": 1000.0},
        success=True,
        turns=tuple(
            Turn(usage={"tokens": float(rng.randint(10, 90))}, observation="o", action="a")
            for _ in range(turns)
        ),
    )


def test_probes_are_built_once_and_handed_out_as_new_lists() -> None:
    rollout = _rollout(6)
    first = make_probes(rollout)
    first.pop()  # a caller's list is its own
    again = make_probes(rollout)
    assert len(again) == 5 and len(first) == 4
    assert [p.k for p, _ in again] == [1, 2, 3, 4, 5]
    assert again[0][0] is make_probes(rollout)[0][0]  # the same probe objects
    # Ground truth by hand: tokens used before turn k, and what remains of the total.
    usage = [t.usage["tokens"] for t in rollout.turns]
    for probe, truth in again:
        assert probe.used["tokens"] == sum(usage[: probe.k])
        assert truth.remaining["tokens"] == sum(usage[probe.k :])
    assert make_probes(_rollout(1)) == []


def _tuple_bfs(level: Level, max_states: int) -> tuple[tuple[str, ...] | None, int, bool]:
    """A second solver: BFS over (player, sorted boxes) in cell coordinates."""
    if level.solved:
        return (), 0, False
    deltas = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}

    def free(cell: tuple[int, int]) -> bool:
        r, c = cell
        return 0 <= r < level.height and 0 <= c < level.width and cell not in level.walls

    def dead(cell: tuple[int, int]) -> bool:
        if cell in level.targets:
            return False
        r, c = cell
        up, down = not free((r - 1, c)), not free((r + 1, c))
        left, right = not free((r, c - 1)), not free((r, c + 1))
        return (up or down) and (left or right)

    start = (level.player, tuple(sorted(level.boxes)))
    parents: dict[Any, Any] = {start: None}
    queue = deque([start])
    expanded = 0
    while queue:
        if expanded >= max_states:
            return None, expanded, False
        state = queue.popleft()
        expanded += 1
        player, boxes = state
        for action in ACTIONS:
            dr, dc = deltas[action]
            nxt = (player[0] + dr, player[1] + dc)
            if not free(nxt):
                continue
            new_boxes = boxes
            if nxt in boxes:
                beyond = (nxt[0] + dr, nxt[1] + dc)
                if not free(beyond) or beyond in boxes or dead(beyond):
                    continue
                new_boxes = tuple(sorted(beyond if b == nxt else b for b in boxes))
            child = (nxt, new_boxes)
            if child in parents:
                continue
            parents[child] = (state, action)
            if new_boxes is not boxes and all(b in level.targets for b in new_boxes):
                moves = []
                link = parents[child]
                while link is not None:
                    moves.append(link[1])
                    link = parents[link[0]]
                return tuple(reversed(moves)), expanded, False
            queue.append(child)
    return None, expanded, True


@pytest.mark.parametrize("seed", range(12))
def test_solver_matches_a_tuple_state_bfs(seed: int) -> None:
    rng = random.Random(seed)
    for width, height, boxes in ((6, 6, 1), (8, 8, 2), (7, 9, 3)):
        level = generate_level(seed=seed, width=width, height=height, num_boxes=boxes)
        for _ in range(5):  # the puzzle, then states after random moves (some unsolvable)
            result = solve(level, max_states=3000)
            assert (result.moves, result.expanded, result.exhausted) == _tuple_bfs(level, 3000)
            level = step(level, rng.choice(ACTIONS))[0]
