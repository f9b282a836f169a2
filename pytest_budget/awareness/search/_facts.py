"""The Search world's vocabulary and records: relations (read from the bundled
``data/search_world.json``), fact extraction from sentences, answer normalization, and
the document / question / corpus types.  Re-exported by
:mod:`pytest_budget.awareness.search._corpus`.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

CORPUS_SCHEMA_VERSION = 1
_WORLD_FILE = "data/search_world.json"
#: The gold answer of an unanswerable question.
UNKNOWN_ANSWER = "unknown"
#: Other answers accepted (after normalization) on an unanswerable question.
ABSTAIN_ALIASES = (
    "unanswerable",
    "not known",
    "no answer",
    "cannot be determined",
    "not in the documents",
    "insufficient information",
)

ENTITY_KINDS = ("country", "city", "river", "university", "company", "person", "book")
#: Literal (non-entity) relation targets.
_LITERALS = ("year", "number")

#: Entities per kind for the default world: about 4,800 documents.
DEFAULT_SIZES: Mapping[str, int] = {
    "country": 24,
    "city": 320,
    "river": 90,
    "university": 110,
    "company": 520,
    "person": 1200,
    "book": 900,
}
_PUBLISHERS = 80  # companies that publish books (named "... Press" and the like)
_WITHHELD_RATE = 0.035  # share of facts stated in no document


# --------------------------------------------------------------------------- answers


_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, drop punctuation and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


# --------------------------------------------------------------------------- relations


@dataclass(frozen=True)
class Relation:
    """A functional relation ``subject kind -> target`` and how it is written.

    ``templates`` are the sentence phrasings used in documents.  Placeholders: ``{S}`` the
    subject at the start of a sentence (its name, or a pronoun / "The city" / "It"),
    ``{Sp}`` its possessive at the start of a sentence, ``{s}`` its name mid-sentence,
    ``{o}`` the object, and fillers ``{genre}``, ``{dir}``, ``{n}``.  ``phrase`` nests the
    relation in a question ("the founder of {x}"), ``question`` asks it last, and
    ``keywords`` are words a searcher would add to the subject's name.
    """

    name: str
    subject: str
    target: str
    templates: tuple[str, ...]
    phrase: str
    question: str
    keywords: tuple[str, ...]

    @property
    def literal(self) -> bool:
        """True for a year or number, false for an entity."""
        return self.target in _LITERALS


@lru_cache(maxsize=1)
def world_data() -> Mapping[str, Any]:
    """The bundled vocabulary of the synthetic world (``data/search_world.json``): the
    relations and the word lists names and filler sentences are drawn from."""
    text = resources.files("pytest_budget.awareness").joinpath(_WORLD_FILE).read_text("utf-8")
    data: Mapping[str, Any] = json.loads(text)
    return data


def _relation(data: Mapping[str, Any]) -> Relation:
    return Relation(
        name=data["name"],
        subject=data["subject"],
        target=data["target"],
        templates=tuple(data["templates"]),
        phrase=data["phrase"],
        question=data["question"],
        keywords=tuple(data["keywords"]),
    )


def _words(key: str) -> tuple[str, ...]:
    return tuple(world_data()["words"][key])


def _word_map(key: str) -> dict[str, tuple[str, ...]]:
    return {k: tuple(v) for k, v in world_data()["words"][key].items()}


#: Every relation of the synthetic world by name (names are unique across subject kinds).
RELATIONS: Mapping[str, Relation] = {
    r.name: r for r in (_relation(d) for d in world_data()["relations"])
}

_KIND_RELATIONS: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, r in RELATIONS.items() if r.subject == kind) for kind in ENTITY_KINDS
}

_GENRES = _words("genres")
_DIRECTIONS = _words("directions")
_FILL_PATTERNS = {
    "genre": r"[a-z]+(?: [a-z]+)*",
    "dir": r"(?:north|south|east|west)",
    "n": r"\d+",
    "pos": r"(?:his|her)",
}
_ENTITY_CAPTURE = r"(?P<o>[^.,;()]+?)"
_LITERAL_CAPTURE = r"(?P<o>\d+)"


def _template_regex(template: str, literal: bool) -> re.Pattern[str]:
    """A regex reading the object out of any sentence written with ``template``."""
    parts = re.split(r"(\{[A-Za-z]+\})", template)
    # A leading subject placeholder adds nothing to match on: drop it.
    if parts and parts[0] == "" and len(parts) > 1 and parts[1] in ("{S}", "{Sp}"):
        parts = parts[2:]
    out: list[str] = []
    for part in parts:
        if part in ("{S}", "{Sp}", "{s}"):
            out.append(r"[^.]+?")
        elif part == "{o}":
            out.append(_LITERAL_CAPTURE if literal else _ENTITY_CAPTURE)
        elif part.startswith("{") and part.endswith("}"):
            out.append(_FILL_PATTERNS[part[1:-1]])
        else:
            out.append(re.escape(part))
    return re.compile("".join(out).lstrip())


_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    name: tuple(_template_regex(t, r.literal) for t in r.templates) for name, r in RELATIONS.items()
}


def extract_facts(relation: str, text: str) -> list[str]:
    """Objects of ``relation`` stated in ``text`` (any phrasing), in order, without repeats.

    Reads sentences written with the relation's templates; it does not know whose fact a
    sentence states, so callers look only at documents about the subject
    (:func:`title_entity`).  Raises ``KeyError`` for an unknown relation.
    """
    found: list[tuple[int, str]] = []
    for pattern in _PATTERNS[relation]:
        for match in pattern.finditer(text):
            found.append((match.start("o"), match.group("o").strip()))
    out: list[str] = []
    for _, value in sorted(found):
        if value and value not in out:
            out.append(value)
    return out


def title_entity(title: str) -> str:
    """The entity a document is about: ``"Kelsu Darrinot (career)"`` -> ``"Kelsu Darrinot"``."""
    if title.endswith(")") and " (" in title:
        return title[: title.rindex(" (")]
    return title


# --------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class CorpusDocument:
    """One document: ``id``, ``title`` and ``text`` (what a retriever indexes)."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class QuestionPlan:
    """The machine-readable recipe of a question: start entity and relation chain.

    Reference actors may read it (through ``observation.state``); it names no gold answer
    and no entity beyond the start.
    """

    start: str
    start_kind: str
    relations: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "start_kind": self.start_kind,
            "relations": list(self.relations),
        }


