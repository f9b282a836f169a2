"""LLM-backed agents by role, and the agent factories of the ``openai:`` / ``anthropic:`` names.

The model layer (:mod:`pytest_budget.models`) knows chat models and the generic
:class:`~pytest_budget.models._llm_agent.LLMAgent`; each suite package holds its own adapters
(its ``llm`` module) and declares them in the registry
(:attr:`~pytest_budget._core.registry.Suite.llm_roles`, role -> adapter class).

This module sits above both and joins them: :func:`make_llm_agent` builds the adapter of a
role from its settings, :func:`provider_factory` gives the ``factory(model, role,
settings)`` that :func:`pytest_budget._run.agent_names.register_provider` expects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_budget._core.registry import registered_suites
from pytest_budget.models._client import DEFAULT_TIMEOUT, ChatClient
from pytest_budget.models._llm_agent import ChatModel, LLMAgent
from pytest_budget.models._provider import ProviderFactory, build_chat_client, check_provider

__all__ = ["llm_roles", "make_llm_agent", "provider_factory"]


def llm_roles() -> dict[str, type[LLMAgent]]:
    """Role -> the LLM adapter filling it, gathered from the registered suites."""
    roles: dict[str, type[LLMAgent]] = {}
    for suite in registered_suites().values():
        if suite.llm_roles is not None:
            roles.update(suite.llm_roles())
    return roles


def __getattr__(name: str) -> Any:
    """``LLM_ROLES`` (role -> adapter), ``ROLES`` (the roles an LLM agent can fill) and
    ``DEFAULT_MAX_TOKENS`` (``max_tokens`` of one call per role when the settings give
    none: the adapters' own), computed from the registry when read."""
    if name == "LLM_ROLES":
        return llm_roles()
    if name == "ROLES":
        return tuple(llm_roles())
    if name == "DEFAULT_MAX_TOKENS":
        return {role: cls.default_max_tokens for role, cls in llm_roles().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    roles = llm_roles()
    try:
        cls = roles[role]
    except KeyError:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(roles)}") from None
    return cls.from_settings(model, name=name, settings=settings or {})


def provider_factory(provider: str) -> ProviderFactory:
    """``factory(model, role, settings)`` building LLM agents on ``provider``'s client.

    For :func:`pytest_budget._run.agent_names.register_provider`.  ``settings`` keys read:
    ``base_url``, ``api_key_env`` (the variable's name, never the key), ``timeout``
    (seconds), ``header_envs``, ``dry_run`` (no key needed: nothing is sent), ``chat_model``
    (a callable ``client -> ChatModel`` wrapping
    the client, e.g. a runtime; default: the bare client), and the agent settings of
    :func:`make_llm_agent` (``max_tokens``, ``temperature``).  Agents are named
    ``provider:model``.  A role no LLM agent fills gives ``None``.
    """
    check_provider(provider)

    def factory(model: str, role: str, settings: Mapping[str, Any]) -> object:
        if role not in llm_roles():
            return None
        timeout = settings.get("timeout")
        client = build_chat_client(
            provider,
            model,
            base_url=settings.get("base_url"),
            api_key_env=settings.get("api_key_env"),
            timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
            header_envs=tuple(settings.get("header_envs") or ()),
            need_key=not settings.get("dry_run"),
        )
        wrap: Callable[[ChatClient], ChatModel] | None = settings.get("chat_model")
        chat: ChatModel = client if wrap is None else wrap(client)
        if hasattr(chat, "role"):  # a runtime model reports each cell's spend per role
            chat.role = role
        agent_settings = {**settings, "message_format": settings.get("message_format") or provider}
        return make_llm_agent(role, chat, name=f"{provider}:{model}", settings=agent_settings)

    factory.__name__ = factory.__qualname__ = f"{provider}_provider"
    return factory
