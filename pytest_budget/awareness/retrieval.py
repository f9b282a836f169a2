"""Retrieval for the Search-R1-style awareness environment: BM25 over HTTP on loopback.

Three parts, plain Python + numpy + httpx + anyio (no pytest here):

* :class:`BM25Index` ranks :class:`Document` objects for a query and returns
  :class:`Passage` objects.
* :class:`RetrievalServer` serves an index over HTTP (standard library
  ``ThreadingHTTPServer``, daemon handler threads, HTTP/1.1 keep-alive) on ``127.0.0.1`` at a
  free port by default.
* :class:`RetrievalClient` (``httpx.AsyncClient``) talks to a server, and
  :func:`wait_until_healthy` polls ``/health`` until a server answers.

Scoring
    Text is tokenised by :func:`tokenize`: lower-cased, then every ``\\w+`` run is a token.  A
    document's indexed text is its title followed by its text.  With ``N`` documents, ``df(t)``
    the number of documents containing term ``t``, ``tf`` its count in document ``d``, ``|d|``
    the token count of ``d`` and ``avgdl`` the mean of ``|d|``::

        idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
        score(d) = sum over distinct query terms t of
                   idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

    (the non-negative idf of Lucene, so every document sharing a term with the query scores
    above zero).  A repeated query term counts once.  Results are ordered by score, highest
    first, ties by document id (ascending string order); documents scoring zero are never
    returned.  Same index and query, same answer.

HTTP API (JSON in and out, ``Content-Type: application/json``)
    ``GET /health``
        ``200 {"status": "ok", "documents": N}``
    ``POST /retrieve`` with body ``{"query": str, "top_k": int}`` (BAGEN's protocol)
        ``query`` as for ``/search``; ``top_k`` (``k`` is read too; optional, default
        :data:`RETRIEVE_DEFAULT_K`, 10, as BAGEN's server): an integer in ``1..MAX_K``.
        Other keys are ignored, as BAGEN's server ignores them.  Answers
        ``200 {"query": ..., "method": "bm25", "results": [{"id", "content", "score"}, ...],
        "num_results": n}``, where ``content`` is the title in double quotes, a newline, then
        the text (wiki-18's layout; :func:`passage_content`).
    ``POST /search`` with body ``{"query": str, "k": int}``
        ``query``: a string with at least one non-space character and at most
        :data:`MAX_QUERY_CHARS` characters; ``k`` (optional, default :data:`DEFAULT_K`): an
        integer in ``1..MAX_K``.  Other keys are refused.  Answers
        ``200 {"query": ..., "k": ..., "results": [{"id", "title", "text", "score"}, ...]}``
        with at most ``k`` results (fewer, possibly none, when fewer documents match).
    Errors
        Always a JSON object ``{"error": "<one line>"}``: ``400`` for a body that is not JSON,
        not an object, or has a bad ``query``/``k``/unknown key, or a bad ``Content-Length``;
        ``404`` for an unknown path; ``405`` (with ``Allow``) for a known path with the wrong
        method; ``411`` for a body without ``Content-Length`` (chunked); ``413`` for a body
        over :data:`MAX_BODY_BYTES`, except that a huge *query* is still a ``400``: a body
        of up to 1 MiB is read, and if it is a JSON object whose ``query`` string is over
        :data:`MAX_QUERY_CHARS` the answer is the same ``400`` as for any over-long query;
        ``500`` if the index itself fails.  A bad request never stops the server.  The
        server writes nothing to stderr.

Usage::

    index = BM25Index([Document("d1", "Paris", "Paris is the capital of France."), ...])
    with RetrievalServer(index) as server:          # binds 127.0.0.1:<free port>
        async with RetrievalClient(server.url) as client:
            passages = await client.search("capital of France", k=3)
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
import socketserver
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import numpy as np
import numpy.typing as npt

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


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close


def _query_too_long(query: str) -> _BadRequest:
    return _BadRequest(400, f"'query' is too long: {len(query)} characters > {MAX_QUERY_CHARS}")


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # UnicodeDecodeError and JSONDecodeError are both ValueErrors.
        raise _BadRequest(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise _BadRequest(400, f"body must be a JSON object, got {type(payload).__name__}")
    return payload


def _checked_query(payload: dict[str, Any]) -> str:
    if "query" not in payload:
        raise _BadRequest(400, "missing 'query'")
    query = payload["query"]
    if not isinstance(query, str):
        raise _BadRequest(400, f"'query' must be a string, got {type(query).__name__}")
    if not query.strip():
        raise _BadRequest(400, "'query' must not be empty or whitespace")
    if len(query) > MAX_QUERY_CHARS:
        raise _query_too_long(query)
    return query


def _checked_k(payload: dict[str, Any], key: str, default: int) -> int:
    k = payload.get(key, default)
    if isinstance(k, bool) or not isinstance(k, int):
        raise _BadRequest(400, f"'{key}' must be an integer, got {type(k).__name__}")
    if not 1 <= k <= MAX_K:
        raise _BadRequest(400, f"'{key}' must be within 1..{MAX_K}, got {k}")
    return k


def _parse_search(body: bytes) -> tuple[str, int]:
    payload = _json_object(body)
    unknown = sorted(set(payload) - {"query", "k"})
    if unknown:
        raise _BadRequest(400, f"unknown key(s) {unknown}; expected 'query' and optional 'k'")
    return _checked_query(payload), _checked_k(payload, "k", DEFAULT_K)


def _parse_retrieve(body: bytes) -> tuple[str, int]:
    """BAGEN's ``/retrieve`` request: ``{"query": str, "top_k": int}`` (``k`` also read, as
    BAGEN's server does; other keys are ignored, as there)."""
    payload = _json_object(body)
    query = _checked_query(payload)
    return query, _checked_k(payload, "top_k" if "top_k" in payload else "k", RETRIEVE_DEFAULT_K)


