"""The reference tokenizer counts the same whether it remembers a text or not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_budget._core.tokens import _REMEMBERED_CHARS, count_tokens


def test_hand_counted_examples() -> None:
    assert count_tokens("x = 12 + 7") == 5
    assert count_tokens("") == 0
    assert count_tokens("it's   done.\n") == 5  # it ' s done .


def test_long_texts_on_both_sides_of_the_remembered_length() -> None:
    unit = "ab, "  # 2 tokens in 4 characters
    for chars in (_REMEMBERED_CHARS - 4, _REMEMBERED_CHARS, _REMEMBERED_CHARS + 4):
        text = unit * (chars // 4)
        assert count_tokens(text) == count_tokens(text) == 2 * (chars // 4)


class _Tagged(str):
    """A str subclass (its own hash may differ): counted, never remembered."""

    def __hash__(self) -> int:
        return 0


@given(st.text(alphabet=st.sampled_from(["a", "Z", "7", "_", " ", "\n", ".", "é", "+"])))
def test_a_second_count_and_a_subclass_agree_with_a_word_walk(text: str) -> None:
    expected, in_word = 0, False
    for char in text:
        word = char.isalnum() or char == "_"
        if word and not in_word:
            expected += 1
        elif not word and not char.isspace():
            expected += 1
        in_word = word
    assert count_tokens(text) == expected
    assert count_tokens(text) == expected  # remembered
    assert count_tokens(_Tagged(text)) == expected
