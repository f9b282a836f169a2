"""No agent output crashes the suite's own code (hypothesis, one property per role).

Each role's agent returns an arbitrary value: text over every code point (lone surrogates
included, with the tags the parsers look for mixed in), or an arbitrary Python object
(huge integers, NaN, bytes, nested containers, estimate and plan objects with arbitrary
fields, objects whose ``repr``/``str`` raise or recurse).  The value goes through the same
path a suite cell takes: :func:`~pytest_budget._core.roles.call_role`, the role's coercion and
parser, and scoring.  Properties: no exception escapes, and every item ends either read or
``invalid``/unreadable with a reason (never silently dropped).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
from typing import Any

import anyio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_budget._core.samples import SAMPLE_TEXT_LIMIT, scrubber
from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._replay.answers import Impossible, Interval, IntervalMap, Invalid
from pytest_budget.awareness._replay.rollouts import ActorReply, Rollout, Turn
from pytest_budget.awareness._samples import TURN_TEXT_LIMIT, sample_fields
from pytest_budget.awareness.sokoban._env import SOKOBAN_PRESETS, generate_rollouts
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._samples import episode_samples
from pytest_budget.report._document import _encode, finite_cell, pack_samples, unpack_samples
from pytest_budget.report._html.drill_data import pack, unpack
from pytest_budget.triage import Baseline, Item, Plan, PlanEntry, run_cell
from pytest_budget.triage._phase0 import Phase0Cache, measure_baselines
from pytest_budget.triage._samples import cell_samples
from pytest_budget.triage._types import Pool, Solution


class RaisingRepr:
    def __repr__(self) -> str:
        raise ValueError("no repr for you")

    __str__ = __repr__


class RecursiveRepr:
    def __repr__(self) -> str:
        return repr(self)

    __str__ = __repr__


class RaisingAttributes:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class BrokenMapping(dict[str, Any]):
    def get(self, key: str, default: Any = None) -> Any:
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return True


SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
TAG_PIECES = st.sampled_from(
    ["<answer>", "</answer>", "<think>", "</think>", "[", "]", ",", ":", "impossible",
     '{"plan": [', '{"id": "p0", "tokens": ', "}", "]}", "1e400", "-5", "NaN", " ", "\n",
     "tokens:", "Answer:", "```json", "```"]
)  # fmt: skip
TEXT = st.lists(st.one_of(st.text(max_size=20), SURROGATES, TAG_PIECES), max_size=30).map("".join)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=10**300, max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.complex_numbers(allow_nan=True),
)
HOSTILE = st.one_of(
    st.builds(RaisingRepr),
    st.builds(RecursiveRepr),
    st.builds(RaisingAttributes),
    st.builds(object),
)
ATOMS = st.one_of(st.none(), NUMBERS, TEXT, st.binary(max_size=10), HOSTILE)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(
        st.sampled_from(["plan", "id", "tokens", "text", "answer", "content", "tool_calls",
                         "choices", "usage", "name", "arguments", "function"]),
        st.text(max_size=5),
    )  # fmt: skip
    return st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=4),
        st.builds(BrokenMapping, st.dictionaries(keys, children, max_size=2)),
        st.builds(Interval, children, children),
        st.builds(IntervalMap, st.lists(st.tuples(TEXT, children), max_size=3).map(tuple)),
        st.builds(Invalid, children, children),
        st.builds(Plan, st.lists(st.builds(PlanEntry, children, children), max_size=3).map(tuple)),
        st.builds(Solution, children, children, children),
        st.builds(ActorReply, children, children),
    )


OBJECTS = st.recursive(ATOMS, _containers, max_leaves=8)
OUTPUTS = st.one_of(TEXT, OBJECTS, st.just(Impossible()))
#: Examples per role; ``BUDGET_FUZZ_EXAMPLES=5000`` for a longer campaign.
EXAMPLES = int(os.environ.get("BUDGET_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _returns(value: Any, method: str) -> object:
    """An agent whose role method returns ``value`` (sync: it runs in a worker thread)."""

    def answer(*args: Any) -> Any:
        return value

    return type("Hostile", (), {method: staticmethod(answer), "name": "hostile"})()


# ----------------------------------------------------------------------------- planner

POOL = Pool(
    name="tiny",
    domain="arith",
    items=tuple(Item(id=f"p{i}", text=f"{i} + {i} = ?") for i in range(4)),
)
TRUTH = {f"p{i}": Baseline(solved=i % 2 == 0, tokens=100 + 50 * i) for i in range(4)}


@SETTINGS
@given(OUTPUTS)
def test_planner_outputs_never_crash_a_cell(value: Any) -> None:
    cell = functools.partial(
        run_cell, POOL, TRUTH, 0.5, _returns(value, "plan"), seed=1, samples=20
    )
    outcome = anyio.run(cell)
    assert outcome.outcome in ("ok", "invalid")  # never "error": the planner did not raise
    if outcome.outcome == "invalid":
        # Unparseable after repair: excluded from the averages (TRIAGE App. B), not scored.
        assert outcome.reason and outcome.scores.v_u is None
    else:
        assert outcome.scores.v_u is not None
        assert outcome.scores.v_u <= outcome.scores.v_oracle


# --------------------------------------------------------------------------- estimator

ROLLOUTS = [
    Rollout(
        id=f"r{i}",
        env="mine",
        budget={"tokens": 1000.0},
        success=i == 0,
        turns=tuple(Turn({"tokens": 100.0 + 10 * t}) for t in range(3)),
    )
    for i in range(2)
]


@SETTINGS
@given(OUTPUTS)
def test_estimator_outputs_never_crash_a_cell(value: Any) -> None:
    outcome = anyio.run(run_awareness_cell, ROLLOUTS, _returns(value, "estimate"))
    assert outcome.n_probes == 4 and outcome.n_errors == 0  # every probe asked and read
    assert outcome.outcome == "ok"
    for result in outcome.results:
        assert result.estimate is not None
        if isinstance(result.estimate, Invalid):
            assert result.estimate.reason
        if isinstance(result.estimate, Interval):
            assert math.isfinite(result.estimate.lo) and math.isfinite(result.estimate.hi)
            assert 0 <= result.estimate.lo <= result.estimate.hi


# -------------------------------------------------------------------------- tool agent

QUERY = generate_queries("dining", 1, seed=3)[0]


@SETTINGS
@given(OUTPUTS)
def test_tool_agent_outputs_never_crash_an_episode(value: Any) -> None:
    episode = functools.partial(
        run_episode, QUERY, 1, "static", 0, _returns(value, "act"), seed=3, max_steps=3
    )
    record = anyio.run(episode)
    assert record.error is None  # the agent never raised: its replies were read or refused
    assert len(record.calls) <= 3


# ------------------------------------------------------------------------------ solver

ITEMS = [Item(id="s1", text="2 + 2 = ?", domain="arith", answer="4")]


@SETTINGS
@given(OUTPUTS)
def test_solver_outputs_never_crash_phase0(value: Any) -> None:
    report = anyio.run(
        functools.partial(
            measure_baselines, ITEMS, _returns(value, "solve"), cache=Phase0Cache(None)
        )
    )
    # Either measured or an error of that item with a reason; nothing in between.
    assert (set(report.baselines) | set(report.errors)) == {"s1"}
    assert all(reason for reason in report.errors.values())


# ------------------------------------------------------------------------------- actor


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 3))
@given(OUTPUTS)
@example({"text": "x", "usage": {"tokens": 2501}})  # over the 6x6 cap on turn 1: no turn kept
def test_actor_outputs_never_crash_a_rollout(value: Any) -> None:
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    rollouts = anyio.run(functools.partial(generate_rollouts, preset, 1, 5, _returns(value, "act")))
    (rollout,) = rollouts
    # A first reply over the token cap ends the rollout with no turn kept (BAGEN drops the
    # truncated turn, facts/bagen.md 3.2); otherwise at least one turn was played.
    if rollout.meta["end_reason"] == "token_cap" and "truncated_turn" in rollout.meta:
        assert rollout.meta["truncated_turn"]["turn"] == rollout.T + 1
    else:
        assert rollout.T >= 1
    if rollout.meta.get("actor_error"):
        assert isinstance(rollout.meta["actor_error"], str)


# ------------------------------------------------------- the samples of a real cell (issue 33)


def _nested(depth: int, leaf: Any) -> Any:
    """``[[[...leaf...]]]`` ``depth`` deep (repr and json.dumps recurse past ~1,000)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _cycle(leaf: Any) -> Any:
    value: list[Any] = [leaf]
    value.append(value)
    return value


