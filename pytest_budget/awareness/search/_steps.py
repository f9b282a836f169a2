"""One step of the Search environment: the preset, the searcher protocol and the index
searcher, the state, the actor's parsed action and the answer judge (exact match, token
F1).  Re-exported by :mod:`pytest_budget.awareness.search._env`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from pytest_budget._core.textscan import blocks as tag_blocks
from pytest_budget._core.textscan import count_opens, strip_blocks
from pytest_budget.awareness.search._corpus import (
    QuestionPlan,
    SearchCorpus,
    normalize_answer,
)

if TYPE_CHECKING:
    from pytest_budget.awareness.retrieval._client import BM25Index


ENV_NAME = "search"
#: Longest query sent to the searcher (the retrieval server accepts up to 2,000 characters).
MAX_QUERY_CHARS = 1000


# --------------------------------------------------------------------------- preset


@dataclass(frozen=True)
class SearchPreset:
    """The token budget, the turn limit and how many passages a search returns."""

    name: str = "search"
    token_cap: int = 3500
    max_turns: int = 10
    top_k: int = 3

    def __post_init__(self) -> None:
        for field_name in ("token_cap", "max_turns", "top_k"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"{field_name} must be >= 1, got {getattr(self, field_name)}")

    @property
    def budget(self) -> dict[str, float]:
        return {"tokens": self.token_cap}


#: BAGEN's answer check: exact match, or token F1 at least this (fact sheet §6).
ANSWER_F1_THRESHOLD = 0.3

#: BAGEN's Search-R1 setting: 3,500 tokens; one search or one answer per turn.
SEARCH_PRESET = SearchPreset()


# --------------------------------------------------------------------------- searching


class PassageLike(Protocol):
    """What a searcher returns per hit (``retrieval.Passage`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


class Searcher(Protocol):
    """Anything with ``async search(query, k)``: ``retrieval.RetrievalClient`` (HTTP) or
    :class:`IndexSearcher` (in process)."""

    async def search(self, query: str, k: int) -> Sequence[PassageLike]: ...


class _SyncIndex(Protocol):
    def search(self, query: str, k: int) -> Sequence[PassageLike]: ...


class IndexSearcher:
    """An in-process :class:`Searcher` over any index with ``search(query, k)``
    (e.g. ``retrieval.BM25Index``); no HTTP involved."""

    def __init__(self, index: _SyncIndex) -> None:
        self.index = index

    async def search(self, query: str, k: int) -> Sequence[PassageLike]:
        return self.index.search(query, k)


@lru_cache(maxsize=4)
def corpus_index(corpus: SearchCorpus) -> BM25Index:
    """A ``retrieval.BM25Index`` over the corpus documents (serve it, or wrap it in
    :class:`IndexSearcher`).

    Cached within the process (the index is immutable): an equal corpus, e.g. the same
    :func:`~pytest_budget.awareness.search._corpus.build_corpus` result, gets the same index
    object back without rebuilding it.
    """
    from pytest_budget.awareness.retrieval._client import BM25Index, Document

    return BM25Index(Document(d.id, d.title, d.text) for d in corpus.documents)


@dataclass(frozen=True)
class SearchPassage:
    """A retrieved passage as the environment keeps it."""

    id: str
    title: str
    text: str
    score: float = 0.0


@dataclass(frozen=True)
class SearchStep:
    """One earlier turn: ``action`` is ``"search"``, ``"answer"`` or ``"invalid"``."""

    turn: int
    action: str
    query: str | None = None
    passages: tuple[SearchPassage, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class SearchState:
    """``observation.state``: the structured view for programmatic actors.

    ``plan`` is the question's :class:`QuestionPlan` (start entity and relation chain): a
    side channel for *reference* actors only.  Model-backed actors must read ``text``,
    which never shows the plan.
    """

    question_id: str
    question: str
    plan: QuestionPlan | None
    turn: int
    max_turns: int
    top_k: int
    history: tuple[SearchStep, ...] = ()


class SearchEnvError(RuntimeError):
    """The environment itself failed (the searcher raised); the message is one line."""


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ParsedAction:
    """A reply read: ``kind`` is ``"search"`` or ``"answer"`` with its ``text``, or ``None``
    with an ``error`` (a no-op turn)."""

    kind: str | None
    text: str = ""
    error: str | None = None


def parse_action(reply: str) -> ParsedAction:
    """Read exactly one ``<search>`` or ``<answer>`` block (``<think>`` blocks are skipped)."""
    # Linear time on any text (tags.py); the same results as the regular expressions.
    text = strip_blocks(reply, "think", " ")
    blocks = {tag: [b.content for b in tag_blocks(text, tag)] for tag in ("search", "answer")}
    for tag in ("search", "answer"):
        if count_opens(text, tag) > len(blocks[tag]):
            return ParsedAction(None, error=f"unclosed <{tag}> tag")
    searches, answers = blocks["search"], blocks["answer"]
    if searches and answers:
        return ParsedAction(None, error="both <search> and <answer>: write exactly one of them")
    if not searches and not answers:
        return ParsedAction(None, error="no <search>...</search> or <answer>...</answer> block")
    tag, found = ("search", searches) if searches else ("answer", answers)
    if len(found) > 1:
        return ParsedAction(None, error=f"{len(found)} <{tag}> blocks: write exactly one")
    content = " ".join(found[0].split())
    if not content:
        return ParsedAction(None, error=f"empty <{tag}> block")
    if tag == "search" and len(content) > MAX_QUERY_CHARS:
        return ParsedAction(
            None, error=f"query too long ({len(content)} characters > {MAX_QUERY_CHARS})"
        )
    return ParsedAction(tag, content)


# --------------------------------------------------------------------------- judging


def exact_match(prediction: str, golds: Sequence[str]) -> bool:
    """SQuAD exact match: normalized ``prediction`` equals some normalized gold answer."""
    norm = normalize_answer(prediction)
    return any(norm == normalize_answer(gold) for gold in golds)


def _f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD token F1 on normalized text, the best over the gold answers."""
    return max((_f1(prediction, gold) for gold in golds), default=0.0)


def _hash_int(*parts: object) -> int:
    """A 63-bit integer from sha256 of the parts: same value in every process."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1
