"""Parsing an estimator's answer into an interval, `impossible`, or an invalid answer.

Three parsers, each following one of BAGEN's (fact sheet ``bagen.md`` §1):

* :func:`parse_bagen` (the default, ``--budget-parse=bagen``) is BAGEN's public parser,
  ``TokenEstimationEnv.parse_prediction`` for one budget (§1a) and
  ``MoneyEstimationEnv.parse_prediction`` for Warehouse's three (§1b):

  - the **first** complete ``<answer>...</answer>`` pair anywhere wins (tag case ignored);
    ``<think>`` blocks are not removed first, so an answer tag inside a think block wins;
    text before or after it is ignored; no closed answer tag is invalid;
  - ``impossible`` iff the trimmed answer, lower-cased, is exactly ``impossible``
    (``impossible.`` is not);
  - one budget: every run of ASCII digits is a number (signs, commas and decimals are not
    part of it: ``[1,200, 1,500]`` reads as ``[1, 200]``); fewer than two runs is invalid;
    the first two are the bounds, swapped when reversed;
  - Warehouse: per dimension the labelled ``label: [num, num]`` (labels ``time_weeks`` or
    ``time``; ``warehouse_item_weeks`` or ``warehouse``; ``cumulative_cost_usd``,
    ``cumulative_cost`` or ``cost``; any case; ASCII or full-width colon; numbers may carry
    a minus and decimals); if any label is missing, the first three ``[num, num]`` pairs in
    the order time, warehouse, cost; fewer is invalid; each pair swapped when reversed.

* :func:`parse_strict` (``--budget-parse=strict``), this project's stricter reading:
  complete ``<think>`` blocks are removed first (an unclosed one is invalid), exactly one
  answer tag and nothing after it, numbers with decimals/exponents/signs (negative,
  ``nan`` or ``inf`` invalid), a scalar invalid, a reversed interval invalid (or swapped
  with ``reversed_policy="swap"``), and Warehouse answers must name each dimension exactly
  once as ``name:[lo, hi]``.

* :func:`parse_rl` is the RL reward's parser (§1c): first *case-sensitive* answer tag,
  ``impossible`` in any case, else the first ``[int, int]`` pair (never swapped), else an
  answer that is exactly one integer is a scalar; anything else is invalid.

Every parser runs in time linear in the text (see :mod:`pytest_budget._core.textscan`) and
never raises on any text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_budget._core.textscan import first_block, strip_blocks

__all__ = [
    "WAREHOUSE_DIMENSIONS",
    "Estimate",
    "Impossible",
    "Interval",
    "IntervalMap",
    "Invalid",
    "ParsePolicy",
    "RLAnswer",
    "RLInterval",
    "ReversedPolicy",
    "Scalar",
    "parse_bagen",
    "parse_estimate",
    "parse_rl",
    "parse_strict",
]

WAREHOUSE_DIMENSIONS: tuple[str, ...] = (
    "time_weeks",
    "warehouse_item_weeks",
    "cumulative_cost_usd",
)

ReversedPolicy = Literal["swap", "invalid"]


@dataclass(frozen=True, slots=True)
class Interval:
    """A predicted remaining-budget interval, ``lo <= hi``, both finite and >= 0."""

    lo: float
    hi: float

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def midpoint(self) -> float:
        return (self.lo + self.hi) / 2.0


@dataclass(frozen=True, slots=True)
class Impossible:
    """The estimator says the task can no longer finish within budget."""


@dataclass(frozen=True, slots=True)
class Invalid:
    """An answer that could not be read; ``reason`` says why, ``raw`` is the full text."""

    raw: str
    reason: str


@dataclass(frozen=True, slots=True)
class IntervalMap:
    """A multi-dimension answer (Warehouse): one :class:`Interval` per named dimension."""

    items: tuple[tuple[str, Interval], ...]

    def __getitem__(self, dim: str) -> Interval:
        for name, interval in self.items:
            if name == dim:
                return interval
        raise KeyError(dim)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def as_dict(self) -> dict[str, Interval]:
        return dict(self.items)


Estimate = Interval | IntervalMap | Impossible | Invalid

_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"</?answer>", re.IGNORECASE)
# A minus is a sign only where a bound can start (start, blank, bracket, comma, colon) and
# it touches the digits; "100-200" and "100 - 200" are ranges, "[-5, 3]" has a negative.
_NUMBER = re.compile(
    r"(?:^|(?<=[\s\[(,:;]))(?P<sign>[-+])(?=\d|\.\d)"
    r"|(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
)
# nan / inf / infinity as whole words, any case.  The pattern starts with a character class
# (not \b) so the engine skips quickly to candidates: linear and fast on 10 MB of text.
_NON_FINITE = re.compile(r"[nNiI](?<![\w][nNiI])(?i:an|nf(?:inity)?)\b")
_DIGIT = re.compile(r"\d")
# Warehouse entries are found by their ":[" (a literal, fast to find) and the name is read
# backwards from the colon on the reversed text: each character is looked at a bounded
# number of times, so "a:[a:[..." or a 10 MB name stay linear.
_ENTRY = re.compile(r":\s*\[([^\[\]]*)\]")
_NAME_BACKWARDS = re.compile(r"\s*([A-Za-z0-9_]+)")
_DIGITS = re.compile(r"\d+")
# BAGEN's Warehouse numbers and pairs (§1b).
_BAGEN_NUM = r"(-?\d+(?:\.\d+)?)"
_BAGEN_PAIR = re.compile(rf"\[\s*{_BAGEN_NUM}\s*,\s*{_BAGEN_NUM}\s*\]")
_BAGEN_LABELS: dict[str, tuple[str, ...]] = {
    "time_weeks": ("time_weeks", "time"),
    "warehouse_item_weeks": ("warehouse_item_weeks", "warehouse"),
    "cumulative_cost_usd": ("cumulative_cost_usd", "cumulative_cost", "cost"),
}
# Matched on the lower-cased answer (labels are matched in any case), without IGNORECASE:
# a pattern that starts with a literal is found by a fast scan.
_BAGEN_LABELLED = {
    label: re.compile(rf"{label}\s*[:\uff1a]\s*\[\s*{_BAGEN_NUM}\s*,\s*{_BAGEN_NUM}\s*\]")
    for labels in _BAGEN_LABELS.values()
    for label in labels
}
# The RL reward's parser (§1c): pure integers only.
_RL_PAIR = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*\]")
_RL_SCALAR = re.compile(r"\d+")
_MAX_DIGITS = 4000  # below Python's int-from-text limit (4300 digits)


def _numbers(content: str, limit: int = 2) -> tuple[list[float], int]:
    """The first ``limit`` numbers in ``content`` with their sign where the sign is
    unambiguous, and where the last one ends (the end of ``content`` if fewer were found).

    Each number is looked for from the next digit (found by a fast character scan), so the
    slow number pattern only ever runs a few characters before a digit.
    """
    out: list[float] = []
    sign = 1.0
    pos = 0
    while len(out) < limit:
        digit = _DIGIT.search(content, pos)
        if digit is None:
            return out, len(content)
        # a number starts at most two characters before its first digit ("-.5")
        for match in _NUMBER.finditer(content, max(pos, digit.start() - 2)):
            if match.group("sign") is not None:
                sign = -1.0 if match.group("sign") == "-" else 1.0
                continue
            out.append(sign * float(match.group("num")))
            sign = 1.0
            pos = match.end()
            break
    return out, pos


def _interval(raw: str, content: str, policy: ReversedPolicy, where: str) -> Interval | Invalid:
    values, end = _numbers(content)
    if _NON_FINITE.search(content, 0, end):
        return Invalid(raw, f"{where}non-finite value (nan/inf)")
    if not values:
        return Invalid(raw, f"{where}no number in the answer")
    if len(values) == 1:
        return Invalid(raw, f"{where}scalar answer, expected an interval [lo, hi]")
    lo, hi = values[0], values[1]
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Invalid(raw, f"{where}non-finite value (overflow)")
    if lo < 0 or hi < 0:
        return Invalid(raw, f"{where}negative bound")
    if lo > hi:
        if policy == "invalid":
            return Invalid(raw, f"{where}reversed interval (lo > hi)")
        lo, hi = hi, lo
    return Interval(lo, hi)


def _interval_map(
    raw: str, content: str, dimensions: Sequence[str], policy: ReversedPolicy
) -> IntervalMap | Invalid:
    wanted = {d.lower(): d for d in dimensions}
    found: dict[str, Interval] = {}
    backwards = content[::-1]
    kept: list[str] = []
    pos = 0
    for match in _ENTRY.finditer(content):
        named = _NAME_BACKWARDS.match(backwards, len(content) - match.start())
        if named is None:
            continue
        start = len(content) - named.end()
        label = named.group(1)[::-1]
        if start < pos or not (label[0].isalpha() or label[0] == "_"):
            continue  # not a name:[...] entry; its brackets stay in the leftover text
        if label.lower() not in wanted:
            return Invalid(raw, f"unknown dimension {label!r}")
        name = wanted[label.lower()]
        if name in found:
            return Invalid(raw, f"dimension {name!r} given twice")
        parsed = _interval(raw, match.group(1), policy, f"{name}: ")
        if isinstance(parsed, Invalid):
            return parsed
        found[name] = parsed
        kept.append(content[pos:start])
        pos = match.end()
    missing = [d for d in dimensions if d not in found]
    if missing:
        return Invalid(raw, f"missing dimension(s): {', '.join(missing)}")
    leftover = "".join(kept) + content[pos:]
    if re.search(r"[0-9\[\]]", leftover):
        return Invalid(raw, "text outside the name:[lo, hi] entries")
    return IntervalMap(tuple((d, found[d]) for d in dimensions))


def parse_strict(
    text: str,
    *,
    reversed_policy: ReversedPolicy = "invalid",
    dimensions: Sequence[str] | None = None,
) -> Estimate:
    """This project's strict reading (``--budget-parse=strict``; module docstring)."""
    if reversed_policy not in ("swap", "invalid"):
        raise ValueError(f"reversed_policy must be 'swap' or 'invalid', not {reversed_policy!r}")
    if not isinstance(text, str):
        return Invalid(repr(text), "answer is not text")
    raw = text
    body = strip_blocks(text, "think", " ")
    if _THINK_TAG.search(body):
        return Invalid(raw, "unbalanced <think> tag")
    match = first_block(body, "answer")
    if match is None:
        return Invalid(raw, "missing <answer>...</answer> tag")
    if _ANSWER_TAG.search(body, match.end) or _ANSWER_TAG.search(match.content):
        return Invalid(raw, "more than one answer tag")
    if body[match.end :].strip():
        return Invalid(raw, "text after the answer tag")
    content = match.content.strip()
    if not content:
        return Invalid(raw, "empty answer")
    if content.lower() == "impossible":
        return Impossible()
    if "impossible" in content.lower():
        return Invalid(raw, "'impossible' mixed with other text")
    if dimensions is not None:
        return _interval_map(raw, content, dimensions, reversed_policy)
    return _interval(raw, content, reversed_policy, "")


