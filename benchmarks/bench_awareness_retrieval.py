"""Benchmark: the awareness suite's BM25 retrieval service over loopback HTTP.

Run with::

    .venv/bin/python benchmarks/bench_awareness_retrieval.py [--corpus bundled|random] \\
        [--docs 5000] [--queries 2000] [--concurrency 16] [--child-server]

``--corpus bundled`` (the default) indexes the search environment's own corpus
(``build_corpus(SEARCH_CORPUS_SEED)``, about 4,800 documents) and queries it the way actors
do: half whole questions, half decomposed hop queries (start entity plus a relation keyword,
as the reference actor writes them).  ``--corpus random`` indexes ``--docs`` made-up
Zipf-distributed documents instead.  The script starts a
:class:`~pytest_budget.awareness.retrieval._client.RetrievalServer` in this process (as the session
fixture does) and prints:

* corpus generation (first in process, then cached) and index build time (best of 3);
* in-process ``BM25Index.search`` latency;
* p50/p95/p99 latency of sequential ``POST /search`` calls through one
  :class:`~pytest_budget.awareness.retrieval._client.RetrievalClient` (httpx, keep-alive), target
  p50 < 5 ms;
* throughput with ``--concurrency`` ``RetrievalClient`` clients issuing queries at once,
  target >= 500 queries/s;
* for comparison, the same throughput with ``--concurrency`` threads of the standard
  library's ``http.client`` (a cheap client): what the server itself sustains.

Client and server share this process (and its GIL), so the HTTP figures are conservative;
``--child-server`` also runs the server in its own process and reports its CPU per query.
Through httpx the client is the bottleneck: httpcore looks for ``sniffio`` on every request
and, when it is not installed, that failed import (a ``sys.path`` scan) costs more than the
server's whole answer; the script says whether ``sniffio`` is importable.  Exits with
status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import itertools
import json
import multiprocessing
import random
import statistics
import threading
import time
from multiprocessing.connection import Connection
from urllib.parse import urlsplit

import anyio

from pytest_budget.awareness.retrieval._client import (
    BM25Index,
    Document,
    RetrievalClient,
    RetrievalServer,
    wait_until_healthy,
)
from pytest_budget.awareness.search._corpus import RELATIONS, build_corpus

P50_TARGET_MS = 5.0
THROUGHPUT_TARGET = 500.0

_SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "vo", "shi", "dru", "ne", "pa", "zu", "gor", "el")
_FILLER = ("the", "of", "in", "and", "was", "is", "a", "by", "to", "from", "for", "with")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def make_corpus(n: int, seed: int) -> list[Document]:
    """``n`` short Wikipedia-like documents: a Zipf-ish mix of made-up words and filler."""
    rng = random.Random(seed)
    words = _vocabulary(rng, 20_000)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
    docs = []
    for i in range(n):
        title = " ".join(rng.choices(words, cum_weights=cumulative, k=2)).title()
        length = rng.randint(30, 80)
        content = rng.choices(words, cum_weights=cumulative, k=length)
        body = [rng.choice(_FILLER) if rng.random() < 0.35 else word for word in content]
        docs.append(Document(f"doc-{i:05d}", title, f"{title} " + " ".join(body) + "."))
    return docs


def make_queries(docs: list[Document], n: int, seed: int) -> list[str]:
    """Queries of 2-6 words drawn from random documents (like multi-hop sub-questions)."""
    rng = random.Random(seed + 1)
    queries = []
    for _ in range(n):
        words = rng.choice(docs).text.rstrip(".").split()
        queries.append(" ".join(rng.sample(words, k=min(len(words), rng.randint(2, 6)))))
    return queries


def bundled_corpus() -> tuple[list[Document], float, float]:
    """The search environment's corpus as documents; (docs, first build s, cached build s)."""
    from pytest_budget.awareness._environments import SEARCH_CORPUS_SEED

    start = time.perf_counter()
    corpus = build_corpus(SEARCH_CORPUS_SEED)
    first = time.perf_counter() - start
    start = time.perf_counter()
    build_corpus(SEARCH_CORPUS_SEED)
    cached = time.perf_counter() - start
    docs = [Document(d.id, d.title, d.text) for d in corpus.documents]
    return docs, first, cached


def bundled_queries(n: int, seed: int) -> list[str]:
    """Half whole questions, half hop queries (entity + relation keyword), seeded order."""
    from pytest_budget.awareness._environments import SEARCH_CORPUS_SEED

    corpus = build_corpus(SEARCH_CORPUS_SEED)
    pool: list[str] = []
    for question in corpus.questions:
        pool.append(question.question)
        if question.plan is not None:
            keyword = RELATIONS[question.plan.relations[0]].keywords[0]
            pool.append(f"{question.plan.start} {keyword}")
    rng = random.Random(seed)
    return [rng.choice(pool) for _ in range(n)]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _sequential(url: str, queries: list[str], k: int) -> list[float]:
    latencies = []
    async with RetrievalClient(url) as client:
        for query in queries[:50]:  # warm-up: connection, caches
            await client.search(query, k)
        for query in queries:
            start = time.perf_counter()
            await client.search(query, k)
            latencies.append(time.perf_counter() - start)
    return latencies


