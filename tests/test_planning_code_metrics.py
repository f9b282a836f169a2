"""CostBench's evaluation as coded (fact sheet §3), pinned on hand-worked episodes, and the
all-task row pooled as the paper pools it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from pytest_budget._core.record_json import cell_from_json
from pytest_budget.planning._cell_record import PlanningCellRecord
from pytest_budget.planning._code_metrics import (
    evaluate_episode,
    greedy_pooled_scores,
    greedy_sums,
    pooled_scores,
    score_sums,
)
from pytest_budget.planning._episode_records import EpisodeRecord, Segment, ToolCallRecord
from pytest_budget.planning._metrics import greedy_scores, score_episodes
from pytest_budget.planning._summary import planning_table, pooled_rows

EXPECTED = "<DiningCandidate00007>"


def call(
    name: str, cost: float, *, ok: bool = True, kind: str | None = None, executed: bool = True
) -> ToolCallRecord:
    return ToolCallRecord(0, name, "{}", ok, cost, 0, kind, executed=executed)


def seg(
    path: Sequence[str],
    cost: float,
    greedy: Sequence[str] = (),
    greedy_cost: float = 0.0,
    reached: bool = True,
) -> Segment:
    return Segment(0, 1, None, (tuple(path),), cost, tuple(greedy), greedy_cost, reached)


def ep(
    calls: Sequence[ToolCallRecord],
    segments: Sequence[Segment],
    *,
    answer: str | None = "00007",
    reached: bool = True,
    tool_turns: int | None = None,
    mode: str = "static",
    block_count: int = 0,
    block_steps: tuple[int, ...] = (),
    turns: int | None = None,
) -> EpisodeRecord:
    n = len(calls) if tool_turns is None else tool_turns
    return EpisodeRecord(
        query_id="<Query40001>",
        task="dining",
        refinement_level=2,
        mode=mode,
        block_count=block_count,
        calls=tuple(calls),
        segments=tuple(segments),
        answer=answer,
        expected_answer=EXPECTED,
        reached_goal=reached,
        steps_exhausted=False,
        blocks_applied=len(block_steps),
        turns=n + 1 if turns is None else turns,
        tool_turns=n,
        block_steps=block_steps,
    )


GT = seg(("A", "B"), 30.0)
# E1: the ground truth, right answer.  E2: a detour with one invalid step, wrong answer.
# E3: stopped before the goal.  E4: answered without any tool call.
E1 = ep([call("A", 10.0), call("B", 20.0)], [GT])
E2 = ep(
    [call("A", 10.0), call("X", 0.0, ok=False, kind="unknown_tool"), call("C", 25.0)],
    [GT],
    answer="00008",
)
E3 = ep([call("A", 10.0)], [GT], answer=None, reached=False)
E4 = ep([], [GT], answer="00007", reached=False)


def test_per_episode_hand_worked() -> None:
    one = evaluate_episode(E1)
    assert (one.ed, one.ned, one.em, one.correct) == (0, 0.0, True, True)
    two = evaluate_episode(E2)
    assert two.agent_path == ("A", "C")  # the invalid step leaves the path and the cost
    assert (two.ed, two.ned, two.em, two.agent_cost) == (1, 0.5, False, 35.0)
    assert (two.steps, two.invalid_steps, two.correct) == (3, 1, False)
    three = evaluate_episode(E3)
    # Missed the goal: the worst case, ED = max(len agent, len ground truth).
    assert (three.ed, three.ned, three.em) == (2, 1.0, False)
    assert three.in_p and three.in_a and not three.in_c
    four = evaluate_episode(E4)
    assert four.in_m and not four.in_a and not four.in_p


def test_aggregates_hand_worked() -> None:
    s = score_episodes([E1, E2, E3, E4])
    # A = P = {E1, E2, E3}; C = {E1, E2}; M = all four.
    assert s["uihr"] == pytest.approx(1 / 3)
    assert s["aed"] == pytest.approx((0 + 1 + 2) / 3)
    assert s["aned"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert s["emr"] == pytest.approx(1 / 3)
    assert s["cost_gap"] == pytest.approx((0 + 5) / 2)  # raw units, not relative
    assert s["itur"] == pytest.approx(1 / 6)  # pooled: 1 invalid of 2 + 3 + 1 + 0 steps
    assert (s["n_path"], s["n_cost"], s["n_uihr"], s["n_m"]) == (3, 2, 3, 4)


def test_prose_reading_differs_where_the_paper_text_does() -> None:
    # App. B.3.2: runs that miss the goal leave the path metrics and UIHR.
    s = score_episodes([E1, E2, E3, E4], reading="prose")
    assert s["aed"] == pytest.approx(0.5)
    assert s["emr"] == pytest.approx(0.5)
    assert s["cost_gap"] == pytest.approx((0 + 5 / 30) / 2)  # relative per episode
    with pytest.raises(ValueError, match="unknown reading"):
        score_episodes([E1], reading="vibes")


def test_ban_failures_are_valid_steps_and_cost_counts() -> None:
    banned = call("A", 12.0, ok=False, kind="banned")
    one = evaluate_episode(
        ep(
            [banned, call("B", 20.0)],
            [seg(("A",), 12.0), seg(("B",), 20.0)],
            mode="ban_tool",
            block_count=1,
            block_steps=(1,),
        )
    )
    assert one.agent_path == ("A", "B") and one.agent_cost == 32.0
    assert one.invalid_steps == 0 and one.em and one.block_valid


def test_a_call_beside_the_answer_is_a_valid_zero_cost_step() -> None:
    one = evaluate_episode(
        ep([call("A", 10.0), call("B", 20.0), call("B", 0.0, executed=False)], [GT])
    )
    assert one.agent_path == ("A", "B", "B") and one.agent_cost == 30.0
    assert (one.ed, one.em) == (1, False)


@pytest.mark.parametrize(
    ("mode", "block_steps", "turns", "valid", "incomplete"),
    [
        ("cost_change", (2,), 4, True, False),  # 2 + 1 < 4: effective
        ("cost_change", (2,), 3, False, False),  # answered right after the block
        ("remove_tools", (), 3, False, True),  # never fired
        ("preference_change", (1,), 3, True, False),
        ("ban_tool", (2,), 3, True, False),  # a ban counts whenever it fired
    ],
)
def test_effective_blocks(
    mode: str, block_steps: tuple[int, ...], turns: int, valid: bool, incomplete: bool
) -> None:
    e = evaluate_episode(
        ep(
            [call("A", 10.0), call("B", 20.0)],
            [GT],
            mode=mode,
            block_count=1,
            block_steps=block_steps,
            turns=turns,
        )
    )
    assert (e.block_valid, e.gt_incomplete, e.in_m, e.in_p) == (
        valid,
        incomplete,
        valid and not incomplete,
        valid and not incomplete,
    )


def test_greedy_row_rules_hand_worked() -> None:
    g1 = ep([], [seg(("A", "B"), 30.0, ("A", "B"), 30.0)])
    g2 = ep([], [seg(("A", "B"), 30.0, ("C",), 28.0)])
    g3 = ep([], [seg(("A", "B"), 30.0, ("A",), 10.0, reached=False)])
    row = greedy_scores([g1, g2, g3])
    assert row["aed"] == pytest.approx((0 + 2 + 1) / 3)  # raw ED, even when greedy missed
    assert row["aned"] == pytest.approx((0 + 1 + 1) / 3)  # NED forced to 1 when it missed
    assert row["emr"] == pytest.approx(1 / 3)
    assert row["cost_gap"] == pytest.approx((30 + 28 + 10) / 3 - 30)
    assert row == greedy_pooled_scores(greedy_sums([g1, g2, g3]))


def _cell(task: str, episodes: list[EpisodeRecord]) -> PlanningCellRecord:
    return PlanningCellRecord(
        suite="planning",
        cell=f"{task}-static-L2-a",
        agent="a",
        seed=0,
        outcome="ok",
        task=task,
        scenario="static-L2",
        mode="static",
        block_count=0,
        refinement_level=2,
        queries=len(episodes),
        scores=score_episodes(episodes),
        greedy=greedy_scores(episodes),
        planning_pool=score_sums(episodes),
        planning_greedy_pool=greedy_sums(episodes),
    )


def test_pooled_row_pools_queries_not_cell_means() -> None:
    cells = [_cell("location", [E1]), _cell("dining", [E2, E3])]
    per_cell = [c.scores["aed"] for c in cells]
    assert per_cell == [0.0, 1.5]  # mean of means would be 0.75
    (row,) = pooled_rows(cells)
    assert row["task"] == "all" and row["queries"] == 3
    assert row["scores"]["aed"] == pytest.approx(1.0)  # (0 + 1 + 2) / 3
    assert row["scores"]["cost_gap"] == pytest.approx(2.5)
    assert row["scores"] == pooled_scores(score_sums([E1, E2, E3]))
    lines = planning_table(cells)
    pooled_line = next(line for line in lines if line.startswith("all "))
    assert "1.000" in pooled_line and "2.500" in pooled_line
    # a cell of another kind among them is not a planning cell: no row, nothing pooled
    own = cell_from_json({"suite": "own", "agent": "a", "scores": {"aed": 9.0}, "task": "x"})
    assert planning_table([*cells, own]) == lines
    assert pooled_rows([own, *cells]) == [row]


def test_pooled_rows_skip_cells_without_sums_or_with_another_reading() -> None:
    cell = _cell("location", [E1])
    assert pooled_rows([dataclasses.replace(cell, planning_pool=None)]) == []
    assert pooled_rows([dataclasses.replace(cell, reading="prose")]) == []
    assert pooled_rows([dataclasses.replace(cell, outcome="error")]) == []
    assert len(pooled_rows([dataclasses.replace(cell, reading="code")])) == 1
