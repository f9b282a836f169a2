"""Final-answer extraction and the built-in graders of the triage suite.

A pool item names its grader (``"grader": "numeric"`` in a JSONL pool line); the grader
decides whether a solver's final answer solves the item.  Built-in graders:

``exact`` (the default)
    Normalized string equality with ``str(item.answer)`` (whitespace collapsed, case
    folded, a trailing period dropped).  When both sides read as numbers (integers,
    decimals, fractions ``p/q`` or ``\\frac{p}{q}``, thousands commas) they are compared
    exactly as rationals, so ``"3.50"``, ``"7/2"`` and ``"3.5"`` are equal.
``numeric``
    Both sides must read as numbers; equal within a relative tolerance of 1e-6
    (absolute 1e-9 near zero).
``choice``
    Multiple choice: a single letter A-J is pulled from the answer (``"(B)"``, ``"B."``,
    ``"the answer is b"``) and compared with the item's letter.
``sokoban``
    The answer is a move sequence (``"Up Left Left"``, ``"U L L"``, comma separated, any
    case); it is replayed on the level drawn in the item's text and accepted iff the level
    ends solved.  No stored answer is needed.

Items marked ``unsolvable`` are never graded solved, whatever the grader says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from types import MappingProxyType

from pytest_budget._core.textscan import last_balanced_boxed, last_tag_content
from pytest_budget.triage._types import Item

__all__ = [
    "GRADERS",
    "Grader",
    "extract_answer",
    "get_grader",
    "grade",
    "grade_choice",
    "grade_exact",
    "grade_numeric",
    "grade_sokoban",
    "normalize",
    "parse_moves",
    "parse_number",
]

Grader = Callable[[str | None, Item], bool]

# Possessive quantifiers (``*+``): the same matches as the plain ones here (a run of spaces
# and ``*``/``_`` is always taken whole before a letter or ``:``), without the quadratic
# backtracking of ``\s*[*_]*\s*`` over a long line of spaces.
_ANSWER_LINE = re.compile(
    r"^\s*+[*_]*+\s*+(?:final\s++)?answer\s*+[*_]*+\s*+:\s*+[*_]*+(.*)$", re.IGNORECASE
)
_BOXED = "\\boxed{"


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` whose braces close, honouring nested braces."""
    return last_balanced_boxed(text, _BOXED)


def extract_answer(text: str) -> str | None:
    """The final answer in a solver's output, or ``None`` when it states none.

    Looks, in order, for the last ``<answer>...</answer>`` (any case), the last
    ``\\boxed{...}``, then the last line starting with ``Answer:`` or ``Final answer:``.
    An empty answer counts as none.
    """
    found = last_tag_content(text, "<answer>", "</answer>")
    if found is None:
        found = _last_boxed(text)
        if found is None:
            for line in reversed(text.splitlines()):
                match = _ANSWER_LINE.match(line)
                if match:
                    found = match.group(1).rstrip(" *_")
                    break
    if found is None or not found.strip():
        return None
    return found.strip()


def normalize(text: str) -> str:
    """Strip, collapse whitespace, casefold and drop one trailing period."""
    text = " ".join(text.split()).casefold()
    if text.endswith("."):
        text = text[:-1].rstrip()
    return text


_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?$")
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$")
_LATEX_FRAC = re.compile(r"^([+-]?)\\d?frac\{([^{}]+)\}\{([^{}]+)\}$")


def _parse_plain(text: str) -> Fraction | None:
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    if not _DECIMAL.match(text):
        return None
    if "e" in text and abs(int(text.split("e")[1])) > 1000:
        return None  # refuse absurd exponents instead of building huge integers
    return Fraction(text)


def parse_number(text: str) -> Fraction | None:
    """``text`` as an exact rational, or ``None`` when it is not a plain number.

    Accepts integers, decimals (with optional exponent and thousands commas), fractions
    ``p/q`` and ``\\frac{p}{q}``, optionally wrapped in ``$...$``.  A zero denominator is
    not a number.
    """
    text = normalize(text).strip("$").strip().replace(" ", "")
    if not text:
        return None
    latex = _LATEX_FRAC.match(text)
    if latex:
        sign, num_text, den_text = latex.groups()
        num, den = _parse_plain(num_text), _parse_plain(den_text)
        if num is None or den is None or den == 0:
            return None
        return -num / den if sign == "-" else num / den
    if text.count("/") == 1:
        num_text, den_text = text.split("/")
        num, den = _parse_plain(num_text), _parse_plain(den_text)
        if num is None or den is None or den == 0:
            return None
        return num / den
    return _parse_plain(text)


