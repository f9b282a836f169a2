"""The Search world's generator: entities, facts, documents and multi-hop questions, built
deterministically from a seed (:func:`build_corpus`; see
:mod:`pytest_budget.awareness.search._corpus` for the design).  Re-exported there.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from pytest_budget.awareness.search._draws import Draws
from pytest_budget.awareness.search._facts import (
    _DIRECTIONS,
    _GENRES,
    _KIND_RELATIONS,
    _PUBLISHERS,
    _WITHHELD_RATE,
    ABSTAIN_ALIASES,
    DEFAULT_SIZES,
    ENTITY_KINDS,
    RELATIONS,
    UNKNOWN_ANSWER,
    CorpusDocument,
    Question,
    QuestionPlan,
    SearchCorpus,
    _word_map,
    _words,
    world_data,
)

# --------------------------------------------------------------------------- generator


def _seed_int(*parts: object) -> int:
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


_ONSETS = _words("onsets")
_VOWELS = _words("vowels")
_CODAS = _words("codas")
_ENGLISH = frozenset(_words("english"))


class _Names:
    """Invented, pronounceable, globally unique name cores."""

    def __init__(self, rng: Draws) -> None:
        self.rng = rng
        self.used: set[str] = set()  # membership only; never iterated

    def core(self, syllables: tuple[int, int] = (2, 3)) -> str:
        rng = self.rng
        while True:
            n = rng.integers(syllables[0], syllables[1] + 1)
            parts = []
            for i in range(n):
                onset = _ONSETS[rng.integers(len(_ONSETS))]
                vowel = _VOWELS[rng.integers(len(_VOWELS))]
                coda = _CODAS[rng.integers(len(_CODAS))] if i == n - 1 else ""
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


_KIND_WORD: dict[str, str] = dict(world_data()["words"]["kind_word"])
_ASPECTS = _word_map("aspects")
_FILLERS = _word_map("fillers")
_JOBS = _words("jobs")
_THINGS = _words("things")
_DAYS = _words("days")
_PRODUCTS = _words("products")
_COMPANY_SUFFIXES = _words("company_suffixes")
_PUBLISHER_SUFFIXES = _words("publisher_suffixes")
_UNIVERSITY_FORMS = _words("university_forms")
_BOOK_FORMS = _words("book_forms")
_CITY_PREFIXES = _words("city_prefixes")
_COUNTRY_ENDINGS = _words("country_endings")


class _World:
    """Entities and facts, generated in a fixed order from one random stream (numpy's
    ``default_rng`` draws, made by :class:`~pytest_budget.awareness.search._draws.Draws`)."""

    def __init__(self, seed: int, sizes: Mapping[str, int]) -> None:
        self.rng = Draws(_seed_int("pytest-budget/search-world", seed))
        self.names = _Names(self.rng)
        self.entities: dict[str, list[_Entity]] = {kind: [] for kind in ENTITY_KINDS}
        self.by_name: dict[str, _Entity] = {}
        self.withheld: list[tuple[str, str]] = []
        self.shared_family: set[str] = set()  # person names sharing a family name
        self._cdf: dict[tuple[int, float], list[float]] = {}
        self._make_entities(sizes)
        self._make_facts()
        self._withhold()
        self._make_mentions()

    # ------------------------------------------------------------------ helpers

    def _pick(self, items: Sequence[_Entity], zipf: float = 0.0) -> _Entity:
        """A uniform pick, or with weight 1 / rank ** zipf (list order is the rank)."""
        if zipf <= 0:
            return items[self.rng.integers(len(items))]
        key = (len(items), zipf)
        cdf = self._cdf.get(key)
        if cdf is None:
            weights = 1.0 / np.arange(1, len(items) + 1) ** zipf
            cdf = np.cumsum(weights / weights.sum()).tolist()
            self._cdf[key] = cdf
        index = self.rng.pick_cdf(cdf)
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
        return items[self.rng.integers(len(items))]

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
            "n": str(self.rng.integers(2, 30)),
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
        order = [relations[i] for i in rng.permutation(len(relations))]
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
            want = max(2, len(sentences) + rng.integers(0, 2))
            want = min(want, 5)
            picks = rng.permutation(len(fillers))
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


def _walk(world: _World, start: _Entity, hops: int, rng: Draws) -> _Walk | None:
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
        relation = pool[rng.integers(len(pool))]
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


def _make_questions(world: _World, n: int, rng: Draws) -> list[Question]:
    """``n`` questions: hops 2/3/4 in about equal parts, about 12% unanswerable."""
    start_kinds = ("book", "company", "person", "city", "university", "river", "country")
    # Generator.choice(7, p=kind_p): the cumulative sum normalised by its last entry.
    kind_cdf = np.cumsum(np.array([0.28, 0.2, 0.22, 0.12, 0.08, 0.06, 0.04]))
    kind_cdf = (kind_cdf / kind_cdf[-1]).tolist()
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
        kind = start_kinds[rng.pick_cdf(kind_cdf)]
        start = world.entities[kind][rng.integers(len(world.entities[kind]))]
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
    rng = Draws(_seed_int("pytest-budget/search-questions", seed))
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
