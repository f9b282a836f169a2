"""Benchmark: the Search corpus and reference rollouts against the real retrieval server.

Run with::

    .venv/bin/python benchmarks/bench_awareness_search.py [--n 128] [--seed 42]

Prints the time to build the synthetic corpus (seed 0 first, then three other seeds, none
cached, then seed 0 again from the in-process cache), to index it (first build, then
cached), to start the HTTP retrieval server on loopback, and to roll the
reference actor out ``n`` times through that server (``concurrency=8``) and through the
in-process index, plus the outcome mix: feasible = answered correctly and total tokens <= the
3,500-token cap.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import anyio

from pytest_budget.awareness._replay.rollouts import Rollout
from pytest_budget.awareness.retrieval._client import RetrievalClient, RetrievalServer
from pytest_budget.awareness.search._corpus import SearchCorpus, build_corpus
from pytest_budget.awareness.search._env import (
    SEARCH_PRESET,
    IndexSearcher,
    SearchReferenceActor,
    corpus_index,
    generate_rollouts,
)


def _corpus_times() -> SearchCorpus:
    start = time.perf_counter()
    corpus = build_corpus(0)
    first = time.perf_counter() - start
    others = []
    for seed in (1, 2, 3):
        start = time.perf_counter()
        build_corpus(seed)
        others.append(time.perf_counter() - start)
    start = time.perf_counter()
    build_corpus(0)
    cached = time.perf_counter() - start
    print(
        f"corpus: {len(corpus.documents)} documents, {len(corpus.questions)} questions; "
        f"built in {first:.3f}s (seed 0, first in process), "
        f"{min(others):.3f}-{max(others):.3f}s (seeds 1-3), {1e3 * cached:.3f} ms (cached)"
    )
    hops = Counter(q.hops for q in corpus.questions)
    unanswerable = sum(not q.answerable for q in corpus.questions)
    difficulty = Counter(q.difficulty for q in corpus.questions)
    print(
        f"  hops {dict(sorted(hops.items()))}, unanswerable {unanswerable}, "
        f"difficulty {dict(sorted(difficulty.items()))}"
    )
    return corpus


def _mix(rollouts: list[Rollout]) -> None:
    n = len(rollouts)
    feasible = sum(r.feasible for r in rollouts)
    over = sum(r.success and not r.feasible for r in rollouts)
    wrong = sum(not r.success and r.meta["end_reason"] == "answered" for r in rollouts)
    print(
        f"  feasible {feasible}/{n} ({100 * feasible / n:.1f}%), solved but over budget "
        f"{over} ({100 * over / n:.1f}%), wrong answer {wrong} ({100 * wrong / n:.1f}%)"
    )
    ends = Counter(str(r.meta["end_reason"]) for r in rollouts)
    print("  end reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(ends.items())))
    by_hops = []
    for h in (2, 3, 4):
        group = [r for r in rollouts if r.meta["hops"] == h]
        if group:
            share = 100 * sum(r.feasible for r in group) / len(group)
            by_hops.append(f"{h} hops {share:.0f}% of {len(group)}")
    print("  feasible by hops: " + ", ".join(by_hops))
    turns = [r.T for r in rollouts]
    totals = sorted(r.total()["tokens"] for r in rollouts)
    per_turn = sorted(t.usage["tokens"] for r in rollouts for t in r.turns)
    invalid = sum(t.info.get("action") == "invalid" for r in rollouts for t in r.turns)
    print(
        f"  turns mean {statistics.mean(turns):.2f} (max {max(turns)}); total tokens median "
        f"{statistics.median(totals):.0f}, P10 {totals[len(totals) // 10]:.0f}, "
        f"P90 {totals[9 * len(totals) // 10]:.0f} (cap {SEARCH_PRESET.token_cap})"
    )
    print(
        f"  tokens per turn min {per_turn[0]:.0f}, median {statistics.median(per_turn):.0f}, "
        f"max {per_turn[-1]:.0f}; no-op turns {invalid}/{len(per_turn)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    corpus = _corpus_times()
    start = time.perf_counter()
    index = corpus_index(corpus)
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    assert corpus_index(corpus) is index
    index_cached = time.perf_counter() - start
    actor = SearchReferenceActor(seed=0)

    server = RetrievalServer(index, port=0)
    start = time.perf_counter()
    url = server.start()
    started = time.perf_counter() - start
    print(
        f"BM25 index in {indexed:.3f}s ({1e3 * index_cached:.3f} ms cached); "
        f"server up at {url} in {1000 * started:.1f} ms"
    )
    try:

        async def over_http() -> list[Rollout]:
            async with RetrievalClient(url) as client:
                return await generate_rollouts(corpus, args.n, args.seed, actor, client)

        start = time.perf_counter()
        rollouts = anyio.run(over_http)
        elapsed = time.perf_counter() - start
    finally:
        server.stop()
    searches = sum(t.info.get("action") == "search" for r in rollouts for t in r.turns)
    print(
        f"{args.n} reference rollouts over HTTP (concurrency 8) in {elapsed:.3f}s "
        f"({searches} searches, {1000 * elapsed / max(1, searches):.2f} ms per search overall)"
    )
    _mix(rollouts)

    start = time.perf_counter()
    local = anyio.run(generate_rollouts, corpus, args.n, args.seed, actor, IndexSearcher(index))
    elapsed = time.perf_counter() - start
    same = [r.turns for r in local] == [r.turns for r in rollouts]
    print(
        f"{args.n} reference rollouts in process in {elapsed:.3f}s "
        f"(identical to the HTTP run: {same})"
    )


if __name__ == "__main__":
    main()
