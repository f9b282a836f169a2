"""BM25 retrieval and its HTTP service on loopback (pytest_budget/awareness/retrieval/_client.py).

The server is real: it binds 127.0.0.1 at a free port and is queried over TCP with the
package's client, with raw httpx and, for framing errors httpx will not produce, with a raw
socket.
"""

from __future__ import annotations

import json
import math
import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from scripted_server import Reply, ScriptedServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget.awareness.retrieval._client import (
    DEFAULT_K,
    MAX_BODY_BYTES,
    MAX_K,
    MAX_QUERY_CHARS,
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

# Token counts below include the title (the index reads "title\ntext").
#   d1 "Cat"  + "The cat sat."            -> cat the cat sat                 |d1| = 4
#   d2 "Dog"  + "The dog sat on the mat." -> dog the dog sat on the mat      |d2| = 7
#   d3 "Bird" + "A bird!"                 -> bird a bird                     |d3| = 3
TINY = [
    Document("d1", "Cat", "The cat sat."),
    Document("d2", "Dog", "The dog sat on the mat."),
    Document("d3", "Bird", "A bird!"),
]
N, AVGDL = 3, (4 + 7 + 3) / 3


def by_hand(idf: float, tf: int, length: int, k1: float = 1.5, b: float = 0.75) -> float:
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / AVGDL))


def idf_by_hand(df: int) -> float:
    return math.log(1 + (N - df + 0.5) / (df + 0.5))


CORPUS = [
    Document("paris", "Paris", "Paris is the capital and largest city of France."),
    Document("france", "France", "France is a country in Western Europe; its capital is Paris."),
    Document("berlin", "Berlin", "Berlin is the capital of Germany, on the river Spree."),
    Document("spree", "Spree", "The Spree is a river that flows through Berlin."),
    Document("seine", "Seine", "The Seine is a river that flows through Paris."),
    Document("eiffel", "Eiffel Tower", "The Eiffel Tower was designed by Gustave Eiffel's firm."),
    Document("gustave", "Gustave Eiffel", "Gustave Eiffel was a French civil engineer."),
    Document("kyoto", "Kyoto", "Kyōto was the imperial capital of Japan for a millennium."),
]


# -- tokenisation and BM25 --------------------------------------------------------------------


def test_tokenize_lowercases_and_splits_on_word_runs() -> None:
    assert tokenize("The Eiffel-Tower's 2nd floor, KYŌTO!") == [
        "the",
        "eiffel",
        "tower",
        "s",
        "2nd",
        "floor",
        "kyōto",
    ]
    assert tokenize("  ...  ") == []


def test_idf_matches_the_formula() -> None:
    index = BM25Index(TINY)
    assert index.idf("cat") == pytest.approx(math.log(1 + 2.5 / 1.5), rel=1e-12)
    assert index.idf("the") == pytest.approx(math.log(1 + 1.5 / 2.5), rel=1e-12)
    assert index.idf("zebra") == 0.0
    assert index.avgdl == pytest.approx(14 / 3)
    assert len(index) == 3


def test_single_term_score_worked_by_hand() -> None:
    # "cat": df = 1; only d1 contains it, twice (title + text), |d1| = 4.
    hits = BM25Index(TINY).search("cat", k=5)
    assert [h.id for h in hits] == ["d1"]
    expected = (
        math.log(1 + (3 - 1 + 0.5) / (1 + 0.5)) * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 4 / (14 / 3)))
    )
    assert hits[0].score == pytest.approx(expected, rel=1e-12)
    assert hits[0] == Passage("d1", "Cat", "The cat sat.", hits[0].score)


def test_multi_term_score_worked_by_hand() -> None:
    # "the sat": both terms have df = 2 (d1, d2).  d1: tf 1 + 1, |d1| = 4; d2: the x2, sat x1.
    hits = BM25Index(TINY).search("the sat", k=5)
    idf = idf_by_hand(2)
    d1 = by_hand(idf, 1, 4) + by_hand(idf, 1, 4)
    d2 = by_hand(idf, 2, 7) + by_hand(idf, 1, 7)
    assert d1 > d2  # the shorter document wins despite fewer "the"s
    assert [h.id for h in hits] == ["d1", "d2"]  # d3 shares no term: excluded, not score 0
    assert hits[0].score == pytest.approx(d1, rel=1e-12)
    assert hits[1].score == pytest.approx(d2, rel=1e-12)