def _ordered(lo: float, hi: float) -> Interval:
    return Interval(hi, lo) if lo > hi else Interval(lo, hi)


def _finite_pair(raw: str, lo: str, hi: str, where: str) -> Interval | Invalid:
    """Two number strings as a swapped-if-reversed interval; a value too large for a
    float (thousands of digits) is invalid, never an exception."""
    a, b = float(lo), float(hi)
    if not (math.isfinite(a) and math.isfinite(b)):
        return Invalid(raw, f"{where}non-finite value (overflow)")
    return _ordered(a, b)


def _bagen_map(raw: str, content: str, dimensions: Sequence[str]) -> IntervalMap | Invalid:
    """§1b: labelled intervals, else the first three ``[num, num]`` pairs."""
    labelled: dict[str, Interval] = {}
    lowered = content.lower()
    for dim in dimensions:
        for label in _BAGEN_LABELS.get(dim, (dim.lower(),)):
            pattern = _BAGEN_LABELLED.get(label) or re.compile(
                rf"{re.escape(label)}\s*[:\uff1a]\s*\[\s*{_BAGEN_NUM}\s*,\s*{_BAGEN_NUM}\s*\]"
            )
            found = pattern.search(lowered)
            if found is not None:
                pair = _finite_pair(raw, found.group(1), found.group(2), f"{dim}: ")
                if isinstance(pair, Invalid):
                    return pair
                labelled[dim] = pair
                break
    if len(labelled) == len(dimensions):
        return IntervalMap(tuple((d, labelled[d]) for d in dimensions))
    pairs = []
    for found in _BAGEN_PAIR.finditer(content):
        pair = _finite_pair(raw, found.group(1), found.group(2), "")
        if isinstance(pair, Invalid):
            return pair
        pairs.append(pair)
        if len(pairs) == len(dimensions):
            return IntervalMap(tuple(zip(dimensions, pairs, strict=True)))
    return Invalid(raw, f"{len(pairs)} [num, num] interval(s), expected {len(dimensions)}")