async def _concurrent(url: str, queries: list[str], k: int, concurrency: int) -> float:
    """Queries per second with ``concurrency`` clients, each on its own connection."""
    clients = [RetrievalClient(url) for _ in range(concurrency)]
    try:
        for client in clients:
            await client.search(queries[0], k)  # open each connection before timing

        async def worker(client: RetrievalClient, share: list[str]) -> None:
            for query in share:
                await client.search(query, k)

        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for i, client in enumerate(clients):
                group.start_soon(worker, client, queries[i::concurrency])
        return len(queries) / (time.perf_counter() - start)
    finally:
        for client in clients:
            await client.aclose()


def _stdlib_concurrent(url: str, queries: list[str], k: int, concurrency: int) -> float:
    """Queries per second with ``concurrency`` threads, each on its own keep-alive
    ``http.client`` connection: the server's throughput with a cheap client."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    failures: list[str] = []

    def worker(share: list[str], ready: threading.Barrier) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        headers = {"Content-Type": "application/json"}
        ready.wait()
        for query in share:
            conn.request("POST", "/search", json.dumps({"query": query, "k": k}), headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                failures.append(f"HTTP {response.status}")
        conn.close()

    ready = threading.Barrier(concurrency + 1)
    threads = [
        threading.Thread(target=worker, args=(queries[i::concurrency], ready))
        for i in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} failed requests, first: {failures[0]}")
    return len(queries) / elapsed


def _serve_in_child(docs: list[Document], conn: Connection) -> None:
    """Child process: serve ``docs``, send the URL, then report CPU seconds between two pings."""
    with RetrievalServer(BM25Index(docs)) as server:
        conn.send(server.url)
        conn.recv()
        start = time.process_time()  # all threads of this process: the server's whole cost
        conn.recv()
        conn.send(time.process_time() - start)


def _child_server_figures(docs: list[Document], queries: list[str], k: int, c: int) -> None:
    """Throughput with the server in its own process (no GIL shared with the client)."""
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=_serve_in_child, args=(docs, child)
    )
    process.start()
    try:
        url = parent.recv()
        anyio.run(wait_until_healthy, url, 30.0)
        parent.send("start")
        qps = anyio.run(_concurrent, url, queries, k, c)
        parent.send("stop")
        cpu = parent.recv() / (len(queries) + c)  # + the warm-up query of each client
        print(
            f"  server in a child process, {c} concurrent clients: {qps:.0f} queries/s, "
            f"server CPU {cpu * 1e3:.3f} ms/query (capacity ~{1 / cpu:.0f} queries/s per core)"
        )
    finally:
        process.join(10)
        parent.close()
        child.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("bundled", "random"), default="bundled")
    parser.add_argument("--docs", type=int, default=5_000, help="--corpus random only")
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--child-server",
        action="store_true",
        help="also measure with the server in a child process and report its CPU per query",
    )
    args = parser.parse_args()

    if args.corpus == "bundled":
        docs, first, cached = bundled_corpus()
        print(
            f"corpus: bundled search corpus, {len(docs)} documents generated in {first:.2f} s "
            f"(again in process, cached: {1e3 * cached:.3f} ms)"
        )
        queries = bundled_queries(args.queries, args.seed)
    else:
        start = time.perf_counter()
        docs = make_corpus(args.docs, args.seed)
        print(
            f"corpus: {len(docs)} random documents generated in {time.perf_counter() - start:.2f} s"
        )
        queries = make_queries(docs, args.queries, args.seed)
    sniffio = importlib.util.find_spec("sniffio") is not None
    print(
        f"sniffio importable: {sniffio}"
        + ("" if sniffio else " (httpcore retries the import on every request: slower client)")
    )

    builds = []
    for _ in range(3):
        start = time.perf_counter()
        index = BM25Index(docs)
        builds.append(time.perf_counter() - start)
    print(
        f"index build: {builds[0]:.3f} s first, {min(builds):.3f} s best of 3 "
        f"({index.vocabulary_size} terms, avgdl {index.avgdl:.1f} tokens)"
    )

    in_process = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, args.k)
        in_process.append(time.perf_counter() - start)
    print(
        f"BM25Index.search (in process): p50 {_ms(statistics.median(in_process))}, "
        f"p95 {_ms(_percentile(in_process, 0.95))}"
    )

    with RetrievalServer(index) as server:
        anyio.run(wait_until_healthy, server.url)
        latencies = anyio.run(_sequential, server.url, queries, args.k)
        p50 = statistics.median(latencies)
        print(
            f"POST /search sequential ({len(latencies)} calls, keep-alive): p50 {_ms(p50)}, "
            f"p95 {_ms(_percentile(latencies, 0.95))}, p99 {_ms(_percentile(latencies, 0.99))}"
            f"  [target p50 < {P50_TARGET_MS:g} ms]"
        )
        qps = anyio.run(_concurrent, server.url, queries, args.k, args.concurrency)
        print(
            f"POST /search with {args.concurrency} concurrent clients: {qps:.0f} queries/s"
            f"  [target >= {THROUGHPUT_TARGET:g}]"
        )
        raw_qps = _stdlib_concurrent(server.url, queries, args.k, args.concurrency)
        print(
            f"  same with {args.concurrency} http.client threads (cheap client, not gated): "
            f"{raw_qps:.0f} queries/s"
        )
    if args.child_server:
        _child_server_figures(docs, queries, args.k, args.concurrency)
    ok = p50 * 1e3 < P50_TARGET_MS and qps >= THROUGHPUT_TARGET
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