def test_parameters_change_the_score_as_the_formula_says() -> None:
    hits = BM25Index(TINY, k1=1.2, b=0.0).search("dog", k=1)
    # b = 0: no length normalisation; tf = 2 in d2.
    expected = idf_by_hand(1) * 2 * 2.2 / (2 + 1.2)
    assert hits[0].id == "d2"
    assert hits[0].score == pytest.approx(expected, rel=1e-12)
    hits = BM25Index(TINY, k1=0.0).search("dog", k=1)
    assert hits[0].score == pytest.approx(idf_by_hand(1), rel=1e-12)  # k1 = 0: presence only


def test_query_is_case_insensitive_and_repeated_terms_count_once() -> None:
    index = BM25Index(TINY)
    assert index.search("CAT") == index.search("cat")
    assert index.search("cat cat cat, CAT!") == index.search("cat")


def test_unknown_terms_and_empty_queries_return_nothing() -> None:
    index = BM25Index(TINY)
    assert index.search("zebra") == []
    assert index.search("") == []
    assert index.search("?!") == []
    assert index.search("zebra cat") == index.search("cat")
    assert BM25Index([]).search("cat") == []


def test_ranking_is_by_score_then_id() -> None:
    docs = [
        Document("b", "", "apple banana"),
        Document("c", "", "apple banana"),
        Document("a", "", "apple banana"),
        Document("z", "", "apple apple"),
        Document("y", "", "cherry"),
    ]
    index = BM25Index(docs)
    hits = index.search("apple", k=10)
    assert [h.id for h in hits] == ["z", "a", "b", "c"]
    assert hits[1].score == hits[2].score == hits[3].score  # exact ties
    assert hits[0].score > hits[1].score
    # A cut-off inside a tie keeps the smallest ids.
    assert [h.id for h in index.search("apple", k=2)] == ["z", "a"]
    assert [h.id for h in index.search("apple banana", k=2)] == ["a", "b"]
    assert [h.id for h in index.search("apple banana", k=1)] == ["a"]


def test_search_is_deterministic_and_independent_of_document_order() -> None:
    shuffled = list(CORPUS)
    random.Random(7).shuffle(shuffled)
    first, second = BM25Index(CORPUS), BM25Index(shuffled)
    for query in ("capital of France", "river through Berlin", "Eiffel engineer", "the"):
        assert first.search(query, 8) == second.search(query, 8) == first.search(query, 8)


def test_results_are_sorted_and_limited_to_k() -> None:
    index = BM25Index(CORPUS)
    hits = index.search("the capital river", k=4)
    assert len(hits) == 4
    assert all(h.score > 0 for h in hits)
    keys = [(-h.score, h.id) for h in hits]
    assert keys == sorted(keys)
    assert index.search("the capital river", k=50)[:4] == hits


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_search_refuses_a_bad_k(k: Any) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        BM25Index(TINY).search("cat", k)


