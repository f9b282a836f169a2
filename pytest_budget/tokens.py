"""The reference tokenizer: how the built-in agents count the tokens they write.

Real models report their own usage; the offline reference agents need a count that is
deterministic, cheap and close enough in spirit to a BPE tokenizer.  A token is a run of
word characters or one non-space punctuation character: ``"x = 12 + 7"`` is five tokens.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")

__all__ = ["count_tokens"]


def count_tokens(text: str) -> int:
    """Number of reference tokens in ``text`` (words and single punctuation marks)."""
    return len(_TOKEN.findall(text))
