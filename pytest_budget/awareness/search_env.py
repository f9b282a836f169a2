"""Search (Search-R1 style) for the awareness suite: turn protocol, rollouts, reference actor.

The awareness suite rolls an actor out with no budget constraint and logs what every turn
cost; estimators are probed on prefixes later (BAGEN §3.4, App. B).  This module produces
those :class:`~pytest_budget.awareness.rollouts.Rollout` objects for multi-hop question
answering over the synthetic world of :mod:`~pytest_budget.awareness.search_corpus`.

Turn protocol
    Every turn the actor receives an :class:`ActorObservation` (``env="search"``) whose
    ``text`` is a self-contained prompt: the instructions, the question, every earlier search
    with the passages it returned, and the latest result.  The reply must contain exactly one
    ``<search>query</search>`` or exactly one ``<answer>text</answer>``, optionally after a
    ``<think>...</think>`` (tags are case-insensitive; anything inside ``<think>`` is
    ignored, so quoting the format there is harmless).  Anything else (no tag, both, two
    searches, an unclosed or empty tag) is a no-op turn whose ``info["error"]`` says why; the
    next observation reports it.  A search returns the top ``top_k`` passages from the
    :class:`Searcher`; they appear in the next observation.  The rollout ends at the first
    answer, at the first turn whose request would take the rollout over the 3,500-token cap
    (BAGEN's per-request context limit: that turn's action is not executed and the turn is
    dropped from the log), or after ``max_turns`` turns.

Usage (one dimension, ``"tokens"``)
    What the model read for the first time this turn plus what it wrote, each counted with
    :func:`~pytest_budget.tokens.count_tokens`.  Search-R1 keeps one growing context, so
    re-sent history is not counted again: turn 1 reads the instructions and the question;
    turn k > 1 reads the question (re-stated every turn) and the *latest result* block (the
    passages retrieved by turn k-1's search, or the note that turn k-1 was not used).
    ``info["input_tokens"]`` and ``info["output_tokens"]`` keep the two parts.

    An actor may report the provider's counts instead (a reply ``{"text": ..., "usage":
    {...}}``).  A model reads the whole self-contained prompt every turn, so its reported
    input includes the re-sent history, which is taken out again:

    * ``usage`` with ``input_tokens`` and ``output_tokens``: as BAGEN differences chat logs,
      the turn's new input is ``input_1`` on turn 1 and ``max(0, input_k - input_(k-1))``
      after it (the prompt grows by what is new; it never contains the previous reply, so
      nothing else is subtracted), and the turn's usage is that plus ``output_k`` in full
      (hidden reasoning included).  When turn k-1 reported no split, the re-sent part is
      subtracted as below.
    * ``usage`` with a total ``tokens`` only: usage = ``max(0, tokens - resent_k)``, where
      ``resent_k`` is what the environment counts for the parts of the prompt the model has
      read before (the instructions and the earlier results; 0 on turn 1).
    * Nothing usable (absent, negative, not finite): the environment's own count above, with
      ``info["usage_note"]`` saying why.

    ``info["reported_input_tokens"]`` / ``["reported_output_tokens"]`` /
    ``["reported_tokens"]`` keep what was reported.

Outcome
    ``success`` is BAGEN's answer check: SQuAD-style normalized exact match with the gold
    answer or one of its aliases (:func:`exact_match`), or token F1 >= 0.3; ``meta`` keeps
    ``em``, ``f1`` and BAGEN's ``reward`` (1 for EM, else F1 when >= 0.3, else 0).  Unanswerable
    questions have the gold answer ``"unknown"`` (see :mod:`search_corpus`).  Feasible =
    success and total tokens <= the cap (:attr:`Rollout.feasible`).

A failing actor ends only its own rollout (``meta["actor_error"]``); a failing *searcher*
(the retrieval service is down) is an environment fault and raises :class:`SearchEnvError`.

Plain Python, numpy and anyio: no pytest here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import numpy as np

from pytest_budget.awareness.rollouts import (
    ActorObservation,
    ActorReply,
    Rollout,
    Turn,
    actor_reply,
)
from pytest_budget.awareness.search_corpus import (
    RELATIONS,
    UNKNOWN_ANSWER,
    Question,
    QuestionPlan,
    SearchCorpus,
    extract_facts,
    normalize_answer,
    title_entity,
)
from pytest_budget.roles import AgentError, call_role
from pytest_budget.textscan import blocks as tag_blocks
from pytest_budget.textscan import count_opens, strip_blocks
from pytest_budget.tokens import count_tokens

if TYPE_CHECKING:
    from pytest_budget.awareness.retrieval import BM25Index

__all__ = [
    "ENV_NAME",
    "MAX_QUERY_CHARS",
    "SEARCH_PRESET",
    "IndexSearcher",
    "ParsedAction",
    "PassageLike",
    "SearchEnvError",
    "SearchPassage",
    "SearchPreset",
    "SearchReferenceActor",
    "SearchState",
    "SearchStep",
    "Searcher",
    "corpus_index",
    "exact_match",
    "generate_rollouts",
    "make_rollout_id",
    "normalize_answer",
    "parse_action",
    "question_order",
    "run_rollout",
    "search_prompt",
    "token_f1",
]

ENV_NAME = "search"
#: Longest query sent to the searcher (the retrieval server accepts up to 2,000 characters).
MAX_QUERY_CHARS = 1000


# --------------------------------------------------------------------------- preset


@dataclass(frozen=True)
class SearchPreset:
    """The token budget, the turn limit and how many passages a search returns."""

    name: str = "search"
    token_cap: int = 3500
    max_turns: int = 10
    top_k: int = 3

    def __post_init__(self) -> None:
        for field_name in ("token_cap", "max_turns", "top_k"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"{field_name} must be >= 1, got {getattr(self, field_name)}")

    @property
    def budget(self) -> dict[str, float]:
        return {"tokens": self.token_cap}


#: BAGEN's answer check: exact match, or token F1 at least this (fact sheet §6).
ANSWER_F1_THRESHOLD = 0.3

#: BAGEN's Search-R1 setting: 3,500 tokens; one search or one answer per turn.
SEARCH_PRESET = SearchPreset()


# --------------------------------------------------------------------------- searching


class PassageLike(Protocol):
    """What a searcher returns per hit (``retrieval.Passage`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


class Searcher(Protocol):
    """Anything with ``async search(query, k)``: ``retrieval.RetrievalClient`` (HTTP) or
    :class:`IndexSearcher` (in process)."""

    async def search(self, query: str, k: int) -> Sequence[PassageLike]: ...


class _SyncIndex(Protocol):
    def search(self, query: str, k: int) -> Sequence[PassageLike]: ...


class IndexSearcher:
    """An in-process :class:`Searcher` over any index with ``search(query, k)``
    (e.g. ``retrieval.BM25Index``); no HTTP involved."""

    def __init__(self, index: _SyncIndex) -> None:
        self.index = index

    async def search(self, query: str, k: int) -> Sequence[PassageLike]:
        return self.index.search(query, k)


@lru_cache(maxsize=4)
def corpus_index(corpus: SearchCorpus) -> BM25Index:
    """A ``retrieval.BM25Index`` over the corpus documents (serve it, or wrap it in
    :class:`IndexSearcher`).

    Cached within the process (the index is immutable): an equal corpus, e.g. the same
    :func:`~pytest_budget.awareness.search_corpus.build_corpus` result, gets the same index
    object back without rebuilding it.
    """
    from pytest_budget.awareness.retrieval import BM25Index, Document

    return BM25Index(Document(d.id, d.title, d.text) for d in corpus.documents)


@dataclass(frozen=True)
class SearchPassage:
    """A retrieved passage as the environment keeps it."""

    id: str
    title: str
    text: str
    score: float = 0.0


@dataclass(frozen=True)
class SearchStep:
    """One earlier turn: ``action`` is ``"search"``, ``"answer"`` or ``"invalid"``."""

    turn: int
    action: str
    query: str | None = None
    passages: tuple[SearchPassage, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class SearchState:
    """``observation.state``: the structured view for programmatic actors.

    ``plan`` is the question's :class:`QuestionPlan` (start entity and relation chain): a
    side channel for *reference* actors only.  Model-backed actors must read ``text``,
    which never shows the plan.
    """

    question_id: str
    question: str
    plan: QuestionPlan | None
    turn: int
    max_turns: int
    top_k: int
    history: tuple[SearchStep, ...] = ()


class SearchEnvError(RuntimeError):
    """The environment itself failed (the searcher raised); the message is one line."""


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class ParsedAction:
    """A reply read: ``kind`` is ``"search"`` or ``"answer"`` with its ``text``, or ``None``
    with an ``error`` (a no-op turn)."""

    kind: str | None
    text: str = ""
    error: str | None = None


def parse_action(reply: str) -> ParsedAction:
    """Read exactly one ``<search>`` or ``<answer>`` block (``<think>`` blocks are skipped)."""
    # Linear time on any text (tags.py); the same results as the regular expressions.
    text = strip_blocks(reply, "think", " ")
    blocks = {tag: [b.content for b in tag_blocks(text, tag)] for tag in ("search", "answer")}
    for tag in ("search", "answer"):
        if count_opens(text, tag) > len(blocks[tag]):
            return ParsedAction(None, error=f"unclosed <{tag}> tag")
    searches, answers = blocks["search"], blocks["answer"]
    if searches and answers:
        return ParsedAction(None, error="both <search> and <answer>: write exactly one of them")
    if not searches and not answers:
        return ParsedAction(None, error="no <search>...</search> or <answer>...</answer> block")
    tag, found = ("search", searches) if searches else ("answer", answers)
    if len(found) > 1:
        return ParsedAction(None, error=f"{len(found)} <{tag}> blocks: write exactly one")
    content = " ".join(found[0].split())
    if not content:
        return ParsedAction(None, error=f"empty <{tag}> block")
    if tag == "search" and len(content) > MAX_QUERY_CHARS:
        return ParsedAction(
            None, error=f"query too long ({len(content)} characters > {MAX_QUERY_CHARS})"
        )
    return ParsedAction(tag, content)


# --------------------------------------------------------------------------- judging


def exact_match(prediction: str, golds: Sequence[str]) -> bool:
    """SQuAD exact match: normalized ``prediction`` equals some normalized gold answer."""
    norm = normalize_answer(prediction)
    return any(norm == normalize_answer(gold) for gold in golds)


def _f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD token F1 on normalized text, the best over the gold answers."""
    return max((_f1(prediction, gold) for gold in golds), default=0.0)


# --------------------------------------------------------------------------- prompt

_INTRO_TEMPLATE = (
    "You answer a question by searching a collection of short documents. The documents "
    "describe an invented world, so rely only on what your searches return, never on your "
    "own knowledge.\n"
    "Each turn, write exactly one of these:\n"
    "  <search>your query</search> to see the top {k} passages for it next turn, or\n"
    "  <answer>your answer</answer> to finish, as short as possible (a name, year or "
    "number); answer unknown if the documents do not say.\n"
    "You may reason first inside <think></think>. A reply with both tags, with neither, or "
    "with two of the same is wasted."
)


def _passages_block(passages: Sequence[SearchPassage]) -> str:
    if not passages:
        return "No passage matched."
    return "\n".join(
        f"[{i}] {p.title}: {p.text}" if p.title else f"[{i}] {p.text}"
        for i, p in enumerate(passages, start=1)
    )


def _step_block(step: SearchStep) -> str:
    if step.action == "search":
        return f'Turn {step.turn}, you searched "{step.query}":\n{_passages_block(step.passages)}'
    return f"Turn {step.turn}, your reply was not used ({step.error}); nothing was searched."


def _question_block(question: str) -> str:
    return f"Question: {question}"


def _sections(
    question: str, history: Sequence[SearchStep], *, preset: SearchPreset, turn: int
) -> tuple[str, str, str, str]:
    """(instructions, question block, earlier results, latest result) for ``turn``."""
    intro = _INTRO_TEMPLATE.format(k=preset.top_k)
    earlier = "\n\n".join(_step_block(step) for step in history[:-1])
    latest = _step_block(history[-1]) if history else ""
    return intro, _question_block(question), earlier, latest


def search_prompt(
    question: str, history: Sequence[SearchStep], *, preset: SearchPreset, turn: int
) -> str:
    """The text an actor reads on ``turn``: self-contained, so no memory is needed."""
    intro, question_block, earlier, latest = _sections(question, history, preset=preset, turn=turn)
    parts = [intro, question_block]
    if earlier:
        parts.append("Earlier results:\n" + earlier)
    if latest:
        parts.append("Latest result:\n" + latest)
    parts.append(f"Turn {turn} of at most {preset.max_turns}. Your reply:")
    return "\n\n".join(parts)


def _new_input_tokens(
    question: str, history: Sequence[SearchStep], *, preset: SearchPreset, turn: int
) -> int:
    """Tokens read for the first time on ``turn`` (see the module docstring)."""
    intro, question_block, _, latest = _sections(question, history, preset=preset, turn=turn)
    if not history:
        return count_tokens(intro) + count_tokens(question_block)
    return count_tokens(question_block) + count_tokens("Latest result:\n" + latest)


def _resent_tokens(
    question: str, history: Sequence[SearchStep], *, preset: SearchPreset, turn: int
) -> int:
    """Tokens of the prompt's parts the model read on earlier turns (0 on turn 1)."""
    if not history:
        return 0
    intro, _, earlier, _ = _sections(question, history, preset=preset, turn=turn)
    resent = count_tokens(intro)
    if earlier:
        resent += count_tokens("Earlier results:\n" + earlier)
    return resent


# --------------------------------------------------------------------------- rollouts


def make_rollout_id(seed: int, index: int) -> str:
    """``search-s42-0007``: batch seed and index (ids sort in batch order)."""
    return f"{ENV_NAME}-s{seed}-{index:04d}"


def _hash_int(*parts: object) -> int:
    """A 63-bit integer from sha256 of the parts: same value in every process."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def question_order(corpus: SearchCorpus, n: int, seed: int) -> list[Question]:
    """The questions of rollouts 0..n-1: a seeded shuffle, reshuffled per pass if ``n`` is
    larger than the question set."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    questions = corpus.questions
    if not questions:
        raise ValueError("the corpus has no questions")
    out: list[Question] = []
    lap = 0
    while len(out) < n:
        rng = np.random.default_rng(_hash_int("pytest-budget/search-order", seed, lap))
        out.extend(questions[int(i)] for i in rng.permutation(len(questions)))
        lap += 1
    return out[:n]


def _count_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _reported_split(raw: Any) -> tuple[float, float] | None:
    """``(input_tokens, output_tokens)`` when the raw reply reports both, usable."""
    usage = raw.get("usage") if isinstance(raw, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    read = _count_or_none(usage.get("input_tokens"))
    wrote = _count_or_none(usage.get("output_tokens"))
    return None if read is None or wrote is None else (read, wrote)


def _whole(number: float) -> float:
    return int(number) if float(number).is_integer() else number


@dataclass(frozen=True)
class _TurnUsage:
    tokens: float
    info: dict[str, Any]
    prompt_tokens: float | None  # the reported input, for the next turn's difference


def _turn_usage(
    read: int,
    resent: int,
    reply: ActorReply,
    split: tuple[float, float] | None,
    previous_prompt: float | None,
    turn: int,
) -> _TurnUsage:
    """The turn's tokens by the rules of the module docstring."""
    if split is not None:
        reported_in, reported_out = split
        if turn == 1:
            new_input = reported_in
        elif previous_prompt is not None:
            new_input = max(0.0, reported_in - previous_prompt)
        else:
            new_input = max(0.0, reported_in - resent)
        info = {
            "reported_input_tokens": _whole(reported_in),
            "reported_output_tokens": _whole(reported_out),
        }
        return _TurnUsage(_whole(new_input + reported_out), info, reported_in)
    counted = read + count_tokens(reply.text)
    if reply.tokens is None:
        return _TurnUsage(counted, {}, None)
    if not math.isfinite(reply.tokens) or reply.tokens < 0:
        note = f"reported tokens {reply.tokens!r} ignored; counted instead"
        return _TurnUsage(counted, {"usage_note": note}, None)
    tokens = max(0.0, reply.tokens - resent)
    return _TurnUsage(_whole(tokens), {"reported_tokens": _whole(reply.tokens)}, None)


async def _search(
    searcher: Searcher, query: str, k: int, rollout_id: str, turn: int
) -> tuple[SearchPassage, ...]:
    try:
        hits = await searcher.search(query, k)
        return tuple(SearchPassage(h.id, h.title, h.text, float(h.score)) for h in hits[:k])
    except Exception as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise SearchEnvError(
            f"rollout {rollout_id} turn {turn}: search {query[:60]!r} failed: {detail}"
        ) from exc


async def run_rollout(
    question: Question,
    actor: object,
    searcher: Searcher,
    *,
    rollout_id: str,
    limiter: anyio.CapacityLimiter | None = None,
    preset: SearchPreset = SEARCH_PRESET,
    meta: Mapping[str, Any] | None = None,
) -> Rollout:
    """Let ``actor`` (any object filling the ``actor`` role) answer ``question`` to the end.

    ``meta`` is merged into the rollout's meta.  An actor that raises ends the rollout as
    failed: the failed call is logged as a last turn that read its new input and wrote
    nothing, and ``meta["actor_error"]`` holds the reason.  A searcher that raises aborts
    with :class:`SearchEnvError`.
    """
    history: list[SearchStep] = []
    turns: list[Turn] = []
    end_reason = "max_turns"
    prediction: str | None = None
    agent_error: str | None = None
    previous_prompt: float | None = None  # the reported input of the previous turn
    used = 0.0
    truncated: dict[str, Any] | None = None
    for number in range(1, preset.max_turns + 1):
        text = search_prompt(question.question, history, preset=preset, turn=number)
        read = _new_input_tokens(question.question, history, preset=preset, turn=number)
        resent = _resent_tokens(question.question, history, preset=preset, turn=number)
        state = SearchState(
            question.id,
            question.question,
            question.plan,
            number,
            preset.max_turns,
            preset.top_k,
            tuple(history),
        )
        observation = ActorObservation(ENV_NAME, rollout_id, number, text, state)
        try:
            raw = await call_role(actor, "actor", observation, limiter=limiter)
        except AgentError as exc:
            agent_error, end_reason = exc.reason, "agent_error"
            failed = {
                "action": "invalid",
                "error": f"agent error: {exc.reason}",
                "input_tokens": read,
                "output_tokens": 0,
            }
            turns.append(Turn({"tokens": read}, text, None, failed))
            break
        reply = actor_reply(raw)
        usage = _turn_usage(read, resent, reply, _reported_split(raw), previous_prompt, number)
        tokens, previous_prompt = usage.tokens, usage.prompt_tokens
        if used + tokens > preset.token_cap:
            # BAGEN (§6): the cap is a per-request context limit; the first request over it
            # ends the episode as failed, its action is not executed and the turn dropped.
            end_reason = "token_cap"
            truncated = {"turn": number, "tokens": tokens, "used_before": used}
            break
        used += tokens
        parsed = parse_action(reply.text)
        info: dict[str, Any] = {
            "action": parsed.kind or "invalid",
            "input_tokens": read,
            "output_tokens": count_tokens(reply.text),
        }
        info.update(usage.info)
        if parsed.kind == "search":
            passages = await _search(searcher, parsed.text, preset.top_k, rollout_id, number)
            info["query"] = parsed.text
            info["passages"] = [p.id for p in passages]
            history.append(SearchStep(number, "search", parsed.text, passages))
        elif parsed.kind == "answer":
            prediction = parsed.text
            info["answer"] = parsed.text
            end_reason = "answered"
        else:
            info["error"] = parsed.error
            history.append(SearchStep(number, "invalid", error=parsed.error))
        turns.append(Turn({"tokens": tokens}, text, reply.text, info))
        if parsed.kind == "answer":
            break
    golds = question.answers
    em = prediction is not None and exact_match(prediction, golds)
    f1 = 0.0 if prediction is None else token_f1(prediction, golds)
    # BAGEN's Search env (§6): correct = exact match or token F1 >= 0.3; reward 1 for EM,
    # else F1 when F1 >= 0.3, else 0.
    correct = em or f1 >= ANSWER_F1_THRESHOLD
    reward = 1.0 if em else (f1 if f1 >= ANSWER_F1_THRESHOLD else 0.0)
    out_meta: dict[str, Any] = {
        "question_id": question.id,
        "question": question.question,
        "hops": question.hops,
        "answerable": question.answerable,
        "difficulty": question.difficulty,
        "gold_answer": question.answer,
        "predicted_answer": prediction,
        "em": 1.0 if em else 0.0,
        "f1": round(f1, 6),
        "reward": round(reward, 6),
        "end_reason": end_reason,
        "searches": sum(1 for t in turns if t.info.get("action") == "search"),
        "invalid_turns": sum(1 for t in turns if t.info.get("action") == "invalid"),
    }
    if agent_error is not None:
        out_meta["actor_error"] = agent_error
    if truncated is not None:
        out_meta["truncated_turn"] = truncated
    if meta:
        out_meta.update(meta)
    return Rollout(
        id=rollout_id,
        env=ENV_NAME,
        budget=preset.budget,
        success=correct,
        turns=tuple(turns),
        meta=out_meta,
    )


async def generate_rollouts(
    corpus: SearchCorpus,
    n: int,
    seed: int,
    actor: object,
    searcher: Searcher,
    *,
    concurrency: int = 8,
    limiter: anyio.CapacityLimiter | None = None,
    preset: SearchPreset = SEARCH_PRESET,
) -> list[Rollout]:
    """Roll ``actor`` out on ``n`` questions (:func:`question_order`); results in id order.

    At most ``concurrency`` rollouts run at once; ``limiter`` additionally bounds actor calls
    across everything sharing it.  Results do not depend on ``concurrency`` as long as the
    actor and the searcher are deterministic.  A failing actor fails its own rollout; a
    failing searcher stops the batch with :class:`SearchEnvError` (the lowest index's).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    questions = question_order(corpus, n, seed)
    results: list[Rollout | None] = [None] * n
    errors: dict[int, SearchEnvError] = {}
    slots = anyio.Semaphore(concurrency)

    async def one(index: int, group: anyio.abc.TaskGroup) -> None:
        async with slots:
            question = questions[index]
            try:
                results[index] = await run_rollout(
                    question,
                    actor,
                    searcher,
                    rollout_id=make_rollout_id(seed, index),
                    limiter=limiter,
                    preset=preset,
                    meta={"seed": seed, "index": index},
                )
            except SearchEnvError as exc:
                errors[index] = exc
                group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        for index in range(n):
            group.start_soon(one, index, group)
    if errors:
        raise errors[min(errors)]
    return [rollout for rollout in results if rollout is not None]


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
    patterns (:func:`~pytest_budget.awareness.search_corpus.extract_facts`, only passages
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
