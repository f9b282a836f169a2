"""Agents by name: the built-in reference agents and the seam for model providers.

``--budget-agent=NAME`` resolves here.  A plain name is a reference agent (offline,
deterministic per seed); ``PREFIX:MODEL`` or ``PREFIX/MODEL`` (the form other tools use,
e.g. ``openai/gpt-4o-mini``) goes to a provider registered with :func:`register_provider`
(the HTTP model clients plug in there); :func:`normalize_agent_name` turns the second form
into the first.  ``user`` names the
agent a project supplies through a hook.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


# Factories import lazily so that importing the package stays cheap.
def _oracle(seed: int) -> object:
    from pytest_budget.triage.planners import OraclePlanner

    return OraclePlanner()


def _random(seed: int) -> object:
    from pytest_budget.triage.planners import RandomPlanner

    return RandomPlanner(seed=seed)


def _cheapest_first(seed: int) -> object:
    from pytest_budget.triage.planners import CheapestFirstPlanner

    return CheapestFirstPlanner()


def _attempt_all(seed: int) -> object:
    from pytest_budget.triage.planners import AttemptAllPlanner

    return AttemptAllPlanner()


def _estimator(class_name: str) -> Callable[[int], object]:
    def make(seed: int) -> object:
        from pytest_budget.awareness import estimators

        cls = getattr(estimators, class_name)
        return cls(seed=seed) if class_name == "RandomEstimator" else cls()

    return make


def _tool_agent(class_name: str) -> Callable[[int], object]:
    def make(seed: int) -> object:
        from pytest_budget.planning import agents

        cls = getattr(agents, class_name)
        return cls(seed=seed) if class_name == "RandomValidToolAgent" else cls()

    return make


def _reference_actor(seed: int) -> object:
    from pytest_budget.awareness.environments import ReferenceActor

    return ReferenceActor(seed)


def _online(name: str) -> Callable[[int], object]:
    def make(seed: int) -> object:
        from pytest_budget.awareness.online.reference import reference_online_agent

        return reference_online_agent(name, seed)

    return make


def _reference_solver(seed: int) -> object:
    from pytest_budget.triage.domains import ReferenceSolver

    return ReferenceSolver()


# name -> role -> factory(seed)
REFERENCE_AGENTS: dict[str, dict[str, Callable[[int], object]]] = {
    "oracle": {
        "planner": _oracle,
        "estimator": _estimator("OracleEstimator"),
        "tool_agent": _tool_agent("OracleToolAgent"),
    },
    "random": {
        "planner": _random,
        "estimator": _estimator("RandomEstimator"),
        "online_actor": _online("random"),
    },
    "cheapest-first": {"planner": _cheapest_first},
    "attempt-all": {"planner": _attempt_all},
    "linear-knows-T": {"estimator": _estimator("LinearEstimator")},
    "linear-visible": {
        "estimator": _estimator("LinearVisibleEstimator"),
        "online_actor": _online("linear-visible"),
    },
    "always-feasible": {
        "estimator": _estimator("AlwaysFeasibleEstimator"),
        "online_actor": _online("always-feasible"),
    },
    "always-impossible": {
        "estimator": _estimator("AlwaysImpossibleEstimator"),
        "online_actor": _online("always-impossible"),
    },
    "greedy": {"tool_agent": _tool_agent("GreedyToolAgent")},
    "random-valid": {"tool_agent": _tool_agent("RandomValidToolAgent")},
    "atomic-only": {"tool_agent": _tool_agent("AtomicOnlyToolAgent")},
}

# The agent every role falls back to when the named agent does not fill it.
_DEFAULT_ROLE_AGENTS: dict[str, Callable[[int], object]] = {
    "solver": _reference_solver,
    "actor": _reference_actor,
}


class UnknownAgentError(ValueError):
    """A ``--budget-agent`` name that no reference agent or provider answers to."""


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Make ``--budget-agent=PREFIX:MODEL`` build agents with ``factory(model, role, settings)``."""
    _PROVIDERS[prefix] = factory


def default_agents(kind: str) -> tuple[str, ...]:
    """The reference agents a cell kind runs when ``--budget-agent`` is not given."""
    from pytest_budget.suite_registry import cell_kind

    found = cell_kind(kind)
    return found.reference_agents if found is not None else ()


def default_role_agent(role: str, seed: int) -> object | None:
    """The built-in agent a role falls back to (reference solver, reference actor), or None."""
    factory = _DEFAULT_ROLE_AGENTS.get(role)
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
    factory = REFERENCE_AGENTS.get(name, {}).get(role) or _DEFAULT_ROLE_AGENTS.get(role)
    return None if factory is None else factory(seed)
