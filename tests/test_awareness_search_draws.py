"""The Search world's draws: :class:`Draws` against numpy's ``default_rng``, and the
bundled world pinned (a draw that drifts moves every question and document)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pytest_budget.awareness.search._corpus import build_corpus, corpus_digest
from pytest_budget.awareness.search._draws import Draws

# Spans that exercise Lemire's rejection (2**31 + 12345 rejects often), the full 32-bit
# range (a bare word) and the one-value range (no draw at all).
_SPANS = (1, 2, 3, 7, 28, 100, 1000, 2**31, 2**31 + 12345, 2**32 - 1, 2**32)
_P = np.array([0.28, 0.2, 0.22, 0.12, 0.08, 0.06, 0.04])


def _one_draw(
    plan: random.Random, ours: Draws, theirs: np.random.Generator
) -> tuple[object, object]:
    op = plan.random()
    if op < 0.4:
        low = plan.choice((0, 0, 2, 5, 1790))
        high = low + plan.choice(_SPANS)
        if low == 0 and plan.random() < 0.5:
            return ours.integers(high), int(theirs.integers(high))
        return ours.integers(low, high), int(theirs.integers(low, high))
    if op < 0.7:
        return ours.random(), theirs.random()
    if op < 0.85:
        n = plan.randrange(30)
        return ours.permutation(n), theirs.permutation(n).tolist()
    cdf = _P.cumsum()
    cdf /= cdf[-1]
    return ours.pick_cdf(cdf.tolist()), int(theirs.choice(len(_P), p=_P))


@pytest.mark.parametrize("case", range(4))
def test_draws_equal_numpys_default_rng(case: int) -> None:
    # Fixed plans (no true randomness): 300 seeds x up to 80 mixed draws each, the 32-bit
    # word buffer carried across integer, float and permutation draws as in numpy.
    plan = random.Random(case)
    for _ in range(300):
        seed = plan.randrange(2**64)
        ours, theirs = Draws(seed), np.random.default_rng(seed)
        for _ in range(plan.randrange(1, 80)):
            got, want = _one_draw(plan, ours, theirs)
            assert got == want, (seed, got, want)


def test_draws_cross_block_boundaries() -> None:
    # 10,000 draws read about 5,000 words: past the first 4,096-word block.
    ours, theirs = Draws(7), np.random.default_rng(7)
    got = [ours.integers(3, 1000) for _ in range(10_000)] + [ours.random()]
    want = [int(theirs.integers(3, 1000)) for _ in range(10_000)] + [theirs.random()]
    assert got == want


def test_draws_reject_ranges_numpy_draws_differently() -> None:
    with pytest.raises(ValueError, match="low < high"):
        Draws(0).integers(5, 5)
    with pytest.raises(ValueError, match="2\\*\\*32"):
        Draws(0).integers(0, 2**32 + 1)


def test_bundled_world_is_pinned() -> None:
    # Digests of the corpus the generator made before it moved off numpy's per-draw calls
    # (numpy 2.4); the bundled world (seed 0) must never move under a refactor.
    assert corpus_digest(build_corpus(0)) == (
        "2dbefd0ad1035c3631b4af21e0e1ffefff0c6d72d165da184a452febb9bcee21"
    )
    small = {"person": 10, "city": 4, "country": 1, "book": 3}
    assert corpus_digest(build_corpus(5, n_questions=20, sizes=small)) == (
        "cc6b2061136653583b08607b99aa4e71d991145b647f44efa97bb6b1cbdf8869"
    )
    assert corpus_digest(build_corpus(7, n_questions=300)) == (
        "0ea1067fa33c4387426781a71432bea6d3bde6f04663f8fe71831c0f8c7ba488"
    )
