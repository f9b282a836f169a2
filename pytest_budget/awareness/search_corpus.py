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
import math
import os
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pytest_budget.files import write_atomic

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

CORPUS_SCHEMA_VERSION = 1
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


def _rel(
    name: str,
    subject: str,
    target: str,
    templates: tuple[str, ...],
    phrase: str,
    question: str,
    keywords: tuple[str, ...],
) -> Relation:
    return Relation(name, subject, target, templates, phrase, question, keywords)


#: Every relation of the synthetic world by name (names are unique across subject kinds).
RELATIONS: Mapping[str, Relation] = {
    r.name: r
    for r in (
        _rel(
            "born_in",
            "person",
            "city",
            (
                "{S} was born in {o}.",
                "{Sp} birthplace is {o}.",
                "{s} grew up in {o}, the city of {pos} birth.",
            ),
            "the birthplace of {x}",
            "In which city was {x} born?",
            ("born", "birthplace"),
        ),
        _rel(
            "studied_at",
            "person",
            "university",
            (
                "{S} studied at {o}.",
                "{S} earned a degree from {o}.",
                "{Sp} alma mater is {o}.",
            ),
            "the university where {x} studied",
            "At which university did {x} study?",
            ("studied", "degree", "university"),
        ),
        _rel(
            "works_for",
            "person",
            "company",
            (
                "{S} works for {o}.",
                "{S} has been employed by {o} for {n} years.",
                "{Sp} employer is {o}.",
            ),
            "the employer of {x}",
            "Which company does {x} work for?",
            ("works", "employer", "employed"),
        ),
        _rel(
            "mentored_by",
            "person",
            "person",
            (
                "{S} was mentored by {o}.",
                "{S} trained under {o}.",
                "As a young apprentice, {s} learned the trade from {o}.",
            ),
            "the mentor of {x}",
            "Who mentored {x}?",
            ("mentored", "trained", "mentor"),
        ),
        _rel(
            "birth_year",
            "person",
            "year",
            (
                "{Sp} year of birth is {o}.",
                "Records give {o} as the year {s} was born.",
            ),
            "",
            "In what year was {x} born?",
            ("year", "birth"),
        ),
        _rel(
            "in_country",
            "city",
            "country",
            (
                "{S} is a city in {o}.",
                "{S} lies in the {dir} of {o}.",
                "{S} is part of {o}.",
            ),
            "the country where {x} lies",
            "In which country is {x}?",
            ("city", "country", "lies"),
        ),
        _rel(
            "on_river",
            "city",
            "river",
            (
                "{S} stands on the banks of the {o}.",
                "The {o} flows through {s}.",
            ),
            "the river that flows through {x}",
            "Which river flows through {x}?",
            ("river", "banks", "flows"),
        ),
        _rel(
            "mayor",
            "city",
            "person",
            (
                "{S} is governed by mayor {o}.",
                "The current mayor of {s} is {o}.",
            ),
            "the mayor of {x}",
            "Who is the mayor of {x}?",
            ("mayor", "governed"),
        ),
        _rel(
            "capital",
            "country",
            "city",
            (
                "The capital of {s} is {o}.",
                "{Sp} capital city is {o}.",
            ),
            "the capital of {x}",
            "What is the capital of {x}?",
            ("capital",),
        ),
        _rel(
            "named_after",
            "river",
            "person",
            (
                "{S} is named after the explorer {o}.",
                "{S} takes its name from {o}.",
            ),
            "the person {x} is named after",
            "After whom is {x} named?",
            ("named", "name"),
        ),
        _rel(
            "source_country",
            "river",
            "country",
            (
                "{S} rises in the hills of {o}.",
                "The source of {s} is in {o}.",
            ),
            "the country where {x} rises",
            "In which country does {x} rise?",
            ("source", "rises"),
        ),
        _rel(
            "length_km",
            "river",
            "number",
            (
                "{S} is {o} kilometres long.",
                "{Sp} course runs for {o} kilometres.",
            ),
            "",
            "How many kilometres long is {x}?",
            ("kilometres", "long"),
        ),
        _rel(
            "founded_by",
            "company",
            "person",
            (
                "{S} was founded by {o}.",
                "{Sp} founder is {o}.",
                "{S} was started by {o} as a small workshop.",
            ),
            "the founder of {x}",
            "Who founded {x}?",
            ("founded", "founder"),
        ),
        _rel(
            "headquartered_in",
            "company",
            "city",
            (
                "{S} is headquartered in {o}.",
                "{Sp} head office is in {o}.",
                "{S} has its main offices in {o}.",
            ),
            "the city where {x} has its headquarters",
            "In which city is {x} headquartered?",
            ("headquartered", "headquarters", "offices"),
        ),
        _rel(
            "opened_year",
            "company",
            "year",
            (
                "{S} opened for business in {o}.",
                "{S} has been trading since {o}.",
            ),
            "",
            "In what year did {x} open for business?",
            ("opened", "year", "trading"),
        ),
        _rel(
            "located_in",
            "university",
            "city",
            (
                "{S} is located in {o}.",
                "{Sp} campus is in {o}.",
            ),
            "the city where {x} is located",
            "In which city is {x} located?",
            ("located", "campus"),
        ),
        _rel(
            "established_by",
            "university",
            "person",
            (
                "{S} was established by {o}.",
                "{S} owes its founding to {o}.",
            ),
            "the person who established {x}",
            "Who established {x}?",
            ("established", "founding"),
        ),
        _rel(
            "first_students_year",
            "university",
            "year",
            (
                "{S} admitted its first students in {o}.",
                "{S} has taught students since {o}.",
            ),
            "",
            "In what year did {x} admit its first students?",
            ("first", "students", "year"),
        ),
        _rel(
            "written_by",
            "book",
            "person",
            (
                "{S} was written by {o}.",
                "{S} is a {genre} by {o}.",
                "The author of {s} is {o}.",
            ),
            "the author of {x}",
            "Who wrote {x}?",
            ("written", "author"),
        ),
        _rel(
            "published_by",
            "book",
            "company",
            (
                "{S} was published by {o}.",
                "{S} appeared under the imprint of {o}.",
            ),
            "the company that published {x}",
            "Which company published {x}?",
            ("published", "publisher", "imprint"),
        ),
        _rel(
            "publication_year",
            "book",
            "year",
            (
                "{S} first appeared in print in {o}.",
                "{S} was released in {o}.",
            ),
            "",
            "In what year was {x} first published?",
            ("year", "print", "released"),
        ),
    )
}