def _fan(levels: int, leaf: Any) -> Any:
    """40 references to the same list, ``levels`` deep: 40**levels paths, levels+1 objects."""
    value = leaf
    for _ in range(levels):
        value = [value] * 40
    return value


BIG_INTS = st.integers(min_value=10**4400, max_value=10**6000) | st.integers(
    min_value=-(10**6000), max_value=-(10**4400)
)
_TEN_MB = "x" * 10_000_000
_SHAPE_LEAVES = st.one_of(BIG_INTS, st.just(math.nan), SURROGATES, ATOMS)
#: The shapes the held-out fuzz campaign crashed the sample code with, and their kin.
SHAPES = st.one_of(
    BIG_INTS,
    st.builds(_nested, st.integers(900, 60_000), _SHAPE_LEAVES),
    st.builds(_cycle, _SHAPE_LEAVES),
    st.builds(_fan, st.integers(3, 12), _SHAPE_LEAVES),
    st.builds(lambda v: {"plan": [{"id": "p0", "tokens": v}]}, _SHAPE_LEAVES),
    st.builds(lambda v: Plan((PlanEntry("p0", v),)), BIG_INTS),
    OBJECTS,
)


class Shown:
    """A generated value that hypothesis prints by its type (its own printer recurses)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Shown(<{type(self.value).__name__}>)"


SAMPLE_OUTPUTS = st.one_of(SHAPES, OUTPUTS).map(Shown)


def _report_json(fields: Any) -> str:
    """The fields as the report writes a cell (non-finite numbers nulled, strict JSON),
    checked to come back the same from the written file (samples pooled, ASCII JSON,
    gzip: lone surrogates included) and from the HTML page's sample block."""
    cell = finite_cell(fields)
    text = json.dumps(cell, allow_nan=False, default=_encode)
    expected = json.loads(text)
    document: dict[str, Any] = {
        "cells": [{k: v for k, v in cell.items() if k != "sample_rollouts"}]
    }
    if "sample_rollouts" in cell:
        document["sample_rollouts"] = {"fp": cell["sample_rollouts"]}
    written = json.dumps(pack_samples(document), separators=(",", ":"), allow_nan=False)
    back = json.loads(gzip.decompress(gzip.compress(written.encode("ascii"), mtime=0)))
    unpack_samples(back)
    assert back["cells"][0] == {k: v for k, v in expected.items() if k != "sample_rollouts"}
    assert back.get("sample_rollouts", {}).get("fp") == expected.get("sample_rollouts")
    assert unpack(pack(expected, secrets=[])) == expected
    return text


