"""The cost-score frontier (pytest_budget.report._frontier) on hand-made cells, worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_budget._core.record_json import as_record
from pytest_budget._core.written import reply_text, with_written
from pytest_budget.report._frontier import (
    AgentPoint,
    Frontier,
    cell_tokens,
    frontiers,
    mark_dominated,
    moves,
)


def _cell(agent: str, score: float | None, tokens: int, **extra: Any) -> Any:
    """A cell of an unregistered kind ("mine": headline = its first score, higher better)
    whose agent wrote ``tokens`` reference tokens."""
    data: dict[str, Any] = {
        "nodeid": f"t.py::test[{agent}-{extra.get('cell', 'c')}]",
        "suite": "mine",
        "cell": extra.pop("cell", "c"),
        "agent": agent,
        "seed": 42,
        "outcome": "ok",
        "scores": {"acc": score},
        "spend": with_written(None, {"solver": tokens}),
        **extra,
    }
    return as_record(data)


def test_dominance_on_hand_made_cells() -> None:
    # score (higher better), tokens per cell:
    #   a 0.8 @100, b 0.8 @150 (a: same score, cheaper), c 0.9 @300 (best score),
    #   d 0.5 @50 (cheapest), e 0.7 @120 (a: better and cheaper), f no score
    cells = [
        _cell("a", 0.8, 100),
        _cell("b", 0.8, 150),
        _cell("c", 0.9, 300),
        _cell("d", 0.5, 50),
        _cell("e", 0.7, 120),
        _cell("f", None, 10),
    ]
    (frontier,) = frontiers(cells)
    assert (frontier.kind, frontier.metric, frontier.direction, frontier.axis) == (
        "mine", "acc", "higher", "tokens",
    )  # fmt: skip
    marks = {p.agent: p.dominated_by for p in frontier.points}
    assert marks == {"a": [], "b": ["a"], "c": [], "d": [], "e": ["a"], "f": []}
    assert frontier.point("f").score is None  # type: ignore[union-attr]


def test_equal_points_do_not_dominate_each_other() -> None:
    (frontier,) = frontiers([_cell("a", 0.5, 100), _cell("b", 0.5, 100)])
    assert [p.dominated_by for p in frontier.points] == [[], []]


def test_lower_is_better_and_usd_axis() -> None:
    points = [
        AgentPoint("x", 2, 2, 0.10, None, 0, 0.02),  # regret 0.10 at $0.01/cell
        AgentPoint("y", 2, 2, 0.20, None, 0, 0.02),  # worse regret, same spend: dominated
        AgentPoint("z", 2, 2, 0.05, None, 0, 0.06),  # best regret, dearer: frontier
    ]
    frontier = Frontier("k", "regret", "lower", "usd", points)
    mark_dominated(frontier)
    assert [p.dominated_by for p in points] == [[], ["x"], []]
    assert points[0].usd_per_cell == pytest.approx(0.01)


def test_mean_score_interval_and_spend_of_several_cells() -> None:
    cells = [
        _cell("a", 0.8, 40, cell="c1", ci={"acc": [0.7, 0.9]}),
        _cell("a", 0.7, 60, cell="c2", ci={"acc": [0.6, 0.8]}),
    ]
    (frontier,) = frontiers(cells)
    (point,) = frontier.points
    assert point.score == pytest.approx(0.75)
    assert point.interval == pytest.approx((0.65, 0.85))
    assert (point.tokens_total, point.tokens_per_cell, point.cells) == (100, 50.0, 2)
    assert point.usd_total is None  # no priced model call: tokens, not dollars


def test_model_spend_counts_input_output_and_counted_tokens() -> None:
    calls = {
        "calls": 2, "replayed": 0, "input_tokens": 300, "output_tokens": 50,
        "reasoning_tokens": 20, "usd": 0.004, "failed": 0, "refused": 0,
        "roles": {"planner": {"calls": 2, "replayed": 0, "input_tokens": 300,
                              "output_tokens": 50, "reasoning_tokens": 20, "usd": 0.004}},
    }  # fmt: skip
    spend = with_written(calls, {"solver": 7})
    # reasoning tokens are within output tokens: 300 + 50 + 7
    assert cell_tokens(spend) == 357
    assert spend["roles"]["solver"]["counted_tokens"] == 7
    assert spend["roles"]["solver"]["usd"] is None
    assert spend["roles"]["planner"]["counted_tokens"] == 0


def test_reply_text_is_what_the_agent_wrote() -> None:
    assert reply_text("x = 12 + 7") == "x = 12 + 7"

    class Reply:
        text = "the answer"

    assert reply_text(Reply()) == "the answer"
    assert reply_text({"allocations": [1, 2]}) == '{"allocations": [1, 2]}'


def test_moves_between_two_runs() -> None:
    base = [_cell("a", 0.8, 100), _cell("b", 0.6, 50)]
    new = [_cell("a", 0.7, 40), _cell("b", 0.6, 50)]
    found = {m.agent: m for m in moves(base, new)}
    assert found["a"].score_change == pytest.approx(-0.1)
    assert found["a"].spend_change == pytest.approx(-60)
    assert (found["b"].base_place, found["b"].new_place) == ("frontier", "dominated by a")