def parse_bagen(text: str, *, dimensions: Sequence[str] | None = None) -> Estimate:
    """BAGEN's public parser (§1a, §1b; module docstring); the default."""
    if not isinstance(text, str):
        return Invalid(repr(text), "answer is not text")
    raw = text
    match = first_block(text, "answer")
    if match is None:
        return Invalid(raw, "missing <answer>...</answer> tag")
    content = match.content.strip()
    if content.lower() == "impossible":
        return Impossible()
    if dimensions is not None:
        return _bagen_map(raw, content, dimensions)
    runs: list[str] = []
    for found in _DIGITS.finditer(content):
        runs.append(found.group())
        if len(runs) == 2:
            return _finite_pair(raw, runs[0], runs[1], "")
    if not content:
        return Invalid(raw, "empty answer")
    if runs:
        return Invalid(raw, "scalar answer (one number), expected an interval [lo, hi]")
    return Invalid(raw, "no number in the answer")


ParsePolicy = Literal["bagen", "strict"]


def parse_estimate(
    text: str,
    *,
    policy: ParsePolicy = "bagen",
    dimensions: Sequence[str] | None = None,
) -> Estimate:
    """Read one estimator reply with ``policy``'s parser (module docstring).

    ``"bagen"`` is :func:`parse_bagen`, ``"strict"`` is :func:`parse_strict` (a reversed
    interval is invalid).  Raises :class:`ValueError` only for an unknown policy.
    """
    if policy == "bagen":
        return parse_bagen(text, dimensions=dimensions)
    if policy == "strict":
        return parse_strict(text, reversed_policy="invalid", dimensions=dimensions)
    raise ValueError(f"policy must be 'bagen' or 'strict', not {policy!r}")


