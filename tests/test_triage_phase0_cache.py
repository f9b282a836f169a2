"""The Phase 0 cache cannot go stale (issue 19 item 4).

A real model server on loopback answers the solver; the cache lives in a temporary
directory.  Changing anything that determines a result (provider, model, base URL, token
cap, prompt text, grader, item text, seed) must be a miss (a new solver call); changing
nothing must be a hit (no call), and the report counts where each result came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_server import ModelServer  # tests/ is on sys.path (prepend import mode)

from pytest_budget.models._client import AnthropicChatClient, OpenAIChatClient
from pytest_budget.triage import _prompts as triage_prompts
from pytest_budget.triage._llm import LLMSolver
from pytest_budget.triage._phase0 import (
    BaselineReport,
    Phase0Cache,
    measure_baselines,
    solver_identity,
)
from pytest_budget.triage._types import Baseline, Item

ITEM = Item(id="q1", text="What is 6 * 7?", answer="42", grader="exact")


@pytest.fixture
def servers() -> Iterator[tuple[ModelServer, ModelServer]]:
    with ModelServer(lambda body: "Answer: 42") as one, ModelServer(lambda b: "Answer: 42") as two:
        yield one, two


def _solver(url: str, *, provider: str = "openai", model: str = "m", **kw: Any) -> LLMSolver:
    client_type = OpenAIChatClient if provider == "openai" else AnthropicChatClient
    base = url if provider == "openai" else url.removesuffix("/v1")
    return LLMSolver(client_type(model, base), **kw)


def _measure(
    solver: LLMSolver, cache: Phase0Cache, item: Item = ITEM, seed: int = 1
) -> BaselineReport:
    async def go() -> BaselineReport:
        try:
            return await measure_baselines([item], solver, cache=cache, seed=seed)
        finally:
            await solver.aclose()

    return anyio.run(go)


def test_nothing_changed_is_a_hit(tmp_path: Path, servers: tuple[ModelServer, ModelServer]) -> None:
    one, _ = servers
    cache = Phase0Cache(tmp_path)
    first = _measure(_solver(one.url), cache)
    assert (first.solver_calls, first.cache_hits, first.sources) == (1, 0, {"q1": "solver"})
    assert first.baselines == {"q1": Baseline(solved=True, tokens=7)}
    again = _measure(_solver(one.url), cache)
    assert (again.solver_calls, again.cache_hits, again.sources) == (0, 1, {"q1": "cache"})
    assert again.baselines == first.baselines
    assert len(one.requests) == 1


@pytest.mark.parametrize(
    "change",
    ["provider", "model", "base_url", "max_tokens", "temperature", "grader", "text", "seed"],
)
def test_each_change_is_a_miss(
    tmp_path: Path, servers: tuple[ModelServer, ModelServer], change: str
) -> None:
    one, two = servers
    cache = Phase0Cache(tmp_path)
    assert _measure(_solver(one.url), cache).solver_calls == 1
    solver = _solver(one.url)
    item, seed = ITEM, 1
    if change == "provider":
        solver = _solver(one.url, provider="anthropic")
    elif change == "model":
        solver = _solver(one.url, model="m2")
    elif change == "base_url":
        solver = _solver(two.url)
    elif change == "max_tokens":
        solver = _solver(one.url, max_tokens=32_768)
    elif change == "temperature":
        solver = _solver(one.url, temperature=0.7)
    elif change == "grader":
        item = replace(ITEM, grader="numeric")
    elif change == "text":
        item = replace(ITEM, text="What is 6 * 7 ?")
    elif change == "seed":
        seed = 2
    report = _measure(solver, cache, item, seed)
    assert (report.solver_calls, report.cache_hits) == (1, 0), change


def test_a_changed_solver_prompt_is_a_miss(
    tmp_path: Path, servers: tuple[ModelServer, ModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, _ = servers
    cache = Phase0Cache(tmp_path)
    assert _measure(_solver(one.url), cache).solver_calls == 1
    before = solver_identity(_solver(one.url))["prompt"]
    monkeypatch.setitem(triage_prompts.SOLVER_SYSTEMS, "", "Solve it.\nAnswer: <answer>")
    assert solver_identity(_solver(one.url))["prompt"] != before
    assert _measure(_solver(one.url), cache).solver_calls == 1


def test_the_cached_file_names_the_solver_but_not_its_url(
    tmp_path: Path, servers: tuple[ModelServer, ModelServer]
) -> None:
    one, _ = servers
    _measure(_solver(one.url.replace("http://", "http://user:secret@")), Phase0Cache(tmp_path))
    (stored,) = list(tmp_path.rglob("*.json"))
    text = stored.read_text(encoding="utf-8")
    assert "secret" not in text and "127.0.0.1" not in text
    assert '"solver": "openai:m"' in text


def test_python_solvers_are_keyed_by_kind_and_caps() -> None:
    class Solver:
        name = "mine"
        max_tokens = 100

        def solve(self, problem: object) -> str:
            return "Answer: 1"

    def mine(problem: object) -> str:
        return "Answer: 1"

    assert solver_identity(Solver()) == {
        "name": "mine",
        "kind": f"{__name__}.test_python_solvers_are_keyed_by_kind_and_caps.<locals>.Solver",
        "max_tokens": 100,
    }
    assert solver_identity(mine)["kind"].endswith("<locals>.mine")


def test_terminal_summary_counts_phase0_sources_once_per_pool() -> None:
    from pytest_budget._core.record_json import cell_from_json
    from pytest_budget._core.records import CellRecord
    from pytest_budget.triage._summary import triage_table

    def cell(pool: str, agent: str, phase0: dict[str, int]) -> CellRecord:
        return cell_from_json(
            {"suite": "triage", "cell": f"{pool}-u0-a0.5-A", "pool": pool, "alpha": 0.5,
             "variant": "A", "seed": 0, "outcome": "ok", "scores": {}, "unsolvable_ratio": 0,
             "solver": "s", "agent": agent, "phase0": phase0}
        )  # fmt: skip

    counts = {"from_cache": 28, "measured": 2, "from_file": 0}
    # two cells share one pool's Phase 0
    cells = [cell("arith", a, counts) for a in ("oracle", "random")]
    cells.append(cell("mine", "oracle", {"from_cache": 0, "measured": 0, "from_file": 5}))
    lines = triage_table(cells)
    assert (
        "Phase 0: 28 results from the cache, 2 measured by the solver, 5 from pool files" in lines
    )
