"""numpy's ``default_rng`` draws the Search world uses, in plain Python (no numpy call each).

The world generator makes ~110,000 scalar draws; a numpy ``Generator`` call costs
microseconds of argument handling each, most of the corpus build.  :class:`Draws` reads
PCG64's raw 64-bit words in blocks and derives every draw from them exactly as numpy 2
does (``numpy/random/src/distributions/distributions.c`` and ``_pcg64.h``), so the same
numbers come out in the same order as from ``np.random.default_rng(seed)``:

- ``integers(low, high)`` (a range below 2**32): Lemire's bounded draw on 32-bit words,
  ``buffered_bounded_lemire_uint32``;
- 32-bit words: the low half of a 64-bit word first, its high half kept for the next one
  (``pcg64_next32``);
- ``random()``: a fresh 64-bit word ``>> 11`` times 2**-53 (``next_double``);
- ``permutation(n)``: Fisher-Yates from the end with ``random_interval`` (masked rejection
  on 32-bit words) as ``Generator.shuffle`` does.

tests/test_awareness_search_draws.py compares every method with numpy over many seeds and
draw orders; the corpus digests are pinned there too.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

__all__ = ["Draws"]

_BLOCK = 4096  # raw words fetched per numpy call
_MASK32 = 0xFFFFFFFF
_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53


class Draws:
    """The draws of ``np.random.default_rng(seed)`` for the methods below (and only those:
    this object owns its stream)."""

    def __init__(self, seed: int) -> None:
        self._bits = np.random.PCG64(seed)
        self._words: list[int] = []
        self._next = 0
        self._half: int | None = None  # the buffered high half of the last split word

    def _word(self) -> int:
        if self._next == len(self._words):
            self._words = self._bits.random_raw(_BLOCK).tolist()
            self._next = 0
        word = self._words[self._next]
        self._next += 1
        return word

    def _word32(self) -> int:
        half = self._half
        if half is not None:
            self._half = None
            return half
        word = self._word()
        self._half = word >> 32
        return word & _MASK32

    def _bounded(self, span: int) -> int:
        """A uniform integer in [0, span] (span < 2**32): numpy's Lemire draw."""
        if span == 0:
            return 0  # numpy draws nothing for a one-value range
        if span == _MASK32:
            return self._word32()
        excl = span + 1
        m = self._word32() * excl
        leftover = m & _MASK32
        if leftover < excl:
            threshold = (_MASK32 - span) % excl
            while leftover < threshold:
                m = self._word32() * excl
                leftover = m & _MASK32
        return m >> 32

    def integers(self, low: int, high: int | None = None) -> int:
        """``Generator.integers(low, high)`` (``integers(high)`` draws from [0, high))."""
        if high is None:
            low, high = 0, low
        if not low < high or high - low > _MASK32 + 1:
            raise ValueError(f"integers: need low < high within 2**32, got {low}, {high}")
        return low + self._bounded(high - low - 1)

    def random(self) -> float:
        """``Generator.random()``."""
        return (self._word() >> 11) * _DOUBLE

    def _interval(self, top: int) -> int:
        """numpy's ``random_interval(top)`` (top < 2**32): masked rejection."""
        if top == 0:
            return 0
        mask = (1 << top.bit_length()) - 1
        while True:
            value = self._word32() & mask
            if value <= top:
                return value

    def permutation(self, n: int) -> list[int]:
        """``Generator.permutation(n).tolist()``."""
        out = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self._interval(i)
            out[i], out[j] = out[j], out[i]
        return out

    def pick_cdf(self, cdf: Sequence[float]) -> int:
        """``int(np.searchsorted(cdf, Generator.random(), side="right"))``."""
        return bisect_right(cdf, self.random())
