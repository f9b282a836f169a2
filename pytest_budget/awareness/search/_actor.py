"""The Search environment's reference actor: reads the question plan, searches hop by hop
and deliberates like a small model would (its token use varies with the hops).
Re-exported by :mod:`pytest_budget.awareness.search._env`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
)
from pytest_budget.awareness.search._corpus import (
    RELATIONS,
    UNKNOWN_ANSWER,
    QuestionPlan,
    extract_facts,
    title_entity,
)
from pytest_budget.awareness.search._steps import SearchPassage, SearchState, _hash_int

# --------------------------------------------------------------------------- reference actor


@dataclass
class _Progress:
    """What the reference actor has worked out so far (rebuilt every turn from history)."""

    chain: list[str]  # resolved values, the start entity first
    misses: int = 0  # searches since the last resolved hop
    seen_names: list[str] = field(default_factory=list)  # titles in the latest results
    last_quote: str | None = None  # the sentence the last hop was read from


_SENTENCE = re.compile(r"[^.]*\.")
_THINK_BASE = 16.0
_THINK_PER_HOP = 6.0
_THINK_MAX = 80  # sentences: caps one deliberation (a turn stays below ~2,500 tokens)
_RECHECKS = (
    "Wait, let me reread that passage to make sure I have the right entity.",
    "Let me double-check the names before going on.",
    "Hmm, names in this world look alike, so I should be careful.",
    "I want to be sure I am not mixing up two different people or places here.",
)
_HEDGES = (
    "It is possible the documents phrase this differently.",
    "If this search fails I can try other words.",
    "The answer should be a single name or number.",
)


class SearchReferenceActor:
    """An offline multi-hop retriever that behaves like a capable but fallible model.

    It reads the question's :class:`QuestionPlan` from ``observation.state`` (a side channel
    reserved for reference actors; model-backed actors only see ``observation.text``), issues
    one query per hop built from the entity it has resolved so far plus the relation's
    keywords, reads the next entity off the retrieved passages with the relation's sentence
    patterns (:func:`~pytest_budget.awareness.search._corpus.extract_facts`, only passages
    titled after the current entity; never the plan's gold answers), and answers.  On a
    miss it reformulates; after a per-rollout number of fruitless searches it answers
    ``unknown``.

    Mistakes, so that outcomes mix like a model's: with ``confusion_rate`` it takes the same
    fact about another entity in the results (a wrong entity); each turn it may stop early
    with a guess (``guess_rate``); with ``malformed_rate`` the reply breaks the format; and
    its ``<think>`` has a length drawn per turn (lognormal around a per-rollout verbosity),
    so some rollouts run over the 3,500-token cap and a few run out of turns.

    Every draw is seeded by sha256 of ``(seed, rollout_id, turn)`` (or ``(seed,
    rollout_id)`` for per-rollout traits): the actor keeps no state, rebuilds its progress
    from ``state.history`` each turn, and so can serve concurrent rollouts from one
    instance with results independent of scheduling.
    """

    name = "search-reference"
    run_inline = True  # pure computation, well under a millisecond a turn: no worker thread

    def __init__(
        self,
        seed: int = 0,
        *,
        confusion_rate: float = 0.08,
        guess_rate: float = 0.03,
        malformed_rate: float = 0.02,
        verbosity: float = 1.0,
    ) -> None:
        for label, value in (
            ("confusion_rate", confusion_rate),
            ("guess_rate", guess_rate),
            ("malformed_rate", malformed_rate),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{label} must be in [0, 1], got {value}")
        if verbosity < 0:
            raise ValueError(f"verbosity must be >= 0, got {verbosity}")
        self.seed = seed
        self.confusion_rate = confusion_rate
        self.guess_rate = guess_rate
        self.malformed_rate = malformed_rate
        self.verbosity = verbosity

    # ------------------------------------------------------------------ randomness

    def _rng(self, rollout_id: str, *parts: object) -> np.random.Generator:
        return np.random.default_rng(
            _hash_int("pytest-budget/search-actor", self.seed, rollout_id, *parts)
        )

    def _traits(self, rollout_id: str) -> tuple[float, int]:
        """(verbosity multiplier, searches without progress before answering unknown)."""
        rng = self._rng(rollout_id, "traits")
        chatty = float(np.exp(rng.normal(0.0, 0.45)))
        patience = int(rng.choice([2, 3, 4, 99], p=[0.25, 0.3, 0.2, 0.25]))
        return chatty, patience

    # ------------------------------------------------------------------ reading results

    def _absorb(
        self,
        progress: _Progress,
        plan: QuestionPlan,
        passages: Sequence[SearchPassage],
        rng: np.random.Generator,
    ) -> None:
        """Update ``progress`` with the passages of one search."""
        progress.seen_names = [title_entity(p.title) for p in passages]
        hop = len(progress.chain) - 1
        if hop >= len(plan.relations):
            return
        relation = plan.relations[hop]
        current = progress.chain[-1]
        found: list[str] = []
        decoys: list[str] = []
        quote: str | None = None
        for passage in passages:
            values = extract_facts(relation, passage.text)
            if title_entity(passage.title) == current:
                if values and quote is None:
                    quote = _quote(passage.text, values[0])
                found += [v for v in values if v not in found]
            else:
                decoys += [v for v in values if v not in decoys]
        if not RELATIONS[relation].literal:
            decoys += [n for n in progress.seen_names if n != current and n not in decoys]
        decoys = [d for d in decoys if d not in found and d not in progress.chain]
        confuse = rng.random() < (self.confusion_rate if found else self.confusion_rate / 2)
        if decoys and confuse:
            progress.chain.append(decoys[int(rng.integers(len(decoys)))])
            progress.misses = 0
            progress.last_quote = None
        elif found:
            progress.chain.append(found[0])
            progress.misses = 0
            progress.last_quote = quote
        else:
            progress.misses += 1

    def _replay(self, state: SearchState, rollout_id: str) -> _Progress:
        assert state.plan is not None
        progress = _Progress(chain=[state.plan.start])
        for step in state.history:
            if step.action == "search":
                self._absorb(progress, state.plan, step.passages, self._rng(rollout_id, step.turn))
        return progress

    # ------------------------------------------------------------------ acting

    def act(self, observation: ActorObservation) -> str:
        state = observation.state
        if not isinstance(state, SearchState) or state.plan is None:
            raise ValueError("the search reference actor needs observation.state with a plan")
        plan = state.plan
        for relation in plan.relations:
            if relation not in RELATIONS:
                raise ValueError(f"the search reference actor does not know {relation!r}")
        rollout_id = observation.rollout_id
        progress = self._replay(state, rollout_id)
        chatty, patience = self._traits(rollout_id)
        rng = self._rng(rollout_id, observation.turn, "act")
        hop = len(progress.chain) - 1
        done = hop >= len(plan.relations)
        remaining = len(plan.relations) - hop
        if done:
            kind, content = "answer", progress.chain[-1]
        elif progress.misses >= patience:
            kind, content = "answer", UNKNOWN_ANSWER
        elif hop > 0 and rng.random() < self.guess_rate * (1 + progress.misses):
            guesses = [n for n in progress.seen_names if n not in progress.chain]
            guess = guesses[0] if guesses else progress.chain[-1]
            kind, content = "answer", guess
        else:
            kind, content = "search", self._query(progress.chain[-1], plan, hop, progress.misses)
        think = self._think(state, plan, progress, kind, content, remaining, chatty, rng)
        if rng.random() < self.malformed_rate:
            if rng.random() < 0.5:
                return f"<think>{think}</think>\nI will {kind} for {content}."
            return f"<think>{think}</think>\n<search>{content}</search>\n<answer>{content}</answer>"
        return f"<think>{think}</think>\n<{kind}>{content}</{kind}>"

    @staticmethod
    def _query(entity: str, plan: QuestionPlan, hop: int, misses: int) -> str:
        keywords = RELATIONS[plan.relations[hop]].keywords
        if misses == 0:
            return f"{entity} {keywords[0]}"
        return f"{entity} {' '.join(keywords[(misses - 1) % len(keywords) :][:2])}"

    def _think(
        self,
        state: SearchState,
        plan: QuestionPlan,
        progress: _Progress,
        kind: str,
        content: str,
        remaining: int,
        chatty: float,
        rng: np.random.Generator,
    ) -> str:
        """Plausible reasoning about this turn; how many sentences is drawn per turn.

        Sentences keep the pool's order (question, plan, progress, results, next step) so
        the text reads as one line of thought; a long deliberation goes over it again after
        a recheck.
        """
        hop = len(progress.chain) - 1
        pool = [
            f"The question is: {state.question}",
            f"This needs {len(plan.relations)} lookups, starting from {plan.start}.",
        ]
        subject = progress.chain[-1]
        for j, name in enumerate(plan.relations[hop:], start=hop + 1):
            relation = RELATIONS[name]
            need = (
                relation.phrase.format(x=subject)
                if relation.phrase
                else f"the {name.replace('_', ' ')} of {subject}"
            )
            pool.append(f"Step {j}: find {need}.")
            subject = f"that {relation.target}"
        if hop > 0:
            pool.append("So far I have: " + " -> ".join(progress.chain) + ".")
        latest = next((s for s in reversed(state.history) if s.action == "search"), None)
        if latest is not None:
            for i, passage in enumerate(latest.passages, start=1):
                pool.append(f'Result {i}, {passage.title}, says: "{passage.text}"')
        if progress.last_quote:
            pool.append(f'The sentence I need is: "{progress.last_quote}"')
        if progress.misses:
            pool.append(
                f"My last {progress.misses} search(es) did not give me what I need about "
                f"{progress.chain[-1]}, so I should rephrase."
            )
        pool.append(_HEDGES[int(rng.integers(len(_HEDGES)))])
        # Median 22-40 sentences (more while more hops remain; past the pool's size it goes
        # over the same ground again), lognormal tail, scaled by a per-rollout chattiness.
        # These constants put about half of the default rollouts within the 3,500-token cap
        # (see benchmarks/bench_awareness_search.py).
        n = 0
        if self.verbosity > 0:
            mu = math.log(self.verbosity * chatty * (_THINK_BASE + _THINK_PER_HOP * remaining))
            n = min(_THINK_MAX, max(1, round(math.exp(rng.normal(mu, 0.55)))))
        picked: list[str] = []
        while len(picked) < n:
            if picked:
                picked.append(_RECHECKS[int(rng.integers(len(_RECHECKS)))])
            take = min(n - len(picked), len(pool))
            picked += [pool[int(i)] for i in sorted(rng.choice(len(pool), take, replace=False))]
        verb = "search for" if kind == "search" else "answer"
        picked.append(f"So I will {verb}: {content}.")
        return " ".join(picked)


def _quote(text: str, value: str) -> str | None:
    for sentence in _SENTENCE.findall(text):
        if value in sentence:
            return str(sentence).strip()
    return None
