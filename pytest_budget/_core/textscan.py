"""Linear-time scans of agent text: tag blocks, tag contents and balanced ``\\boxed{}``.

The one tag scanner of the package (the triage graders and plan parser, the model agents
and the awareness parsers all read tags through it).  The obvious regular expressions for
these (``<answer>(.*?)</answer>`` with ``findall`` or ``sub``, ``<(think|...)>.*?</\\1>``,
a brace walk from every ``\\boxed{``) are quadratic on hostile text: every unclosed
opening tag makes the engine scan to the end of the text again, so 125 KB of repeated
``<answer>`` took seconds and 10 MB ran for hours.  Here every function finds each opening
tag once and the first closing tag after it once, so the work is linear in the text; the
results are those of the regular expressions (leftmost opening tag, nearest closing tag,
non-overlapping, tags matched case-insensitively unless asked otherwise).  Plain Python
and numpy: no pytest.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "Block",
    "blocks",
    "count_opens",
    "first_block",
    "last_balanced_boxed",
    "last_tag_content",
    "remove_tag_blocks",
    "strip_blocks",
    "tag_contents",
]


@dataclass(frozen=True, slots=True)
class Block:
    """One complete block: ``text[start:end]`` is ``<tag>content</tag>``."""

    start: int
    end: int
    content: str


@lru_cache(maxsize=64)
def _literal(tag: str, case_sensitive: bool = False) -> re.Pattern[str]:
    return re.compile(re.escape(tag), 0 if case_sensitive else re.IGNORECASE)


@lru_cache(maxsize=32)
def _closing(name: str) -> re.Pattern[str]:
    """``</name>`` with optional white space before the ``>`` (linear: the white space
    after one ``</name`` is scanned once)."""
    return re.compile(f"</{re.escape(name)}\\s*+>", re.IGNORECASE)


def _pairs(
    text: str, open_tag: str, close_tag: str, case_sensitive: bool = False
) -> Iterator[Block]:
    """Each ``open_tag ... close_tag`` pair as ``re.finditer(open + "(.*?)" + close,
    DOTALL)`` finds them (literal tags): the leftmost opening from where the last pair
    ended, then the first closing after it; linear in ``len(text)``."""
    opening = _literal(open_tag, case_sensitive)
    closing = _literal(close_tag, case_sensitive)
    pos = 0
    while True:
        found = opening.search(text, pos)
        if found is None:
            return
        close = closing.search(text, found.end())
        if close is None:
            # No closing tag after this opening tag: none after a later one either.
            return
        yield Block(found.start(), close.end(), text[found.end() : close.start()])
        pos = close.end()


def blocks(text: str, name: str, *, case_sensitive: bool = False) -> Iterator[Block]:
    """Every complete ``<name>...</name>`` block, left to right, as ``re.finditer`` of
    ``<name>(.*?)</name>`` (DOTALL) would give them; linear in ``len(text)``."""
    return _pairs(text, f"<{name}>", f"</{name}>", case_sensitive)


def first_block(text: str, name: str, *, case_sensitive: bool = False) -> Block | None:
    """The first complete block (``re.search`` of ``<name>(.*?)</name>``), or ``None``."""
    return next(blocks(text, name, case_sensitive=case_sensitive), None)


def strip_blocks(text: str, name: str, replacement: str = "") -> str:
    """``text`` with every complete ``<name>...</name>`` block replaced (``re.sub``, any
    case); :func:`remove_tag_blocks` does several names at once."""
    parts: list[str] = []
    pos = 0
    for block in blocks(text, name):
        parts.append(text[pos : block.start])
        parts.append(replacement)
        pos = block.end
    parts.append(text[pos:])
    return "".join(parts)


def count_opens(text: str, name: str) -> int:
    """How many ``<name>`` opening tags ``text`` holds (any case)."""
    return sum(1 for _ in _literal(f"<{name}>").finditer(text))


def tag_contents(text: str, open_tag: str, close_tag: str) -> list[str]:
    """What ``re.findall(open + "(.*?)" + close, text, DOTALL | IGNORECASE)`` returns for
    literal tags, in linear time (``<answer>`` ... ``</answer>``)."""
    return [block.content for block in _pairs(text, open_tag, close_tag)]


@lru_cache(maxsize=32)
def _last(tag: str) -> re.Pattern[str]:
    # Greedy ``.*`` then the tag: the last occurrence before ``endpos``, found backwards in C.
    return re.compile(f"(?s:.*)({re.escape(tag)})", re.IGNORECASE)


def last_tag_content(text: str, open_tag: str, close_tag: str) -> str | None:
    """The last of :func:`tag_contents` (None when there is none), without the others.

    The last pair closes at the first close after the last opening that has a close after
    it; it opens at the first opening after the close before that one (closes never lie
    inside a pair, so nothing between those two closes can pair).  Five searches in C.
    """
    if text.isascii() and open_tag.isascii() and close_tag.isascii():
        return _last_ascii(text, open_tag.lower(), close_tag.lower())
    last_close = _last(close_tag).match(text)
    if last_close is None:
        return None
    last_open = _last(open_tag).match(text, 0, last_close.start(1))
    if last_open is None:
        return None
    close = _literal(close_tag).search(text, last_open.end(1))
    if close is None:  # cannot happen: last_close is after last_open
        return None
    before = _last(close_tag).match(text, 0, close.start())
    opening = _literal(open_tag).search(text, before.end(1) if before else 0)
    if opening is None or opening.end() > close.start():
        return None
    return text[opening.end() : close.start()]


def _last_ascii(text: str, open_tag: str, close_tag: str) -> str | None:
    """:func:`last_tag_content` for ASCII text: the same steps with ``str.rfind`` on the
    lower-cased text (the same length, and ASCII case is all IGNORECASE folds there)."""
    low = text.lower()
    last_close = low.rfind(close_tag)
    if last_close < 0:
        return None
    last_open = low.rfind(open_tag, 0, last_close)
    if last_open < 0:
        return None
    close = low.find(close_tag, last_open + len(open_tag))
    before = low.rfind(close_tag, 0, close)
    opening = low.find(open_tag, before + len(close_tag) if before >= 0 else 0)
    if opening < 0 or opening + len(open_tag) > close:
        return None
    return text[opening + len(open_tag) : close]


def remove_tag_blocks(
    text: str, names: tuple[str, ...], replacement: str, *, space_before_close: bool = False
) -> str:
    """``re.sub(r"<(a|b|..)>.*?</\\1>", replacement, text, flags=IGNORECASE | DOTALL)`` for
    the tag ``names`` (in that alternation order), in O(n log n).  With
    ``space_before_close``, a closing tag may hold white space before its ``>``
    (``</\\1\\s*>``)."""
    closes: dict[str, tuple[list[int], list[int]]] = {}
    active = list(names)  # names whose later openings may still close
    pieces: list[str] = []
    position = scan_from = 0
    while active:
        alternation = "|".join(re.escape(name) for name in active)
        pattern = re.compile(f"<({alternation})>", re.IGNORECASE)
        for match in pattern.finditer(text, scan_from):
            if match.start() < position:
                continue
            name = next(n for n in active if n.casefold() == match.group(1).casefold())
            if name not in closes:
                closing = _closing(name) if space_before_close else _literal(f"</{name}>")
                found = list(closing.finditer(text, match.end()))
                closes[name] = ([m.start() for m in found], [m.end() for m in found])
            starts, ends = closes[name]
            index = bisect_left(starts, match.end())
            if index == len(starts):
                # Unclosed: the regular expression moves on, and no later opening of this
                # name closes either, so scan on for the other names only.
                active.remove(name)
                scan_from = match.end()
                break
            pieces.append(text[position : match.start()])
            pieces.append(replacement)
            position = ends[index]
        else:
            break
    pieces.append(text[position:])
    return "".join(pieces)


def last_balanced_boxed(text: str, marker: str = "\\boxed{") -> str | None:
    """Content of the last ``marker`` (ending in ``{``) whose braces close, honouring nested
    braces; None when none closes.  Linear: the brace depth is a prefix sum, and a marker
    closes exactly when the depth after it later drops below its own (a suffix minimum)."""
    if marker not in text:
        return None
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    depth = np.zeros(len(codes) + 1, dtype=np.int32)
    np.cumsum((codes == ord("{")).astype(np.int32) - (codes == ord("}")), out=depth[1:])
    # lowest[j] = min(depth[j:]): the lowest depth reached from position j on.
    lowest = np.minimum.accumulate(depth[::-1])[::-1]
    pattern = np.frombuffer(marker.encode("utf-32-le"), dtype=np.uint32)
    count = len(codes) - len(pattern) + 1
    if count <= 0:
        return None
    hits = np.ones(count, dtype=bool)
    for offset, code in enumerate(pattern):
        hits &= codes[offset : offset + count] == code
    contents = np.flatnonzero(hits) + len(pattern)  # where each marker's content starts
    contents = contents[contents < len(codes)]  # a marker at the very end never closes
    closes = lowest[contents + 1] <= depth[contents] - 1
    if not closes.any():
        return None
    start = int(contents[np.flatnonzero(closes)[-1]])
    target = depth[start] - 1
    end = start + 1 + int(np.argmax(depth[start + 1 :] == target))  # just after the "}"
    return text[start : end - 1]
