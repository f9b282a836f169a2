"""Linear-time tag reading (textscan.py) gives what the regular expressions it replaces gave."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_budget._core.textscan import blocks, count_opens, first_block, strip_blocks
from pytest_budget.awareness._replay.answers import WAREHOUSE_DIMENSIONS, Invalid, parse_strict
from pytest_budget.awareness.warehouse import ActionError, parse_action

# Text made of tag fragments, so that opening/closing tags (in any case) are common.
_pieces = st.sampled_from(
    [
        "<answer>",
        "</answer>",
        "<ANSWER>",
        "</Answer>",
        "<think>",
        "</think>",
        "<THINK>",
        "x",
        " ",
        "\n",
        "1",
        "<",
        ">",
        "/",
    ]
)
tagged_text = st.lists(_pieces, max_size=40).map("".join)


@given(tagged_text, st.sampled_from(["answer", "think"]))
def test_blocks_equal_the_regular_expression(text: str, name: str) -> None:
    pattern = re.compile(rf"<{name}>(.*?)</{name}>", re.IGNORECASE | re.DOTALL)
    assert [b.content for b in blocks(text, name)] == pattern.findall(text)
    assert [(b.start, b.end) for b in blocks(text, name)] == [
        m.span() for m in pattern.finditer(text)
    ]
    assert strip_blocks(text, name, " ") == pattern.sub(" ", text)
    assert count_opens(text, name) == len(re.findall(rf"<{name}>", text, re.IGNORECASE))
    found = first_block(text, name)
    match = pattern.search(text)
    assert (found.content if found else None) == (match.group(1) if match else None)


@given(tagged_text)
def test_case_sensitive_blocks_equal_the_regular_expression(text: str) -> None:
    pattern = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
    assert [b.content for b in blocks(text, "answer", case_sensitive=True)] == pattern.findall(text)


_entry_pieces = st.sampled_from(
    [
        "time_weeks",
        "warehouse_item_weeks",
        "cumulative_cost_usd",
        "cash",
        "9x",
        "_a",
        ":",
        " ",
        "[",
        "]",
        "1",
        ",",
        "2",
        "a",
    ]
)


@given(st.lists(_entry_pieces, max_size=30).map("".join))
def test_strict_warehouse_entries_equal_the_regular_expression(content: str) -> None:
    """The colon-anchored entry scan finds the entries the name:[...] pattern found."""
    old = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*:\s*\[([^\[\]]*)\]")
    text = f"<answer>{content}</answer>"
    result = parse_strict(text, dimensions=WAREHOUSE_DIMENSIONS, reversed_policy="swap")
    names = [m.group(1).lower() for m in old.finditer(content)]
    wanted = set(WAREHOUSE_DIMENSIONS)
    leftover = old.sub("", content)
    expect_ok = (
        "impossible" not in content.lower()
        and content.strip() != ""
        and all(n in wanted for n in names)
        and sorted(names) == sorted(wanted)
        and not re.search(r"[0-9\[\]]", leftover)
    )
    if expect_ok:
        # each entry holds an interval only if its brackets hold two numbers
        entries = {m.group(1).lower(): m.group(2) for m in old.finditer(content)}
        expect_ok = all(len(re.findall(r"\d+", v)) >= 2 for v in entries.values())
    assert (not isinstance(result, Invalid)) == expect_ok


def test_warehouse_action_with_a_huge_number_is_an_action_error() -> None:
    """json.loads raises ValueError (not JSONDecodeError) past 4300 digits."""
    with pytest.raises(ActionError, match="too long"):
        parse_action('<answer>{"credit_draw": ' + "9" * 5000 + "}</answer>")
