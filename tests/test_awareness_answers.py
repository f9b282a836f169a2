"""The BAGEN answer parser: accepted shapes, the reversed-interval policy, garbage in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_budget.awareness import (
    WAREHOUSE_DIMENSIONS,
    Impossible,
    Interval,
    IntervalMap,
    Invalid,
    parse_estimate,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>[120, 300]</answer>", Interval(120, 300)),
        ("<answer>[0, 0]</answer>", Interval(0, 0)),
        ("<think>two boxes left, ~40 tokens a move</think><answer>[80,160]</answer>", None),
        ("<THINK>hmm</Think>\n<Answer> [1.5, 2.25] </ANSWER>\n", Interval(1.5, 2.25)),
        ("Sure. <answer>[10, 20]</answer>", Interval(10, 20)),
        ("<answer>[1e3, 2.5e3]</answer>", Interval(1000, 2500)),
        ("<answer>100-200</answer>", Interval(100, 200)),
        ("<answer>100 - 200</answer>", Interval(100, 200)),
        ("<answer>between 40 and 90 tokens</answer>", Interval(40, 90)),
        # first two numbers, like the public parser
        ("<answer>[100, 200, 300]</answer>", Interval(100, 200)),
        ("<answer>+5, +7</answer>", Interval(5, 7)),
        ("<answer>impossible</answer>", Impossible()),
        ("<answer> IMPOSSIBLE \n</answer>", Impossible()),
        ("<think>over budget already</think><ANSWER>Impossible</ANSWER>", Impossible()),
    ],
)
def test_accepted_answers(text: str, expected: Interval | Impossible | None) -> None:
    if expected is None:
        expected = Interval(80, 160)
    assert parse_estimate(text) == expected


def test_answer_tag_inside_think_is_ignored() -> None:
    text = "<think>draft <answer>[9, 9]</answer></think><answer>[5, 8]</answer>"
    assert parse_estimate(text) == Interval(5, 8)


def test_reversed_interval_policy_is_explicit() -> None:
    text = "<answer>[300, 120]</answer>"
    assert parse_estimate(text) == Interval(120, 300)  # default: swap, like the public parser
    assert parse_estimate(text, reversed_policy="swap") == Interval(120, 300)
    strict = parse_estimate(text, reversed_policy="invalid")
    assert isinstance(strict, Invalid)
    assert "reversed" in strict.reason
    assert strict.raw == text


def test_unknown_policy_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="reversed_policy"):
        parse_estimate("<answer>[1, 2]</answer>", reversed_policy="flip")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "reason_part"),
    [
        ("", "missing"),
        ("[100, 200]", "missing"),
        ("<answer>[100, 200]", "missing"),
        ("<answer></answer>", "empty"),
        ("<answer>   </answer>", "empty"),
        ("<answer>soon</answer>", "no number"),
        ("<answer>[a, b]</answer>", "no number"),
        ("<answer>150</answer>", "scalar"),
        ("<answer>[150]</answer>", "scalar"),
        ("<answer>[-5, 30]</answer>", "negative"),
        ("<answer>[5, -30]</answer>", "negative"),
        ("<answer>[nan, 30]</answer>", "non-finite"),
        ("<answer>[10, inf]</answer>", "non-finite"),
        ("<answer>[10, 1e999]</answer>", "non-finite"),
        ("<answer>[10, 20]</answer> hope that helps", "after"),
        ("<answer>[10, 20]</answer><answer>[1, 2]</answer>", "more than one"),
        ("<answer><answer>[10, 20]</answer>", "more than one"),
        ("<think>never closed <answer>[10, 20]</answer>", "think"),
        ("<answer>[10, 20]</answer></think>", "think"),
        ("<answer>impossible, maybe [10, 20]</answer>", "impossible"),
    ],
)
def test_garbage_is_invalid_with_a_reason(text: str, reason_part: str) -> None:
    result = parse_estimate(text)
    assert isinstance(result, Invalid)
    assert reason_part in result.reason
    assert result.raw == text


def test_non_text_is_invalid_not_an_exception() -> None:
    result = parse_estimate(None)  # type: ignore[arg-type]
    assert isinstance(result, Invalid)
    assert result.reason == "answer is not text"


WAREHOUSE_OK = (
    "<think>cash is tight</think><answer>time_weeks:[2, 4], "
    "warehouse_item_weeks:[900, 1500], cumulative_cost_usd:[20000, 40000]</answer>"
)


def test_warehouse_three_intervals() -> None:
    result = parse_estimate(WAREHOUSE_OK, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(result, IntervalMap)
    assert result.as_dict() == {
        "time_weeks": Interval(2, 4),
        "warehouse_item_weeks": Interval(900, 1500),
        "cumulative_cost_usd": Interval(20000, 40000),
    }
    assert list(result) == list(WAREHOUSE_DIMENSIONS)
    assert len(result) == 3
    assert result["time_weeks"].midpoint == 3
    with pytest.raises(KeyError):
        result["cash"]


def test_warehouse_order_and_case_do_not_matter_and_impossible_is_accepted() -> None:
    text = (
        "<answer>Cumulative_Cost_USD:[1, 2]\nTIME_WEEKS:[3, 4]\n"
        "warehouse_item_weeks : [5,6]</answer>"
    )
    result = parse_estimate(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(result, IntervalMap)
    assert result["cumulative_cost_usd"] == Interval(1, 2)
    assert result["time_weeks"] == Interval(3, 4)
    imp = parse_estimate("<answer>impossible</answer>", dimensions=WAREHOUSE_DIMENSIONS)
    assert imp == Impossible()


@pytest.mark.parametrize(
    ("text", "reason_part"),
    [
        ("<answer>time_weeks:[2, 4], warehouse_item_weeks:[9, 15]</answer>", "missing"),
        ("<answer>[2, 4]</answer>", "missing"),
        (
            "<answer>time_weeks:[2,4], time_weeks:[2,4], warehouse_item_weeks:[1,2], "
            "cumulative_cost_usd:[1,2]</answer>",
            "twice",
        ),
        (
            "<answer>time_weeks:[2,4], cash:[1,2], warehouse_item_weeks:[1,2], "
            "cumulative_cost_usd:[1,2]</answer>",
            "unknown",
        ),
        (
            "<answer>time_weeks:[5], warehouse_item_weeks:[1,2], "
            "cumulative_cost_usd:[1,2]</answer>",
            "time_weeks: scalar",
        ),
        (
            "<answer>time_weeks:[2,4], warehouse_item_weeks:[1,2], "
            "cumulative_cost_usd:[1,2] and [7, 8]</answer>",
            "outside",
        ),
    ],
)
def test_warehouse_malformed(text: str, reason_part: str) -> None:
    result = parse_estimate(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(result, Invalid)
    assert reason_part in result.reason


def test_warehouse_reversed_follows_the_policy() -> None:
    text = (
        "<answer>time_weeks:[4, 2], warehouse_item_weeks:[1,2], cumulative_cost_usd:[1,2]</answer>"
    )
    swapped = parse_estimate(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(swapped, IntervalMap)
    assert swapped["time_weeks"] == Interval(2, 4)
    strict = parse_estimate(text, dimensions=WAREHOUSE_DIMENSIONS, reversed_policy="invalid")
    assert isinstance(strict, Invalid)
    assert strict.reason.startswith("time_weeks: reversed")


@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    result = parse_estimate(text)
    assert isinstance(result, Interval | Impossible | Invalid)
    if isinstance(result, Interval):
        assert 0 <= result.lo <= result.hi


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.sampled_from(["swap", "invalid"]),
)
def test_round_trip_of_integer_intervals(a: int, b: int, policy: str) -> None:
    result = parse_estimate(f"<answer>[{a}, {b}]</answer>", reversed_policy=policy)  # type: ignore[arg-type]
    if a <= b or policy == "swap":
        assert result == Interval(min(a, b), max(a, b))
    else:
        assert isinstance(result, Invalid)