@dataclass(frozen=True, slots=True)
class Scalar:
    """A single number (the RL parser reads it as a 'possible' prediction that scores 0)."""

    value: int


@dataclass(frozen=True, slots=True)
class RLInterval:
    """An ``[int, int]`` pair as written: ``lo > hi`` is kept (the reward scores it 0)."""

    lo: int
    hi: int


RLAnswer = RLInterval | Scalar | Impossible | Invalid


def parse_rl(text: str) -> RLAnswer:
    """The RL reward's parser (§1c): case-sensitive tag, ``[int, int]`` never swapped."""
    if not isinstance(text, str):
        return Invalid(repr(text), "answer is not text")
    match = first_block(text, "answer", case_sensitive=True)
    if match is None:
        return Invalid(text, "missing <answer>...</answer> tag")
    content = match.content.strip()
    if content.lower() == "impossible":
        return Impossible()
    pair = _RL_PAIR.search(content)
    if pair is not None:
        if max(len(pair.group(1)), len(pair.group(2))) > _MAX_DIGITS:
            return Invalid(text, "number too long")
        return RLInterval(int(pair.group(1)), int(pair.group(2)))
    if _RL_SCALAR.fullmatch(content):
        if len(content) > _MAX_DIGITS:
            return Invalid(text, "number too long")
        return Scalar(int(content))
    return Invalid(text, "no [int, int] pair and not a single integer")
