"""The Search environment's index: the tokenizer, documents, passages and a BM25 index over
them (numpy).  Re-exported by :mod:`pytest_budget.awareness.retrieval._client`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_K = 3
"""Passages returned when a ``/search`` request does not say ``k``."""
PROTOCOLS = ("retrieve", "search")
"""Search endpoints a client can speak: BAGEN's ``/retrieve`` and the older ``/search``."""
HEALTHY = ("ok", "healthy")
"""``/health`` statuses read as healthy (ours, BAGEN's server's)."""
RETRIEVE_DEFAULT_K = 10
"""Passages returned when a ``/retrieve`` request does not say ``top_k`` (BAGEN's default)."""
MAX_K = 50
"""Largest ``k`` the server accepts."""
MAX_QUERY_CHARS = 2_000
"""Longest query the server accepts (characters)."""
MAX_BODY_BYTES = 64 * 1024
"""Largest request body the server serves; larger ones get 413 (400 for an over-long query)."""

_TOKEN = re.compile(r"\w+")
_ERROR_CHARS = 300
# Oversized bodies up to this size are read before the answer (a 400 if they hold an over-long
# query, else a 413), so the client reliably sees it (closing a socket with unread data makes
# Linux send RST, losing the reply).
_DRAIN_LIMIT = 1024 * 1024


def tokenize(text: str) -> list[str]:
    """Lower-case ``text`` and return its ``\\w+`` runs, in order."""
    return _TOKEN.findall(text.lower())


def _one_line(text: str, limit: int = _ERROR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- documents and the index ------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One corpus entry; ``id`` must be unique within an index."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Passage:
    """A search hit: the document's fields and its BM25 score for the query."""

    id: str
    title: str
    text: str
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "text": self.text, "score": self.score}


class BM25Index:
    """An in-memory BM25 index; see the module docstring for the exact formula.

    Postings are stored CSR-style: for term id ``t`` the documents containing it are
    ``doc_ids[indptr[t]:indptr[t + 1]]`` with their precomputed BM25 term weights alongside, so
    a query is a few slices, one ``np.bincount`` and a partial sort.  Immutable after
    construction and safe to search from many threads.
    """

    def __init__(self, documents: Iterable[Document], *, k1: float = 1.5, b: float = 0.75) -> None:
        if not (math.isfinite(k1) and k1 >= 0):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1!r}")
        if not (math.isfinite(b) and 0 <= b <= 1):
            raise ValueError(f"b must be within [0, 1], got {b!r}")
        self.k1 = float(k1)
        self.b = float(b)
        docs = tuple(documents)
        seen: set[str] = set()
        for doc in docs:
            if not isinstance(doc, Document):
                raise TypeError(f"expected Document, got {type(doc).__name__}")
            if doc.id in seen:
                raise ValueError(f"duplicate document id {doc.id!r}")
            seen.add(doc.id)
        self._documents = docs
        n = len(docs)

        counts = [Counter(tokenize(f"{doc.title}\n{doc.text}")) for doc in docs]
        # Term ids follow sorted vocabulary, so the index does not depend on document order.
        vocabulary = sorted(set().union(*counts)) if counts else []
        self._vocab: dict[str, int] = {term: i for i, term in enumerate(vocabulary)}
        lengths = np.fromiter((sum(c.values()) for c in counts), dtype=np.float64, count=n)
        sizes = np.fromiter((len(c) for c in counts), dtype=np.int64, count=n)
        vocab = self._vocab
        term_ids = np.fromiter(
            (vocab[t] for c in counts for t in c), dtype=np.int64, count=int(sizes.sum())
        )
        tfs = np.fromiter(
            (f for c in counts for f in c.values()), dtype=np.float64, count=term_ids.size
        )
        doc_of = np.repeat(np.arange(n, dtype=np.int64), sizes)

        order = np.argsort(term_ids, kind="stable")  # stable: doc ids ascend within a term
        term_ids, tfs, doc_of = term_ids[order], tfs[order], doc_of[order]
        df = np.bincount(term_ids, minlength=len(vocabulary))
        self._indptr: npt.NDArray[np.int64] = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(df, out=self._indptr[1:])
        self._idf: npt.NDArray[np.float64] = np.log1p((n - df + 0.5) / (df + 0.5))
        avgdl = float(lengths.mean()) if n else 0.0
        norm = lengths / avgdl if avgdl > 0 else np.zeros(n)
        denominator = tfs + self.k1 * (1.0 - self.b + self.b * norm[doc_of])
        self._weights: npt.NDArray[np.float64] = (
            self._idf[term_ids] * tfs * (self.k1 + 1.0) / denominator
        )
        self._doc_ids: npt.NDArray[np.int64] = doc_of
        self.avgdl = avgdl
        # Rank of each document in id order: the tie-breaker.
        by_id = sorted(range(n), key=lambda i: docs[i].id)
        self._id_rank = np.empty(n, dtype=np.int64)
        self._id_rank[by_id] = np.arange(n, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._documents)

    @property
    def documents(self) -> tuple[Document, ...]:
        return self._documents

    @property
    def vocabulary_size(self) -> int:
        return len(self._vocab)

    def idf(self, term: str) -> float:
        """The idf of one (already tokenised) term; 0.0 for a term no document contains."""
        term_id = self._vocab.get(term)
        return 0.0 if term_id is None else float(self._idf[term_id])

    def search(self, query: str, k: int = DEFAULT_K) -> list[Passage]:
        """The ``k`` best-scoring documents for ``query`` (fewer if fewer match)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        term_ids = sorted({self._vocab[t] for t in tokenize(query) if t in self._vocab})
        if not term_ids:
            return []
        indptr = self._indptr
        candidates: npt.NDArray[np.integer[Any]]
        scores: npt.NDArray[np.float64]
        if len(term_ids) == 1:
            start, stop = indptr[term_ids[0]], indptr[term_ids[0] + 1]
            candidates = self._doc_ids[start:stop]
            scores = self._weights[start:stop]
        else:
            docs = np.concatenate([self._doc_ids[indptr[t] : indptr[t + 1]] for t in term_ids])
            weights = np.concatenate([self._weights[indptr[t] : indptr[t + 1]] for t in term_ids])
            # Summed in sorted-term order, so equal documents get bit-identical scores.
            dense = np.bincount(docs, weights=weights, minlength=len(self._documents)).astype(
                np.float64, copy=False
            )  # already float64; astype only tells the type checker
            candidates = np.flatnonzero(dense > 0)
            scores = dense[candidates]
        if candidates.size > k:
            # Keep everything tied with the k-th best score, then let the id decide.
            kth = np.partition(scores, candidates.size - k)[candidates.size - k]
            keep = scores >= kth
            candidates, scores = candidates[keep], scores[keep]
        order = np.lexsort((self._id_rank[candidates], -scores))[:k]
        documents = self._documents
        hits: list[Passage] = []
        for i in order.tolist():
            doc = documents[int(candidates[i])]
            hits.append(Passage(doc.id, doc.title, doc.text, float(scores[i])))
        return hits


# -- the HTTP server --------------------------------------------------------------------------