def test_index_validates_its_input() -> None:
    with pytest.raises(ValueError, match="duplicate document id 'd1'"):
        BM25Index([*TINY, Document("d1", "again", "again")])
    with pytest.raises(TypeError, match="expected Document"):
        BM25Index([("d1", "t", "x")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="k1"):
        BM25Index(TINY, k1=-1)
    with pytest.raises(ValueError, match="b must be"):
        BM25Index(TINY, b=1.5)


# -- the server over loopback -----------------------------------------------------------------


@pytest.fixture(scope="module")
def index() -> BM25Index:
    return BM25Index(CORPUS)


@pytest.fixture(scope="module")
def server(index: BM25Index) -> Iterator[RetrievalServer]:
    with RetrievalServer(index) as running:
        yield running


@pytest.fixture
def http(server: RetrievalServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, trust_env=False) as client:
        yield client


def search_with_client(
    url: str, query: str, k: int = DEFAULT_K, protocol: str = "search"
) -> list[Passage]:
    """One search with a fresh client (the older ``/search`` protocol unless told)."""

    async def go() -> list[Passage]:
        async with RetrievalClient(url, protocol=protocol) as client:
            return await client.search(query, k)

    return anyio.run(go)


def raw_exchange(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes on a fresh socket and read one response (the server closes after errors)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed before a response: {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk
            body += chunk
    return status, headers, body


def assert_still_serving(http: httpx.Client, documents: int = len(CORPUS)) -> None:
    response = http.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "documents": documents}


def test_server_binds_loopback_at_a_free_port(server: RetrievalServer) -> None:
    assert server.running
    assert server.url.startswith("http://127.0.0.1:")
    assert int(server.url.rsplit(":", 1)[1]) > 0
    assert server.url in repr(server)


def test_health(http: httpx.Client) -> None:
    response = http.get("/health")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": "ok", "documents": len(CORPUS)}
    assert http.get("/health?probe=1").json()["status"] == "ok"
    assert http.get("/health/").json()["status"] == "ok"


def test_client_health_and_search_match_the_index(
    server: RetrievalServer, index: BM25Index
) -> None:
    async def go() -> tuple[dict[str, Any], list[Passage], list[Passage]]:
        async with RetrievalClient(server.url) as client:
            health = await client.health()
            return health, await client.search("capital of France", 3), await client.search("x")

    health, hits, none = anyio.run(go)
    assert health == {"status": "ok", "documents": len(CORPUS)}
    assert hits == index.search("capital of France", 3)  # scores survive JSON exactly
    assert {h.id for h in hits[:2]} == {"france", "paris"}
    assert none == []


def test_raw_http_search(http: httpx.Client, index: BM25Index) -> None:
    response = http.post("/search", json={"query": "river through Berlin", "k": 2})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["query"] == "river through Berlin"
    assert body["k"] == 2
    assert body["results"] == [h.as_dict() for h in index.search("river through Berlin", 2)]
    assert set(body["results"][0]) == {"id", "title", "text", "score"}


def test_k_defaults_and_bounds(http: httpx.Client) -> None:
    body = http.post("/search", json={"query": "the"}).json()
    assert body["k"] == DEFAULT_K
    assert len(body["results"]) == DEFAULT_K
    assert len(http.post("/search", json={"query": "the", "k": 1}).json()["results"]) == 1
    every = http.post("/search", json={"query": "the", "k": MAX_K}).json()["results"]
    assert 1 < len(every) < MAX_K  # fewer matches than k: just the matches


def test_unicode_and_edge_queries(http: httpx.Client) -> None:
    hits = http.post("/search", json={"query": "KYŌTO", "k": 1}).json()["results"]
    assert [h["id"] for h in hits] == ["kyoto"]
    longest = "capital " * (MAX_QUERY_CHARS // 8)
    assert len(longest) == MAX_QUERY_CHARS
    assert http.post("/search", json={"query": longest}).status_code == 200
    # A lone surrogate is legal JSON; it must be echoed back, not crash the encoder.
    response = http.post("/search", content=b'{"query": "\\ud800 paris"}')
    assert response.status_code == 200
    assert response.json()["query"] == "\ud800 paris"


def test_http11_keep_alive_serves_several_requests_on_one_connection(
    server: RetrievalServer,
) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    body = json.dumps({"query": "paris", "k": 1}).encode()
    request = (
        b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request + request)  # pipelined
        data = b""
        while data.count(b"HTTP/1.1 200 OK") < 2 or not data.endswith(b"}]}"):
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert data.count(b'"id": "paris"') == 2


BAD_SEARCH_BODIES = [
    pytest.param(b"not json", "body is not valid JSON", id="not-json"),
    pytest.param(b"", "body is not valid JSON", id="empty-body"),
    pytest.param(b"\xff\xfe\x00garbage", "body is not valid JSON", id="not-utf8"),
    pytest.param(b"[" * 50_000, "body is not valid JSON", id="deeply-nested"),
    pytest.param(b'["paris"]', "body must be a JSON object, got list", id="list"),
    pytest.param(b'"paris"', "body must be a JSON object, got str", id="string"),
    pytest.param(b"{}", "missing 'query'", id="missing-query"),
    pytest.param(b'{"k": 2}', "missing 'query'", id="only-k"),
    pytest.param(b'{"query": null}', "'query' must be a string, got NoneType", id="null-query"),
    pytest.param(b'{"query": 5}', "'query' must be a string, got int", id="int-query"),
    pytest.param(b'{"query": ["a"]}', "'query' must be a string, got list", id="list-query"),
    pytest.param(b'{"query": ""}', "'query' must not be empty", id="empty-query"),
    pytest.param(b'{"query": " \\n\\t "}', "'query' must not be empty", id="space-query"),
    pytest.param(
        json.dumps({"query": "a" * (MAX_QUERY_CHARS + 1)}).encode(),
        f"'query' is too long: {MAX_QUERY_CHARS + 1} characters > {MAX_QUERY_CHARS}",
        id="long-query",
    ),
    pytest.param(b'{"query": "a", "k": "3"}', "'k' must be an integer, got str", id="str-k"),
    pytest.param(b'{"query": "a", "k": 3.0}', "'k' must be an integer, got float", id="float-k"),
    pytest.param(b'{"query": "a", "k": true}', "'k' must be an integer, got bool", id="bool-k"),
    pytest.param(b'{"query": "a", "k": null}', "'k' must be an integer, got NoneType", id="null-k"),
    pytest.param(b'{"query": "a", "k": NaN}', "'k' must be an integer, got float", id="nan-k"),
    pytest.param(b'{"query": "a", "k": 0}', f"'k' must be within 1..{MAX_K}, got 0", id="k-0"),
    pytest.param(b'{"query": "a", "k": -3}', "'k' must be within", id="k-negative"),
    pytest.param(
        f'{{"query": "a", "k": {MAX_K + 1}}}'.encode(), "'k' must be within", id="k-too-big"
    ),
    pytest.param(b'{"query": "a", "top_k": 2}', "unknown key(s) ['top_k']", id="unknown-key"),
]


@pytest.mark.parametrize(("body", "message"), BAD_SEARCH_BODIES)
def test_bad_search_bodies_get_400_and_the_server_keeps_answering(
    http: httpx.Client, body: bytes, message: str
) -> None:
    response = http.post("/search", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    error = response.json()
    assert set(error) == {"error"}
    assert message in error["error"]
    assert "\n" not in error["error"]
    assert_still_serving(http)  # on the same keep-alive connection


@pytest.mark.parametrize("chars", [MAX_BODY_BYTES, 500_000, 1_000_000])
def test_huge_query_gets_400_even_over_the_body_limit(http: httpx.Client, chars: int) -> None:
    # Bodies of up to 1 MiB are read, so an over-long query is a 400 whatever its size.
    body = json.dumps({"query": "paris " * (chars // 6), "k": 3}).encode()
    assert len(body) > MAX_BODY_BYTES
    response = http.post("/search", content=body)
    assert response.status_code == 400
    query_chars = 6 * (chars // 6)
    assert response.json() == {
        "error": f"'query' is too long: {query_chars} characters > {MAX_QUERY_CHARS}"
    }
    assert_still_serving(http)  # the body was read: the keep-alive connection goes on


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"x" * (MAX_BODY_BYTES + 1), id="not-json"),
        pytest.param(b'{"query": "paris"}' + b" " * MAX_BODY_BYTES, id="short-query-padded"),
        pytest.param(b"[" * (MAX_BODY_BYTES + 1), id="deeply-nested"),
    ],
)
def test_oversized_body_without_a_huge_query_gets_413(http: httpx.Client, body: bytes) -> None:
    response = http.post("/search", content=body)
    assert response.status_code == 413
    assert response.json() == {"error": f"body too large: {len(body)} bytes > {MAX_BODY_BYTES}"}
    assert_still_serving(http)


def test_huge_query_over_the_read_limit_gets_413_and_a_close(
    server: RetrievalServer, http: httpx.Client
) -> None:
    body = json.dumps({"query": "a" * (2 * 1024 * 1024)}).encode()
    head = f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    status, headers, answer = raw_exchange(server.url, head.encode() + body[:1000])
    assert status == 413 and headers["connection"] == "close"
    assert json.loads(answer) == {"error": f"body too large: {len(body)} bytes > {MAX_BODY_BYTES}"}
    assert_still_serving(http)


def test_huge_announced_body_gets_413_without_being_read(
    server: RetrievalServer, http: httpx.Client
) -> None:
    status, headers, body = raw_exchange(
        server.url, b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n"
    )
    assert status == 413
    assert headers["connection"] == "close"
    assert json.loads(body) == {"error": f"body too large: 999999999 bytes > {MAX_BODY_BYTES}"}
    assert_still_serving(http)


@pytest.mark.parametrize(
    ("request_bytes", "status", "message"),
    [
        pytest.param(
            b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            400,
            "bad Content-Length 'abc'",
            id="non-numeric-length",
        ),
        pytest.param(
            b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            400,
            "bad Content-Length '-5'",
            id="negative-length",
        ),
        pytest.param(
            b"POST /search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'10\r\n{"query": "ab"}\r\n0\r\n\r\n',
            411,
            "Content-Length required",
            id="chunked",
        ),
        pytest.param(b"GARBAGE\r\n\r\n", 400, "Bad request", id="bad-request-line"),
        pytest.param(
            b"BREW /search HTTP/1.1\r\nHost: x\r\n\r\n", 501, "Unsupported method", id="brew"
        ),
    ],
)
def test_framing_errors_answer_json_and_close(
    server: RetrievalServer, http: httpx.Client, request_bytes: bytes, status: int, message: str
) -> None:
    got_status, headers, body = raw_exchange(server.url, request_bytes)
    assert got_status == status
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert message in json.loads(body)["error"]
    assert_still_serving(http)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
@pytest.mark.parametrize("path", ["/", "/nope", "/search/more", "/v1/search"])
def test_unknown_path_gets_404(http: httpx.Client, method: str, path: str) -> None:
    response = http.request(method, path, content=b'{"query": "x"}')
    assert response.status_code == 404
    assert response.json() == {
        "error": f"unknown path {path.rstrip('/') or '/'!r}; endpoints: GET /health, "
        "POST /retrieve, POST /search"
    }
    assert_still_serving(http)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/search", "POST"),
        ("PUT", "/search", "POST"),
        ("DELETE", "/search", "POST"),
        ("PATCH", "/search", "POST"),
        ("OPTIONS", "/search", "POST"),
        ("POST", "/health", "GET"),
        ("PUT", "/health", "GET"),
    ],
)
def test_wrong_method_gets_405(http: httpx.Client, method: str, path: str, allowed: str) -> None:
    response = http.request(method, path, content=b'{"query": "paris"}')
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json() == {"error": f"{method} not allowed on {path}; use {allowed}"}
    assert_still_serving(http)


def test_head_gets_405_without_a_body(http: httpx.Client) -> None:
    response = http.head("/health")
    assert response.status_code == 405
    assert response.content == b""
    assert_still_serving(http)


def test_concurrent_clients(server: RetrievalServer, index: BM25Index) -> None:
    queries = ["capital", "river", "Eiffel", "Paris", "Berlin", "the", "Japan", "engineer"] * 4
    results: dict[int, list[Passage]] = {}

    async def go() -> None:
        async with RetrievalClient(server.url) as client:

            async def one(i: int) -> None:
                results[i] = await client.search(queries[i], 2)

            async with anyio.create_task_group() as group:
                for i in range(len(queries)):
                    group.start_soon(one, i)

    anyio.run(go)
    assert all(results[i] == index.search(q, 2) for i, q in enumerate(queries))


def test_expect_100_continue_is_answered_at_once(server: RetrievalServer) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    body = b'{"query": "paris", "k": 1}'
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /search HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        interim = sock.recv(65536)  # would time out (5 s) if the 100 sat in the buffer
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(body)
        data = interim
        while not data.endswith(b"}]}"):
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert b"HTTP/1.1 200 OK" in data
    assert b'"id": "paris"' in data


class BrokenIndex(BM25Index):
    def search(self, query: str, k: int = DEFAULT_K) -> list[Passage]:
        if query == "boom":
            raise RuntimeError("index exploded")
        return super().search(query, k)


def test_an_index_failure_is_a_500_not_a_dead_server() -> None:
    with RetrievalServer(BrokenIndex(TINY)) as server:
        with httpx.Client(base_url=server.url, trust_env=False) as http:
            response = http.post("/search", json={"query": "boom"})
            assert response.status_code == 500
            assert response.json() == {"error": "internal error: RuntimeError: index exploded"}
            assert response.headers["connection"] == "close"
            assert_still_serving(http, documents=3)
            assert http.post("/search", json={"query": "cat"}).json()["results"][0]["id"] == "d1"


def test_no_request_logging(server: RetrievalServer, capfd: pytest.CaptureFixture[str]) -> None:
    with httpx.Client(base_url=server.url, trust_env=False) as http:
        http.get("/health")
        http.post("/search", content=b"nope")
        http.get("/missing")
    raw_exchange(server.url, b"GARBAGE\r\n\r\n")
    out, err = capfd.readouterr()
    assert out == err == ""


# -- lifecycle ----------------------------------------------------------------------------------


def test_start_stop_restart() -> None:
    server = RetrievalServer(BM25Index(TINY))
    assert not server.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    assert "stopped" in repr(server)
    url = server.start()
    try:
        assert url == server.url
        with pytest.raises(RuntimeError, match="already started"):
            server.start()
        assert anyio.run(wait_until_healthy, url) == {"status": "ok", "documents": 3}
    finally:
        server.stop()
    server.stop()  # idempotent
    assert not server.running
    again = server.start()
    try:
        assert [h.id for h in search_with_client(again, "dog")] == ["d2"]
    finally:
        server.stop()


def test_server_validates_arguments() -> None:
    with pytest.raises(TypeError, match="expected BM25Index"):
        RetrievalServer(TINY)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="port"):
        RetrievalServer(BM25Index(TINY), port=70_000)


def test_stopped_server_closes_kept_alive_connections() -> None:
    # A client holding a keep-alive connection must not keep getting answers after stop().
    async def go() -> None:
        with RetrievalServer(BM25Index(TINY)) as server:
            url = server.url
            async with RetrievalClient(url) as client:
                assert [h.id for h in await client.search("cat")] == ["d1"]
                server.stop()
                with pytest.raises(RetrievalError) as caught:
                    await client.search("cat")
        message = str(caught.value)
        assert message.startswith(f"retrieval service {url}/retrieve: ")
        assert "\n" not in message

    anyio.run(go)


# -- client errors ----------------------------------------------------------------------------


def stopped_url() -> str:
    server = RetrievalServer(BM25Index(TINY))
    url = server.start()
    server.stop()
    return url


def test_client_on_a_stopped_server_names_the_url() -> None:
    url = stopped_url()
    with pytest.raises(RetrievalError, match="cannot connect") as caught:
        search_with_client(url, "cat")
    assert caught.value.url == f"{url}/search"
    assert url in str(caught.value)
    assert caught.value.status is None
    assert isinstance(caught.value, ValueError)


def test_client_reports_the_servers_error_text(server: RetrievalServer) -> None:
    with pytest.raises(RetrievalError) as caught:
        search_with_client(server.url, "   ")
    assert str(caught.value) == (
        f"retrieval service {server.url}/search: HTTP 400: 'query' must not be empty or whitespace"
    )
    assert caught.value.status == 400
    with pytest.raises(RetrievalError, match="HTTP 400: 'k' must be within"):
        search_with_client(server.url, "paris", k=MAX_K + 1)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(Reply(body=b"<html>oops</html>"), "malformed JSON in the response", id="html"),
        pytest.param(Reply(json=[1, 2]), "malformed response: expected an object", id="list"),
        pytest.param(Reply(json={"results": "x"}), "'results' is not a list", id="results-str"),
        pytest.param(Reply(json={}), "'results' is not a list", id="no-results"),
        pytest.param(
            Reply(json={"results": [{"id": "a", "title": "t", "score": 1.0}]}),
            "result field 'text' is not a string",
            id="missing-field",
        ),
        pytest.param(
            Reply(json={"results": [{"id": "a", "title": "t", "text": "x", "score": "1"}]}),
            "result field 'score' is not a number",
            id="str-score",
        ),
        pytest.param(Reply(json={"results": [7]}), "result is not an object", id="int-result"),
        pytest.param(
            Reply(status=500, body=b"boom\nwith two lines"),
            "HTTP 500: boom with two lines",
            id="500-text",
        ),
        pytest.param(Reply(status=503, json={"error": "busy"}), "HTTP 503: busy", id="503-json"),
    ],
)
def test_client_refuses_malformed_answers(reply: Reply, message: str) -> None:
    with ScriptedServer([reply]) as fake:
        url = fake.url
        with pytest.raises(RetrievalError) as caught:
            search_with_client(url, "paris")
    text = str(caught.value)
    assert text.startswith(f"retrieval service {url}/search: ")
    assert message in text
    assert "\n" not in text