def grade_exact(answer: str | None, item: Item) -> bool:
    """Normalized string equality, or exact rational equality when both are numbers."""
    if answer is None or item.answer is None:
        return False
    expected = str(item.answer)
    got_number, want_number = parse_number(answer), parse_number(expected)
    if got_number is not None and want_number is not None:
        return got_number == want_number
    return normalize(answer) == normalize(expected)


_REL_TOL = Fraction(1, 10**6)
_ABS_TOL = Fraction(1, 10**9)


def grade_numeric(answer: str | None, item: Item) -> bool:
    """Numbers equal within relative tolerance 1e-6 (absolute 1e-9 near zero)."""
    if answer is None or item.answer is None:
        return False
    got, want = parse_number(answer), parse_number(str(item.answer))
    if got is None or want is None:
        return False
    return abs(got - want) <= max(_REL_TOL * max(abs(got), abs(want)), _ABS_TOL)


_CHOICE_ALONE = re.compile(r"^[(\[]?([a-j])[)\]]?[.:)]?$")
_CHOICE_PHRASE = re.compile(
    r"\b(?:answer|option|choice)\s*(?:is|:)?\s*([(\[])?([a-j])\b[)\]]?(?![\w'])(\s+\w)?"
)
_CHOICE_LEAD = re.compile(r"^[(\[]?([a-j])(?:[)\]]|[.:)]\s)")


def _choice_letter(text: str) -> str | None:
    text = normalize(text)
    for pattern in (_CHOICE_ALONE, _CHOICE_LEAD):
        match = pattern.match(text)
        if match:
            return match.group(1)
    letters = [
        letter
        for bracket, letter, word_after in _CHOICE_PHRASE.findall(text)
        # "the answer is a number": a bare "a" followed by a word is the article.
        if bracket or letter != "a" or not word_after
    ]
    return letters[-1] if letters else None


def grade_choice(answer: str | None, item: Item) -> bool:
    """The single letter A-J found in the answer equals the item's letter."""
    if answer is None or item.answer is None:
        return False
    got, want = _choice_letter(answer), _choice_letter(str(item.answer))
    return got is not None and got == want


_MOVE_WORDS = {"up": "Up", "down": "Down", "left": "Left", "right": "Right"}
_MOVE_LETTERS = {"u": "Up", "d": "Down", "l": "Left", "r": "Right"}
_MAX_MOVES = 10_000  # replaying is linear, but an unbounded answer must not stall a cell


def parse_moves(answer: str) -> tuple[str, ...] | None:
    """A move sequence as canonical actions, or ``None`` if any token is not a move.

    Tokens are separated by spaces, commas or semicolons; each is a word (``up``) or a
    run of letters ``u d l r`` (``"ULLd"`` is four moves).  Case is ignored.
    """
    moves: list[str] = []
    for token in re.split(r"[\s,;]+", answer.strip().strip(".").casefold()):
        if not token:
            continue
        if token in _MOVE_WORDS:
            moves.append(_MOVE_WORDS[token])
        elif all(letter in _MOVE_LETTERS for letter in token):
            moves.extend(_MOVE_LETTERS[letter] for letter in token)
        else:
            return None
        if len(moves) > _MAX_MOVES:
            return None
    return tuple(moves)


def grade_sokoban(answer: str | None, item: Item) -> bool:
    """Replay the moves on the level drawn in ``item.text``; True iff it ends solved."""
    if answer is None:
        return False
    moves = parse_moves(answer)
    if moves is None:
        return False
    # Imported lazily: only puzzle items need the Sokoban engine.
    import pytest_budget._environments.sokoban as sokoban
    from pytest_budget.triage._puzzles import grid_from_text

    try:
        level = sokoban.parse_level(grid_from_text(item.text))
    except ValueError:
        return False
    for move in moves:
        level, _, _ = sokoban.step(level, move)
    return level.solved


GRADERS: Mapping[str, Grader] = MappingProxyType(
    {
        "exact": grade_exact,
        "numeric": grade_numeric,
        "choice": grade_choice,
        "sokoban": grade_sokoban,
    }
)


def get_grader(name: str) -> Grader:
    """The built-in grader called ``name``; ``ValueError`` listing the names otherwise."""
    try:
        return GRADERS[name]
    except KeyError:
        known = ", ".join(GRADERS)
        raise ValueError(f"unknown grader {name!r}; built-in graders: {known}") from None


def grade(item: Item, answer: str | None) -> bool:
    """Whether ``answer`` solves ``item`` under its grader (unsolvable items never do)."""
    if item.unsolvable or answer is None:
        return False
    return get_grader(item.grader)(answer, item)