#: The hostile shapes cost up to ~0.4 s a call (sized before they are refused).
SAMPLE_SETTINGS = settings(SETTINGS, max_examples=max(1, EXAMPLES // 6))


@SAMPLE_SETTINGS
@given(SAMPLE_OUTPUTS)
@example(Shown(_TEN_MB))
@example(Shown(10**5000))
@example(Shown(_nested(100_000, 1)))
@example(Shown({"plan": [{"id": "p1", "tokens": 10**5000}]}))
def test_triage_samples_show_any_planner_output(shape: Any) -> None:
    value = getattr(shape, "value", shape)
    secret = "sk-" + "s3cret" * 4
    planner = _returns(value, "plan")
    outcome = anyio.run(functools.partial(run_cell, POOL, TRUTH, 0.5, planner, seed=1, samples=20))
    fields = cell_samples(POOL.items, TRUTH, frozenset(), outcome, [secret])
    text = _report_json(fields)
    assert [record["id"] for record in fields["samples"]] == [item.id for item in POOL.items]
    raw = fields["plan_raw"]
    assert raw is None if outcome.raw is None else isinstance(raw, str)
    assert raw is None or len(raw) <= SAMPLE_TEXT_LIMIT + 60  # the clip marker's line
    assert secret not in text
    json.loads(text)


@SAMPLE_SETTINGS
@given(SAMPLE_OUTPUTS)
@example(Shown(_nested(100_000, "x")))
@example(Shown({"text": "<answer>[1, 2]</answer>", "usage": {"tokens": 10**5000}}))
def test_awareness_samples_show_any_estimator_output(shape: Any) -> None:
    value = getattr(shape, "value", shape)
    outcome = anyio.run(run_awareness_cell, ROLLOUTS, _returns(value, "estimate"))
    fields = sample_fields(ROLLOUTS, outcome.results, ("tokens",), scrubber())
    _report_json(dict(fields))
    assert len(fields["samples"]) == outcome.n_probes == 4
    for record in fields["samples"]:
        assert record["raw"] is None or len(record["raw"]) <= SAMPLE_TEXT_LIMIT + 60


@SAMPLE_SETTINGS
@given(SAMPLE_OUTPUTS)
@example(Shown({"tool_calls": [{"function": {"name": "x", "arguments": _nested(100_000, 1)}}]}))
@example(Shown({"tool_calls": [{"function": {"name": "x", "arguments": {"a": 10**5000}}}]}))
@example(Shown({"content": _fan(12, "<answer>")}))
def test_planning_samples_show_any_tool_agent_output(shape: Any) -> None:
    value = getattr(shape, "value", shape)
    episode = functools.partial(
        run_episode, QUERY, 1, "static", 0, _returns(value, "act"), seed=3, max_steps=3
    )
    record = anyio.run(episode)
    assert record.error is None
    (sample,) = episode_samples([record], [QUERY], scrubber())
    _report_json(sample)
    assert sample["id"] == QUERY.query_id and len(sample["calls"]) == len(record.calls)
    for call in sample["calls"]:
        assert len(call["arguments"]) <= SAMPLE_TEXT_LIMIT + 60


# ---------------------------------------- the other inputs of the sample builders (issue 33)


@SAMPLE_SETTINGS
@given(SAMPLE_OUTPUTS)
@example(Shown(10**5000))
@example(Shown(_nested(100_000, 1)))
@example(Shown("\ud800" + "y" * 10_000))
def test_triage_samples_show_any_pool_answer_and_text(shape: Any) -> None:
    """A pool item's answer is any JSON value a pool gives (a huge integer, deep nesting);
    its text any string (lone surrogates): the item samples show both, clipped."""
    value = getattr(shape, "value", shape)
    text = value if isinstance(value, str) else "2 + \udc00 = ?"
    pool = Pool(
        name="hostile",
        domain="arith",
        items=tuple(Item(id=f"p{i}", text=text, answer=value) for i in range(4)),
    )
    planner = _returns({"plan": [{"id": "p0", "tokens": 200}, {"id": "p2", "tokens": 300}]}, "plan")
    outcome = anyio.run(functools.partial(run_cell, pool, TRUTH, 0.5, planner, seed=1, samples=20))
    fields = cell_samples(pool.items, TRUTH, frozenset(), outcome)
    _report_json(fields)
    assert [record["id"] for record in fields["samples"]] == ["p0", "p1", "p2", "p3"]
    for record in fields["samples"]:
        assert record["expected"] is None or len(record["expected"]) <= 400 + 60
        assert len(record["text"]) <= SAMPLE_TEXT_LIMIT + 60


@settings(SAMPLE_SETTINGS, max_examples=max(1, EXAMPLES // 10))
@given(SAMPLE_OUTPUTS)
@example(Shown({"text": "\ud800" * 20_000 + "<answer>Up</answer>", "usage": {"tokens": 3}}))
@example(Shown({"text": "<answer>Up</answer>", "usage": {"tokens": 10**5000}}))
def test_awareness_rollout_prefixes_show_any_actor_output(shape: Any) -> None:
    """What an actor returned is replayed to the estimator and kept in the rollout
    prefixes of the samples: clipped, strict JSON, the same after the file and the page."""
    value = getattr(shape, "value", shape)
    preset = SOKOBAN_PRESETS["sokoban-6x6"]
    rollouts = anyio.run(functools.partial(generate_rollouts, preset, 1, 5, _returns(value, "act")))
    estimator = _returns("<answer>[0, 100]</answer>", "estimate")
    outcome = anyio.run(run_awareness_cell, rollouts, estimator)
    fields = sample_fields(rollouts, outcome.results, tuple(preset_budget(rollouts)), scrubber())
    _report_json(dict(fields))
    assert len(fields["samples"]) == outcome.n_probes
    for prefix in fields["sample_rollouts"].values():
        for turn in prefix["turns"]:
            for key in ("observation", "action"):
                assert len(turn.get(key, "")) <= TURN_TEXT_LIMIT + 60


def preset_budget(rollouts: list[Rollout]) -> dict[str, Any]:
    return dict(rollouts[0].budget)