def passage_content(title: str, text: str) -> str:
    """A passage as one ``content`` string, wiki-18 style: ``"Title"`` then the text."""
    return f'"{title}"\n{text}'


def split_content(content: str) -> tuple[str, str]:
    """``(title, text)`` of a ``content`` string: the first line is the title (one pair of
    surrounding double quotes removed) when there is more than one line; else no title."""
    if "\n" not in content:
        return "", content
    first, text = content.split("\n", 1)
    title = first.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, text


def _refuse_huge_query(body: bytes) -> None:
    """An oversized body holding an over-long query gets that query's 400, not a 413."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return
    query = payload.get("query") if isinstance(payload, dict) else None
    if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
        raise _query_too_long(query)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.1 keeps connections alive (every reply carries Content-Length), so a client does
    # not pay a TCP handshake per query.
    protocol_version = "HTTP/1.1"
    timeout = 30  # socket timeout: an idle or stalled client cannot hold a thread forever
    # Headers and body leave in one buffered write (flushed after each request), and with
    # Nagle off a reply is never held back waiting for the client's delayed ACK (~40 ms).
    wbufsize = -1
    disable_nagle_algorithm = True
    server_version = "pytest-budget-retrieval"

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    # -- plumbing ---------------------------------------------------------------------------
    def handle_expect_100(self) -> bool:
        # wfile is buffered: push "100 Continue" out now, or curl waits a second for it.
        go_on = super().handle_expect_100()
        self.wfile.flush()
        return go_on

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no stderr noise in test runs

    def _send_json(self, status: int, payload: Mapping[str, Any], **headers: str) -> None:
        body = json.dumps(payload).encode("ascii")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error_json(self, status: int, message: str, **headers: str) -> None:
        self._send_json(status, {"error": _one_line(message)}, **headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Errors raised by the standard library itself (bad request line, header limits,
        # unsupported method) answer in JSON like ours.
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            # An unparsable request line leaves the 0.9 default, which would drop the status
            # line and headers; nobody speaks 0.9, so answer as 1.0.
            self.request_version = "HTTP/1.0"
        if message is None:
            message = self.responses.get(code, ("error", ""))[0]
        self._send_error_json(code, message)

    def _content_length(self) -> int:
        """The announced body size (0 if none); refuses what we cannot frame."""
        raw = self.headers.get("Content-Length")
        if raw is None:
            if self.headers.get("Transfer-Encoding"):
                raise _BadRequest(
                    411, "Content-Length required (chunked bodies unsupported)", close=True
                )
            return 0
        try:
            length = int(raw.strip())
        except ValueError:
            raise _BadRequest(400, f"bad Content-Length {raw!r}", close=True) from None
        if length < 0:
            raise _BadRequest(400, f"bad Content-Length {raw!r}", close=True)
        return length

    def _drain(self, length: int, *, keep: bool = False) -> bytes | None:
        """Read ``length`` body bytes (kept only if ``keep``); None if it is too much to
        bother or the client stopped sending."""
        if length > _DRAIN_LIMIT:
            return None
        chunks: list[bytes] = []
        while length > 0:
            chunk = self.rfile.read(min(length, 65536))
            if not chunk:
                return None
            if keep:
                chunks.append(chunk)
            length -= len(chunk)
        return b"".join(chunks)

    def _read_body(self) -> bytes:
        length = self._content_length()
        if length > MAX_BODY_BYTES:
            body = self._drain(length, keep=True)
            if body is not None:
                _refuse_huge_query(body)
            raise _BadRequest(
                413, f"body too large: {length} bytes > {MAX_BODY_BYTES}", close=body is None
            )
        return self.rfile.read(length) if length else b""

    def _skip_body(self) -> None:
        """Consume an unused body so the next request on this connection parses cleanly."""
        length = self._content_length()
        if length and self._drain(length) is None:
            self.close_connection = True

    # -- routing ----------------------------------------------------------------------------
    def _dispatch(self) -> None:
        try:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            route = _ROUTES.get(path)
            if route is None:
                self._skip_body()
                raise _BadRequest(
                    404,
                    f"unknown path {path!r}; endpoints: GET /health, POST /retrieve, POST /search",
                )
            method, handler = route
            if self.command != method:
                self._skip_body()
                self._send_error_json(
                    405, f"{self.command} not allowed on {path}; use {method}", Allow=method
                )
                return
            handler(self)
        except _BadRequest as exc:
            if exc.close:
                self.close_connection = True
            self._send_error_json(exc.status, exc.message)
        except OSError:
            raise  # the connection itself failed; nothing can be answered on it
        except Exception as exc:  # a bug in the index must not take the server down
            self.close_connection = True
            self._send_error_json(500, f"internal error: {type(exc).__name__}: {exc}")

    def _health(self) -> None:
        self._skip_body()
        self._send_json(200, {"status": "ok", "documents": len(self.server.index)})

    def _search(self) -> None:
        query, k = _parse_search(self._read_body())
        results = self.server.index.search(query, k)
        self._send_json(
            200, {"query": query, "k": k, "results": [hit.as_dict() for hit in results]}
        )

    def _retrieve(self) -> None:
        query, k = _parse_retrieve(self._read_body())
        results = [
            {"id": hit.id, "content": passage_content(hit.title, hit.text), "score": hit.score}
            for hit in self.server.index.search(query, k)
        ]
        self._send_json(
            200,
            {"query": query, "method": "bm25", "results": results, "num_results": len(results)},
        )

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _dispatch


_ROUTES: dict[str, tuple[str, Callable[[_Handler], None]]] = {
    "/health": ("GET", _Handler._health),
    "/search": ("POST", _Handler._search),
    "/retrieve": ("POST", _Handler._retrieve),
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many clients connect at once.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], index: BM25Index) -> None:
        # Set before binding: TCPServer.__init__ creates the socket from this attribute.
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.index = index
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._workers: list[threading.Thread] = []
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind also resolves the host's FQDN (a DNS call we do not need).
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="retrieval-http-handler",
            daemon=True,
        )
        with self._lock:
            self._connections.add(request)
            self._workers = [t for t in self._workers if t.is_alive()]
            self._workers.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-reply is not worth a traceback on stderr

    def close_connections(self, timeout: float) -> None:
        """End keep-alive connections so a stopped server really stops answering."""
        with self._lock:
            connections, workers = list(self._connections), list(self._workers)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler
        for thread in workers:
            thread.join(timeout)


class RetrievalServer:
    """Serve a :class:`BM25Index` over HTTP in a background thread (API: module docstring).

    ``start()`` binds (``port=0``: a free port), starts serving and returns the base URL;
    ``stop()`` stops accepting, closes open connections and the listening socket.  Also a
    context manager: ``with RetrievalServer(index) as server: ... server.url ...``.
    """

    def __init__(self, index: BM25Index, host: str = "127.0.0.1", port: int = 0) -> None:
        if not isinstance(index, BM25Index):
            raise TypeError(f"expected BM25Index, got {type(index).__name__}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer within 0..65535, got {port!r}")
        self.index = index
        self.host = host
        self.port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("retrieval server is not running")
        host, port = self._server.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> str:
        if self._server is not None:
            raise RuntimeError("retrieval server already started")
        server = _Server((self.host, self.port), self.index)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="retrieval-http-server",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self, timeout: float = 5.0) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()  # no accept after this returns
        server.server_close()
        server.close_connections(timeout)
        if thread is not None:
            thread.join(timeout)

    def __enter__(self) -> RetrievalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"RetrievalServer({where}, documents={len(self.index)})"


# -- the client -------------------------------------------------------------------------------


class RetrievalError(ValueError):
    """A retrieval call failed; the message is one line naming the URL and the cause."""

    def __init__(self, url: str, reason: str, *, status: int | None = None) -> None:
        self.url = url
        self.reason = _one_line(reason)
        self.status = status
        super().__init__(f"retrieval service {url}: {self.reason}")


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _server_reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return response.text.strip() or response.reason_phrase or "no body"


def _retrieved(item: Any, rank: int) -> Passage:
    """One ``/retrieve`` result: ``{"id"?, "content": str, "score": number}`` (a result with
    ``title`` and ``text`` instead of ``content`` is read as well)."""
    if not isinstance(item, dict):
        raise ValueError(f"result is not an object: {_one_line(repr(item), 80)}")
    content = item.get("content")
    if isinstance(content, str):
        title, text = split_content(content)
    elif isinstance(item.get("title"), str) and isinstance(item.get("text"), str):
        title, text = item["title"], item["text"]
    else:
        raise ValueError("result field 'content' is not a string")
    raw_id = item.get("id")
    if raw_id is None:
        doc_id = f"doc_{rank}"
    elif isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
        doc_id = str(raw_id)
    else:
        raise ValueError("result field 'id' is not a string")
    score = item.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ValueError("result field 'score' is not a number")
    return Passage(doc_id, title, text, float(score))


def _passage(item: Any) -> Passage:
    if not isinstance(item, dict):
        raise ValueError(f"result is not an object: {item!r}")
    fields = {name: item.get(name) for name in ("id", "title", "text")}
    for name, value in fields.items():
        if not isinstance(value, str):
            raise ValueError(f"result field {name!r} is not a string")
    score = item.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ValueError("result field 'score' is not a number")
    return Passage(str(fields["id"]), str(fields["title"]), str(fields["text"]), float(score))


def _split_endpoint(url: str) -> tuple[str, str | None]:
    """``(base URL, protocol)``: a URL ending in ``/retrieve`` or ``/search`` names it."""
    base = url.rstrip("/")
    for protocol in ("retrieve", "search"):
        if base.endswith("/" + protocol):
            return base[: -len(protocol) - 1], protocol
    return base, None


class RetrievalClient:
    """Async client of a :class:`RetrievalServer` (or anything speaking its API).

    ``protocol`` picks the search endpoint: ``"retrieve"`` is BAGEN's ``POST /retrieve``
    ``{"query", "top_k"}``; ``"search"`` the older ``POST /search`` ``{"query", "k"}``;
    ``"auto"`` (the default) asks ``/retrieve`` and, if the server answers 404 there, uses
    ``/search`` from then on.  A ``base_url`` ending in ``/retrieve`` or ``/search`` names
    the protocol itself.

    Use as ``async with RetrievalClient(url) as client:`` or call :meth:`aclose`.  Every
    failure (cannot connect, timeout, non-200 status, malformed answer) raises
    :class:`RetrievalError`.
    """

    def __init__(self, base_url: str, *, timeout: float = 10.0, protocol: str = "auto") -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if protocol not in ("auto", *PROTOCOLS):
            raise ValueError(f"protocol must be 'auto', 'retrieve' or 'search', got {protocol!r}")
        base_url, named = _split_endpoint(base_url)
        self.protocol = named or protocol
        self.base_url = base_url
        self.timeout = float(timeout)
        # Proxy settings from the environment must not capture loopback traffic.
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout), trust_env=not _is_loopback(self.base_url)
        )

    async def __aenter__(self) -> RetrievalClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(
        self, method: str, path: str, payload: Any = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        url = self.base_url + path
        limit = self.timeout if timeout is None else timeout
        try:
            response = await self._http.request(
                method, url, json=payload, timeout=httpx.Timeout(limit)
            )
        except httpx.TimeoutException:
            raise RetrievalError(url, f"timed out after {limit:g} s") from None
        except httpx.HTTPError as exc:
            detail = str(exc) or "no detail"
            raise RetrievalError(url, f"cannot connect ({type(exc).__name__}: {detail})") from None
        if response.status_code != 200:
            raise RetrievalError(
                url,
                f"HTTP {response.status_code}: {_server_reason(response)}",
                status=response.status_code,
            )
        try:
            body = response.json()
        except ValueError:
            snippet = _one_line(response.text, 80)
            raise RetrievalError(url, f"malformed JSON in the response: {snippet!r}") from None
        if not isinstance(body, dict):
            raise RetrievalError(url, f"malformed response: expected an object, got {body!r}")
        return body

    async def search(self, query: str, k: int = DEFAULT_K) -> list[Passage]:
        """The server's top ``k`` passages for ``query`` (the server validates both)."""
        if self.protocol != "search":
            try:
                return await self._retrieve(query, k)
            except RetrievalError as exc:
                if self.protocol == "retrieve" or exc.status != 404:
                    raise
            self.protocol = "search"  # an older server: no /retrieve endpoint
        body = await self._call("POST", "/search", {"query": query, "k": k})
        results = body.get("results")
        try:
            if not isinstance(results, list):
                raise ValueError("'results' is not a list")
            return [_passage(item) for item in results]
        except ValueError as exc:
            raise RetrievalError(self.base_url + "/search", f"malformed response: {exc}") from None

    async def _retrieve(self, query: str, k: int) -> list[Passage]:
        body = await self._call("POST", "/retrieve", {"query": query, "top_k": k})
        results = body.get("results")
        try:
            if not isinstance(results, list):
                raise ValueError("'results' is not a list")
            return [_retrieved(item, rank) for rank, item in enumerate(results[:k], start=1)]
        except ValueError as exc:
            raise RetrievalError(
                self.base_url + "/retrieve", f"malformed response: {exc}"
            ) from None

    async def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        """The ``/health`` body, e.g. ``{"status": "ok", "documents": 5000}``."""
        return await self._call("GET", "/health", timeout=timeout)


async def wait_until_healthy(
    base_url: str, timeout: float = 5.0, *, interval: float = 0.05
) -> dict[str, Any]:
    """Poll ``GET /health`` until its ``status`` is ``"ok"`` (ours) or ``"healthy"`` (BAGEN's
    server); returns that body.

    Raises :class:`RetrievalError` naming the URL and the last failure if ``timeout`` seconds
    pass first (a user-supplied URL that is wrong fails here, with a readable reason).
    """
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    deadline = anyio.current_time() + timeout
    last = "no attempt made"
    async with RetrievalClient(base_url, timeout=timeout) as client:
        while True:
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                break
            try:
                body = await client.health(timeout=max(0.05, min(1.0, remaining)))
            except RetrievalError as exc:
                last = exc.reason
            else:
                if body.get("status") in HEALTHY:
                    return body
                last = f"unhealthy answer {_one_line(json.dumps(body), 120)}"
            await anyio.sleep(min(interval, max(0.0, deadline - anyio.current_time())))
    raise RetrievalError(
        client.base_url + "/health", f"not healthy within {timeout:g} s; last error: {last}"
    )
