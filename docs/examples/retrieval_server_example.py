"""Serve a BM25 index over pytest-budget's retrieval API (docs/reference/retrieval-api.md).

    python retrieval_server_example.py                       # the five documents below
    python retrieval_server_example.py --corpus search_corpus.jsonl --port 8000

It prints the base URL on the first line, then serves until interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pytest_budget.awareness.retrieval import BM25Index, Document, RetrievalServer

DOCUMENTS = [
    Document(
        "river-1", "Ostra River", "The Ostra River rises in Velmar. It is 340 kilometres long."
    ),
    Document(
        "city-1", "Durnholm", "Durnholm is a city in Velmar. The Ostra River flows through it."
    ),
    Document("city-2", "Kessa", "Kessa is the capital of Velmar. Its mayor is Ilse Varn."),
    Document(
        "person-1", "Ilse Varn", "Ilse Varn was born in Durnholm. She studied at Kessa College."
    ),
    Document("company-1", "Varn Press", "Varn Press was founded by Ilse Varn. It publishes maps."),
]


def load_documents(path: str) -> list[Document]:
    """The documents of a corpus JSONL file: one object per line with id, title and text.

    A file written by ``dump_corpus`` also holds questions (``"type": "question"``); they
    are skipped.
    """
    documents = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("type", "document") == "document":
                documents.append(Document(record["id"], record.get("title", ""), record["text"]))
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="a corpus JSONL file (default: the five documents)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args()
    documents = load_documents(args.corpus) if args.corpus else DOCUMENTS
    index = BM25Index(documents)  # k1 = 1.5, b = 0.75
    with RetrievalServer(index, port=args.port) as server:  # binds 127.0.0.1
        print(server.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
