"""The reference tokenizer: how the built-in agents count the tokens they write.

Real models report their own usage; the offline reference agents need a count that is
deterministic, cheap and close enough in spirit to a BPE tokenizer.  A token is a run of
word characters or one non-space punctuation character: ``"x = 12 + 7"`` is five tokens.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: Texts up to this long are remembered: the same observations, prompts and replies are
#: counted again and again (each probe re-reads its rollout's turns, the reference agents
#: repeat their replies); hashing a text is far cheaper than tokenizing it.
_REMEMBERED_CHARS = 20_000

__all__ = ["count_tokens"]


def count_tokens(text: str) -> int:
    """Number of reference tokens in ``text`` (words and single punctuation marks)."""
    if len(text) <= _REMEMBERED_CHARS and type(text) is str:
        return _remembered(text)
    return len(_TOKEN.findall(text))


@lru_cache(maxsize=1 << 14)
def _remembered(text: str) -> int:
    return len(_TOKEN.findall(text))
