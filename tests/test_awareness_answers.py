"""The answer parsers: BAGEN's public parser (default), the strict reading, the RL parser."""

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
    parse_bagen,
    parse_estimate,
    parse_rl,
    parse_strict,
)
from pytest_budget.awareness._replay.answers import RLInterval, Scalar
from pytest_budget.awareness._scoring.metrics import reward_from_text


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
    assert parse_strict(text, reversed_policy="swap") == expected


def test_answer_tag_inside_think_is_ignored() -> None:
    text = "<think>draft <answer>[9, 9]</answer></think><answer>[5, 8]</answer>"
    assert parse_strict(text) == Interval(5, 8)
    # BAGEN's parser does not strip think blocks: the first answer tag wins (§1a)
    assert parse_bagen(text) == Interval(9, 9)


def test_reversed_interval_policy_is_explicit() -> None:
    text = "<answer>[300, 120]</answer>"
    assert parse_estimate(text) == Interval(120, 300)  # default: BAGEN's parser swaps
    assert parse_strict(text, reversed_policy="swap") == Interval(120, 300)
    strict = parse_estimate(text, policy="strict")
    assert isinstance(strict, Invalid)
    assert "reversed" in strict.reason
    assert strict.raw == text


def test_unknown_policy_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="reversed_policy"):
        parse_strict("<answer>[1, 2]</answer>", reversed_policy="flip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="policy"):
        parse_estimate("<answer>[1, 2]</answer>", policy="lenient")  # type: ignore[arg-type]


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
    result = parse_strict(text)
    assert isinstance(result, Invalid)
    assert reason_part in result.reason
    assert result.raw == text


def test_non_text_is_invalid_not_an_exception() -> None:
    for parse in (parse_estimate, parse_strict, parse_bagen, parse_rl):
        result = parse(None)  # type: ignore[operator]
        assert isinstance(result, Invalid)
        assert result.reason == "answer is not text"


WAREHOUSE_OK = (
    "<think>cash is tight</think><answer>time_weeks:[2, 4], "
    "warehouse_item_weeks:[900, 1500], cumulative_cost_usd:[20000, 40000]</answer>"
)


def test_warehouse_three_intervals() -> None:
    result = parse_strict(WAREHOUSE_OK, dimensions=WAREHOUSE_DIMENSIONS)
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
    result = parse_strict(text, dimensions=WAREHOUSE_DIMENSIONS)
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
    result = parse_strict(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(result, Invalid)
    assert reason_part in result.reason


def test_warehouse_reversed_follows_the_policy() -> None:
    text = (
        "<answer>time_weeks:[4, 2], warehouse_item_weeks:[1,2], cumulative_cost_usd:[1,2]</answer>"
    )
    swapped = parse_strict(text, dimensions=WAREHOUSE_DIMENSIONS, reversed_policy="swap")
    assert isinstance(swapped, IntervalMap)
    assert swapped["time_weeks"] == Interval(2, 4)
    strict = parse_strict(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(strict, Invalid)
    assert strict.reason.startswith("time_weeks: reversed")


@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    result = parse_strict(text)
    assert isinstance(result, Interval | Impossible | Invalid)
    if isinstance(result, Interval):
        assert 0 <= result.lo <= result.hi
    bagen = parse_bagen(text)
    assert isinstance(bagen, Interval | Impossible | Invalid)
    if isinstance(bagen, Interval):
        assert 0 <= bagen.lo <= bagen.hi
    assert isinstance(
        parse_bagen(text, dimensions=WAREHOUSE_DIMENSIONS), IntervalMap | Impossible | Invalid
    )
    assert isinstance(parse_rl(text), RLInterval | Scalar | Impossible | Invalid)


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.sampled_from(["swap", "invalid"]),
)
def test_round_trip_of_integer_intervals(a: int, b: int, policy: str) -> None:
    result = parse_strict(f"<answer>[{a}, {b}]</answer>", reversed_policy=policy)  # type: ignore[arg-type]
    if a <= b or policy == "swap":
        assert result == Interval(min(a, b), max(a, b))
    else:
        assert isinstance(result, Invalid)


# --------------------------------------------------------------------------- BAGEN (§1a)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # examples worked in the fact sheet, §1a step 3
        ("<answer>[100 tokens, 200 tokens]</answer>", Interval(100, 200)),
        ("<answer>[200, 100]</answer>", Interval(100, 200)),
        ("<answer>[-5, 30]</answer>", Interval(5, 30)),  # minus signs dropped
        ("<answer>[1,200, 1,500]</answer>", Interval(1, 200)),
        ("<answer>[1200.5, 1500]</answer>", Interval(5, 1200)),
        ("<answer>1.2k-2k</answer>", Interval(1, 2)),
        ("<answer>~1500 (1000-2000)</answer>", Interval(1000, 1500)),
        # first complete pair wins; text around it is ignored; tags in any case
        ("Sure <ANSWER>\n[10, 20]\n</Answer> and <answer>[1, 2]</answer>", Interval(10, 20)),
        ("<answer>[10, 20]</answer> hope that helps", Interval(10, 20)),
        ("<think>never closed <answer>[10, 20]</answer>", Interval(10, 20)),
        ("<answer><answer>[10, 20]</answer>", Interval(10, 20)),
        # impossible only when it is the whole (trimmed) answer, any case
        ("<answer> IMPOSSIBLE \n</answer>", Impossible()),
        ("<answer>Impossible</answer>", Impossible()),
        ("<answer>impossible, maybe [10, 20]</answer>", Interval(10, 20)),
    ],
)
def test_bagen_parser_accepts_what_bagen_accepts(text: str, expected: object) -> None:
    assert parse_bagen(text) == expected
    assert parse_estimate(text) == expected  # the default


