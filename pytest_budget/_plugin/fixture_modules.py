"""Registering the fixture modules of an engaged run, without compiling them from source.

``PytestPluginManager.import_plugin`` marks a module for assertion rewriting before it
imports it; a marked module is compiled from source on every run that writes no bytecode
(this machine sets PYTHONDONTWRITEBYTECODE=1), ~0.1 s of every engaged run, a dry run's
included (issue 30, must-have 8).  This package's fixture modules hold no assert
(tests/test_assert_rewrite.py checks), so they load from the bytecode pip compiled, as
:func:`pytest_budget.plugin._rewrite_only_test_code` has the core modules do.
"""

from __future__ import annotations

import importlib

import pytest

__all__ = ["import_fixture_module"]


def import_fixture_module(manager: pytest.PytestPluginManager, name: str) -> None:
    """``manager.import_plugin(name)``, without the rewrite mark for this package's own
    modules (a fixture module of a suite registered elsewhere keeps pytest's mark)."""
    if not name.startswith("pytest_budget."):
        manager.import_plugin(name)
        return
    if manager.is_blocked(name) or manager.get_plugin(name) is not None:
        return
    manager.register(importlib.import_module(name), name)
