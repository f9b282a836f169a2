"""A synthetic multi-hop QA world for the Search (Search-R1 style) awareness environment.

BAGEN's Search-R1 rollouts answer HotpotQA-style questions by retrieval.  Real QA sets can be
answered from a model's memory, so this module builds an *invented* world instead, offline and
deterministically from a seed (numpy ``Generator`` seeded through sha256; Python's salted
``hash`` is never used and no set is iterated): countries, cities, rivers, universities,
companies, people and books with invented names from a syllable generator, joined by
functional relations (``born_in``, ``founded_by``, ``published_by``, ...) and a few literal
attributes (years, lengths).

Documents
    Every entity is rendered into one or more short documents (a title and 2-5 sentences).
    Each fact ``(subject, relation, object)`` is stated in exactly one document of its
    subject, picked from several phrasings per relation (:data:`RELATIONS`); documents also
    carry filler and a few reverse mentions (a person's document names books they wrote), so
    names recur across documents as they do in a real collection.  A secondary document of an
    entity is titled ``"Name (aspect)"``, e.g. ``"Kelsu Darrinot (career)"``.

Questions
    A question follows a chain of 2, 3 or 4 relations from a start entity ("In which city was
    the founder of the company that published The Varomel Letters born?").  Each carries the
    gold answer, the gold document chain (one document per hop: the one stating that hop's
    fact, so the last one contains the answer), the hop count, a difficulty grade and a
    machine-readable :class:`QuestionPlan` (start entity and relation chain) that reference
    actors may read; the entities along the way are in ``gold_entities`` (grading only).

Unanswerable questions
    A small share of facts is *withheld*: it is stated in no document at all.  A question
    whose chain needs a withheld fact cannot be answered from the corpus; its gold answer is
    :data:`UNKNOWN_ANSWER` (``"unknown"``) with :data:`ABSTAIN_ALIASES` as accepted
    alternatives, its gold chain ends at the document where the missing fact would be, and
    ``answerable`` is false.  An answer is judged by SQuAD-style normalized exact match
    against the answer and its aliases (:func:`normalize_answer`), so ``"Unknown."`` succeeds
    on an unanswerable question and any entity name fails.

Grading: ``difficulty`` is ``easy`` / ``medium`` / ``hard`` from a score = hops, +1 if a gold
fact sits in a secondary document, +1 if an entity on the chain is a person sharing a family
name with another person (a retrieval trap), +1 if unanswerable: <= 3 easy, 4-5 medium, >= 6
hard.

Files: :func:`dump_corpus` / :func:`load_corpus` read and write JSON Lines (documents and
questions, tagged by ``"type"``) so users can bring their own corpus; every malformed line
raises :class:`CorpusFileError` with one line naming the file and the line.

Plain Python and numpy: no pytest here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_budget._core.files import write_atomic
from pytest_budget.awareness.search._facts import (
    ABSTAIN_ALIASES,
    CORPUS_SCHEMA_VERSION,
    DEFAULT_SIZES,
    ENTITY_KINDS,
    RELATIONS,
    UNKNOWN_ANSWER,
    CorpusDocument,
    Question,
    QuestionPlan,
    Relation,
    SearchCorpus,
    extract_facts,
    normalize_answer,
    title_entity,
)
from pytest_budget.awareness.search._world import build_corpus

__all__ = [
    "ABSTAIN_ALIASES",
    "CORPUS_SCHEMA_VERSION",
    "DEFAULT_SIZES",
    "ENTITY_KINDS",
    "RELATIONS",
    "UNKNOWN_ANSWER",
    "CorpusDocument",
    "CorpusFileError",
    "Question",
    "QuestionPlan",
    "Relation",
    "SearchCorpus",
    "build_corpus",
    "corpus_digest",
    "dump_corpus",
    "extract_facts",
    "load_corpus",
    "normalize_answer",
    "title_entity",
]

# --------------------------------------------------------------------------- files


def _document_record(doc: CorpusDocument) -> dict[str, Any]:
    return {"type": "document", "id": doc.id, "title": doc.title, "text": doc.text}


def _question_record(q: Question) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "question",
        "id": q.id,
        "question": q.question,
        "answer": q.answer,
        "aliases": list(q.aliases),
        "gold_docs": list(q.gold_docs),
        "hops": q.hops,
        "difficulty": q.difficulty,
        "answerable": q.answerable,
        "plan": None if q.plan is None else q.plan.to_dict(),
    }
    if q.gold_entities:
        out["gold_entities"] = list(q.gold_entities)
    return out


def corpus_digest(corpus: SearchCorpus) -> str:
    """sha256 of the documents and questions (hex): a cache key for rollouts and indexes."""
    digest = hashlib.sha256(f"search-corpus/{CORPUS_SCHEMA_VERSION}".encode())
    for record in [
        *map(_document_record, corpus.documents),
        *map(_question_record, corpus.questions),
    ]:
        digest.update(json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


class CorpusFileError(ValueError):
    """A corpus or question file that cannot be read; the message is one line."""


def dump_corpus(
    corpus: SearchCorpus,
    path: str | os.PathLike[str],
    questions_path: str | os.PathLike[str] | None = None,
) -> Path:
    """Write JSONL atomically: documents then questions, each record tagged with ``type``.

    With ``questions_path`` the questions go to that file instead.
    """
    targets = [(Path(path), [_document_record(d) for d in corpus.documents])]
    question_records = [_question_record(q) for q in corpus.questions]
    if questions_path is None:
        targets[0][1].extend(question_records)
    else:
        targets.append((Path(questions_path), question_records))
    for target, records in targets:
        lines = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        write_atomic(target, "".join(lines))
    return Path(path)


def _string(data: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise CorpusFileError(f"{key!r} must be a non-empty string, got {value!r}")
    return value


def _strings(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CorpusFileError(f"{key!r} must be a list of non-empty strings")
    return tuple(value)


def _parse_document(data: Mapping[str, Any]) -> CorpusDocument:
    text = data.get("text")
    if not isinstance(text, str):
        raise CorpusFileError(f"'text' must be a string, got {text!r}")
    title = data.get("title", "")
    if not isinstance(title, str):
        raise CorpusFileError(f"'title' must be a string, got {title!r}")
    return CorpusDocument(_string(data, "id"), title, text)


def _parse_plan(value: Any) -> QuestionPlan | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CorpusFileError("'plan' must be an object or null")
    relations = _strings(value, "relations")
    if not relations:
        raise CorpusFileError("'plan.relations' must not be empty")
    return QuestionPlan(_string(value, "start"), _string(value, "start_kind"), relations)


def _parse_question(data: Mapping[str, Any]) -> Question:
    gold_docs = _strings(data, "gold_docs")
    hops = data.get("hops", len(gold_docs))
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        raise CorpusFileError(f"'hops' must be a positive integer, got {hops!r}")
    answer = _string(data, "answer")
    answerable = data.get("answerable", normalize_answer(answer) != UNKNOWN_ANSWER)
    if not isinstance(answerable, bool):
        raise CorpusFileError(f"'answerable' must be true or false, got {answerable!r}")
    difficulty = data.get("difficulty", "")
    if not isinstance(difficulty, str):
        raise CorpusFileError(f"'difficulty' must be a string, got {difficulty!r}")
    return Question(
        id=_string(data, "id"),
        question=_string(data, "question"),
        answer=answer,
        gold_docs=gold_docs,
        hops=hops,
        difficulty=difficulty,
        answerable=answerable,
        aliases=_strings(data, "aliases"),
        plan=_parse_plan(data.get("plan")),
        gold_entities=_strings(data, "gold_entities"),
    )


def _read_records(path: Path, default_type: str | None) -> Iterable[tuple[int, str, Any]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CorpusFileError(f"{path}: no such corpus file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusFileError(f"{path}: cannot read corpus file ({exc})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusFileError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise CorpusFileError(f"{path}:{number}: a record must be a JSON object")
        kind = data.get("type", default_type)
        if kind not in ("document", "question"):
            raise CorpusFileError(
                f'{path}:{number}: \'type\' must be "document" or "question", got {kind!r}'
            )
        yield number, kind, data


def load_corpus(
    path: str | os.PathLike[str], questions_path: str | os.PathLike[str] | None = None
) -> SearchCorpus:
    """Read a corpus written by :func:`dump_corpus` (or by hand).

    One file holds records tagged ``"type": "document"`` (``id``, ``title``, ``text``) and
    ``"type": "question"`` (``id``, ``question``, ``answer``, optional ``aliases``,
    ``gold_docs``, ``hops``, ``difficulty``, ``answerable``, ``plan``).  With
    ``questions_path``, untagged records in ``path`` are documents and those in
    ``questions_path`` are questions.  Ids must be unique and gold documents must exist.
    """
    sources = [(Path(path), "document" if questions_path is not None else None)]
    if questions_path is not None:
        sources.append((Path(questions_path), "question"))
    documents: list[CorpusDocument] = []
    questions: list[tuple[Path, int, Question]] = []
    doc_lines: dict[str, tuple[Path, int]] = {}
    question_lines: dict[str, int] = {}
    for source, default in sources:
        for number, kind, data in _read_records(source, default):
            try:
                if kind == "document":
                    doc = _parse_document(data)
                    if doc.id in doc_lines:
                        first = doc_lines[doc.id]
                        raise CorpusFileError(
                            f"duplicate document id {doc.id!r} (first at {first[0]}:{first[1]})"
                        )
                    doc_lines[doc.id] = (source, number)
                    documents.append(doc)
                else:
                    question = _parse_question(data)
                    if question.id in question_lines:
                        raise CorpusFileError(
                            f"duplicate question id {question.id!r} (first on line "
                            f"{question_lines[question.id]})"
                        )
                    question_lines[question.id] = number
                    questions.append((source, number, question))
            except CorpusFileError as exc:
                raise CorpusFileError(f"{source}:{number}: {exc}") from None
    for source, number, question in questions:
        for doc_id in question.gold_docs:
            if doc_id not in doc_lines:
                raise CorpusFileError(
                    f"{source}:{number}: gold document {doc_id!r} is not in the corpus"
                )
    if not documents:
        raise CorpusFileError(f"{sources[0][0]}: no documents in file")
    if not questions:
        raise CorpusFileError(f"{sources[-1][0]}: no questions in file")
    return SearchCorpus(tuple(documents), tuple(q for _, _, q in questions))
