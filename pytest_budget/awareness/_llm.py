"""The awareness suite's LLM agents: the estimator and the actor on a chat model.

Each sends one chat call per role call: the probe's chat (or the estimator's system message
and the probe text), or the actor's system message
(:func:`~pytest_budget.awareness._prompts.actor_system`) and the observation's self-contained
prompt.  The estimator returns the raw text, the actor the raw text with the usage the
provider reported; the suite's parsers read them.

Token caps: an actor's reply never exceeds its environment's token budget
(:func:`env_token_cap`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pytest_budget.awareness._prompts import actor_system, env_family, estimator_system
from pytest_budget.models._llm_agent import LLMAgent

__all__ = ["LLM_ROLES", "LLMActor", "LLMEstimator", "env_token_cap"]


@functools.cache
def _env_caps() -> dict[str, int]:
    # Imported on first use: the environment modules pull in numpy and the simulators.
    from pytest_budget.awareness.search._env import SEARCH_PRESET
    from pytest_budget.awareness.sokoban._env import SOKOBAN_PRESETS

    return {
        "sokoban": max(preset.token_cap for preset in SOKOBAN_PRESETS.values()),
        "search": SEARCH_PRESET.token_cap,
    }


def env_token_cap(env: str) -> int | None:
    """The token budget of a whole rollout in ``env`` (None when it has no token budget).

    Used as a ceiling on one actor reply: a reply longer than the rollout's budget makes the
    rollout infeasible whatever happens next, so generating more is only spending.
    """
    return _env_caps().get(env_family(env))


class LLMEstimator(LLMAgent):
    """Awareness estimator: sends the probe's chat and returns the model's raw text.

    The chat is ``probe.messages`` (BAGEN's replay: the actor's system prompt, the actor's
    turns, then the estimation question; :mod:`pytest_budget.awareness._replay.dialogue`).  A probe
    object without ``messages`` (a user's own) is sent as the estimator's system prompt and
    ``probe.text``.
    """

    role: ClassVar[str] = "estimator"
    default_max_tokens: ClassVar[int] = 1024

    def messages(self, probe: Any) -> list[dict[str, Any]]:
        chat = getattr(probe, "messages", None)
        if isinstance(chat, Sequence) and chat and all(isinstance(m, Mapping) for m in chat):
            return [dict(message) for message in chat]
        dimensions = tuple(getattr(probe, "dimensions", ("tokens",)))
        return [
            {"role": "system", "content": estimator_system(dimensions)},
            {"role": "user", "content": str(probe.text)},
        ]

    async def estimate(self, probe: Any) -> str:
        result = await self._complete(self.messages(probe), self.max_tokens)
        return result.text


class LLMActor(LLMAgent):
    """Awareness actor: one call per turn on the observation's self-contained prompt.

    Returns ``{"text": reply, "usage": {"tokens": input + output, "input_tokens": input,
    "output_tokens": output}}`` with the provider's counts (the split lets the search
    environment take re-sent history out exactly), or ``{"text": reply}`` when it reported
    none (the environment then counts).
    """

    role: ClassVar[str] = "actor"
    default_max_tokens: ClassVar[int] = 1024

    def messages(self, observation: Any) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": actor_system(str(observation.env))},
            {"role": "user", "content": str(observation.text)},
        ]

    def call_cap(self, observation: Any) -> int:
        cap = env_token_cap(str(observation.env))
        return self.max_tokens if cap is None else min(self.max_tokens, cap)

    async def act(self, observation: Any) -> dict[str, Any]:
        result = await self._complete(self.messages(observation), self.call_cap(observation))
        reply: dict[str, Any] = {"text": result.text}
        if result.usage.reported:
            usage = result.usage
            reply["usage"] = {
                "tokens": usage.total,
                "input_tokens": usage.input,
                "output_tokens": usage.output,
            }
        return reply


#: The roles the awareness suite's LLM agents fill (read by :mod:`pytest_budget._run.model_agents`).
LLM_ROLES: dict[str, type[LLMAgent]] = {"estimator": LLMEstimator, "actor": LLMActor}
