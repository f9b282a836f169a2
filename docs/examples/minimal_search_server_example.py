"""The smallest server the search environment accepts, in the standard library only.

    python minimal_search_server_example.py search_corpus.jsonl 8000

It speaks BAGEN's retrieval protocol: ``POST /retrieve`` with ``{"query", "top_k"}``
answers ``{"results": [{"id", "content", "score"}, ...]}``, where ``content`` is the title
in double quotes, a newline, then the text; ``GET /health`` answers a ``status``.
Replace ``search`` with a call to your own engine. The file holds one JSON object per
line with ``id``, ``title`` and ``text`` (a ``dump_corpus`` file also holds questions,
which are skipped). The base URL is printed on the first line.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOCUMENTS: list[dict[str, str]] = []


def search(query: str, k: int) -> list[dict[str, object]]:
    """Up to k hits, best first: here, the documents sharing the most words with the query."""
    words = set(query.lower().split())
    scored = []
    for doc in DOCUMENTS:
        shared = len(words & set(f"{doc['title']} {doc['text']}".lower().split()))
        if shared:
            scored.append((-shared, doc["id"], doc))
    scored.sort(key=lambda hit: hit[:2])
    return [
        {"id": doc["id"], "content": f'"{doc["title"]}"\n{doc["text"]}', "score": float(-negative)}
        for negative, _, doc in scored[:k]
    ]


class Handler(BaseHTTPRequestHandler):
    def reply(self, status: int, payload: dict[str, object]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/health":
            self.reply(200, {"status": "healthy", "corpus_size": len(DOCUMENTS)})
        else:
            self.reply(404, {"error": f"unknown path {self.path}"})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/retrieve":
            return self.reply(404, {"error": f"unknown path {self.path}"})
        try:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            query, k = request["query"], request.get("top_k", 10)
            if not isinstance(query, str) or not query.strip():
                raise ValueError("'query' must be a non-empty string")
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
                raise ValueError("'top_k' must be an integer within 1..50")
        except (TypeError, KeyError, ValueError) as exc:  # JSON errors are ValueErrors
            return self.reply(400, {"error": f"bad request: {exc}"})
        results = search(query, k)
        self.reply(200, {"query": query, "results": results, "num_results": len(results)})

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the terminal quiet


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as corpus:
        records = [json.loads(line) for line in corpus if line.strip()]
    DOCUMENTS.extend(
        {"id": r["id"], "title": r.get("title", ""), "text": r["text"]}
        for r in records
        if r.get("type", "document") == "document"
    )
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
