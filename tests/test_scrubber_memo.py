"""The sample scrubber remembers what it scrubbed (cells replay the same rollouts): the
same answers as scrubbing afresh, per set of secrets, and no hostile reply kept alive."""

from __future__ import annotations

import gc
import weakref

from pytest_budget._core import samples
from pytest_budget._core.samples import MASK, SAMPLE_TEXT_LIMIT, clip, scrub, scrubber


def test_remembered_texts_read_as_scrubbed_afresh() -> None:
    texts = [
        "move left",
        "Authorization: Bearer abcdefghijkl0123",
        "token s3cr3t-value here",
        "x" * (SAMPLE_TEXT_LIMIT + 10),
        "key sk-" + "a" * 20,
    ]
    plain, secret = scrubber(), scrubber(["s3cr3t-value"])
    for _ in range(3):  # first pass fills the memo, the others read it
        for text in texts:
            assert plain(text) == clip(scrub(text))
            assert secret(text) == clip(scrub(text, ["s3cr3t-value"]))
    # the secret is masked only by the scrubber that knows it: the memos are not shared
    assert "s3cr3t-value" in plain(texts[2])
    assert secret(texts[2]) == f"token {MASK} here"


class _Text(str):
    """A str that can be weakly referenced (to see whether the memo holds it)."""


def test_a_long_reply_is_not_kept() -> None:
    run = scrubber(["never-seen-secret-1"])
    long, short = _Text("y" * (samples._MEMO_TEXT + 1)), _Text("z" * 10)
    refs = [weakref.ref(long), weakref.ref(short)]
    assert run(long) == clip(str(long)) and run(short) == "z" * 10
    del long, short
    gc.collect()
    assert refs[0]() is None  # not remembered
    assert refs[1]() is not None  # remembered