_KIND_RELATIONS: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, r in RELATIONS.items() if r.subject == kind) for kind in ENTITY_KINDS
}

_GENRES = ("novel", "memoir", "travel diary", "short story collection", "verse cycle", "history")
_DIRECTIONS = ("north", "south", "east", "west")
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


# --------------------------------------------------------------------------- generator


def _seed_int(*parts: object) -> int:
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


_ONSETS = (
    "b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "r",
    "s", "st", "t", "tr", "th", "v", "z", "sh", "j", "y", "w", "c", "ch", "q",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ei", "ou", "ae", "ia", "y")
_CODAS = ("", "", "", "", "n", "r", "l", "s", "th", "m", "k", "x", "nd", "rn", "sk", "v")
_ENGLISH = frozenset(
    "a an the and or of in on at by to is it its he she his her city river book company "
    "press house books university college institute academy new port upper lower".split()
)


class _Names:
    """Invented, pronounceable, globally unique name cores."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[str] = set()  # membership only; never iterated

    def core(self, syllables: tuple[int, int] = (2, 3)) -> str:
        rng = self.rng
        while True:
            n = int(rng.integers(syllables[0], syllables[1] + 1))
            parts = []
            for i in range(n):
                onset = _ONSETS[int(rng.integers(len(_ONSETS)))]
                vowel = _VOWELS[int(rng.integers(len(_VOWELS)))]
                coda = _CODAS[int(rng.integers(len(_CODAS)))] if i == n - 1 else ""
                parts.append(onset + vowel + coda)
            word = "".join(parts).capitalize()
            if len(word) >= 4 and word.lower() not in _ENGLISH and word not in self.used:
                self.used.add(word)
                return word


@dataclass
class _Entity:
    kind: str
    index: int
    name: str
    pronoun: str  # "he", "she" or "it"
    facts: dict[str, str | int] = field(default_factory=dict)
    mentions: list[str] = field(default_factory=list)  # extra sentences naming other entities
    fact_doc: dict[str, str] = field(default_factory=dict)  # relation -> doc id
    doc_ids: list[str] = field(default_factory=list)


_KIND_WORD = {
    "country": "The country",
    "city": "The city",
    "river": "The river",
    "university": "The university",
    "company": "The company",
    "book": "The book",
}
_ASPECTS = {
    "person": ("career", "later life", "early years"),
    "city": ("history", "geography"),
    "country": ("geography", "history"),
    "company": ("history", "operations"),
    "university": ("history",),
    "river": ("course",),
    "book": ("reception",),
}
_FILLERS: dict[str, tuple[str, ...]] = {
    "person": (
        "{S} is remembered as a patient and exacting {job}.",
        "Colleagues describe {s} as a quiet colleague with a dry sense of humour.",
        "{S} spent several winters travelling along the coast.",
        "{Sp} letters are kept in a private archive.",
        "{S} gave occasional public lectures.",
    ),
    "city": (
        "{S} is known for its {thing}.",
        "Visitors often mention the {thing} of {s}.",
        "{S} holds a market every {day}.",
        "The old quarter of {s} has narrow streets.",
    ),
    "country": (
        "{S} has a long tradition of {thing}.",
        "Most people in {s} live near the coast.",
        "{S} is divided into several provinces.",
    ),
    "river": (
        "{S} is popular with anglers.",
        "Barges once carried timber along {s}.",
        "{S} freezes in hard winters.",
    ),
    "company": (
        "{S} employs several hundred people.",
        "{S} is known for its {product}.",
        "{Sp} annual report is published each spring.",
    ),
    "university": (
        "{S} is known for its library.",
        "{S} has a small botanical garden.",
        "Students at {s} wear green scarves at graduation.",
    ),
    "book": (
        "Critics praised the clear prose of {s}.",
        "{S} has been translated into several languages.",
        "{S} opens with a long storm at sea.",
    ),
}
_JOBS = ("engineer", "clerk", "chemist", "surveyor", "architect", "teacher", "translator",
         "cartographer", "printer", "merchant")  # fmt: skip
_THINGS = ("bridges", "tea houses", "glassworks", "gardens", "spring festival", "canals",
           "clock towers", "fish markets")  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_PRODUCTS = ("precision tools", "woollen cloth", "paper", "ship fittings", "lamps", "dyes")
_COMPANY_SUFFIXES = ("Works", "Holdings", "Industries", "Labs", "Foundry", "Mills", "Trading",
                     "Textiles", "Shipping", "Instruments")  # fmt: skip
_PUBLISHER_SUFFIXES = ("Press", "House", "Books", "Editions")
_UNIVERSITY_FORMS = ("{c} University", "{c} Institute", "{c} College", "Academy of {c}")
_BOOK_FORMS = ("The {c} Letters", "The {c} Chronicle", "Winter in {c}", "The Lantern of {c}",
               "{c} at Dusk", "Songs of {c}", "The {c} Ledger", "Beyond {c}",
               "The Orchard at {c}", "{c}")  # fmt: skip
_CITY_PREFIXES = ("Port ", "New ", "Upper ", "Lower ")
_COUNTRY_ENDINGS = ("ia", "land", "esh", "ar", "ova")


class _World:
    """Entities and facts, generated in a fixed order from one numpy Generator."""

    def __init__(self, seed: int, sizes: Mapping[str, int]) -> None:
        self.rng = np.random.default_rng(_seed_int("pytest-budget/search-world", seed))
        self.names = _Names(self.rng)
        self.entities: dict[str, list[_Entity]] = {kind: [] for kind in ENTITY_KINDS}
        self.by_name: dict[str, _Entity] = {}
        self.withheld: list[tuple[str, str]] = []
        self.shared_family: set[str] = set()  # person names sharing a family name
        self._cdf: dict[tuple[int, float], np.ndarray[Any, np.dtype[np.float64]]] = {}
        self._make_entities(sizes)
        self._make_facts()
        self._withhold()
        self._make_mentions()

    # ------------------------------------------------------------------ helpers

    def _pick(self, items: Sequence[_Entity], zipf: float = 0.0) -> _Entity:
        """A uniform pick, or with weight 1 / rank ** zipf (list order is the rank)."""
        if zipf <= 0:
            return items[int(self.rng.integers(len(items)))]
        key = (len(items), zipf)
        cdf = self._cdf.get(key)
        if cdf is None:
            weights = 1.0 / np.arange(1, len(items) + 1) ** zipf
            cdf = np.cumsum(weights / weights.sum())
            self._cdf[key] = cdf
        index = int(np.searchsorted(cdf, self.rng.random(), side="right"))
        return items[min(index, len(items) - 1)]

    def _add(self, kind: str, name: str, pronoun: str = "it") -> _Entity:
        entity = _Entity(kind, len(self.entities[kind]), name, pronoun)
        self.entities[kind].append(entity)
        self.by_name[name] = entity
        return entity

    # ------------------------------------------------------------------ entities

    def _make_entities(self, sizes: Mapping[str, int]) -> None:
        rng, names = self.rng, self.names
        for kind in ENTITY_KINDS:
            if sizes.get(kind, 0) < 1:
                raise ValueError(f"the world needs at least one {kind}, got {sizes.get(kind)}")
        for _ in range(sizes["country"]):
            ending = _COUNTRY_ENDINGS[int(rng.integers(len(_COUNTRY_ENDINGS)))]
            self._add("country", names.core((2, 2)) + ending)
        for _ in range(sizes["city"]):
            prefix = _CITY_PREFIXES[int(rng.integers(4))] if rng.random() < 0.15 else ""
            self._add("city", prefix + names.core())
        for _ in range(sizes["river"]):
            self._add("river", f"{names.core((2, 2))} River")
        for _ in range(sizes["university"]):
            form = _UNIVERSITY_FORMS[int(rng.integers(len(_UNIVERSITY_FORMS)))]
            self._add("university", form.format(c=names.core()))
        for i in range(sizes["company"]):
            if i < min(_PUBLISHERS, max(1, sizes["company"] // 4)):
                suffix = _PUBLISHER_SUFFIXES[int(rng.integers(len(_PUBLISHER_SUFFIXES)))]
            else:
                suffix = _COMPANY_SUFFIXES[int(rng.integers(len(_COMPANY_SUFFIXES)))]
            self._add("company", f"{names.core()} {suffix}")
        n_people = sizes["person"]
        given = [names.core((2, 2)) for _ in range(max(2, n_people // 3))]
        family = [names.core((2, 3)) for _ in range(max(2, (n_people * 2) // 3))]
        used_full: set[str] = set()
        family_count: dict[str, int] = {}
        people: list[tuple[str, str]] = []
        while len(people) < n_people:
            g = given[int(rng.integers(len(given)))]
            f = family[int(rng.integers(len(family)))]
            if f"{g} {f}" in used_full:
                continue
            used_full.add(f"{g} {f}")
            family_count[f] = family_count.get(f, 0) + 1
            people.append((g, f))
        for g, f in people:
            pronoun = "she" if rng.random() < 0.5 else "he"
            entity = self._add("person", f"{g} {f}", pronoun)
            if family_count[f] > 1:
                self.shared_family.add(entity.name)
        for _ in range(sizes["book"]):
            form = _BOOK_FORMS[int(rng.integers(len(_BOOK_FORMS)))]
            self._add("book", form.format(c=names.core()))

    # ------------------------------------------------------------------ facts

    def _make_facts(self) -> None:
        rng, E = self.rng, self.entities
        countries, cities, rivers = E["country"], E["city"], E["river"]
        people, companies, books, universities = (
            E["person"],
            E["company"],
            E["book"],
            E["university"],
        )
        for i, city in enumerate(cities):
            # Every country gets at least one city; the rest follow a Zipf-like spread.
            country = countries[i] if i < len(countries) else self._pick(countries, 0.8)
            city.facts["in_country"] = country.name
            city.facts["on_river"] = self._pick(rivers, 0.7).name
        for country in countries:
            own = [c for c in cities if c.facts["in_country"] == country.name]
            country.facts["capital"] = self._pick(own).name
        for river in rivers:
            river.facts["source_country"] = self._pick(countries, 0.5).name
            river.facts["length_km"] = int(rng.integers(40, 2400))
        for person in people:
            person.facts["birth_year"] = int(rng.integers(1790, 1996))
            person.facts["born_in"] = self._pick(cities, 0.6).name
            person.facts["studied_at"] = self._pick(universities, 0.5).name
            person.facts["works_for"] = self._pick(companies, 0.4).name
        by_year = sorted(people, key=lambda p: (int(p.facts["birth_year"]), p.index))
        years = np.array([int(p.facts["birth_year"]) for p in by_year])
        for person in people:
            year = int(person.facts["birth_year"])
            lo = int(np.searchsorted(years, year - 50))
            hi = int(np.searchsorted(years, year - 12))
            if hi > lo:
                person.facts["mentored_by"] = by_year[int(rng.integers(lo, hi))].name
            else:  # among the oldest: any other person (an old master's master)
                other = self._pick(people)
                if other is not person:
                    person.facts["mentored_by"] = other.name
        founders = [p for p in people if int(p.facts["birth_year"]) <= 1975]
        for university in universities:
            founder = self._pick(founders)
            university.facts["located_in"] = self._pick(cities, 0.6).name
            university.facts["established_by"] = founder.name
            university.facts["first_students_year"] = min(
                2020, int(founder.facts["birth_year"]) + int(rng.integers(25, 60))
            )
        for company in companies:
            founder = self._pick(founders)
            company.facts["founded_by"] = founder.name
            company.facts["headquartered_in"] = self._pick(cities, 0.6).name
            company.facts["opened_year"] = min(
                2022, int(founder.facts["birth_year"]) + int(rng.integers(22, 55))
            )
        natives: dict[str, list[_Entity]] = {}
        for person in people:
            natives.setdefault(str(person.facts["born_in"]), []).append(person)
        for city in cities:
            pool = natives.get(city.name) or people
            city.facts["mayor"] = self._pick(pool).name
        explorers = [p for p in people if int(p.facts["birth_year"]) < 1900] or people
        for river in rivers:
            river.facts["named_after"] = self._pick(explorers).name
        n_pub = min(_PUBLISHERS, max(1, len(companies) // 4))
        publishers = companies[:n_pub]
        writers = [p for p in people if int(p.facts["birth_year"]) <= 1990]
        for book in books:
            author = self._pick(writers, 0.3)
            year = min(2024, int(author.facts["birth_year"]) + int(rng.integers(20, 70)))
            book.facts["written_by"] = author.name
            book.facts["publication_year"] = year
            book.facts["published_by"] = self._pick(publishers, 0.5).name

    def _withhold(self) -> None:
        """Drop a few facts from the world: no document will state them."""
        for kind in ENTITY_KINDS:
            for entity in self.entities[kind]:
                for relation in _KIND_RELATIONS[kind]:
                    if relation in entity.facts and self.rng.random() < _WITHHELD_RATE:
                        del entity.facts[relation]
                        self.withheld.append((entity.name, relation))

    def _make_mentions(self) -> None:
        """Reverse mentions: people name books they wrote and companies they founded."""
        wrote: dict[str, list[str]] = {}
        for book in self.entities["book"]:
            author = book.facts.get("written_by")
            if isinstance(author, str):
                wrote.setdefault(author, []).append(book.name)
        founded: dict[str, list[str]] = {}
        for company in self.entities["company"]:
            founder = company.facts.get("founded_by")
            if isinstance(founder, str):
                founded.setdefault(founder, []).append(company.name)
        for person in self.entities["person"]:
            for title in wrote.get(person.name, [])[:2]:
                person.mentions.append(f"Among the works of {person.name} is {title}.")
            for name in founded.get(person.name, [])[:1]:
                person.mentions.append(f"{person.name} is best known as the person behind {name}.")
        for country in self.entities["country"]:
            own = [
                c.name for c in self.entities["city"] if c.facts.get("in_country") == country.name
            ]
            capital = country.facts.get("capital")
            others = [c for c in own if c != capital][:3]
            if others:
                country.mentions.append(
                    f"Other towns of {country.name} include {' and '.join(others)}."
                )


# --------------------------------------------------------------------------- rendering


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


class _Renderer:
    def __init__(self, world: _World) -> None:
        self.world = world
        self.rng = world.rng

    def _choice(self, items: Sequence[str]) -> str:
        return items[int(self.rng.integers(len(items)))]

    def _subject(self, entity: _Entity, first: bool) -> tuple[str, str]:
        """(sentence-initial subject, possessive) for a sentence of ``entity``'s document."""
        if first or self.rng.random() < 0.4:
            return entity.name, f"{entity.name}'s"
        if entity.kind == "person":
            return entity.pronoun.capitalize(), "His" if entity.pronoun == "he" else "Her"
        if self.rng.random() < 0.5:
            return "It", "Its"
        return _KIND_WORD[entity.kind], f"{_KIND_WORD[entity.kind]}'s"

    def _fill(self, template: str, entity: _Entity, first: bool, obj: str = "") -> str:
        subject, possessive = self._subject(entity, first)
        values = {
            "S": subject,
            "Sp": possessive,
            "s": entity.name,
            "o": obj,
            "genre": self._choice(_GENRES),
            "dir": self._choice(_DIRECTIONS),
            "n": str(int(self.rng.integers(2, 30))),
            "pos": "his" if entity.pronoun == "he" else "her",
            "job": self._choice(_JOBS),
            "thing": self._choice(_THINGS),
            "day": self._choice(_DAYS),
            "product": self._choice(_PRODUCTS),
        }
        text = template.format(**values)
        return text[0].upper() + text[1:]

    def _intro(self, entity: _Entity) -> str:
        kind = entity.kind
        if kind == "person":
            return f"{entity.name} is {_a(self._choice(_JOBS))}."
        if kind == "book":
            return f"{entity.name} is {_a(self._choice(_GENRES))}."
        word = {"country": "a country", "city": "a city", "river": "a river",
                "university": "a university", "company": "a company"}[kind]  # fmt: skip
        return f"{entity.name} is {word}."

    def documents(self) -> list[CorpusDocument]:
        docs: list[CorpusDocument] = []
        for kind in ENTITY_KINDS:
            for entity in self.world.entities[kind]:
                docs.extend(self._render(entity))
        return docs

    def _render(self, entity: _Entity) -> list[CorpusDocument]:
        rng = self.rng
        relations = [r for r in _KIND_RELATIONS[entity.kind] if r in entity.facts]
        order = [relations[int(i)] for i in rng.permutation(len(relations))]
        items: list[tuple[str, str | None]] = [(r, None) for r in order]
        items += [("", m) for m in entity.mentions]
        # The intro takes one sentence of the first document; at most 5 sentences each.
        n_docs = max(1, math.ceil((len(items) + 1) / 5))
        if n_docs == 1 and len(items) >= 3 and rng.random() < 0.3:
            n_docs = 2
        n_docs = min(n_docs, 1 + len(_ASPECTS[entity.kind]))
        chunks: list[list[tuple[str, str | None]]] = [[] for _ in range(n_docs)]
        capacity = [4] + [5] * (n_docs - 1)
        for i, item in enumerate(items):
            slot = i % n_docs
            if len(chunks[slot]) >= capacity[slot]:
                slot = next((j for j in range(n_docs) if len(chunks[j]) < capacity[j]), slot)
            chunks[slot].append(item)
        docs: list[CorpusDocument] = []
        aspects = _ASPECTS[entity.kind]
        for d, chunk in enumerate(chunks):
            doc_id = f"{entity.kind}-{entity.index:04d}" + ("" if d == 0 else f"-{d}")
            title = entity.name if d == 0 else f"{entity.name} ({aspects[d - 1]})"
            sentences: list[str] = [self._intro(entity)] if d == 0 else []
            for relation, mention in chunk:
                if mention is not None:
                    sentences.append(mention)
                    continue
                template = self._choice(RELATIONS[relation].templates)
                obj = str(entity.facts[relation])
                sentences.append(self._fill(template, entity, not sentences, obj))
                entity.fact_doc[relation] = doc_id
            fillers = _FILLERS[entity.kind]
            want = max(2, len(sentences) + int(rng.integers(0, 2)))
            want = min(want, 5)
            picks = [int(i) for i in rng.permutation(len(fillers))]
            while len(sentences) < want and picks:
                sentences.append(self._fill(fillers[picks.pop()], entity, not sentences))
            entity.doc_ids.append(doc_id)
            docs.append(CorpusDocument(doc_id, title, " ".join(sentences)))
        return docs


# --------------------------------------------------------------------------- questions


def _reference(entity_name: str, kind: str) -> str:
    """How a question names its start entity."""
    if kind == "book":
        return f"the book {entity_name}"
    if kind == "river":
        return f"the {entity_name}"
    return entity_name


def _question_text(start: str, kind: str, relations: Sequence[str]) -> str:
    phrase = _reference(start, kind)
    for relation in relations[:-1]:
        phrase = RELATIONS[relation].phrase.format(x=phrase)
    text = RELATIONS[relations[-1]].question.format(x=phrase)
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class _Walk:
    start: _Entity
    relations: tuple[str, ...]
    entities: tuple[_Entity, ...]  # entities reached, start first (shorter if cut off)
    answer: str | None  # None when a needed fact is withheld


def _walk(world: _World, start: _Entity, hops: int, rng: np.random.Generator) -> _Walk | None:
    """A random relation chain of ``hops`` steps from ``start`` visiting distinct entities."""
    entity: _Entity | None = start
    kind = start.kind
    relations: list[str] = []
    entities = [start]
    seen = {start.name}
    answer: str | None = None
    for step in range(hops):
        last = step == hops - 1
        options = [
            r
            for r in _KIND_RELATIONS[kind]
            if (last or not RELATIONS[r].literal)
            and (entity is None or str(entity.facts.get(r, "")) not in seen)
        ]
        if not last:  # an inner hop must lead somewhere with relations of its own
            options = [r for r in options if _KIND_RELATIONS.get(RELATIONS[r].target)]
        if not options:
            return None
        # Literal answers (years, lengths) for about a fifth of the questions.
        literal = [r for r in options if RELATIONS[r].literal]
        entity_opts = [r for r in options if not RELATIONS[r].literal]
        if last and literal and (not entity_opts or rng.random() < 0.2):
            pool = literal
        else:
            pool = entity_opts or literal
        relation = pool[int(rng.integers(len(pool)))]
        relations.append(relation)
        kind = RELATIONS[relation].target
        if entity is None:
            continue
        value = entity.facts.get(relation)
        if value is None:  # withheld: the chain goes on by kind only
            entity = None
            continue
        if last:
            answer = str(value)
        else:
            entity = world.by_name[str(value)]
            seen.add(entity.name)
            entities.append(entity)
    if entity is None:
        answer = None
    return _Walk(start, tuple(relations), tuple(entities), answer)


_SECONDARY_DOC = re.compile(r"-\d{4}-\d+$")


def _difficulty(score: int) -> str:
    return "easy" if score <= 3 else "medium" if score <= 5 else "hard"


def _make_questions(world: _World, n: int, rng: np.random.Generator) -> list[Question]:
    """``n`` questions: hops 2/3/4 in about equal parts, about 12% unanswerable."""
    start_kinds = ("book", "company", "person", "city", "university", "river", "country")
    kind_p = np.array([0.28, 0.2, 0.22, 0.12, 0.08, 0.06, 0.04])
    target_unanswerable = round(0.12 * n)
    questions: list[Question] = []
    used: set[tuple[str, tuple[str, ...]]] = set()
    n_unanswerable = 0
    attempts = 0
    while len(questions) < n:
        attempts += 1
        if attempts > 200 * n + 1000:
            raise RuntimeError(f"could not draw {n} distinct questions from this world")
        hops = 2 + len(questions) % 3
        kind = start_kinds[int(rng.choice(len(start_kinds), p=kind_p))]
        start = world.entities[kind][int(rng.integers(len(world.entities[kind])))]
        walk = _walk(world, start, hops, rng)
        if walk is None or (start.name, walk.relations) in used:
            continue
        answerable = walk.answer is not None
        if not answerable:
            # Keep unanswerable questions near their target share, spread over the batch.
            if n_unanswerable >= target_unanswerable:
                continue
        elif n_unanswerable < target_unanswerable * len(questions) / max(1, n) - 1:
            continue  # make room for an unanswerable one first
        used.add((start.name, walk.relations))
        gold_docs = tuple(
            entity.fact_doc.get(rel, entity.doc_ids[0])
            for entity, rel in zip(walk.entities, walk.relations, strict=False)
        )
        score = hops
        if any(_SECONDARY_DOC.search(doc) for doc in gold_docs):
            score += 1
        if any(e.name in world.shared_family for e in walk.entities):
            score += 1
        if not answerable:
            score += 1
            n_unanswerable += 1
        questions.append(
            Question(
                id=f"q{len(questions):04d}",
                question=_question_text(start.name, kind, walk.relations),
                answer=walk.answer if walk.answer is not None else UNKNOWN_ANSWER,
                gold_docs=gold_docs,
                hops=hops,
                difficulty=_difficulty(score),
                answerable=answerable,
                aliases=() if answerable else ABSTAIN_ALIASES,
                plan=QuestionPlan(start.name, kind, walk.relations),
                gold_entities=tuple(e.name for e in walk.entities),
            )
        )
    return questions


@lru_cache(maxsize=8)
def _build(seed: int, n_questions: int, sizes: tuple[tuple[str, int], ...]) -> SearchCorpus:
    world = _World(seed, dict(sizes))
    documents = _Renderer(world).documents()
    rng = np.random.default_rng(_seed_int("pytest-budget/search-questions", seed))
    questions = _make_questions(world, n_questions, rng)
    return SearchCorpus(tuple(documents), tuple(questions), seed)


def build_corpus(
    seed: int = 0, *, n_questions: int = 1000, sizes: Mapping[str, int] | None = None
) -> SearchCorpus:
    """The synthetic world for ``seed``: about 4,800 documents and ``n_questions`` questions.

    The same in every process for the same arguments (and cached within one process).
    ``sizes`` overrides entities per kind (:data:`DEFAULT_SIZES`).
    """
    if n_questions < 1:
        raise ValueError(f"n_questions must be >= 1, got {n_questions}")
    merged = dict(DEFAULT_SIZES)
    if sizes:
        unknown = sorted(set(sizes) - set(ENTITY_KINDS))
        if unknown:
            raise ValueError(
                f"unknown entity kind {unknown[0]!r}; known: {', '.join(ENTITY_KINDS)}"
            )
        merged.update(sizes)
    return _build(seed, n_questions, tuple(sorted(merged.items())))


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
