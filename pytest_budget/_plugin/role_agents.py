"""Which agent fills a role in a cell: hooks, ``--budget-agent``, ini and fallbacks.

The one resolution the role fixtures (``budget_<role>``, ``budget_role_agent``), the cell
schedulers and the cost forecast share.  What a role is comes from the registry
(:func:`~pytest_budget._core.registry.registered_roles`): this module names no role, so a
suite registered from a conftest gets its roles' agents the same way.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_budget._core.registry import registered_roles, registered_suites, suite_of_role
from pytest_budget._run.agent_names import (
    REFERENCE_AGENTS,
    REFERENCE_ROLE_AGENT,
    USER_AGENT,
    default_agents,
    default_role_agent,
    reference_has_role,
    resolve_agent,
)
from pytest_budget._run.options import BudgetOptions
from pytest_budget._run.session import BudgetSession

__all__ = [
    "default_agent_for",
    "evaluated_roles",
    "hook_agent",
    "model_settings",
    "own_fixture_mark",
    "role_agent",
    "role_agent_for",
]


def evaluated_roles() -> tuple[str, ...]:
    """The roles whose agent a cell evaluates (its agent axis), in registry order."""
    return tuple(name for name, role in registered_roles().items() if role.evaluated)


def _state(config: pytest.Config) -> BudgetSession:
    from pytest_budget._plugin.state import budget_session

    return budget_session(config)


def hook_agent(config: pytest.Config, role: str) -> Any | None:
    """The agent a conftest or plugin supplies for ``role`` (memoised): its own hook
    ``pytest_budget_<role>`` when one is declared, else ``pytest_budget_agent(config, role)``."""
    state = _state(config)
    if role not in state.hook_agents:
        own = getattr(config.hook, f"pytest_budget_{role}", None)
        found = own(config=config) if own is not None else None
        if found is None:
            found = config.hook.pytest_budget_agent(config=config, role=role)
        state.hook_agents[role] = found
    return state.hook_agents[role]


def own_fixture_mark(role: str) -> str:
    """The fixture only the plugin's own ``budget_<role>`` requests (see
    :func:`pytest_budget.fixtures.core.overridden`)."""
    return f"_budget_own_{role}"


def default_agent_for(config: pytest.Config, options: BudgetOptions, role: str) -> str:
    """The agent a test outside the suites gets in ``role`` (not parametrized by a suite).

    The first ``--budget-agent`` name that fills the role (a model or ``user`` fills
    every role); else ``user`` when the role's hook answers; else the first reference
    agent of the role's suite (``cheapest-first``, ``linear-knows-T``, ``greedy``).
    """
    for name in options.agents:
        if name not in REFERENCE_AGENTS or reference_has_role(name, role):
            return name
    if options.agents:
        return options.agents[0]  # fails with "has no <role>" naming the agent
    if hook_agent(config, role) is not None:
        return USER_AGENT
    # The suite that asks for the role (the first suite for any other role) lends its
    # first reference agent.
    suites = registered_suites()
    suite = suite_of_role(role) or next(iter(suites.values()))
    return default_agents(suite.kinds[0].name)[0]


def model_settings(state: BudgetSession) -> dict[str, Any]:
    """What provider factories get: endpoint options, and the process's model runtime."""
    options = state.options
    settings: dict[str, Any] = {
        "base_url": options.base_url,
        "api_key_env": options.api_key_env,
        "timeout": options.model_timeout,
        "header_envs": options.model_headers,
        "dry_run": options.dry_run,
    }
    runtime_factory = state.model_runtime
    if runtime_factory is not None:
        settings["chat_model"] = runtime_factory
    return settings


def _parametrized_agent(request: pytest.FixtureRequest) -> str | None:
    callspec = getattr(request.node, "callspec", None)
    params = getattr(callspec, "params", {})
    value = params.get("budget_agent")
    return value if isinstance(value, str) else None


def role_agent(request: pytest.FixtureRequest, role: str, seed: int | None = None) -> Any:
    """The agent filling ``role`` in the requesting test (the role fixtures' answer)."""
    config = request.config
    options: BudgetOptions = request.getfixturevalue("budget_options")
    name = _parametrized_agent(request)
    if name is None:
        # Not a suite cell: this role's own default, whatever other roles the test asks for.
        name = default_agent_for(config, options, role) if role in evaluated_roles() else None
    if name is None:
        name = request.getfixturevalue("budget_agent")
    if seed is None:
        seed = request.getfixturevalue("budget_seed")
    return role_agent_for(config, options, name, role, seed)


def role_agent_for(
    config: pytest.Config, options: BudgetOptions, name: str, role: str, seed: int
) -> Any:
    """The agent filling ``role`` in a cell whose agent is ``name`` (the ``budget_<role>``
    fixtures' answer, without a request: the cell scheduler builds agents ahead)."""
    hooked = hook_agent(config, role)
    evaluated = role in evaluated_roles()
    if name == USER_AGENT:
        if hooked is not None:
            return hooked
        if evaluated:
            # A role with its own hook has its own fixture too; any other has the generic ones.
            own = hasattr(config.hook, f"pytest_budget_{role}")
            hook = f"pytest_budget_{role}" if own else "pytest_budget_agent"
            fixture = f"budget_{role}" if own else "budget_role_agent"
            pytest.fail(
                f"--budget-agent=user but no {hook} hook returned an agent for {role}; "
                f"implement the hook in your conftest or override the {fixture} fixture",
                pytrace=False,
            )
    elif not evaluated and hooked is not None:
        return hooked  # a supporting role (e.g. the solver) comes from the project if given
    if not evaluated and role in options.role_agents:
        # ini budget_role_agents picks a supporting role's agent (e.g. a cheaper solver model).
        name = options.role_agents[role]
        if name == REFERENCE_ROLE_AGENT:
            return default_role_agent(role, seed)
    settings = model_settings(_state(config))
    agent = resolve_agent(name, role, seed=seed, settings=settings)
    if agent is None:
        pytest.fail(f"agent {name!r} has no {role}; choose another --budget-agent", pytrace=False)
    return agent
