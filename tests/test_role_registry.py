"""Roles come from the registry (issue 35): each suite declares its roles, and the shared
places that once listed them in constants read the declarations instead.

The first test pins the constants those places held before (roles.ROLE_METHODS,
forecast.EXPECTED_OUTPUT_TOKENS/EXPECTED_TURNS, fixtures/core.AXIS_ROLES,
options.ROLE_NAMES), written out here by hand, against the registry: the move changed no
value.
"""

from __future__ import annotations

import importlib

import pytest

from pytest_budget._core.registry import (
    CellKind,
    ReplyRule,
    Role,
    Suite,
    SuiteError,
    fallback_agent,
    register_suite,
    registered_roles,
    reply_rule,
    role,
    suite_of_role,
    unregister_suite,
)

# The constants as they were before the roles moved into the registry.
OLD_ROLE_METHODS = {
    "planner": "plan",
    "solver": "solve",
    "estimator": "estimate",
    "actor": "act",
    "tool_agent": "act",
    "online_actor": "act",
    "online_estimator": "estimate",
}
OLD_EXPECTED_OUTPUT_TOKENS = {
    "planner": 400,
    "solver": 600,
    "estimator": 150,
    "actor": 150,
    "online_actor": 150,
    "tool_agent": 250,
}
OLD_EXPECTED_TURNS = {"tool_agent": 6, "actor": 10, "online_actor": 10}
OLD_AXIS_ROLES = ("planner", "estimator", "tool_agent")
OLD_ROLE_NAMES = ("planner", "solver", "estimator", "actor", "tool_agent")


def test_the_registry_holds_the_old_constants_values() -> None:
    roles = registered_roles()
    assert {name: r.method for name, r in roles.items()} == OLD_ROLE_METHODS
    assert {
        name: r.output_tokens for name, r in roles.items() if r.output_tokens is not None
    } == OLD_EXPECTED_OUTPUT_TOKENS
    assert {name: r.turns for name, r in roles.items() if r.turns is not None} == (
        OLD_EXPECTED_TURNS
    )
    assert tuple(name for name, r in roles.items() if r.evaluated) == OLD_AXIS_ROLES
    # --budget-role-model / budget_role_agents took these; the online roles now too.
    assert set(OLD_ROLE_NAMES) < set(roles)
    assert set(roles) - set(OLD_ROLE_NAMES) == {"online_actor", "online_estimator"}


def test_each_role_names_its_suite_and_protocol() -> None:
    from pytest_budget import Actor, Estimator, Planner, Solver, ToolAgent

    owners = {name: suite_of_role(name).name for name in registered_roles()}  # type: ignore[union-attr]
    assert owners == {
        "planner": "triage",
        "solver": "triage",
        "estimator": "awareness",
        "actor": "awareness",
        "online_actor": "awareness",
        "online_estimator": "awareness",
        "tool_agent": "planning",
    }

    def load(target: str) -> object:
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)

    found = {name: load(r.protocol) for name, r in registered_roles().items() if r.protocol}
    assert found == {
        "planner": Planner,
        "solver": Solver,
        "estimator": Estimator,
        "actor": Actor,
        "tool_agent": ToolAgent,
    }
    # Each Protocol's one method is the method the call code calls.
    for name, protocol in found.items():
        assert callable(getattr(protocol, registered_roles()[name].method))


def test_reply_rules_and_fallbacks_are_read_from_the_role() -> None:
    assert reply_rule("planner") is role("planner").reply is not None  # type: ignore[union-attr]
    assert reply_rule("actor") is None and reply_rule("nobody") is None
    assert fallback_agent("solver") is role("solver").fallback is not None  # type: ignore[union-attr]
    assert fallback_agent("planner") is None and fallback_agent("nobody") is None
    assert role("nobody") is None


def _suite(name: str, kind: str, *roles: Role) -> Suite:
    return Suite(
        name=name, kinds=(CellKind(kind, f"test_{kind}.py"),), test_files=lambda o: (), roles=roles
    )


def test_a_role_belongs_to_one_suite() -> None:
    taken = _suite("dice", "dice", Role("planner", method="roll"))
    with pytest.raises(SuiteError, match="role 'planner' belongs to suite 'triage' already"):
        register_suite(taken)
    assert role("planner").method == "plan"  # type: ignore[union-attr]
    assert "dice" not in {s.name for s in map(suite_of_role, registered_roles()) if s}
    own = _suite("dice", "dice", Role("roller", method="roll", reply=ReplyRule("a number")))
    try:
        register_suite(own)
        register_suite(own)  # the same value again: no change
        assert role("roller") is own.roles[0]
        assert list(registered_roles())[-1] == "roller"
        with pytest.raises(SuiteError, match="role 'roller' belongs to suite 'dice'"):
            register_suite(_suite("dice2", "dice2", Role("roller", method="roll")))
    finally:
        unregister_suite("dice")
    assert role("roller") is None
