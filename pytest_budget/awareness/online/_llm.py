"""The online actor role over HTTP (OpenAI-compatible and Anthropic chat models).

``act`` sends the actor's system message with the online rules
(:mod:`~pytest_budget.awareness.online._prompts`) and the observation's text (the
environment's prompt and the budget block) and returns the raw reply with the provider's
token counts; the harness reads the action, the ``<estimate>`` and ``<stop/>`` tags and
splits the tokens (:mod:`~pytest_budget.awareness.online._protocol`).  ``estimate`` is the
two-call protocol's separate call (and the replay pass's probe answer): the awareness
estimator's prompt, the reply text returned as an :class:`EstimateText` carrying its usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_budget.awareness._llm import env_token_cap
from pytest_budget.awareness._prompts import actor_system, estimator_system
from pytest_budget.awareness.online._prompts import online_system
from pytest_budget.models._llm_agent import LLMAgent

__all__ = ["LLM_ROLES", "EstimateText", "LLMOnlineActor"]


class EstimateText(str):
    """An estimate reply (a ``str``) with the call's provider usage (None: not reported)."""

    usage: Mapping[str, float] | None

    def __new__(cls, text: str, usage: Mapping[str, float] | None = None) -> EstimateText:
        value = super().__new__(cls, text)
        value.usage = usage
        return value


class LLMOnlineActor(LLMAgent):
    """The ``online_actor`` role on a chat model (single-call or two-call by observation)."""

    role: ClassVar[str] = "online_actor"
    # The actor's per-call default and setting (the online rules add a short estimate tag).
    default_max_tokens: ClassVar[int] = 1024
    settings_role: ClassVar[str | None] = "actor"

    def messages(self, observation: Any) -> list[dict[str, Any]]:
        system = actor_system(str(observation.env))
        if getattr(observation, "cap", None) is not None:
            system = online_system(system, str(getattr(observation, "protocol", "single")))
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": str(observation.text)},
        ]

    def call_cap(self, observation: Any) -> int:
        cap = env_token_cap(str(observation.env))
        return self.max_tokens if cap is None else min(self.max_tokens, cap)

    async def act(self, observation: Any, used: Any = None, cap: Any = None) -> dict[str, Any]:
        result = await self._complete(self.messages(observation), self.call_cap(observation))
        reply: dict[str, Any] = {"text": result.text}
        if result.usage.reported:
            reply["usage"] = {
                "tokens": result.usage.total,
                "input_tokens": result.usage.input,
                "output_tokens": result.usage.output,
            }
        return reply

    async def estimate(self, probe: Any) -> EstimateText:
        dims = tuple(getattr(probe, "dimensions", ("tokens",)))
        messages = [
            {"role": "system", "content": estimator_system(dims)},
            {"role": "user", "content": str(probe.text)},
        ]
        result = await self._complete(messages, self.max_tokens)
        usage = None
        if result.usage.reported:
            usage = {"input_tokens": result.usage.input, "output_tokens": result.usage.output}
        return EstimateText(result.text, usage)


#: The role the online mode's LLM agent fills (read by :mod:`pytest_budget._run.model_agents`).
LLM_ROLES: dict[str, type[LLMAgent]] = {"online_actor": LLMOnlineActor}
