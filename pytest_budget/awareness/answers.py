"""Parsing an estimator's answer into an interval, `impossible`, or an invalid answer.

Accepted shapes (DESIGN.md §5.2)::

    <think>free text</think> <answer>[120, 300]</answer>
    <answer>impossible</answer>
    <answer>time_weeks:[2, 4], warehouse_item_weeks:[900, 1500],
            cumulative_cost_usd:[20000, 40000]</answer>          (Warehouse)

Rules, in the order they are applied:

* Complete ``<think>...</think>`` blocks are removed first (anything inside them is ignored,
  including answer tags); an unclosed ``<think>`` makes the answer invalid.
* Exactly one ``<answer>...</answer>`` pair is read; tag names are case-insensitive. Text
  before the answer tag is allowed (models often say a word first); any non-blank text after
  the closing tag, a missing tag or a second answer tag makes the answer invalid.
* ``impossible`` (any case, surrounding blanks ignored) is :class:`Impossible`.
* Single interval: the first two numbers inside the tag are the bounds, as BAGEN's public
  parser does (``[100, 200, 300]`` reads as ``[100, 200]``; ``100-200`` reads as a range).
  One number only is a scalar and invalid. ``nan``/``inf`` anywhere, a negative bound or a
  non-finite value is invalid.
* A reversed interval (lo > hi) is swapped under ``reversed_policy="swap"`` (the default,
  like the public parser) and invalid under ``reversed_policy="invalid"`` (like the RL
  reward, which scores a reversed interval as malformed).
* With ``dimensions`` given, the answer must name every dimension exactly once as
  ``name:[lo, hi]``; each interval follows the single-interval rules inside its brackets.

:func:`parse_estimate` never raises on any text; it raises :class:`ValueError` only for a
bad ``reversed_policy`` (a programming error, not a model error).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "WAREHOUSE_DIMENSIONS",
    "Estimate",
    "Impossible",
    "Interval",
    "IntervalMap",
    "Invalid",
    "ReversedPolicy",
    "parse_estimate",
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

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"</?think>", re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_ANSWER_TAG = re.compile(r"</?answer>", re.IGNORECASE)
# A minus is a sign only where a bound can start (start, blank, bracket, comma, colon) and
# it touches the digits; "100-200" and "100 - 200" are ranges, "[-5, 3]" has a negative.
_NUMBER = re.compile(
    r"(?:^|(?<=[\s\[(,:;]))(?P<sign>[-+])(?=\d|\.\d)"
    r"|(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
)
_NON_FINITE = re.compile(r"\b(?:nan|inf|infinity)\b", re.IGNORECASE)
_DIMENSION = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*\[([^\]]*)\]")


def _numbers(content: str) -> list[float]:
    """Every number in ``content``, with its sign where the sign is unambiguous."""
    out: list[float] = []
    sign = 1.0
    for match in _NUMBER.finditer(content):
        if match.group("sign") is not None:
            sign = -1.0 if match.group("sign") == "-" else 1.0
            continue
        out.append(sign * float(match.group("num")))
        sign = 1.0
    return out


def _interval(raw: str, content: str, policy: ReversedPolicy, where: str) -> Interval | Invalid:
    if _NON_FINITE.search(content):
        return Invalid(raw, f"{where}non-finite value (nan/inf)")
    values = _numbers(content)
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
    for match in _DIMENSION.finditer(content):
        key = match.group(1).lower()
        if key not in wanted:
            return Invalid(raw, f"unknown dimension {match.group(1)!r}")
        name = wanted[key]
        if name in found:
            return Invalid(raw, f"dimension {name!r} given twice")
        parsed = _interval(raw, match.group(2), policy, f"{name}: ")
        if isinstance(parsed, Invalid):
            return parsed
        found[name] = parsed
    missing = [d for d in dimensions if d not in found]
    if missing:
        return Invalid(raw, f"missing dimension(s): {', '.join(missing)}")
    leftover = _DIMENSION.sub("", content)
    if re.search(r"[0-9\[\]]", leftover):
        return Invalid(raw, "text outside the name:[lo, hi] entries")
    return IntervalMap(tuple((d, found[d]) for d in dimensions))


def parse_estimate(
    text: str,
    *,
    reversed_policy: ReversedPolicy = "swap",
    dimensions: Sequence[str] | None = None,
) -> Estimate:
    """Read one estimator reply; see the module docstring for the exact rules."""
    if reversed_policy not in ("swap", "invalid"):
        raise ValueError(f"reversed_policy must be 'swap' or 'invalid', not {reversed_policy!r}")
    if not isinstance(text, str):
        return Invalid(repr(text), "answer is not text")
    raw = text
    body = _THINK_BLOCK.sub(" ", text)
    if _THINK_OPEN.search(body):
        return Invalid(raw, "unbalanced <think> tag")
    match = _ANSWER.search(body)
    if match is None:
        return Invalid(raw, "missing <answer>...</answer> tag")
    if _ANSWER_TAG.search(body[match.end() :]) or _ANSWER_TAG.search(match.group(1)):
        return Invalid(raw, "more than one answer tag")
    if body[match.end() :].strip():
        return Invalid(raw, "text after the answer tag")
    content = match.group(1).strip()
    if not content:
        return Invalid(raw, "empty answer")
    if content.lower() == "impossible":
        return Impossible()
    if "impossible" in content.lower():
        return Invalid(raw, "'impossible' mixed with other text")
    if dimensions is not None:
        return _interval_map(raw, content, dimensions, reversed_policy)
    return _interval(raw, content, reversed_policy, "")
