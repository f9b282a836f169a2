"""Search (Search-R1 style) for the awareness suite: turn protocol, rollouts, reference actor.

The awareness suite rolls an actor out with no budget constraint and logs what every turn
cost; estimators are probed on prefixes later (BAGEN §3.4, App. B).  This module produces
those :class:`~pytest_budget.awareness._replay.rollouts.Rollout` objects for multi-hop question
answering over the synthetic world of :mod:`~pytest_budget.awareness.search._corpus`.

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
    :func:`~pytest_budget._core.tokens.count_tokens`.  Search-R1 keeps one growing context, so
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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import numpy as np

from pytest_budget._core.roles import AgentError, call_role
from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
    ActorReply,
    Rollout,
    Turn,
    actor_reply,
)
from pytest_budget.awareness.search._actor import SearchReferenceActor
from pytest_budget.awareness.search._corpus import (
    Question,
    SearchCorpus,
    normalize_answer,
)
from pytest_budget.awareness.search._steps import (
    ANSWER_F1_THRESHOLD,
    ENV_NAME,
    MAX_QUERY_CHARS,
    SEARCH_PRESET,
    IndexSearcher,
    ParsedAction,
    PassageLike,
    SearchEnvError,
    Searcher,
    SearchPassage,
    SearchPreset,
    SearchState,
    SearchStep,
    _hash_int,
    corpus_index,
    exact_match,
    parse_action,
    token_f1,
)

__all__ = [
    "ANSWER_F1_THRESHOLD",
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


def _failed_turn(text: str, read: float, reason: str) -> Turn:
    """The turn of an actor that raised: it read its new input and wrote nothing."""
    failed = {
        "action": "invalid",
        "error": f"agent error: {reason}",
        "input_tokens": read,
        "output_tokens": 0,
    }
    return Turn({"tokens": read}, text, None, failed)


async def _act(
    parsed: ParsedAction,
    searcher: Searcher,
    preset: SearchPreset,
    rollout_id: str,
    number: int,
    info: dict[str, Any],
) -> SearchStep:
    """A search (its passages), or an invalid action: the history's step (noted in ``info``)."""
    if parsed.kind == "search":
        passages = await _search(searcher, parsed.text, preset.top_k, rollout_id, number)
        info["query"] = parsed.text
        info["passages"] = [p.id for p in passages]
        return SearchStep(number, "search", parsed.text, passages)
    info["error"] = parsed.error
    return SearchStep(number, "invalid", error=parsed.error)


def _outcome(
    question: Question, prediction: str | None, end_reason: str, turns: list[Turn]
) -> tuple[bool, dict[str, Any]]:
    """Whether the answer is correct, and the rollout's meta (scores, how it ended)."""
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
    return correct, out_meta


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
            question.id, question.question, question.plan, number, preset.max_turns,
            preset.top_k, tuple(history),
        )  # fmt: skip
        observation = ActorObservation(ENV_NAME, rollout_id, number, text, state)
        try:
            raw = await call_role(actor, "actor", observation, limiter=limiter)
        except AgentError as exc:
            agent_error, end_reason = exc.reason, "agent_error"
            turns.append(_failed_turn(text, read, exc.reason))
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
        if parsed.kind == "answer":
            prediction, info["answer"], end_reason = parsed.text, parsed.text, "answered"
        else:
            history.append(await _act(parsed, searcher, preset, rollout_id, number, info))
        turns.append(Turn({"tokens": tokens}, text, reply.text, info))
        if parsed.kind == "answer":
            break
    correct, out_meta = _outcome(question, prediction, end_reason, turns)
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
