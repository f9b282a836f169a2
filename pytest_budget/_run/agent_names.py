"""Agents by name: the built-in reference agents and the seam for model providers.

``--budget-agent=NAME`` resolves here.  A plain name is a reference agent (offline,
deterministic per seed); ``PREFIX:MODEL`` or ``PREFIX/MODEL`` (the form other tools use,
e.g. ``openai/gpt-4o-mini``) goes to a provider registered with :func:`register_provider`
(the HTTP model clients plug in there); :func:`normalize_agent_name` turns the second form
into the first.  ``user`` names the
agent a project supplies through a hook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "REFERENCE_AGENTS",
    "REFERENCE_ROLE_AGENT",
    "USER_AGENT",
    "UnknownAgentError",
    "default_agents",
    "default_role_agent",
    "normalize_agent_name",
    "reference_has_role",
    "register_provider",
    "resolve_agent",
    "validate_agent_name",
]

#: The name that stands for the agent a project supplies through a hook or fixture.
USER_AGENT = "user"
#: In ini ``budget_role_agents``: the built-in agent of that role (e.g. the reference actor).
REFERENCE_ROLE_AGENT = "reference"

ProviderFactory = Callable[[str, str, Mapping[str, Any]], object]
_PROVIDERS: dict[str, ProviderFactory] = {}


class _ReferenceAgents(Mapping[str, Mapping[str, Callable[[int], object]]]):
    """name -> role -> factory(seed) of every registered suite's reference agents, read
    from the registry on each use (a suite registered later is included)."""

    def _all(self) -> dict[str, dict[str, Callable[[int], object]]]:
        from pytest_budget._core.registry import reference_agent_roles

        return reference_agent_roles()

    def __getitem__(self, name: str) -> Mapping[str, Callable[[int], object]]:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


#: Every reference agent by name: role -> factory(seed) (declared by the suites).
REFERENCE_AGENTS: Mapping[str, Mapping[str, Callable[[int], object]]] = _ReferenceAgents()


class UnknownAgentError(ValueError):
    """A ``--budget-agent`` name that no reference agent or provider answers to."""


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Make ``--budget-agent=PREFIX:MODEL`` build agents with ``factory(model, role, settings)``."""
    _PROVIDERS[prefix] = factory


def default_agents(kind: str) -> tuple[str, ...]:
    """The reference agents a cell kind runs when ``--budget-agent`` is not given."""
    from pytest_budget._core.registry import cell_kind

    found = cell_kind(kind)
    return found.reference_agents if found is not None else ()


def default_role_agent(role: str, seed: int) -> object | None:
    """The built-in agent a role falls back to (reference solver, reference actor), or None."""
    from pytest_budget._core.registry import fallback_agent

    factory = fallback_agent(role)
    return None if factory is None else factory(seed)


def reference_has_role(name: str, role: str) -> bool:
    """Whether ``name`` is a reference agent that fills ``role`` itself."""
    return role in REFERENCE_AGENTS.get(name, {})


#: Providers whose names are known even before the HTTP clients are registered.
_KNOWN_PROVIDERS = ("openai", "anthropic")


def _valid_forms() -> str:
    providers = sorted(set(_PROVIDERS) | set(_KNOWN_PROVIDERS))
    models = ", ".join(f"{p}/MODEL or {p}:MODEL" for p in providers)
    return (
        f"valid forms: {models}; a reference agent ({', '.join(sorted(REFERENCE_AGENTS))}); "
        "or 'user' for the agent from your hook"
    )


def normalize_agent_name(name: str) -> str:
    """``provider/model`` -> ``provider:model`` for a known provider; other names unchanged.

    Only the first ``/`` splits (``openai/meta-llama/Llama-3-8B`` is model
    ``meta-llama/Llama-3-8B`` on ``openai``).  An unknown provider raises
    :class:`UnknownAgentError` listing the valid forms.
    """
    name = name.strip()
    prefix, sep, model = name.partition("/")
    if not sep or ":" in prefix:
        return name
    if prefix in _PROVIDERS or prefix in _KNOWN_PROVIDERS:
        if not model:
            raise UnknownAgentError(
                f"--budget-agent={name}: no model name after {prefix}/, e.g. {prefix}/MODEL"
            )
        return f"{prefix}:{model}"
    raise UnknownAgentError(f"--budget-agent={name}: unknown provider {prefix!r}; {_valid_forms()}")


def validate_agent_name(name: str) -> None:
    """Raise :class:`UnknownAgentError` with the valid choices when ``name`` is unknown."""
    if name == USER_AGENT or name in REFERENCE_AGENTS:
        return
    name = normalize_agent_name(name)
    prefix, sep, model = name.partition(":")
    if sep:
        if prefix in _PROVIDERS and model:
            return
        if prefix in _PROVIDERS:
            raise UnknownAgentError(
                f"--budget-agent={name}: no model name after {prefix}:, e.g. {prefix}:MODEL"
            )
        if prefix in _KNOWN_PROVIDERS:
            raise UnknownAgentError(
                f"--budget-agent={name}: HTTP model agents are not available in this version; "
                f"use a reference agent ({', '.join(sorted(REFERENCE_AGENTS))}) or supply your "
                "agent through a fixture or hook"
            )
        raise UnknownAgentError(
            f"--budget-agent={name}: unknown provider {prefix!r}; {_valid_forms()}"
        )
    raise UnknownAgentError(f"--budget-agent={name}: unknown agent; {_valid_forms()}")


def resolve_agent(
    name: str, role: str, *, seed: int, settings: Mapping[str, Any] | None = None
) -> object | None:
    """The agent called ``name`` in ``role``; falls back to the role's reference agent.

    Returns ``None`` only when nothing can fill the role (the caller reports it).
    """
    validate_agent_name(name)
    name = normalize_agent_name(name)
    prefix, sep, model = name.partition(":")
    if sep and prefix in _PROVIDERS:
        agent = _PROVIDERS[prefix](model, role, dict(settings or {}))
        if agent is not None:
            return agent
    from pytest_budget._core.registry import fallback_agent

    factory = REFERENCE_AGENTS.get(name, {}).get(role) or fallback_agent(role)
    return None if factory is None else factory(seed)