@pytest.mark.parametrize(
    ("text", "reason_part"),
    [
        ("<answer>1500</answer>", "scalar"),
        ("<answer>impossible.</answer>", "no number"),
        ('<answer>"impossible"</answer>', "no number"),
        ("<answer>impossible because it is late</answer>", "no number"),
        ("<answer>[10, 20]", "missing"),
        ("[10, 20]", "missing"),
        ("<answer>  </answer>", "empty"),
        ("<answer>[" + "9" * 400 + ", 3]</answer>", "non-finite"),
    ],
)
def test_bagen_parser_rejects_what_bagen_rejects(text: str, reason_part: str) -> None:
    result = parse_bagen(text)
    assert isinstance(result, Invalid)
    assert reason_part in result.reason


# --------------------------------------------------------------------------- BAGEN (§1b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (WAREHOUSE_OK, ((2, 4), (900, 1500), (20000, 40000))),
        # fallback labels, any order, full-width colon, negatives and decimals, swapped
        (
            "<answer>cost:[-1, 3.5] Warehouse\uff1a[9, 1.5] TIME : [2,4]</answer>",
            ((2, 4), (1.5, 9), (-1, 3.5)),
        ),
        # "cumulative_cost" before "cost"
        (
            "<answer>time_weeks:[1,2] warehouse:[3,4] cumulative_cost:[5,6] cost:[7,8]</answer>",
            ((1, 2), (3, 4), (5, 6)),
        ),
        # a label missing: the first three pairs, in the order time, warehouse, cost
        ("<answer>[1, 2] then [4, 3] and [5, 6] [7, 8]</answer>", ((1, 2), (3, 4), (5, 6))),
        ("<answer>time_weeks:[9, 9] [1, 2] [3, 4]</answer>", ((9, 9), (1, 2), (3, 4))),
    ],
)
def test_bagen_warehouse_parser(text: str, expected: tuple[tuple[float, float], ...]) -> None:
    result = parse_bagen(text, dimensions=WAREHOUSE_DIMENSIONS)
    assert isinstance(result, IntervalMap)
    assert [(i.lo, i.hi) for _, i in result.items] == [tuple(map(float, e)) for e in expected]


@pytest.mark.parametrize(
    "text",
    [
        "<answer>time_weeks:[2, 4] impossible</answer>",  # partial answer plus impossible
        "<answer>time_weeks:[2, 4], warehouse_item_weeks:[9, 15]</answer>",
        "<answer>time_weeks:[$2, 4] [1, 2] [3, 4]</answer>",  # "$" breaks a number
        "<answer>[1,000, 2,000] [1, 2]</answer>",
    ],
)
def test_bagen_warehouse_parser_invalid(text: str) -> None:
    assert isinstance(parse_bagen(text, dimensions=WAREHOUSE_DIMENSIONS), Invalid)


# --------------------------------------------------------------------------- RL (§1c, §2.9)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>[5, 3]</answer>", RLInterval(5, 3)),  # never swapped
        ("<answer> [ 1 , 2 ] </answer>", RLInterval(1, 2)),
        ("<answer>about [10,20] tokens</answer>", RLInterval(10, 20)),
        ("<answer> 15 </answer>", Scalar(15)),
        ("<answer>IMPOSSIBLE</answer>", Impossible()),
    ],
)
def test_rl_parser(text: str, expected: object) -> None:
    assert parse_rl(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "<ANSWER>[1, 2]</ANSWER>",  # case-sensitive tag
        "<answer>[1,200, 3]</answer>",  # commas inside numbers
        "<answer>[1.5, 3]</answer>",  # decimals
        "<answer>[10 tokens, 20 tokens]</answer>",  # units inside the brackets
        "<answer>1500 tokens</answer>",
    ],
)
def test_rl_parser_invalid(text: str) -> None:
    assert isinstance(parse_rl(text), Invalid)


@pytest.mark.parametrize(
    ("text", "remaining", "feasible", "expected"),
    [
        ("<answer>[100, 300]</answer>", 200.0, True, 1.8 * (1 - 200 / 200)),
        ("<answer>[150, 250]</answer>", 200.0, True, 1.8 * 0.5),
        ("<answer>[250, 150]</answer>", 200.0, True, 0.0),  # reversed -> 0
        ("<answer>200</answer>", 200.0, True, 0.0),  # scalar -> 0
        ("<answer>[0, 0]</answer>", 0.0, True, 1.8),
        ("<answer>[0, 5]</answer>", 0.0, True, 0.0),
        ("<answer>impossible</answer>", 200.0, True, 0.0),
        ("<answer>Impossible</answer>", 200.0, False, 0.2),
        ("<answer>[1, 2]</answer>", 200.0, False, 0.0),
        ("<ANSWER>impossible</ANSWER>", 200.0, False, 0.0),  # invalid -> 0
    ],
)
def test_rl_reward_uses_the_rl_parser(
    text: str, remaining: float, feasible: bool, expected: float
) -> None:
    assert reward_from_text(text, remaining, feasible) == pytest.approx(expected)
