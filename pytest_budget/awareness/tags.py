"""Linear-time reading of ``<tag>...</tag>`` blocks in agent output.

The regular expressions these replace (``<answer>(.*?)</answer>`` with ``findall`` or
``sub``) are quadratic on hostile text: every unclosed opening tag makes the engine scan to
the end of the text again, so 125 KB of repeated ``<answer>`` took seconds and 10 MB ran
for hours.  Here every function finds each opening tag once and the first closing tag after
it once, so the work is linear in the text; the results are those of the regular
expressions (leftmost opening tag, nearest closing tag, non-overlapping, tag names matched
case-insensitively unless asked otherwise).  Plain Python: no pytest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Block", "blocks", "count_opens", "first_block", "strip_blocks"]


@dataclass(frozen=True, slots=True)
class Block:
    """One complete block: ``text[start:end]`` is ``<tag>content</tag>``."""

    start: int
    end: int
    content: str


@lru_cache(maxsize=32)
def _literal(tag: str, case_sensitive: bool) -> re.Pattern[str]:
    return re.compile(re.escape(tag), 0 if case_sensitive else re.IGNORECASE)


def blocks(text: str, name: str, *, case_sensitive: bool = False) -> Iterator[Block]:
    """Every complete ``<name>...</name>`` block, left to right, as ``re.finditer`` of
    ``<name>(.*?)</name>`` (DOTALL) would give them; linear in ``len(text)``."""
    opening = _literal(f"<{name}>", case_sensitive)
    closing = _literal(f"</{name}>", case_sensitive)
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


def first_block(text: str, name: str, *, case_sensitive: bool = False) -> Block | None:
    """The first complete block (``re.search`` of ``<name>(.*?)</name>``), or ``None``."""
    return next(blocks(text, name, case_sensitive=case_sensitive), None)


def strip_blocks(text: str, name: str, replacement: str = "") -> str:
    """``text`` with every complete ``<name>...</name>`` block replaced (``re.sub``)."""
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
    return sum(1 for _ in _literal(f"<{name}>", False).finditer(text))