@dataclass(frozen=True)
class Question:
    """A multi-hop question with its gold answer and gold document chain.

    ``aliases`` are other accepted answers (the abstentions for an unanswerable question);
    ``gold_entities`` are the entities reached hop by hop (start first), for grading only.
    """

    id: str
    question: str
    answer: str
    gold_docs: tuple[str, ...]
    hops: int
    difficulty: str = ""
    answerable: bool = True
    aliases: tuple[str, ...] = ()
    plan: QuestionPlan | None = None
    gold_entities: tuple[str, ...] = ()

    @property
    def answers(self) -> tuple[str, ...]:
        """The answer and its aliases: everything judged correct."""
        return (self.answer, *self.aliases)


@dataclass(frozen=True)
class SearchCorpus:
    """Documents and questions; ``seed`` is the generator seed (``None`` when loaded)."""

    documents: tuple[CorpusDocument, ...]
    questions: tuple[Question, ...]
    seed: int | None = None

    @cached_property
    def _documents_by_id(self) -> dict[str, CorpusDocument]:
        return {doc.id: doc for doc in self.documents}

    @cached_property
    def _questions_by_id(self) -> dict[str, Question]:
        return {question.id: question for question in self.questions}

    def document(self, doc_id: str) -> CorpusDocument:
        """The document with id ``doc_id`` (``KeyError`` if there is none)."""
        return self._documents_by_id[doc_id]

    def question(self, question_id: str) -> Question:
        """The question with id ``question_id`` (``KeyError`` if there is none)."""
        return self._questions_by_id[question_id]
