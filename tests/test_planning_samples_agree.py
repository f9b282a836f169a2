"""Planning drill-down samples agree with their cell (issue 32 item 2): on blocked runs,
every sample's ``score``/``excluded`` follows the cell's reading, so the samples re-derive
the cell's path metrics exactly."""

from __future__ import annotations

import math

import anyio
import pytest

from pytest_budget.planning._code_metrics import evaluate_episode
from pytest_budget.planning._episode import run_episode
from pytest_budget.planning._episode_records import EpisodeRecord
from pytest_budget.planning._metrics import score_episodes
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import (
    AtomicOnlyToolAgent,
    GreedyToolAgent,
    OracleToolAgent,
    RandomValidToolAgent,
)
from pytest_budget.planning._samples import episode_samples

QUERIES = generate_queries("dining", 12) + generate_queries("location", 12)


def _episodes(mode: str, blocks: int, agent: object) -> list[EpisodeRecord]:
    async def main() -> list[EpisodeRecord]:
        return [await run_episode(q, 2, mode, blocks, agent, pool=QUERIES) for q in QUERIES]

    return anyio.run(main)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, abs_tol=1e-5)


@pytest.mark.parametrize(
    ("mode", "blocks"),
    [("cost_change", 2), ("remove_tools", 2), ("preference_change", 2), ("ban_tool", 2)],
)
@pytest.mark.parametrize(
    "agent",
    [OracleToolAgent(), GreedyToolAgent(), RandomValidToolAgent(seed=3), AtomicOnlyToolAgent()],
    ids=["oracle", "greedy", "random-valid", "atomic-only"],
)
def test_every_sample_agrees_with_its_cell(mode: str, blocks: int, agent: object) -> None:
    episodes = _episodes(mode, blocks, agent)
    cell = score_episodes(episodes, reading="code")
    samples = episode_samples(episodes, QUERIES, lambda text: text)
    counted = [s for s in samples if s["score"] is not None]
    for sample, episode in zip(samples, episodes, strict=True):
        code = evaluate_episode(episode)
        # excluded exactly when CostBench's path set P leaves the episode out
        assert (sample["excluded"] is None) == code.in_p, sample["id"]
        assert (sample["score"] is None) == (sample["excluded"] is not None)
        assert (sample["ned"] is None) == (sample["score"] is None)
    assert len(counted) == cell["n_path"]
    if counted:
        aned = sum(1 - s["score"] for s in counted) / len(counted)
        assert _same(aned, cell["aned"])
        assert _same(sum(s["exact"] for s in counted) / len(counted), cell["emr"])
    else:
        assert cell["aned"] is None


def test_two_event_runs_with_an_ineffective_block_are_excluded() -> None:
    # Episodes where both blocks fired (the prose rule counts them) but one fired on the
    # turn before the answer, so it is not effective and CostBench leaves them out.
    found = 0
    for agent in (OracleToolAgent(), GreedyToolAgent()):
        episodes = _episodes("cost_change", 2, agent)
        code = episode_samples(episodes, QUERIES, lambda text: text)
        prose = episode_samples(episodes, QUERIES, lambda text: text, reading="prose")
        for ours, theirs, episode in zip(code, prose, episodes, strict=True):
            if episode.blocks_applied == 2 and not evaluate_episode(episode).block_valid:
                found += 1
                assert ours["excluded"] == "underblocked" and ours["score"] is None
                assert theirs["excluded"] is None and theirs["score"] is not None
    assert found > 0
