"""CostBench planning metrics (pytest_budget.planning._metrics): hand-worked cases, properties."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_budget.planning._episode_records import EpisodeRecord, Segment, ToolCallRecord
from pytest_budget.planning._metrics import (
    edit_distance,
    greedy_scores,
    score_episode,
    score_episodes,
    segmented_edit_distance,
)

ANSWER = "<DiningCandidate01234>"


def call(
    name: str,
    cost: float = 20.0,
    *,
    ok: bool = True,
    kind: str | None = None,
    repeated: bool = False,
    after_goal: bool = False,
    segment: int = 0,
) -> ToolCallRecord:
    return ToolCallRecord(
        step=0,
        name=name,
        arguments="{}",
        ok=ok,
        cost=cost if ok or kind == "banned" else 0.0,
        segment=segment,
        error_kind=kind,
        repeated=repeated,
        after_goal=after_goal,
    )


def seg(
    *paths: Sequence[str],
    cost: float = 40.0,
    greedy: Sequence[str] | None = None,
    greedy_cost: float | None = None,
    index: int = 0,
    event: str | None = None,
) -> Segment:
    tied = tuple(tuple(p) for p in paths)
    return Segment(
        index=index,
        start_step=1,
        event=event,
        optimal_paths=tied,
        optimal_cost=cost,
        greedy_path=tuple(greedy) if greedy is not None else tied[0],
        greedy_cost=greedy_cost if greedy_cost is not None else cost,
    )


def episode(
    calls: Sequence[ToolCallRecord],
    segments: Sequence[Segment],
    *,
    answer: str | None = ANSWER,
    reached_goal: bool = True,
    mode: str = "static",
    block_count: int = 0,
    blocks_applied: int = 0,
    blocks_dropped: int = 0,
    error: str | None = None,
    query_id: str = "<Query40001>",
) -> EpisodeRecord:
    numbered = tuple(
        ToolCallRecord(
            step=i + 1,
            name=c.name,
            arguments=c.arguments,
            ok=c.ok,
            cost=c.cost,
            segment=c.segment,
            error_kind=c.error_kind,
            repeated=c.repeated,
            after_goal=c.after_goal,
        )
        for i, c in enumerate(calls)
    )
    return EpisodeRecord(
        query_id=query_id,
        task="dining",
        refinement_level=1,
        mode=mode,
        block_count=block_count,
        calls=numbered,
        segments=tuple(segments),
        answer=answer,
        expected_answer=ANSWER,
        reached_goal=reached_goal,
        steps_exhausted=False,
        blocks_applied=blocks_applied,
        blocks_dropped=blocks_dropped,
        error=error,
    )


def _no_nan(scores: dict[str, float | int | None]) -> None:
    for key, value in scores.items():
        assert value is None or not (isinstance(value, float) and math.isnan(value)), key


# ---------------------------------------------------------------- edit distance, by hand


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((), (), 0),
        (("A",), (), 1),
        ((), ("A", "B", "C"), 3),
        (("A", "B", "C"), ("A", "C"), 1),  # one deletion
        (("A", "B"), ("B", "A"), 2),  # a swap is two edits
        (("A", "B", "C"), ("A", "X", "C"), 1),  # one substitution
        (tuple("kitten"), tuple("sitting"), 3),  # the textbook case
        (("D", "S", "R1", "F"), ("D_S", "R1_F"), 4),  # composites share no names
        (("D", "S", "R1", "F"), ("D_S", "R1", "F"), 2),
    ],
)
def test_edit_distance_by_hand(a: tuple[str, ...], b: tuple[str, ...], expected: int) -> None:
    assert edit_distance(a, b) == expected
    assert edit_distance(b, a) == expected


def test_tied_paths_use_the_nearest() -> None:
    tied = [("A", "B", "C"), ("A", "X", "C")]
    assert segmented_edit_distance(("A", "X", "C"), [tied]) == 0
    # vs ABC: X->B, Y->C = 2; vs AXC: Y->C = 1.
    assert segmented_edit_distance(("A", "X", "Y"), [tied]) == 1
    assert segmented_edit_distance(("A", "X", "Y"), [list(reversed(tied))]) == 1


def test_multi_segment_ground_truth_is_concatenated() -> None:
    segments = [[("A", "B")], [("C", "D"), ("C", "E")]]
    assert segmented_edit_distance(("A", "B", "C", "E"), segments) == 0
    assert segmented_edit_distance(("A", "B", "C", "D"), segments) == 0
    assert segmented_edit_distance(("A", "C", "E"), segments) == 1  # B missing
    # Ties chosen jointly: the agent's "E" matches segment 1's second alternative.
    assert segmented_edit_distance(("A", "B", "E"), segments) == 1
    # An empty alternative list is an empty segment.
    assert segmented_edit_distance(("A", "B"), [[("A", "B")], []]) == 0
    assert segmented_edit_distance(("A",), []) == 1


def test_episode_with_tied_paths_and_two_segments() -> None:
    ep = episode(
        [
            call("A"),
            call("B"),
            call("Q", ok=False, kind="banned", segment=0),
            call("C", segment=1),
            call("E", segment=1),
        ],
        [
            seg(("A", "B")),
            seg(("C", "D"), ("C", "E"), index=1, event="ban_tool"),
        ],
        mode="ban_tool",
        block_count=1,
        blocks_applied=1,
    )
    score = score_episode(ep)
    assert score.agent_path == ("A", "B", "C", "E")  # the banned call is not compared
    assert score.edit_distance == 0
    assert score.exact_match is True
    assert score.normalized_edit_distance == 0.0
    assert score.cost_gap is None  # no aggregated cost comparison under blocking
    assert score.banned_calls == 1
    assert score.invalid_calls == 0  # the blocked call is the environment's doing


# ---------------------------------------------------------------- per-episode, by hand


def _redundant_episode() -> EpisodeRecord:
    # Ground truth: Dining_Preference_and_Search (25.00) then Select_Final_Dining (15.00).
    return episode(
        [
            call("D", 18.0),
            call("X", ok=False, kind="unknown_tool"),
            call("D", 18.0, repeated=True),
            call("S", 22.0),
            call("Sel", 15.0),
            call("Sel", 15.0, after_goal=True),
        ],
        [seg(("PS", "Sel"), cost=40.0, greedy=("D", "S", "Sel"), greedy_cost=55.0)],
    )


def test_cost_gap_with_and_without_redundant_calls() -> None:
    score = score_episode(_redundant_episode())
    assert score.agent_path == ("D", "D", "S", "Sel", "Sel")
    # D D S Sel Sel -> PS Sel: substitute one D, delete D, S and one Sel.
    assert score.edit_distance == 4
    assert score.normalized_edit_distance == pytest.approx(4 / 5)
    assert score.exact_match is False
    assert score.agent_cost == pytest.approx(88.0)
    assert score.cost_gap == pytest.approx((88 - 40) / 40)  # 1.2
    # Clean: drop the repeated D (18) and the after-goal Sel (15): 55.
    assert score.agent_cost_clean == pytest.approx(55.0)
    assert score.cost_gap_clean == pytest.approx((55 - 40) / 40)  # 0.375
    assert (score.repeated_calls, score.extra_calls) == (1, 1)
    assert (score.total_calls, score.invalid_calls, score.unknown_tool_calls) == (6, 1, 1)
    assert score.intent_hit is True


def test_perfect_run_has_exactly_zero_gap() -> None:
    # Float sums of cents would drift (0.1 + 0.2); integer cents do not.
    ep = episode([call("A", 10.1), call("B", 20.2)], [seg(("A", "B"), cost=30.3)])
    score = score_episode(ep)
    assert score.cost_gap == 0.0
    assert score.cost_gap_clean == 0.0
    assert score.exact_match is True


def test_failure_classes_are_counted() -> None:
    ep = episode(
        [
            call("A", ok=False, kind="wrong_parameters"),
            call("A", ok=False, kind="bad_arguments"),
            call("B", ok=False, kind="inaccessible"),
            call("B", ok=False, kind="inaccessible"),
            call("Z", ok=False, kind="unknown_tool"),
            call("A", ok=False, kind="bad_id"),
            call("A"),
            call("B"),
        ],
        [seg(("A", "B"))],
    )
    s = score_episodes([ep], reading="prose")
    assert s["wrong_parameter_calls"] == 2
    assert s["inaccessible_calls"] == 2
    assert s["unknown_tool_calls"] == 1
    assert s["bad_id_calls"] == 1
    assert s["invalid_calls"] == 6
    assert s["total_calls"] == 8
    assert s["itur"] == pytest.approx(6 / 8)
    # Failed calls are left out of the compared path.
    assert s["emr"] == 1.0
    assert s["aed"] == 0.0


def test_calling_a_banned_tool_again_is_invalid() -> None:
    ep = episode(
        [
            call("A"),
            call("B", 20.0, ok=False, kind="banned"),
            call("B", 20.0, ok=False, kind="banned", segment=1),
            call("C", segment=1),
        ],
        [seg(("A", "B")), seg(("C",), index=1, event="ban_tool")],
        mode="ban_tool",
        block_count=1,
        blocks_applied=1,
    )
    score = score_episode(ep)
    assert (score.banned_calls, score.banned_retry_calls, score.invalid_calls) == (2, 1, 1)
    # Ground truth A B | C vs agent A C: one deletion.
    assert score.edit_distance == 1
    assert score.normalized_edit_distance == pytest.approx(1 / 3)


# ---------------------------------------------------------------- aggregation


def test_excluded_runs() -> None:
    good = episode([call("A"), call("B")], [seg(("A", "B"))])
    unreached = episode([call("A")], [seg(("A", "B"))], reached_goal=False, answer=None)
    lucky_guess = episode([call("A")], [seg(("A", "B"))], reached_goal=False)
    crashed = episode([call("A"), call("B")], [seg(("A", "B"))], error="agent raised")
    wrong_answer = episode([call("A"), call("C")], [seg(("A", "B"))], answer=" nope ")
    s = score_episodes([good, unreached, lucky_guess, crashed, wrong_answer], reading="prose")
    assert s["n_episodes"] == 5
    assert s["excluded"] == 3
    assert (s["unreached"], s["errored"], s["underblocked"]) == (2, 1, 0)
    assert s["n_path"] == 2
    assert s["emr"] == 0.5
    assert s["aed"] == 0.5
    assert s["aned"] == pytest.approx(0.25)
    assert s["cost_gap"] == pytest.approx(0.0)
    # UIHR over goal-reaching runs plus the errored one (a miss): good, crashed, wrong.
    assert s["n_uihr"] == 3
    assert s["uihr"] == pytest.approx(1 / 3)
    # uihr_all: hits (good, lucky_guess) over every counted run.
    assert s["uihr_all"] == pytest.approx(2 / 5)
    assert s["itur"] == 0.0
    _no_nan(s)


def test_answer_matching_compares_digits_only() -> None:
    # CostBench checks the answer on its 5 digits only.
    ep = episode([call("A")], [seg(("A",))], answer="01234")
    assert score_episode(ep).intent_hit is True
    ep = episode([call("A")], [seg(("A",))], answer="01235")
    assert score_episode(ep).intent_hit is False
    ep = episode([call("A")], [seg(("A",))], answer=None)
    assert score_episode(ep).intent_hit is False


def test_empty_input() -> None:
    s = score_episodes([], reading="prose")
    for key in ("emr", "aed", "aned", "cost_gap", "cost_gap_clean", "uihr", "uihr_all", "itur"):
        assert s[key] is None
    assert s["n_episodes"] == 0
    assert s["excluded"] == 0
    assert s["blocks_applied"] == 0
    g = greedy_scores([], reading="prose")
    assert g["emr"] is None and g["cost_gap"] is None and g["n_episodes"] == 0


def test_only_excluded_or_callless_episodes_give_none_not_nan() -> None:
    s = score_episodes(
        [episode([], [seg(("A",))], reached_goal=False, answer=None)], reading="prose"
    )
    assert s["emr"] is None and s["cost_gap"] is None and s["uihr"] is None
    assert s["itur"] is None  # no calls at all
    assert s["uihr_all"] == 0.0
    _no_nan(s)
    # A goal-reaching run without segments has no ground truth.
    s = score_episodes([episode([call("A")], [])], reading="prose")
    assert s["no_ground_truth"] == 1 and s["emr"] is None
    _no_nan(s)


def test_underblocked_runs_are_left_out_of_every_metric() -> None:
    full = episode(
        [call("A"), call("C", segment=1)],
        [seg(("A", "B")), seg(("C",), index=1, event="cost_change")],
        mode="cost_change",
        block_count=1,
        blocks_applied=1,
    )
    short = episode(
        [call("A"), call("X", ok=False, kind="unknown_tool"), call("B")],
        [seg(("A", "B"))],
        mode="cost_change",
        block_count=1,
        blocks_dropped=1,
    )
    s = score_episodes([full, short], reading="prose")
    assert s["underblocked"] == 1 and s["excluded"] == 1
    assert s["n_counted"] == 1
    assert s["aed"] == 1.0  # full: A C vs A B C
    assert s["cost_gap"] is None  # blocking: not compared
    assert s["itur"] == 0.0  # the short run's invalid call is not counted
    assert (s["blocks_applied"], s["blocks_dropped"]) == (1, 1)
    kept = score_episodes([full, short], require_all_blocks=False, reading="prose")
    assert kept["n_path"] == 2 and kept["itur"] == pytest.approx(1 / 5)
    assert kept["cost_gap"] == 0.0  # short: no event applied, one segment


def test_mean_cost_gaps() -> None:
    s = score_episodes(
        [
            _redundant_episode(),
            episode([call("A", 20.0), call("B", 30.0)], [seg(("A", "B"), cost=50.0)]),
        ],
        reading="prose",
    )
    assert s["n_cost"] == 2
    assert s["cost_gap"] == pytest.approx((1.2 + 0.0) / 2)
    assert s["cost_gap_clean"] == pytest.approx((0.375 + 0.0) / 2)
    assert s["aed"] == pytest.approx(2.0)
    assert s["aned"] == pytest.approx(0.4)
    assert s["emr"] == pytest.approx(0.5)
    assert (s["repeated_calls"], s["extra_calls"]) == (1, 1)


def test_greedy_scores() -> None:
    eps = [
        _redundant_episode(),  # greedy D S Sel (55) vs PS Sel (40)
        episode(
            [call("A")],
            [seg(("A", "B"), cost=30.0, greedy=("A", "B"), greedy_cost=30.0)],
            reached_goal=False,
        ),
        episode(
            [call("A"), call("C", segment=1)],
            [
                seg(("A", "B"), greedy=("A", "X")),
                seg(("C",), index=1, event="preference_change"),
            ],
            mode="preference_change",
            block_count=1,
            blocks_applied=1,
        ),
    ]
    g = greedy_scores(eps, reading="prose")
    assert g["n_path"] == 3 and g["excluded"] == 0
    # D S Sel vs PS Sel: 2; A B vs A B: 0; A X C vs A B C: 1.
    assert g["aed"] == pytest.approx(1.0)
    assert g["aned"] == pytest.approx((2 / 3 + 0 + 1 / 3) / 3)
    assert g["emr"] == pytest.approx(1 / 3)
    assert g["n_cost"] == 2
    assert g["cost_gap"] == pytest.approx(((55 - 40) / 40 + 0.0) / 2)
    assert g["cost_gap_clean"] == g["cost_gap"]
    assert g["uihr"] is None and g["itur"] is None
    like_agent = greedy_scores(eps, agent_eligible_only=True, reading="prose")
    assert like_agent["n_path"] == 2 and like_agent["excluded"] == 1


# ---------------------------------------------------------------- properties

_names = st.sampled_from(["A", "B", "C", "D"])
_seqs = st.lists(_names, max_size=7).map(tuple)


@st.composite
def _segments(draw: st.DrawFn) -> list[list[tuple[str, ...]]]:
    """1-3 segments, each with 1-3 tied paths of one common length."""
    segments = []
    for _ in range(draw(st.integers(1, 3))):
        length = draw(st.integers(0, 4))
        path = st.lists(_names, min_size=length, max_size=length).map(tuple)
        segments.append(draw(st.lists(path, min_size=1, max_size=3)))
    return segments


@given(_seqs, _seqs)
def test_edit_distance_symmetric_and_bounded(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    d = edit_distance(a, b)
    assert d == edit_distance(b, a)
    assert abs(len(a) - len(b)) <= d <= max(len(a), len(b))
    assert (d == 0) == (a == b)


@given(_seqs, _seqs, _seqs)
def test_edit_distance_triangle(a: tuple[str, ...], b: tuple[str, ...], c: tuple[str, ...]) -> None:
    assert edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c)


@settings(max_examples=200)
@given(_seqs, _segments())
def test_segmented_distance_is_min_over_tied_concatenations(
    agent: tuple[str, ...], segments: list[list[tuple[str, ...]]]
) -> None:
    combos = [tuple(itertools.chain(*choice)) for choice in itertools.product(*segments)]
    expected = min(edit_distance(agent, gt) for gt in combos)
    assert segmented_edit_distance(agent, segments) == expected


@settings(max_examples=200)
@given(_seqs, _segments())
def test_episode_path_metric_properties(
    agent: tuple[str, ...], segments: list[list[tuple[str, ...]]]
) -> None:
    ep = episode(
        [call(name) for name in agent],
        [seg(*paths, index=i) for i, paths in enumerate(segments)],
    )
    score = score_episode(ep)
    assert score.normalized_edit_distance is not None
    assert 0.0 <= score.normalized_edit_distance <= 1.0
    combos = {tuple(itertools.chain(*choice)) for choice in itertools.product(*segments)}
    assert score.exact_match == (agent in combos)
    assert score.exact_match == (score.edit_distance == 0)
    s = score_episodes([ep], reading="prose")
    assert s["emr"] == float(agent in combos)
    assert s["aned"] is not None and 0.0 <= s["aned"] <= 1.0
