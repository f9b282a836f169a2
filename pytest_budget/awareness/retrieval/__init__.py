"""The search environment's retrieval service: a BM25 index behind a small HTTP API,
its server and its client (docs/reference/retrieval-api.md).
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.awareness.retrieval._client import (
        DEFAULT_K,
        HEALTHY,
        MAX_BODY_BYTES,
        MAX_K,
        MAX_QUERY_CHARS,
        PROTOCOLS,
        RETRIEVE_DEFAULT_K,
        BM25Index,
        Document,
        Passage,
        RetrievalClient,
        RetrievalError,
        RetrievalServer,
        passage_content,
        split_content,
        tokenize,
        wait_until_healthy,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "DEFAULT_K",
    "HEALTHY",
    "MAX_BODY_BYTES",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "PROTOCOLS",
    "RETRIEVE_DEFAULT_K",
    "BM25Index",
    "Document",
    "Passage",
    "RetrievalClient",
    "RetrievalError",
    "RetrievalServer",
    "passage_content",
    "split_content",
    "tokenize",
    "wait_until_healthy",
]
