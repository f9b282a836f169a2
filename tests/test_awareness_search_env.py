"""Search (Search-R1 style) for the awareness suite: corpus, protocol, usage, reference actor."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
    Rollout,
    read_rollouts,
    rollout_to_dict,
    write_rollouts,
)
from pytest_budget.awareness.retrieval._client import (
    BM25Index,
    Document,
    RetrievalClient,
    RetrievalServer,
)
from pytest_budget.awareness.search._corpus import (
    ABSTAIN_ALIASES,
    RELATIONS,
    UNKNOWN_ANSWER,
    CorpusDocument,
    CorpusFileError,
    Question,
    QuestionPlan,
    SearchCorpus,
    build_corpus,
    corpus_digest,
    dump_corpus,
    extract_facts,
    load_corpus,
    normalize_answer,
    title_entity,
)
from pytest_budget.awareness.search._env import (
    SEARCH_PRESET,
    IndexSearcher,
    ParsedAction,
    SearchEnvError,
    SearchPassage,
    SearchPreset,
    SearchReferenceActor,
    SearchState,
    corpus_index,
    exact_match,
    generate_rollouts,
    make_rollout_id,
    parse_action,
    question_order,
    run_rollout,
    token_f1,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus() -> SearchCorpus:
    return build_corpus(0)


@pytest.fixture(scope="module")
def searcher(corpus: SearchCorpus) -> IndexSearcher:
    return IndexSearcher(corpus_index(corpus))


def batch(
    corpus: SearchCorpus, n: int, seed: int, actor: object, searcher: Any, **kwargs: Any
) -> list[Rollout]:
    run = functools.partial(generate_rollouts, corpus, n, seed, actor, searcher, **kwargs)
    return anyio.run(run)


def digest(rollouts: Sequence[Rollout]) -> str:
    payload = json.dumps([rollout_to_dict(r) for r in rollouts], sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _sentences(text: str) -> int:
    return len(re.findall(r"\.(?:\s|$)", text))


# --------------------------------------------------------------------------- corpus


def test_corpus_is_the_same_in_another_process(corpus: SearchCorpus) -> None:
    code = (
        "from pytest_budget.awareness.search._corpus import build_corpus, corpus_digest\n"
        "print(corpus_digest(build_corpus(0)))\n"
    )
    digests = set()
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        digests.add(out.stdout.strip())
    assert digests == {corpus_digest(corpus)}
    assert corpus_digest(build_corpus(1, n_questions=50)) != corpus_digest(corpus)


def test_corpus_size_and_shape(corpus: SearchCorpus) -> None:
    assert 4000 <= len(corpus.documents) <= 6000
    assert len(corpus.questions) == 1000
    assert len({d.id for d in corpus.documents}) == len(corpus.documents)
    assert len({d.title for d in corpus.documents}) == len(corpus.documents)
    assert len({q.id for q in corpus.questions}) == len(corpus.questions)
    for doc in corpus.documents:
        assert doc.title and 2 <= _sentences(doc.text) <= 5, doc
    # (Build and index times are measured in benchmarks/bench_awareness_search.py, not here:
    # a timed assertion fails on a loaded machine.)


def test_corpus_and_index_are_cached_within_the_process(corpus: SearchCorpus) -> None:
    assert build_corpus(0) is corpus
    index = corpus_index(corpus)
    assert corpus_index(build_corpus(0)) is index
    assert len(index) == len(corpus.documents)
    other = build_corpus(5, n_questions=20)
    fresh = corpus_index(other)  # a corpus no other test indexes: really built
    assert fresh is not index and corpus_index(other) is fresh
    assert [d.text for d in fresh.documents] == [d.text for d in other.documents]


def test_build_corpus_checks_arguments() -> None:
    with pytest.raises(ValueError, match="n_questions"):
        build_corpus(0, n_questions=0)
    with pytest.raises(ValueError, match="unknown entity kind 'ship'"):
        build_corpus(0, sizes={"ship": 3})


def test_questions_mix_hops_difficulty_and_unanswerable(corpus: SearchCorpus) -> None:
    hops = Counter(q.hops for q in corpus.questions)
    assert set(hops) == {2, 3, 4} and min(hops.values()) >= 300
    unanswerable = [q for q in corpus.questions if not q.answerable]
    assert 0.08 <= len(unanswerable) / len(corpus.questions) <= 0.16
    assert {q.hops for q in unanswerable} == {2, 3, 4}
    assert set(Counter(q.difficulty for q in corpus.questions)) == {"easy", "medium", "hard"}
    kinds = Counter(q.plan.start_kind for q in corpus.questions if q.plan is not None)
    assert len(kinds) >= 5
    literal = [q for q in corpus.questions if q.plan and RELATIONS[q.plan.relations[-1]].literal]
    assert literal and all(q.answer.isdigit() for q in literal if q.answerable)


def test_every_answerable_question_follows_its_gold_chain(corpus: SearchCorpus) -> None:
    """Each gold document is about the current entity and states the next one."""
    for q in corpus.questions:
        assert q.plan is not None and len(q.plan.relations) == q.hops
        assert q.gold_entities[0] == q.plan.start
        if not q.answerable:
            continue
        assert len(q.gold_docs) == q.hops == len(q.gold_entities)
        reached = [*q.gold_entities[1:], q.answer]
        for doc_id, entity, relation, value in zip(
            q.gold_docs, q.gold_entities, q.plan.relations, reached, strict=True
        ):
            doc = corpus.document(doc_id)
            assert title_entity(doc.title) == entity, (q.id, doc)
            assert extract_facts(relation, doc.text) == [value], (q.id, doc)
        assert q.answer in corpus.document(q.gold_docs[-1]).text


def test_unanswerable_questions_lack_the_fact_everywhere(corpus: SearchCorpus) -> None:
    docs_of: dict[str, list[CorpusDocument]] = {}
    for doc in corpus.documents:
        docs_of.setdefault(title_entity(doc.title), []).append(doc)
    for q in corpus.questions:
        if q.answerable:
            continue
        assert q.plan is not None
        assert q.answer == UNKNOWN_ANSWER and set(ABSTAIN_ALIASES) <= set(q.aliases)
        # The chain stops at the entity whose fact no document states.
        stuck = q.gold_entities[-1]
        relation = q.plan.relations[len(q.gold_entities) - 1]
        assert len(q.gold_docs) == len(q.gold_entities) <= q.hops
        assert title_entity(corpus.document(q.gold_docs[-1]).title) == stuck
        assert docs_of[stuck]
        assert all(extract_facts(relation, d.text) == [] for d in docs_of[stuck]), q


def test_question_text_reads_as_a_chain(corpus: SearchCorpus) -> None:
    q = next(
        q
        for q in corpus.questions
        if q.plan and q.plan.relations == ("published_by", "founded_by", "born_in")
    )
    assert q.question == (
        f"In which city was the founder of the company that published the book {q.plan.start} born?"
    )


def test_dump_and_load_round_trip(corpus: SearchCorpus, tmp_path: Path) -> None:
    one = dump_corpus(corpus, tmp_path / "corpus.jsonl")
    assert corpus_digest(load_corpus(one)) == corpus_digest(corpus)
    docs, questions = tmp_path / "docs.jsonl", tmp_path / "questions.jsonl"
    dump_corpus(corpus, docs, questions)
    loaded = load_corpus(docs, questions)
    assert corpus_digest(loaded) == corpus_digest(corpus)
    assert loaded.seed is None and loaded.question("q0003") == corpus.question("q0003")


def test_user_corpus_without_type_tags(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    questions = tmp_path / "qs.jsonl"
    docs.write_text('{"id": "a", "title": "A", "text": "A is a city."}\n\n', encoding="utf-8")
    questions.write_text(
        '{"id": "x", "question": "What is A?", "answer": "a city", "gold_docs": ["a"]}\n',
        encoding="utf-8",
    )
    loaded = load_corpus(docs, questions)
    q = loaded.questions[0]
    assert (q.hops, q.answerable, q.plan, q.aliases) == (1, True, None, ())


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"type": "document", "id": "a", "title": "A", "text": "t"}', "{oops"], ":2: not valid"),
        (['{"type": "document", "id": "a", "text": "t"}'] * 2, ":2: duplicate document id 'a'"),
        (['{"type": "page", "id": "a"}'], ":1: 'type' must be"),
        (["[1, 2]"], ":1: a record must be a JSON object"),
        (
            [
                '{"type": "document", "id": "a", "text": "t"}',
                '{"type": "question", "id": "q", "question": "?", "answer": "x", '
                '"gold_docs": ["zz"]}',
            ],
            ":2: gold document 'zz' is not in the corpus",
        ),
        (
            [
                '{"type": "document", "id": "a", "text": "t"}',
                '{"type": "question", "id": "q", "question": "?", "answer": "", '
                '"gold_docs": ["a"]}',
            ],
            ":2: 'answer' must be a non-empty string",
        ),
        (
            [
                '{"type": "document", "id": "a", "text": "t"}',
                '{"type": "question", "id": "q", "question": "?", "answer": "x", "hops": 0}',
            ],
            ":2: 'hops' must be a positive integer",
        ),
        (['{"type": "document", "id": "a", "text": "t"}'], "no questions in file"),
    ],
)
def test_bad_corpus_files_fail_with_one_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CorpusFileError) as info:
        load_corpus(path)
    text = str(info.value)
    assert "\n" not in text and str(path) in text and message in text


def test_missing_corpus_file(tmp_path: Path) -> None:
    with pytest.raises(CorpusFileError, match="no such corpus file"):
        load_corpus(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<search>Alpha Books founder</search>", ParsedAction("search", "Alpha Books founder")),
        ("<think>hmm</think>\n<answer> Cima </answer>", ParsedAction("answer", "Cima")),
        ("<SEARCH>a  b\nc</Search>", ParsedAction("search", "a b c")),
        # The format quoted inside <think> does not count.
        ("<think>use <answer>x</answer> or <search>q</search></think><search>q</search>",
         ParsedAction("search", "q")),
    ],
)  # fmt: skip
def test_parse_good_replies(reply: str, expected: ParsedAction) -> None:
    assert parse_action(reply) == expected


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("<search>q</search><answer>a</answer>", "both <search> and <answer>"),
        ("I think it is Cima.", "no <search>...</search> or <answer>...</answer> block"),
        ("<search>q</search> then <search>r</search>", "2 <search> blocks"),
        ("<answer>a</answer><answer>b</answer>", "2 <answer> blocks"),
        ("<search>q", "unclosed <search> tag"),
        ("<answer>  </answer>", "empty <answer> block"),
        ("<search>" + "x " * 600 + "</search>", "query too long"),
    ],
)
def test_parse_bad_replies_are_no_ops(reply: str, error: str) -> None:
    parsed = parse_action(reply)
    assert parsed.kind is None and parsed.error is not None and error in parsed.error


# --------------------------------------------------------------------------- judging


def test_normalization_and_exact_match_by_hand() -> None:
    assert normalize_answer("  The Velun  River! ") == "velun river"
    assert normalize_answer("An Orchard, at Zalo.") == "orchard at zalo"
    assert normalize_answer("Theodor") == "theodor"  # "the" only as a whole word
    assert exact_match("the velun river", ["Velun River"])
    assert not exact_match("Velun", ["Velun River"])
    assert exact_match("Unknown.", (UNKNOWN_ANSWER, *ABSTAIN_ALIASES))
    assert exact_match("Cannot be determined", (UNKNOWN_ANSWER, *ABSTAIN_ALIASES))


def test_token_f1_by_hand() -> None:
    # "velun" vs "velun river": precision 1/1, recall 1/2 -> F1 = 2 * 0.5 / 1.5 = 2/3.
    assert token_f1("Velun", ["Velun River"]) == pytest.approx(2 / 3)
    # "port velun river" vs "velun river": precision 2/3, recall 1 -> F1 = 0.8.
    assert token_f1("Port Velun River", ["the Velun River"]) == pytest.approx(0.8)
    assert token_f1("Cima", ["Velun River", "Cima"]) == 1.0  # best over the golds
    assert token_f1("Tarvik", ["Velun River"]) == 0.0
    assert token_f1("the", ["a"]) == 1.0  # both normalize to nothing (SQuAD convention)


# --------------------------------------------------------------------------- protocol

TINY_DOCS = {
    "d1": SearchPassage(
        "d1", "Alpha Books", "Alpha Books is a company. It was founded by Bero Tal."
    ),
    "d2": SearchPassage("d2", "Bero Tal", "Bero Tal is a clerk. He was born in Cima."),
}
TINY_QUESTION = Question(
    id="t1",
    question="In which city was the founder of Alpha Books born?",
    answer="Cima",
    gold_docs=("d1", "d2"),
    hops=2,
    plan=QuestionPlan("Alpha Books", "company", ("founded_by", "born_in")),
    gold_entities=("Alpha Books", "Bero Tal"),
)


class FixedSearcher:
    """Returns fixed passages per query (every other query: nothing); records queries."""

    def __init__(self, results: dict[str, list[SearchPassage]]) -> None:
        self.results = results
        self.queries: list[tuple[str, int]] = []

    async def search(self, query: str, k: int) -> list[SearchPassage]:
        self.queries.append((query, k))
        return self.results.get(query, [])


class Scripted:
    """Answers turn k with replies[k - 1] (the last reply repeats); records observations."""

    name = "scripted"

    def __init__(self, *replies: Any) -> None:
        self.replies = replies
        self.seen: list[ActorObservation] = []

    def act(self, observation: ActorObservation) -> Any:
        self.seen.append(observation)
        return self.replies[min(observation.turn, len(self.replies)) - 1]


def play(actor: object, searcher: Any, question: Question = TINY_QUESTION, **kw: Any) -> Rollout:
    run = functools.partial(run_rollout, question, actor, searcher, rollout_id="t-0000", **kw)
    return anyio.run(run)


TINY_SEARCHER_RESULTS = {
    "Alpha Books founder": [TINY_DOCS["d1"]],
    "Bero Tal born": [TINY_DOCS["d2"]],
}
# Instruction block tokens (count_tokens of everything before "Question:" on turn 1).
INTRO_TOKENS = 129


def test_usage_counts_new_input_and_reply_by_hand() -> None:
    actor = Scripted(
        "<search>Alpha Books founder</search>",  # < search > Alpha Books founder < / search >: 10
        "<think>Founder is Bero Tal.</think><search>Bero Tal born</search>",  # 12 + 10 = 22
        "<answer>Cima</answer>",  # < answer > Cima < / answer >: 8
    )
    rollout = play(actor, FixedSearcher(TINY_SEARCHER_RESULTS))
    # "Question: In which city was the founder of Alpha Books born?": 13 tokens, every turn.
    # Turn 1 reads the instructions and the question.
    # Turn 2 reads the question and 'Latest result:\nTurn 1, you searched "Alpha Books
    #   founder":\n[1] Alpha Books: Alpha Books is a company. It was founded by Bero Tal.'
    #   = 3 + 11 + 6 + 13 = 33 tokens.
    # Turn 3: 'Latest result:\nTurn 2, you searched "Bero Tal born":\n[1] Bero Tal: Bero Tal
    #   is a clerk. He was born in Cima.' = 3 + 11 + 6 + 12 = 32 tokens.
    assert [t.usage["tokens"] for t in rollout.turns] == [
        INTRO_TOKENS + 13 + 10,
        13 + 33 + 22,
        13 + 32 + 8,
    ]
    assert [t.info["input_tokens"] for t in rollout.turns] == [INTRO_TOKENS + 13, 46, 45]
    assert [t.info["output_tokens"] for t in rollout.turns] == [10, 22, 8]
    first = actor.seen[0].text
    assert count_tokens(first.split("\n\nQuestion:")[0]) == INTRO_TOKENS
    assert rollout.success and rollout.feasible and rollout.T == 3
    assert rollout.total() == {"tokens": INTRO_TOKENS + 13 + 10 + 68 + 53}
    meta = rollout.meta
    assert meta["end_reason"] == "answered" and meta["predicted_answer"] == "Cima"
    assert (meta["em"], meta["f1"], meta["searches"], meta["invalid_turns"]) == (1.0, 1.0, 2, 0)
    assert [t.info.get("passages") for t in rollout.turns] == [["d1"], ["d2"], None]


def test_observation_text_and_state() -> None:
    actor = Scripted("<search>Alpha Books founder</search>", "no tags here", "<answer>x</answer>")
    rollout = play(actor, FixedSearcher(TINY_SEARCHER_RESULTS))
    one, two, three = (o.text for o in actor.seen)
    assert "Question: In which city was the founder of Alpha Books born?" in one
    assert "<search>" in one and "<answer>" in one and "top 3 passages" in one
    assert "Cima" not in one and "founded_by" not in one  # no answer, no plan in the text
    assert "Latest result:" in two and "[1] Alpha Books: Alpha Books is a company." in two
    assert "Earlier results:" in three and "your reply was not used" in three
    assert three.endswith("Turn 3 of at most 10. Your reply:")
    state = actor.seen[2].state
    assert isinstance(state, SearchState) and state.plan == TINY_QUESTION.plan
    assert [s.action for s in state.history] == ["search", "invalid"]
    assert rollout.turns[1].info["error"].startswith("no <search>")
    # The no-op turn's note is what turn 3 reads for the first time.
    note = three.split("Latest result:\n")[1].split("\n\nTurn 3 of")[0]
    assert rollout.turns[2].info["input_tokens"] == 13 + count_tokens("Latest result:\n" + note)
    assert not rollout.success and rollout.meta["f1"] == 0.0


def test_reported_tokens_exclude_the_resent_history() -> None:
    replies = (
        "<search>Alpha Books founder</search>",
        "<search>Bero Tal born</search>",
        "<answer>Cima</answer>",
    )
    # A provider's input/output split: differenced as BAGEN does chat logs.
    split = Scripted(
        *(
            {"text": text, "usage": {"input_tokens": read, "output_tokens": wrote}}
            for text, read, wrote in zip(replies, (400, 520, 610), (50, 60, 5), strict=True)
        )
    )
    rollout = play(split, FixedSearcher(TINY_SEARCHER_RESULTS))
    # 400 + 50;  (520 - 400) + 60;  (610 - 520) + 5
    assert [t.usage["tokens"] for t in rollout.turns] == [450, 180, 95]
    assert rollout.turns[2].info["reported_input_tokens"] == 610
    assert rollout.turns[2].info["reported_output_tokens"] == 5
    # What the estimator is shown (BAGEN §3.5): fresh input without the re-sent history.
    probe, _ = make_probes(rollout)[-1]
    assert [(t.input_tokens, t.output_tokens) for t in probe.turns] == [(400, 50), (120, 60)]
    assert "Turn 2: input 120 tokens, output 60 tokens, total 180 tokens." in probe.question
    # A total only: the parts of the prompt read before are taken out, as the env counts them.
    mixed = Scripted(
        {"text": replies[0], "usage": {"tokens": 900}},
        {"text": replies[1], "usage": {"tokens": 1500}},
        {"text": replies[2], "usage": {"input_tokens": 700, "output_tokens": 30}},
    )
    rollout = play(mixed, FixedSearcher(TINY_SEARCHER_RESULTS))
    third = mixed.seen[2].text
    earlier = third.split("\n\nEarlier results:\n")[1].split("\n\nLatest result:")[0]
    earlier_tokens = count_tokens("Earlier results:\n" + earlier)
    assert earlier_tokens == 33  # 'Earlier results:' 3 + the turn-1 search block 30
    # 900 (turn 1 re-sends nothing);  1500 - instructions;  turn 2 gave no split, so
    # 700 - (instructions + earlier results) + 30
    assert [t.usage["tokens"] for t in rollout.turns] == [
        900,
        1500 - INTRO_TOKENS,
        700 - INTRO_TOKENS - earlier_tokens + 30,
    ]
    assert rollout.turns[1].info["reported_tokens"] == 1500
    # A total without a split: the estimator is told the split is unknown.
    probe, _ = make_probes(rollout)[-1]
    assert [(t.input_tokens, t.output_tokens) for t in probe.turns] == [(None, None)] * 2
    assert "Turn 1: input unknown tokens, output unknown tokens, total 900 tokens" in (
        probe.question
    )
    bad = Scripted({"text": "<answer>Cima</answer>", "usage": {"tokens": float("nan")}})
    turn = play(bad, FixedSearcher({})).turns[0]
    assert turn.usage["tokens"] == INTRO_TOKENS + 13 + 8 and "usage_note" in turn.info


class WholePromptReporter:
    """Reports what a model reads: the whole prompt (every turn) plus its reply."""

    name = "whole-prompt"

    def __init__(self, inner: object, split: bool) -> None:
        self.inner = inner
        self.split = split

    def act(self, observation: ActorObservation) -> dict[str, Any]:
        text = SearchReferenceActor.act(self.inner, observation)  # type: ignore[arg-type]
        read, wrote = count_tokens(observation.text), count_tokens(text)
        if self.split:
            return {"text": text, "usage": {"input_tokens": read, "output_tokens": wrote}}
        return {"text": text, "usage": {"tokens": read + wrote}}


@pytest.mark.parametrize("split", [True, False], ids=["input-output", "total"])
def test_a_model_reading_the_whole_prompt_is_not_charged_for_history_again(
    corpus: SearchCorpus, searcher: IndexSearcher, split: bool
) -> None:
    plain = batch(corpus, 12, 7, SearchReferenceActor(0), searcher)
    reported = batch(corpus, 12, 7, WholePromptReporter(SearchReferenceActor(0), split), searcher)
    long_ones = 0
    for counted, model in zip(plain, reported, strict=True):
        # the two counts differ a little, so the 3,500-token cap may cut one turn apart
        n = min(counted.T, model.T)
        assert abs(counted.T - model.T) <= 1
        assert [t.action for t in counted.turns[:n]] == [t.action for t in model.turns[:n]]
        for k, (mine, theirs) in enumerate(zip(counted.turns[:n], model.turns[:n], strict=True)):
            # Only the footer ("Turn k of at most 10. Your reply:"), separators and (in a
            # difference of prompts) the re-stated question differ; the history re-sent is
            # at least the 129 tokens of instructions.
            assert abs(theirs.usage["tokens"] - mine.usage["tokens"]) <= 40, (k, model.id)
        long_ones += counted.T >= 3
        # Charging the whole prompt every turn: at least the instructions (129) more per turn.
        whole = sum(
            count_tokens(t.observation or "") + t.info["output_tokens"] for t in model.turns
        )
        assert model.total()["tokens"] <= whole - 100 * (model.T - 1)
    assert long_ones >= 3


def test_max_turns_and_top_k(corpus: SearchCorpus) -> None:
    searcher = FixedSearcher({"q": [TINY_DOCS["d1"], TINY_DOCS["d2"], TINY_DOCS["d1"]]})
    preset = SearchPreset(max_turns=3, top_k=2)
    rollout = play(Scripted("<search>q</search>"), searcher, preset=preset)
    assert rollout.T == 3 and rollout.meta["end_reason"] == "max_turns"
    assert rollout.meta["predicted_answer"] is None and not rollout.success
    assert searcher.queries == [("q", 2)] * 3
    assert rollout.turns[0].info["passages"] == ["d1", "d2"]  # never more than top_k
    assert rollout.budget == {"tokens": 3500}
    with pytest.raises(ValueError, match="max_turns"):
        SearchPreset(max_turns=0)


def test_gold_chain_actor_succeeds_on_the_real_corpus(
    corpus: SearchCorpus, searcher: IndexSearcher
) -> None:
    """An actor searching each gold entity by name and answering the gold answer."""

    def follow(observation: ActorObservation) -> str:
        state = observation.state
        assert isinstance(state, SearchState)
        question = corpus.question(state.question_id)
        plan = question.plan
        assert plan is not None
        hop = observation.turn - 1
        if hop < question.hops:
            keywords = " ".join(RELATIONS[plan.relations[hop]].keywords)
            return f"<search>{question.gold_entities[hop]} {keywords}</search>"
        return f"<answer>{question.answer}</answer>"

    questions = [q for q in corpus.questions if q.answerable][:30]
    for question in questions:
        rollout = anyio.run(
            functools.partial(run_rollout, question, follow, searcher, rollout_id="g")
        )
        assert rollout.success and rollout.T == question.hops + 1
        retrieved = {p for t in rollout.turns for p in t.info.get("passages", [])}
        assert set(question.gold_docs) <= retrieved  # BM25 finds every gold document


def test_actor_error_ends_only_its_rollout(corpus: SearchCorpus, searcher: IndexSearcher) -> None:
    reference = SearchReferenceActor(0)

    def flaky(observation: ActorObservation) -> str:
        if observation.rollout_id.endswith("0002") and observation.turn == 2:
            raise RuntimeError("boom")
        return reference.act(observation)

    rollouts = batch(corpus, 4, 42, flaky, searcher)
    failed = rollouts[2]
    assert not failed.success and failed.T == 2
    assert failed.meta["end_reason"] == "agent_error"
    assert failed.meta["actor_error"] == "raised RuntimeError: boom"
    last = failed.turns[-1]
    assert last.action is None and last.info["error"] == "agent error: raised RuntimeError: boom"
    assert last.usage["tokens"] == last.info["input_tokens"] > 0
    assert all("actor_error" not in r.meta for i, r in enumerate(rollouts) if i != 2)


def test_reference_actor_needs_a_plan() -> None:
    question = Question("t2", "Who?", "x", ("d1",), 1)
    rollout = play(SearchReferenceActor(0), FixedSearcher({}), question=question)
    assert rollout.meta["end_reason"] == "agent_error"
    assert "needs observation.state with a plan" in rollout.meta["actor_error"]


def test_searcher_failure_is_an_environment_error(corpus: SearchCorpus) -> None:
    class Broken:
        async def search(self, query: str, k: int) -> list[SearchPassage]:
            raise OSError("connection refused")

    with pytest.raises(SearchEnvError, match=r"search-s42-0000 turn 1: .*connection refused"):
        batch(corpus, 3, 42, SearchReferenceActor(0), Broken(), concurrency=1)


# --------------------------------------------------------------------------- batches


def test_rollout_ids_order_and_meta(corpus: SearchCorpus, searcher: IndexSearcher) -> None:
    rollouts = batch(corpus, 12, 42, SearchReferenceActor(0), searcher)
    assert [r.id for r in rollouts] == [make_rollout_id(42, i) for i in range(12)]
    assert rollouts[7].id == "search-s42-0007"
    order = question_order(corpus, 12, 42)
    assert [r.meta["question_id"] for r in rollouts] == [q.id for q in order]
    assert question_order(corpus, 12, 42) == order != question_order(corpus, 12, 43)
    assert len(question_order(corpus, 1500, 1)) == 1500  # reshuffled past the question set
    for r in rollouts:
        assert r.env == "search" and r.budget == {"tokens": 3500}
        assert r.success == (r.meta["em"] == 1.0)
        for key in ("hops", "gold_answer", "predicted_answer", "f1", "end_reason", "seed"):
            assert key in r.meta


def test_concurrency_does_not_change_results(corpus: SearchCorpus, searcher: IndexSearcher) -> None:
    actor = SearchReferenceActor(0)
    one = batch(corpus, 40, 9, actor, searcher, concurrency=1)
    eight = batch(corpus, 40, 9, actor, searcher, concurrency=8)
    assert digest(one) == digest(eight)
    assert digest(batch(corpus, 40, 9, SearchReferenceActor(1), searcher)) != digest(one)


def test_rollouts_are_the_same_in_another_process(
    corpus: SearchCorpus, searcher: IndexSearcher
) -> None:
    code = (
        "import anyio, hashlib, json\n"
        "from pytest_budget.awareness._replay.rollouts import rollout_to_dict\n"
        "from pytest_budget.awareness.search._corpus import build_corpus\n"
        "from pytest_budget.awareness.search._env import *\n"
        "c = build_corpus(0)\n"
        "s = IndexSearcher(corpus_index(c))\n"
        "rs = anyio.run(generate_rollouts, c, 8, 5, SearchReferenceActor(0), s)\n"
        "p = json.dumps([rollout_to_dict(r) for r in rs], sort_keys=True)\n"
        "print(hashlib.sha256(p.encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "777"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == digest(batch(corpus, 8, 5, SearchReferenceActor(0), searcher))


def test_reference_actor_outcome_mix(corpus: SearchCorpus, searcher: IndexSearcher) -> None:
    rollouts = batch(corpus, 64, 42, SearchReferenceActor(0), searcher)
    feasible = sum(r.feasible for r in rollouts) / len(rollouts)
    assert 0.35 <= feasible <= 0.65
    # BAGEN's per-request cap ends an episode at the first request over it (§6): no rollout
    # succeeds over budget; failures are wrong answers or the cap.
    over_budget = [r for r in rollouts if r.success and not r.feasible]
    wrong = [r for r in rollouts if not r.success and r.meta["end_reason"] == "answered"]
    assert not over_budget and wrong
    more = batch(corpus, 256, 7, SearchReferenceActor(0), searcher)
    ends = Counter(str(r.meta["end_reason"]) for r in more)
    assert ends["token_cap"] >= 50 and ends["answered"] >= 150
    for r in more:
        if r.meta["end_reason"] == "token_cap":
            assert (
                r.total()["tokens"]
                <= 3500
                < r.total()["tokens"] + r.meta["truncated_turn"]["tokens"]
            )
    # BAGEN's answer check: EM, or token F1 >= 0.3 (a partly right answer counts)
    assert all(r.success == (r.meta["em"] == 1.0 or r.meta["f1"] >= 0.3) for r in more)
    assert any(r.meta["predicted_answer"] == UNKNOWN_ANSWER and r.success for r in more)
    assert any(r.meta["predicted_answer"] == UNKNOWN_ANSWER and not r.success for r in more)
    assert any(t.info.get("action") == "invalid" for r in more for t in r.turns)
    # Feasibility falls with the number of hops (budget grows with retrieval depth).
    by_hops = {
        h: sum(r.feasible for r in more if r.meta["hops"] == h)
        / sum(1 for r in more if r.meta["hops"] == h)
        for h in (2, 3, 4)
    }
    assert by_hops[2] > by_hops[3] > by_hops[4]


def test_reference_actor_reads_passages_not_the_answer(corpus: SearchCorpus) -> None:
    """With every search returning nothing, the actor cannot answer anything but unknown."""
    question = next(q for q in corpus.questions if q.answerable)
    actor = SearchReferenceActor(0, guess_rate=0.0, malformed_rate=0.0)
    rollout = play(actor, FixedSearcher({}), question=question)
    assert rollout.meta["predicted_answer"] in (None, UNKNOWN_ANSWER)
    assert question.answer not in "".join(t.action or "" for t in rollout.turns)


def test_reference_actor_is_stateless() -> None:
    actor = SearchReferenceActor(3)
    state = SearchState("t1", TINY_QUESTION.question, TINY_QUESTION.plan, 1, 10, 3)
    observation = ActorObservation("search", "search-s1-0001", 1, "prompt", state)
    other = ActorObservation("search", "search-s1-0002", 1, "prompt", state)
    first = actor.act(observation)
    actor.act(other)
    assert actor.act(observation) == first == SearchReferenceActor(3).act(observation)
    with pytest.raises(ValueError, match="confusion_rate"):
        SearchReferenceActor(confusion_rate=2.0)


def test_rollouts_survive_the_rollout_file(
    corpus: SearchCorpus, searcher: IndexSearcher, tmp_path: Path
) -> None:
    rollouts = batch(corpus, 6, 42, SearchReferenceActor(0), searcher)
    path = write_rollouts(tmp_path / "search.jsonl", rollouts)
    back = read_rollouts(path)
    assert [r.meta for r in back] == [r.meta for r in rollouts]
    assert [r.cumulative() for r in back] == [r.cumulative() for r in rollouts]
    assert [[t.info for t in r.turns] for r in back] == [
        [t.info for t in r.turns] for r in rollouts
    ]


# --------------------------------------------------------------------------- real HTTP


def test_real_retrieval_server_end_to_end(corpus: SearchCorpus, searcher: IndexSearcher) -> None:
    server = RetrievalServer(corpus_index(corpus), port=0)
    url = server.start()
    try:
        assert url.startswith("http://127.0.0.1:")

        async def go() -> list[Rollout]:
            async with RetrievalClient(url) as client:
                return await generate_rollouts(corpus, 24, 42, SearchReferenceActor(0), client)

        over_http = anyio.run(go)
    finally:
        server.stop()
    assert len(over_http) == 24 and any(r.feasible for r in over_http)
    assert any(t.info.get("passages") for r in over_http for t in r.turns)
    # The HTTP path and the in-process index give the very same rollouts.
    assert digest(over_http) == digest(batch(corpus, 24, 42, SearchReferenceActor(0), searcher))

    async def after_stop() -> None:
        async with RetrievalClient(url, timeout=2.0) as client:
            await generate_rollouts(corpus, 2, 42, SearchReferenceActor(0), client)

    with pytest.raises(SearchEnvError, match="retrieval service"):
        anyio.run(after_stop)


def test_index_searcher_accepts_a_small_bm25_index() -> None:
    index = BM25Index([Document(d.id, d.title, d.text) for d in TINY_DOCS.values()])
    actor = Scripted(
        "<search>Alpha Books founder</search>",
        "<search>Bero Tal born</search>",
        "<answer>cima</answer>",
    )
    rollout = play(actor, IndexSearcher(index))
    assert rollout.success and rollout.turns[0].info["passages"][0] == "d1"
    assert SEARCH_PRESET.token_cap == 3500 and SEARCH_PRESET.top_k == 3


@pytest.mark.parametrize(
    "module", ["pytest_budget.awareness.search._corpus", "pytest_budget.awareness.search._env"]
)
def test_modules_do_not_import_pytest(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pytest', '_pytest'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_reference_rollouts_after_sys_modules_was_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process pytest run (pytester) removes the modules it imported from sys.modules but
    leaves them as attributes of their package. The rollout generator and the reference actor
    must then still use one and the same module (the state class of one, the isinstance of the
    other); this flaked under -n 2 in test_docs_examples."""
    import sys

    import anyio

    import pytest_budget.awareness as package
    from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
    from pytest_budget.awareness.search import _env as search_env

    def summary() -> list[tuple[str, object, int, bool]]:
        rollouts = anyio.run(
            lambda: generate_env_rollouts("search", 4, seed=42, actor=ReferenceActor(42))
        )
        return [(r.id, r.meta.get("end_reason"), len(r.turns), r.success) for r in rollouts]

    expected = summary()
    assert all(reason in ("answered", "token_cap") for _, reason, _, _ in expected)
    monkeypatch.setattr(package, "search_env", search_env, raising=False)
    monkeypatch.delitem(sys.modules, "pytest_budget.awareness.search._env")
    assert summary() == expected
