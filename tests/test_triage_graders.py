"""Answer extraction and the built-in graders (pytest_budget.triage._graders)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_budget._environments import sokoban
from pytest_budget.triage._graders import (
    GRADERS,
    extract_answer,
    get_grader,
    grade,
    normalize,
    parse_moves,
    parse_number,
)
from pytest_budget.triage._puzzles import grid_from_text, problem_text
from pytest_budget.triage._types import Item

# ------------------------------------------------------------------ extraction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I think <answer>42</answer>", "42"),
        ("<ANSWER> first </ANSWER> then <answer>second</answer>", "second"),
        ("<answer>\n7/2\n</answer>", "7/2"),
        ("so the result is \\boxed{17}.", "17"),
        ("\\boxed{1} then \\boxed{\\frac{7}{2}}", "\\frac{7}{2}"),
        ("work\nAnswer: 12\n", "12"),
        ("Answer: 1\nmore work\nFinal answer: Up Left", "Up Left"),
        ("**Final Answer:** B", "B"),
        # a tag wins over boxed text and answer lines
        ("Answer: 3\n\\boxed{4}\n<answer>5</answer>", "5"),
        ("\\boxed{4}\nAnswer: 3", "4"),
        ("no final answer here", None),
        ("<answer>  </answer>", None),
        ("Answer:", None),
        ("", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_normalize() -> None:
    assert normalize("  The   Answer\tIS Paris. ") == "the answer is paris"
    assert normalize("Straße") == "strasse"
    assert normalize("3.") == "3"


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", Fraction(42)),
        ("-0", Fraction(0)),
        ("+7", Fraction(7)),
        ("3.50", Fraction(7, 2)),
        (".5", Fraction(1, 2)),
        ("7/2", Fraction(7, 2)),
        ("-14/4", Fraction(-7, 2)),
        ("1,234,567", Fraction(1234567)),
        ("1,234.5", Fraction(2469, 2)),
        ("1e3", Fraction(1000)),
        ("$\\frac{7}{2}$", Fraction(7, 2)),
        ("-\\dfrac{1}{3}", Fraction(-1, 3)),
        (" 12. ", Fraction(12)),
    ],
)
def test_parse_number_accepts(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text", ["", "abc", "1/0", "1,23", "12,34,567", "3 apples", "1e99999", "x/2"]
)
def test_parse_number_rejects(text: str) -> None:
    assert parse_number(text) is None


def item(answer: object, grader: str = "exact", **extra: object) -> Item:
    return Item(id="q", text="question", answer=answer, grader=grader, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        ("3.50", "7/2", True),
        ("7/2", "3.5", True),
        ("3.5", 3.5, True),
        ("12.0", 12, True),
        ("-0", "0", True),
        ("1,000", "1000", True),
        ("Paris.", "paris", True),
        ("  new   york ", "New York", True),
        ("7/2", "3.49", False),
        ("3", "4", False),
        ("Paris", "London", False),
        ("1/3", "0.333333", False),  # exact means exact
    ],
)
def test_exact_grader(answer: str, expected: object, ok: bool) -> None:
    assert GRADERS["exact"](answer, item(expected)) is ok


def test_exact_grader_without_answer_on_either_side() -> None:
    assert not GRADERS["exact"](None, item("1"))
    assert not GRADERS["exact"]("1", item(None))


@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        ("1000000.5", "1000000", True),  # relative error 5e-7
        ("1000002", "1000000", False),  # relative error 2e-6
        ("0.3333333", "1/3", True),
        ("0.333", "1/3", False),
        ("1e-10", "0", True),  # absolute tolerance near zero
        ("1e-8", "0", False),
        ("-2.5", "-5/2", True),
        ("two", "2", False),
        ("2", "two", False),
    ],
)
def test_numeric_grader(answer: str, expected: str, ok: bool) -> None:
    assert GRADERS["numeric"](answer, item(expected, "numeric")) is ok


@given(
    st.fractions(max_denominator=10**6).filter(lambda f: abs(f) < 10**9),
)
def test_exact_grader_accepts_equivalent_forms(value: Fraction) -> None:
    expected = item(f"{value.numerator}/{value.denominator}")
    scaled = f"{value.numerator * 3}/{value.denominator * 3}"
    assert GRADERS["exact"](scaled, expected)
    assert GRADERS["exact"](str(value), expected)
    if value.denominator == 1:
        assert GRADERS["exact"](f"{value.numerator}.00", expected)
        assert GRADERS["exact"](f"{value.numerator:,}", expected)


@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        ("B", "B", True),
        ("(B)", "B", True),
        ("b.", "B", True),
        ("B) 42 apples", "B", True),
        ("the answer is b", "B", True),
        ("I think the answer is (C).", "C", True),
        ("Option D", "D", True),
        ("(J)", "j", True),
        ("C", "(C)", True),
        ("A", "B", False),
        ("the answer is a number", "A", False),
        ("K", "K", False),  # only A-J are choices
        ("nothing", "A", False),
    ],
)
def test_choice_grader(answer: str, expected: str, ok: bool) -> None:
    assert GRADERS["choice"](answer, item(expected, "choice")) is ok


# ------------------------------------------------------------------ sokoban replay

# Player (1,1), box (2,2), goal (3,3): push the box right, walk round, push it down.
TINY = "######\n#P___#\n#_X__#\n#__O_#\n######"
TINY_SOLUTION = "Down Right Up Right Down"


def tiny_item(text: str | None = None) -> Item:
    level = sokoban.parse_level(TINY)
    return Item(id="s", text=text or problem_text(level), grader="sokoban", domain="sokoban")


@pytest.mark.parametrize(
    "answer",
    [
        TINY_SOLUTION,
        "D R U R D",
        "down, right, up, right, down",
        "DRURD",
        "d r; u r d.",
        "Up Down Right Up Right Down",  # bumping the wall first is a harmless wasted move
        f"{TINY_SOLUTION} Down",  # the box cannot go into the wall: still solved
    ],
)
def test_sokoban_grader_accepts_solving_sequences(answer: str) -> None:
    assert GRADERS["sokoban"](answer, tiny_item())


@pytest.mark.parametrize(
    "answer",
    ["Down Right", "Right Down Up Right Down", "", "fly to the goal", "Down Right Up Right Dawn"],
)
def test_sokoban_grader_rejects(answer: str) -> None:
    assert not GRADERS["sokoban"](answer, tiny_item())


def test_sokoban_grader_reads_a_bare_grid_and_rejects_a_text_without_one() -> None:
    assert GRADERS["sokoban"](TINY_SOLUTION, tiny_item(f"Push the box home:\n{TINY}\nThanks."))
    assert not GRADERS["sokoban"](TINY_SOLUTION, tiny_item("What is 2 + 2?"))
    assert not GRADERS["sokoban"](None, tiny_item())


def test_grid_helper_round_trips_the_rendered_level() -> None:
    level = sokoban.parse_level(TINY)
    assert grid_from_text(problem_text(level)) == TINY
    assert sokoban.parse_level(grid_from_text(problem_text(level))) == level


def test_parse_moves() -> None:
    assert parse_moves("U l, DOWN;right") == ("Up", "Left", "Down", "Right")
    assert parse_moves("   ") == ()
    assert parse_moves("Up Jump") is None
    assert parse_moves("u" * 20_000) is None  # absurdly long answers are refused


# ------------------------------------------------------------------ registry


def test_registry_and_unknown_grader_message() -> None:
    assert list(GRADERS) == ["exact", "numeric", "choice", "sokoban"]
    assert get_grader("numeric") is GRADERS["numeric"]
    with pytest.raises(ValueError) as info:
        get_grader("fuzzy")
    assert str(info.value) == (
        "unknown grader 'fuzzy'; built-in graders: exact, numeric, choice, sokoban"
    )


def test_grade_never_solves_unsolvable_items() -> None:
    assert grade(item("7/2"), "3.5")
    assert not grade(item("7/2", unsolvable=True), "3.5")
    assert not grade(item("7/2"), None)
    assert not grade(tiny_item(), None)
    with pytest.raises(ValueError, match="unknown grader 'fuzzy'"):
        grade(item("1", "fuzzy"), "1")
