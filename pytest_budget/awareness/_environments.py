"""The built-in awareness environments by name, and rollout generation with a disk cache.

``generate_env_rollouts("sokoban-8x8", 128, seed=42, actor=...)`` rolls the actor out with
no budget constraint and returns the logged rollouts (Warehouse rollouts come back with
challenge-conditioned budgets: ``warehouse`` the leak-free ``outcome`` preset,
``warehouse-paper`` the paper's ``half_reachable`` scheme).  :class:`RolloutCache` stores
them as JSONL so later runs and other xdist workers reuse them.  Plain Python: no pytest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_budget._core.roles import agent_name
from pytest_budget.awareness._replay.rollouts import (
    Rollout,
    RolloutFileError,
    read_rollouts,
    write_rollouts,
)

__all__ = [
    "ENVIRONMENTS",
    "ROLLOUT_FORMAT_VERSION",
    "SEARCH_CORPUS_SEED",
    "WAREHOUSE_PRESETS",
    "ReferenceActor",
    "RolloutCache",
    "file_digest",
    "generate_env_rollouts",
]

#: Built-in environments (``--budget-env``) and their budget dimensions.
ENVIRONMENTS: dict[str, tuple[str, ...]] = {
    "sokoban-8x8": ("tokens",),
    "sokoban-6x6": ("tokens",),
    "warehouse": ("time_weeks", "warehouse_item_weeks", "cumulative_cost_usd"),
    "search": ("tokens",),
    "warehouse-paper": ("time_weeks", "warehouse_item_weeks", "cumulative_cost_usd"),
}

#: Warehouse probe sets by env name -> challenge preset (``warehouse.condition_challenges``).
WAREHOUSE_PRESETS: dict[str, str] = {"warehouse": "outcome", "warehouse-paper": "paper"}

#: The bundled search world (fixed, so questions and documents never move between runs).
SEARCH_CORPUS_SEED = 0

# Bump when generated rollouts change for the same inputs (invalidates cached files).
ROLLOUT_FORMAT_VERSION = 2


class ReferenceActor:
    """The built-in actor for every environment: dispatches on ``observation.env``.

    Sokoban: BFS with a slip rate; Warehouse: a reorder-point policy.  Stateless across
    rollouts, deterministic per seed.
    """

    name = "reference-actor"
    # Called in the event loop, not through a worker thread per turn (7,000 hops in the
    # main job): Warehouse and search turns are pure and sub-millisecond, a Sokoban turn a
    # BFS of about a millisecond; under the interpreter lock a thread would not overlap it
    # with the loop's own work anyway.
    run_inline = True

    def __init__(self, seed: int = 42) -> None:
        self.seed = seed
        self._actors: dict[str, Any] = {}

    def _actor(self, family: str) -> Any:
        # Built on first use, so a Sokoban-only run never loads the Warehouse model.
        if family not in self._actors:
            if family == "sokoban":
                from pytest_budget.awareness.sokoban._env import SokobanReferenceActor

                self._actors[family] = SokobanReferenceActor(self.seed)
            elif family == "search":
                from pytest_budget.awareness.search._env import SearchReferenceActor

                self._actors[family] = SearchReferenceActor(self.seed)
            else:
                from pytest_budget.awareness.warehouse._policy import ReorderPointPolicy

                self._actors[family] = ReorderPointPolicy(seed=self.seed)
        return self._actors[family]

    def act(self, observation: object) -> object:
        env = str(getattr(observation, "env", ""))
        for family in ("sokoban", "warehouse", "search"):
            if env.startswith(family):
                return self._actor(family).act(observation)
        raise ValueError(f"the reference actor does not know environment {env!r}")


async def generate_env_rollouts(
    env: str,
    n: int,
    *,
    seed: int,
    actor: object,
    concurrency: int = 8,
    warehouse_demand: str | Path | None = None,
    search_url: str | None = None,
) -> list[Rollout]:
    """Roll ``actor`` out ``n`` times in the built-in environment ``env``.

    ``warehouse_demand`` is a demand CSV replacing Warehouse's bundled synthetic panel;
    ``search_url`` is the retrieval server the search environment queries over HTTP (without
    one, the bundled corpus is searched in process).  The actor's replies are counted in no
    cell's spend: every estimator reads the same rollouts.
    """
    from pytest_budget._core.written import shared_work

    with shared_work():
        return await _generate(
            env, n, seed=seed, actor=actor, concurrency=concurrency,
            warehouse_demand=warehouse_demand, search_url=search_url,
        )  # fmt: skip


async def _generate(
    env: str,
    n: int,
    *,
    seed: int,
    actor: object,
    concurrency: int,
    warehouse_demand: str | Path | None,
    search_url: str | None,
) -> list[Rollout]:
    if env.startswith("sokoban-"):
        # `from module import names`, not `from package import module`: the latter can hand
        # back a stale module object after an in-process pytest run reset sys.modules, whose
        # classes then differ from the reference actors' (isinstance fails).
        from pytest_budget.awareness.sokoban._env import SOKOBAN_PRESETS
        from pytest_budget.awareness.sokoban._env import generate_rollouts as sokoban_rollouts

        preset = SOKOBAN_PRESETS[env]
        return await sokoban_rollouts(preset, n, seed, actor, concurrency=concurrency)
    if env in WAREHOUSE_PRESETS:
        from pytest_budget.awareness.warehouse import (
            condition_challenges,
            load_demand_panel,
        )
        from pytest_budget.awareness.warehouse import generate_rollouts as warehouse_rollouts

        panel = load_demand_panel(warehouse_demand) if warehouse_demand else None
        raw = await warehouse_rollouts(n, seed, actor, panel=panel, concurrency=concurrency)
        return condition_challenges(raw, preset=WAREHOUSE_PRESETS[env], seed=seed)
    if env == "search":
        from pytest_budget.awareness.retrieval._client import RetrievalClient
        from pytest_budget.awareness.search._corpus import build_corpus
        from pytest_budget.awareness.search._env import IndexSearcher, corpus_index
        from pytest_budget.awareness.search._env import generate_rollouts as search_rollouts

        corpus = build_corpus(SEARCH_CORPUS_SEED)
        if search_url is None:
            searcher = IndexSearcher(corpus_index(corpus))
            return await search_rollouts(corpus, n, seed, actor, searcher, concurrency=concurrency)
        async with RetrievalClient(search_url) as client:
            return await search_rollouts(corpus, n, seed, actor, client, concurrency=concurrency)
    raise KeyError(f"unknown awareness environment {env!r}; known: {', '.join(ENVIRONMENTS)}")


def file_digest(path: str | Path) -> str:
    """A short content digest (identifies a user data file in cache keys and contexts)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class RolloutCache:
    """Generated rollouts on disk, one JSONL file per (env, n, seed, actor, version)."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = None if directory is None else Path(directory)

    @staticmethod
    def key(env: str, n: int, seed: int, actor: object, variant: str = "") -> str:
        """``variant`` names anything else the rollouts depend on (e.g. a demand file)."""
        payload = json.dumps([env, n, seed, agent_name(actor), ROLLOUT_FORMAT_VERSION, variant])
        digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
        return f"{env}-n{n}-s{seed}-{digest}"

    def path(self, env: str, n: int, seed: int, actor: object, variant: str = "") -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{self.key(env, n, seed, actor, variant)}.jsonl"

    def load(
        self, env: str, n: int, seed: int, actor: object, variant: str = ""
    ) -> list[Rollout] | None:
        path = self.path(env, n, seed, actor, variant)
        if path is None or not path.is_file():
            return None
        try:
            rollouts = read_rollouts(path)
        except RolloutFileError:
            return None  # a damaged cache entry is regenerated, not trusted
        return rollouts if len(rollouts) == n else None

    def store(
        self,
        env: str,
        n: int,
        seed: int,
        actor: object,
        rollouts: Sequence[Rollout],
        variant: str = "",
    ) -> None:
        path = self.path(env, n, seed, actor, variant)
        if path is not None:
            write_rollouts(path, rollouts)
