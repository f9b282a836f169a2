"""Linear-time scans of agent text: tag contents, tag blocks and balanced ``\\boxed{}``.

The obvious regular expressions for these (``<answer>(.*?)</answer>``,
``<(think|...)>.*?</\\1>``, a brace walk from every ``\\boxed{``) are quadratic on hostile
text: every unclosed opening tag scans to the end of the text again.  The functions here
find each opening and closing tag once (``re.finditer`` over a literal pattern, linear) and
pair them with a binary search, with exactly the regular expressions' results
(non-overlapping, leftmost first, case-insensitive tags).  Plain Python and numpy: no
pytest.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

__all__ = ["last_balanced_boxed", "last_tag_content", "remove_tag_blocks", "tag_contents"]


@lru_cache(maxsize=32)
def _literal(tag: str) -> re.Pattern[str]:
    return re.compile(re.escape(tag), re.IGNORECASE)


@lru_cache(maxsize=32)
def _closing(name: str) -> re.Pattern[str]:
    """``</name>`` with optional white space before the ``>`` (linear: the white space
    after one ``</name`` is scanned once)."""
    return re.compile(f"</{re.escape(name)}\\s*+>", re.IGNORECASE)


def _spans(text: str, open_tag: str, close_tag: str) -> Iterator[tuple[int, int, int, int]]:
    """(open start, content start, content end, close end) of each pair, as
    ``re.finditer(open + "(.*?)" + close, DOTALL | IGNORECASE)`` would find them."""
    opens = _literal(open_tag).finditer(text)  # lazily: a run of unclosed tags stops early
    closes: list[tuple[int, int]] | None = None
    close_starts: list[int] = []
    position = 0
    for match in opens:
        start, end = match.span()
        if start < position:
            continue  # inside the previous match
        if closes is None:
            closes = [m.span() for m in _literal(close_tag).finditer(text, end)]
            close_starts = [begin for begin, _ in closes]
        index = bisect_left(close_starts, end)
        if index == len(close_starts):
            return  # no close after this open, so none after any later open either
        close_start, close_end = closes[index]
        yield start, end, close_start, close_end
        position = close_end


def tag_contents(text: str, open_tag: str, close_tag: str) -> list[str]:
    """What ``re.findall(open + "(.*?)" + close, text, DOTALL | IGNORECASE)`` returns for
    literal tags, in linear time (``<answer>`` ... ``</answer>``)."""
    return [text[content:end] for _, content, end, _ in _spans(text, open_tag, close_tag)]


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
