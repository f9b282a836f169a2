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
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from pytest_budget.awareness.retrieval._index import (
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
    _one_line,
    tokenize,
)
from pytest_budget.awareness.retrieval._server import (
    RetrievalServer,
    passage_content,
    split_content,
)

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
    last = "no attempt made"
    async with RetrievalClient(base_url, timeout=timeout) as client:
        # The clock starts with the client, and one attempt is always made: on a loaded
        # machine (or a loop busy with other cells) making the client can take seconds.
        deadline = anyio.current_time() + timeout
        attempted = False
        while not attempted or anyio.current_time() < deadline:
            remaining = deadline - anyio.current_time()
            attempted = True
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
