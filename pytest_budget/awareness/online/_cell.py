"""One online cell: ``n`` episodes of one environment at one cap level, online and (for
the comparison) in replay mode, scored.  Plain Python and anyio: no pytest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget._core.roles import agent_name
from pytest_budget.awareness._replay.answers import ParsePolicy
from pytest_budget.awareness.online._envs import default_caps, make_session
from pytest_budget.awareness.online._protocol import PROTOCOLS
from pytest_budget.awareness.online._runner import OnlineRun, run_episode, run_to_rollout
from pytest_budget.awareness.online._scoring import ESTIMATE_SCORES, score_online_runs

__all__ = ["OnlineCellResult", "cell_caps", "episode_resources", "run_online_cell"]


@dataclass
class OnlineCellResult:
    agent: str
    protocol: str
    scores: dict[str, Any]
    runs: list[OnlineRun]
    replay_runs: list[OnlineRun] = field(default_factory=list)
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    outcome: str = "ok"
    reason: str = ""


def cell_caps(env: str, multiplier: float) -> dict[str, float]:
    """The caps of a cell: the environment's 1x caps times ``multiplier``."""
    return {d: round(c * multiplier, 6) for d, c in default_caps(env).items()}


def episode_resources(
    env: str, n: int, seed: int, *, warehouse_demand: str | None = None
) -> dict[str, Any]:
    """What the episodes of ``env`` share (questions and an in-process searcher; a panel)."""
    if env == "search":
        import pytest_budget.awareness.search._env as search_env
        from pytest_budget.awareness._environments import SEARCH_CORPUS_SEED
        from pytest_budget.awareness.search._corpus import build_corpus

        corpus = build_corpus(SEARCH_CORPUS_SEED)
        return {
            "questions": search_env.question_order(corpus, n, seed),
            "searcher": search_env.IndexSearcher(search_env.corpus_index(corpus)),
        }
    if env == "warehouse" and warehouse_demand:
        from pytest_budget.awareness.warehouse import load_demand_panel

        return {"panel": load_demand_panel(warehouse_demand)}
    return {}


async def _episodes(
    env: str,
    agent: Any,
    n: int,
    seed: int,
    caps: Mapping[str, float],
    resources: Mapping[str, Any],
    mode: str,
    protocol: str,
    charge: str,
    policy: ParsePolicy,
    concurrency: int,
) -> list[OnlineRun]:
    results: list[OnlineRun | None] = [None] * n
    slots = anyio.Semaphore(concurrency)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(index: int) -> None:
        async with slots:
            session = make_session(env, seed, index, resources)
            results[index] = await run_episode(
                session,
                agent,
                cap=caps,
                mode=mode,
                protocol=protocol,
                charge=charge,
                policy=policy,
                limiter=limiter,
            )

    async with anyio.create_task_group() as group:
        for index in range(n):
            group.start_soon(one, index)
    return [r for r in results if r is not None]


async def run_online_cell(
    env: str,
    agent: Any,
    *,
    n: int,
    seed: int,
    multiplier: float = 1.0,
    protocol: str = "single",
    charge: str = "acting",
    policy: ParsePolicy = "bagen",
    concurrency: int = 8,
    success_value: float = 1.0,
    replay: bool = True,
    warehouse_demand: str | None = None,
) -> OnlineCellResult:
    """Run and score one cell (the replay pass too unless ``replay=False``)."""
    from pytest_budget.awareness._evaluate import run_awareness_cell

    caps = cell_caps(env, multiplier)
    resources = episode_resources(env, n, seed, warehouse_demand=warehouse_demand)
    args = (env, agent, n, seed, caps, resources)
    runs = await _episodes(*args, "online", protocol, charge, policy, concurrency)
    scores, reasons, notes = score_online_runs(runs, success_value=success_value)
    result = OnlineCellResult(
        agent_name(agent), PROTOCOLS[protocol], scores, runs, invalid_reasons=reasons, notes=notes
    )
    errors = [r.agent_error for r in runs if r.agent_error]
    if errors and len(errors) == len(runs):
        result.outcome, result.reason = "error", f"the actor failed on every run: {errors[0]}"
    if not replay:
        return result
    # Fresh resources: the replay pass must not share the online pass's searcher state.
    resources = episode_resources(env, n, seed, warehouse_demand=warehouse_demand)
    replayed = await _episodes(
        env, agent, n, seed, caps, resources, "replay", protocol, charge, policy, concurrency
    )
    result.replay_runs = replayed
    scores["replay_success_rate"] = sum(r.success for r in replayed) / n if n else None
    scores["replay_acting_tokens"] = sum(r.acting_tokens() for r in replayed) / n if n else None
    has_estimate = callable(getattr(agent, "estimate", None))
    if has_estimate:
        rollouts = [run_to_rollout(r) for r in replayed]
        outcome = await run_awareness_cell(
            rollouts,
            agent,
            policy=policy,
            limiter=anyio.CapacityLimiter(concurrency),
        )
        for name in ESTIMATE_SCORES:
            scores[f"replay_{name}"] = outcome.scores.get(name)
        if outcome.outcome != "ok":
            notes["replay"] = outcome.reason
    else:
        for name in ESTIMATE_SCORES:
            scores[f"replay_{name}"] = None
        notes["replay"] = (
            "replay estimates need an estimate(probe) method on the agent; only the replay "
            "rollouts' success and acting tokens are shown"
        )
    return result
