"""LLM-backed agents by role, and the agent factories of the ``openai:`` / ``anthropic:`` names.

The model layer (:mod:`pytest_budget.models`) knows chat models and the generic
:class:`~pytest_budget.models.agents.LLMAgent`; each suite package holds its own adapters
and lists them in its ``LLM_ROLES`` (role -> adapter class):

* ``triage/llm.py``: ``planner``, ``solver``;
* ``awareness/llm.py``: ``estimator``, ``actor``; ``awareness/online/llm.py``:
  ``online_actor``;
* ``planning/llm.py``: ``tool_agent``.

This module sits above both and joins them: :func:`make_llm_agent` builds the adapter of a
role from its settings, :func:`provider_factory` gives the ``factory(model, role,
settings)`` that :func:`pytest_budget.agents.register_provider` expects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_budget.awareness.llm import LLM_ROLES as _AWARENESS_ROLES
from pytest_budget.awareness.online.llm import LLM_ROLES as _ONLINE_ROLES
from pytest_budget.models.agents import ChatModel, LLMAgent
from pytest_budget.models.client import DEFAULT_TIMEOUT, ChatClient
from pytest_budget.models.provider import ProviderFactory, build_chat_client, check_provider
from pytest_budget.planning.llm import LLM_ROLES as _PLANNING_ROLES
from pytest_budget.triage.llm import LLM_ROLES as _TRIAGE_ROLES

__all__ = ["DEFAULT_MAX_TOKENS", "LLM_ROLES", "ROLES", "make_llm_agent", "provider_factory"]

#: Role -> the LLM adapter filling it, gathered from the suite packages.
LLM_ROLES: dict[str, type[LLMAgent]] = {
    **_TRIAGE_ROLES,
    **_AWARENESS_ROLES,
    **_PLANNING_ROLES,
    **_ONLINE_ROLES,
}

#: The roles an LLM agent can fill (``pytest_budget.roles.ROLE_METHODS``).
ROLES: tuple[str, ...] = tuple(LLM_ROLES)

#: ``max_tokens`` of one call per role when the settings give none (the adapters' own).
DEFAULT_MAX_TOKENS: dict[str, int] = {
    role: cls.default_max_tokens for role, cls in LLM_ROLES.items()
}


def make_llm_agent(
    role: str,
    model: ChatModel,
    *,
    name: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> LLMAgent:
    """The LLM agent filling ``role`` on ``model``.

    ``settings`` keys read (others are ignored): ``max_tokens`` (an int for every role, or a
    mapping role -> int; the online actor reads the ``actor`` entry), ``temperature``
    (default 0) and, for the tool agent, ``message_format`` (``"openai"``/``"anthropic"``;
    detected from the model when absent).
    """
    try:
        cls = LLM_ROLES[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}") from None
    return cls.from_settings(model, name=name, settings=settings or {})


def provider_factory(provider: str) -> ProviderFactory:
    """``factory(model, role, settings)`` building LLM agents on ``provider``'s client.

    For :func:`pytest_budget.agents.register_provider`.  ``settings`` keys read:
    ``base_url``, ``api_key_env`` (the variable's name, never the key), ``timeout``
    (seconds), ``header_envs``, ``chat_model`` (a callable ``client -> ChatModel`` wrapping
    the client, e.g. a runtime; default: the bare client), and the agent settings of
    :func:`make_llm_agent` (``max_tokens``, ``temperature``).  Agents are named
    ``provider:model``.  A role no LLM agent fills gives ``None``.
    """
    check_provider(provider)

    def factory(model: str, role: str, settings: Mapping[str, Any]) -> object:
        if role not in LLM_ROLES:
            return None
        timeout = settings.get("timeout")
        client = build_chat_client(
            provider,
            model,
            base_url=settings.get("base_url"),
            api_key_env=settings.get("api_key_env"),
            timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
            header_envs=tuple(settings.get("header_envs") or ()),
        )
        wrap: Callable[[ChatClient], ChatModel] | None = settings.get("chat_model")
        chat: ChatModel = client if wrap is None else wrap(client)
        agent_settings = {**settings, "message_format": settings.get("message_format") or provider}
        return make_llm_agent(role, chat, name=f"{provider}:{model}", settings=agent_settings)

    factory.__name__ = factory.__qualname__ = f"{provider}_provider"
    return factory
