"""The three awareness environments, stepped one turn at a time for online runs.

Each adapter reuses its environment's own pieces (prompt, reply parser, step rules, token
counting) from :mod:`~pytest_budget.awareness.sokoban._env`,
:mod:`~pytest_budget.awareness.search._env` and :mod:`~pytest_budget.awareness.warehouse`,
so an online turn is scored exactly as a replay-mode rollout turn: an invalid action wastes
the turn by the environment's rules and still costs its tokens.

Budgets and their default caps (the ``1x`` level; cap levels multiply them):

* Sokoban, Search: ``tokens``, the environment's token cap (2,500 / 3,500, BAGEN's).
* Warehouse: its three external budgets.  BAGEN conditions Warehouse probes on caps drawn
  after the fact (App. B.4); online, the caps must exist before the run, so the 1x
  challenge is fixed: target cash :data:`WAREHOUSE_TARGET_CASH`, 22 weeks, and occupancy and
  cost caps near the reference policy's median realized use (about half of its runs reach
  the target within them: 27 of 64 on seed 42, see the docs).  Tokens are counted and
  reported but not capped there (its budget is external).

Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_budget.awareness._replay.rollouts import ActorReply

__all__ = [
    "ONLINE_ENVS",
    "WAREHOUSE_CAPS",
    "WAREHOUSE_TARGET_CASH",
    "EnvTurn",
    "default_caps",
    "make_session",
]

#: Environments with a live online mode (``--budget-env`` names).
ONLINE_ENVS: tuple[str, ...] = ("sokoban-8x8", "sokoban-6x6", "warehouse", "search")
WAREHOUSE_TARGET_CASH = 890_000.0
WAREHOUSE_CAPS: dict[str, float] = {
    "time_weeks": 22.0,
    "warehouse_item_weeks": 135_000.0,
    "cumulative_cost_usd": 1_190_000.0,
}


def default_caps(env: str) -> dict[str, float]:
    """The 1x caps of an online environment."""
    if env.startswith("sokoban-"):
        from pytest_budget.awareness.sokoban._env import SOKOBAN_PRESETS

        return {"tokens": float(SOKOBAN_PRESETS[env].token_cap)}
    if env == "search":
        from pytest_budget.awareness.search._env import SEARCH_PRESET

        return {"tokens": float(SEARCH_PRESET.token_cap)}
    if env == "warehouse":
        return dict(WAREHOUSE_CAPS)
    raise KeyError(f"no online mode for environment {env!r}; known: {', '.join(ONLINE_ENVS)}")


@dataclass
class EnvTurn:
    """What one executed turn did: ``usage`` in the budget dimensions (external for
    Warehouse; empty for token environments, whose usage is the turn's tokens)."""

    info: dict[str, Any]
    done: bool
    usage: dict[str, float] = field(default_factory=dict)


class _TokenCounting:
    """Acting tokens by the Sokoban rule: prompt + reply, or the reported total."""

    def acting_tokens(
        self, env_text: str, text: str, reported: tuple[float, float] | None
    ) -> tuple[float, dict[str, Any]]:
        from pytest_budget.awareness.sokoban._env import _turn_tokens

        tokens = None if reported is None else reported[0] + reported[1]
        value, note = _turn_tokens(env_text, ActorReply(text, tokens))
        return float(value), ({"usage_note": note} if note else {})


class SokobanSession(_TokenCounting):
    external = False

    def __init__(self, env: str, seed: int, index: int) -> None:
        import pytest_budget.awareness.sokoban._env as sokoban_env
        from pytest_budget.awareness.sokoban._puzzles import _generate_puzzle

        self._m = sokoban_env
        self.preset = sokoban_env.SOKOBAN_PRESETS[env]
        self.level_seed, self.level, _ = _generate_puzzle(self.preset, seed, index)
        self.state = self.level
        self.rollout_id = sokoban_env.make_rollout_id(self.preset, seed, index)
        self.env = sokoban_env.ENV_NAME
        self.max_turns = self.preset.max_turns
        self.feedback: str | None = None
        self.executed = 0
        self.solved = False
        self.task: dict[str, Any] = {}

    def prompt(self, turn: int) -> tuple[str, Any]:
        text = self._m.sokoban_prompt(
            self.state, preset=self.preset, turn=turn, feedback=self.feedback
        )
        return text, self.state

    async def step(self, action: Any, turn: int) -> EnvTurn:
        from pytest_budget._environments.sokoban import step

        k = self.preset.max_actions_per_turn
        parsed = self._m.parse_reply(action if isinstance(action, str) else "", k)
        reward, played = 0.0, []
        for move in parsed.actions:
            if self.executed >= self.preset.max_actions_per_traj:
                break
            self.state, r, self.solved = step(self.state, move)
            played.append(move)
            self.executed += 1
            reward += r
            if self.solved:
                break
        info: dict[str, Any] = {"actions": played, "reward": round(reward, 6)}
        if parsed.error is not None:
            info["error"] = parsed.error
        done = self.solved or self.executed >= self.preset.max_actions_per_traj
        self.feedback = self._m._feedback(parsed, round(reward, 6), self.state, k)
        return EnvTurn(info, done)

    def success(self) -> bool:
        return self.solved


class SearchSession:
    external = False

    def __init__(self, seed: int, index: int, searcher: Any, question: Any) -> None:
        import pytest_budget.awareness.search._env as search_env

        self._m = search_env
        self.preset = search_env.SEARCH_PRESET
        self.question = question
        self.searcher = searcher
        self.rollout_id = search_env.make_rollout_id(seed, index)
        self.env = search_env.ENV_NAME
        self.max_turns = self.preset.max_turns
        self.history: list[Any] = []
        self.prediction: str | None = None
        self.previous_prompt: float | None = None
        self.task: dict[str, Any] = {}
        self._turn = 1

    def prompt(self, turn: int) -> tuple[str, Any]:
        m, q = self._m, self.question
        self._turn = turn
        state = m.SearchState(
            q.id,
            q.question,
            q.plan,
            turn,
            self.preset.max_turns,
            self.preset.top_k,
            tuple(self.history),
        )
        return m.search_prompt(q.question, self.history, preset=self.preset, turn=turn), state

    def acting_tokens(
        self, env_text: str, text: str, reported: tuple[float, float] | None
    ) -> tuple[float, dict[str, Any]]:
        m, q, turn = self._m, self.question, self._turn
        read = m._new_input_tokens(q.question, self.history, preset=self.preset, turn=turn)
        resent = m._resent_tokens(q.question, self.history, preset=self.preset, turn=turn)
        usage = m._turn_usage(read, resent, ActorReply(text), reported, self.previous_prompt, turn)
        self.previous_prompt = usage.prompt_tokens
        return float(usage.tokens), dict(usage.info)

    async def step(self, action: Any, turn: int) -> EnvTurn:
        m = self._m
        parsed = m.parse_action(action if isinstance(action, str) else "")
        info: dict[str, Any] = {"action": parsed.kind or "invalid"}
        if parsed.kind == "search":
            passages = await m._search(
                self.searcher, parsed.text, self.preset.top_k, self.rollout_id, turn
            )
            info["query"] = parsed.text
            self.history.append(m.SearchStep(turn, "search", parsed.text, passages))
        elif parsed.kind == "answer":
            self.prediction = parsed.text
            info["answer"] = parsed.text
            return EnvTurn(info, True)
        else:
            info["error"] = parsed.error
            self.history.append(m.SearchStep(turn, "invalid", error=parsed.error))
        return EnvTurn(info, False)

    def success(self) -> bool:
        if self.prediction is None:
            return False
        golds = self.question.answers
        return bool(
            self._m.exact_match(self.prediction, golds)
            or self._m.token_f1(self.prediction, golds) >= self._m.ANSWER_F1_THRESHOLD
        )


class WarehouseSession(_TokenCounting):
    external = True

    def __init__(self, seed: int, index: int, panel: Any, target: float) -> None:
        import pytest_budget.awareness.warehouse as warehouse
        from pytest_budget.awareness.warehouse._env import _rng_seed

        self._m = warehouse
        self.sim = warehouse.WarehouseEnv(panel, seed=_rng_seed("warehouse-rollout", seed, index))
        self.rollout_id = warehouse.make_rollout_id(seed, index)
        self.env = warehouse.ENV_NAME
        self.max_turns = self.sim.config.steps
        self.target = target
        self.task = {"target_cash_usd": target}

    def prompt(self, turn: int) -> tuple[str, Any]:
        return self.sim.render(), self.sim.state_dict()

    async def step(self, action: Any, turn: int) -> EnvTurn:
        report = self.sim.step(action if isinstance(action, str | self._m.WarehouseAction) else "")
        return EnvTurn(report.info(), self.sim.done, {k: float(v) for k, v in report.usage.items()})

    def success(self) -> bool:
        st = self.sim.state
        return not st.bankrupt and st.cash_cents / 100.0 >= self.target


def make_session(env: str, seed: int, index: int, resources: Mapping[str, Any]) -> Any:
    """The adapter for episode ``index`` of ``env`` (same episode at every cap level).

    ``resources``: ``searcher`` and ``questions`` (search), ``panel`` (Warehouse).
    """
    if env.startswith("sokoban-"):
        return SokobanSession(env, seed, index)
    if env == "search":
        return SearchSession(seed, index, resources["searcher"], resources["questions"][index])
    if env == "warehouse":
        return WarehouseSession(seed, index, resources.get("panel"), WAREHOUSE_TARGET_CASH)
    raise KeyError(f"no online mode for environment {env!r}; known: {', '.join(ONLINE_ENVS)}")