def test_client_accepts_a_well_formed_foreign_answer() -> None:
    answer = {"results": [{"id": "a", "title": "T", "text": "x", "score": 2}], "extra": 1}
    with ScriptedServer([Reply(json=answer)]) as fake:
        assert search_with_client(fake.url, "q") == [Passage("a", "T", "x", 2.0)]
        assert fake.requests[0].path == "/search"
        assert fake.requests[0].json == {"query": "q", "k": DEFAULT_K}


def test_client_timeout() -> None:
    async def go(url: str) -> None:
        async with RetrievalClient(url, timeout=0.05) as client:
            await client.search("paris")

    with ScriptedServer([Reply(json={"results": []}, delay=0.2)]) as fake:
        with pytest.raises(RetrievalError, match=r"/retrieve: timed out after 0\.05 s"):
            anyio.run(go, fake.url)


@pytest.mark.parametrize("url", ["", "localhost:8000", "ftp://example.org", "http://"])
def test_client_refuses_a_bad_base_url(url: str) -> None:
    with pytest.raises(ValueError, match="base_url must be an http"):
        RetrievalClient(url)


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan])
def test_client_refuses_a_bad_timeout(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout must be"):
        RetrievalClient("http://127.0.0.1:1", timeout=timeout)


def test_wait_until_healthy_returns_the_health_body(server: RetrievalServer) -> None:
    assert anyio.run(wait_until_healthy, server.url + "/") == {
        "status": "ok",
        "documents": len(CORPUS),
    }


def test_wait_until_healthy_always_makes_one_attempt(server: RetrievalServer) -> None:
    """A deadline shorter than making the client (a loaded machine) still gets one request:
    a server that answers is healthy, whatever the timeout."""
    assert anyio.run(wait_until_healthy, server.url, 1e-9) == {
        "status": "ok",
        "documents": len(CORPUS),
    }
    with pytest.raises(RetrievalError, match="last error: cannot connect"):
        anyio.run(wait_until_healthy, stopped_url(), 1e-9)


def test_wait_until_healthy_gives_up_naming_the_url_and_cause() -> None:
    url = stopped_url()
    with pytest.raises(RetrievalError) as caught:
        anyio.run(wait_until_healthy, url, 0.3)
    message = str(caught.value)
    assert message.startswith(f"retrieval service {url}/health: not healthy within 0.3 s;")
    assert "cannot connect" in message


def test_wait_until_healthy_on_something_else_reports_its_status() -> None:
    with ScriptedServer() as fake:  # answers GET with 405
        with pytest.raises(RetrievalError, match=r"last error: HTTP 405"):
            anyio.run(wait_until_healthy, fake.url, 1.0)


def test_module_does_not_import_pytest() -> None:
    code = (
        "import sys, pytest_budget.awareness.retrieval._client\n"
        "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# -- BAGEN's /retrieve protocol (fact sheet §6) -------------------------------------------------


def test_raw_http_retrieve_answers_in_bagens_shape(http: httpx.Client, index: BM25Index) -> None:
    response = http.post("/retrieve", json={"query": "river through Berlin", "top_k": 2})
    assert response.status_code == 200
    body = response.json()
    expected = index.search("river through Berlin", 2)
    assert body == {
        "query": "river through Berlin",
        "method": "bm25",
        "results": [
            {"id": hit.id, "content": f'"{hit.title}"\n{hit.text}', "score": hit.score}
            for hit in expected
        ],
        "num_results": len(expected),
    }


def test_retrieve_top_k_default_bounds_and_bagens_leniency(
    http: httpx.Client, index: BM25Index
) -> None:
    every = http.post("/retrieve", json={"query": "the"}).json()
    matching = len(index.search("the", RETRIEVE_DEFAULT_K))
    assert every["num_results"] == len(every["results"]) == matching > DEFAULT_K
    # BAGEN's server also reads "k", and ignores keys it does not know.
    one = http.post("/retrieve", json={"query": "the", "k": 1, "return_scores": True}).json()
    assert one["num_results"] == 1
    for body, error in [
        ({"query": "the", "top_k": 0}, f"'top_k' must be within 1..{MAX_K}, got 0"),
        ({"query": "the", "top_k": 2.0}, "'top_k' must be an integer, got float"),
        ({"top_k": 2}, "missing 'query'"),
        ({"query": "  "}, "'query' must not be empty or whitespace"),
        ([1], "body must be a JSON object, got list"),
    ]:
        response = http.post("/retrieve", json=body)
        assert (response.status_code, response.json()) == (400, {"error": error})
    assert http.get("/retrieve").status_code == 405


def test_content_round_trip() -> None:
    assert split_content(passage_content("Berlin", "A city.\nOn the Spree.")) == (
        "Berlin",
        "A city.\nOn the Spree.",
    )
    assert split_content("one line only") == ("", "one line only")
    assert split_content("Title without quotes\ntext") == ("Title without quotes", "text")


def test_client_speaks_retrieve_by_default_over_real_http(
    server: RetrievalServer, index: BM25Index
) -> None:
    for query in ("capital of France", "river through Berlin", "KYŌTO"):
        got = search_with_client(server.url, query, 3, protocol="auto")
        assert got == index.search(query, 3)
        assert got == search_with_client(server.url, query, 3, protocol="search")


def test_client_sends_bagens_request_and_reads_a_bagen_answer() -> None:
    answer = {
        "query": "q",
        "method": "dense",
        "results": [
            {"id": "doc_1", "content": '"Ostra River"\nIt rises in Velmar.', "score": 0.81},
            {"id": "doc_2", "content": "no title line", "score": 0.5},
        ],
        "num_results": 2,
    }
    with ScriptedServer([Reply(json=answer)]) as fake:
        got = search_with_client(fake.url, "q", 5, protocol="auto")
        assert fake.requests[0].path == "/retrieve"
        assert fake.requests[0].json == {"query": "q", "top_k": 5}
    assert got == [
        Passage("doc_1", "Ostra River", "It rises in Velmar.", 0.81),
        Passage("doc_2", "", "no title line", 0.5),
    ]


def test_client_falls_back_to_search_on_a_server_without_retrieve() -> None:
    legacy = {"results": [{"id": "a", "title": "T", "text": "x", "score": 2}]}
    replies = [Reply(status=404, json={"error": "unknown path"}), Reply(json=legacy)]
    replies.append(Reply(json=legacy))

    async def go(url: str) -> list[list[Passage]]:
        async with RetrievalClient(url) as client:
            return [await client.search("q", 3), await client.search("q", 3)]

    with ScriptedServer(replies) as fake:
        first, second = anyio.run(go, fake.url)
        assert [r.path for r in fake.requests] == ["/retrieve", "/search", "/search"]
    assert first == second == [Passage("a", "T", "x", 2.0)]


def test_a_url_naming_retrieve_never_falls_back() -> None:
    with ScriptedServer([Reply(status=404, json={"error": "nope"})]) as fake:
        url = fake.url
        with pytest.raises(RetrievalError) as caught:
            search_with_client(url + "/retrieve", "q", protocol="auto")
        assert [r.path for r in fake.requests] == ["/retrieve"]
    assert str(caught.value) == f"retrieval service {url}/retrieve: HTTP 404: nope"


@pytest.mark.parametrize(
    ("results", "message"),
    [
        pytest.param("x", "'results' is not a list", id="results-str"),
        pytest.param([{"id": "a", "score": 1.0}], "'content' is not a string", id="no-content"),
        pytest.param([{"content": "t\nx", "score": None}], "'score' is not a number", id="score"),
        pytest.param([{"id": [1], "content": "x", "score": 1}], "'id' is not a string", id="id"),
        pytest.param([3], "result is not an object", id="int-result"),
    ],
)
def test_client_refuses_malformed_retrieve_answers(results: Any, message: str) -> None:
    with ScriptedServer([Reply(json={"results": results})]) as fake:
        url = fake.url
        with pytest.raises(RetrievalError) as caught:
            search_with_client(url, "q", protocol="retrieve")
    text = str(caught.value)
    assert text.startswith(f"retrieval service {url}/retrieve: malformed response: ")
    assert message in text and "\n" not in text


def test_client_refuses_an_unknown_protocol() -> None:
    with pytest.raises(ValueError, match="protocol must be"):
        RetrievalClient("http://127.0.0.1:1", protocol="grpc")
