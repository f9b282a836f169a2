"""pytest rewrites the asserts of the bundled suites, not those of the core modules.

pytest marks a plugin's whole distribution for assertion rewriting (an installed wheel; an
editable install is found through its entry point's package, which setuptools' editable
finder hides); the plugin narrows the mark (``plugin._rewrite_only_test_code``) so the core
modules load from the bytecode pip compiled, while a suite's failing assert still explains
itself.  Checked against pytest's own hook, marked as pytest marks a wheel.
"""

from __future__ import annotations

import pytest
from _pytest.assertion import AssertionState
from _pytest.assertion.rewrite import AssertionRewritingHook, assertstate_key

from pytest_budget import plugin


def _marked_hook(
    pytester: pytest.Pytester, *names: str
) -> tuple[AssertionRewritingHook, pytest.Config]:
    # A project whose test files are named otherwise: the suites are rewritten by the mark.
    config = pytester.parseconfig("-p", "no:cacheprovider", "-o", "python_files=check_*.py")
    config.stash[assertstate_key] = AssertionState(config, "rewrite")
    hook = AssertionRewritingHook(config)
    hook.mark_rewrite(*names)
    config.pluginmanager.rewrite_hook = hook
    return hook, config


def _rewritten(hook: AssertionRewritingHook, config: pytest.Config, name: str) -> bool:
    return not hook._early_rewrite_bailout(name, config.stash[assertstate_key])


def test_only_the_bundled_suites_stay_marked(pytester: pytest.Pytester) -> None:
    hook, config = _marked_hook(pytester, "pytest_budget", "syrupy")
    core = (
        "pytest_budget._stats.gating",
        "pytest_budget.planning._blocking",
        "pytest_budget.fixtures.cells",
    )
    assert all(_rewritten(hook, config, name) for name in core)  # as pytest marks a wheel

    plugin._rewrite_only_test_code(config.pluginmanager)

    assert [name for name in core if _rewritten(hook, config, name)] == []
    assert _rewritten(hook, config, "pytest_budget.suites.test_triage")
    assert _rewritten(hook, config, "pytest_budget.suites.test_awareness")
    assert _rewritten(hook, config, "syrupy.assertion")  # another plugin's mark is left alone


def test_an_unmarked_distribution_is_left_as_pytest_set_it(pytester: pytest.Pytester) -> None:
    hook, config = _marked_hook(pytester, "syrupy")
    plugin._rewrite_only_test_code(config.pluginmanager)
    assert hook._must_rewrite == {"syrupy"}


def test_the_fixture_modules_hold_no_assert_and_are_registered_unmarked(
    pytester: pytest.Pytester,
) -> None:
    """``import_plugin`` would mark them (compiled from source on every run without
    bytecode); they are registered from pip's bytecode instead, which loses nothing while
    none of them asserts."""
    import ast
    import importlib.util
    from pathlib import Path

    from pytest_budget._core.registry import registered_suites
    from pytest_budget._plugin.fixture_modules import import_fixture_module

    names = [plugin.CORE_FIXTURES, "pytest_budget._plugin.heap", "pytest_budget._plugin.prefetch"]
    names += [m for suite in registered_suites().values() for m in suite.fixture_modules]
    assert len(names) >= 4  # core, triage, awareness, planning (and their forecasts)
    for name in names:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        assert not any(isinstance(node, ast.Assert) for node in ast.walk(tree)), name
    hook, config = _marked_hook(pytester, "syrupy")
    for name in names:
        import_fixture_module(config.pluginmanager, name)
        assert config.pluginmanager.get_plugin(name) is not None
    assert hook._must_rewrite == {"syrupy"}  # nothing of ours was marked
    assert not _rewritten(hook, config, "pytest_budget.fixtures.core")


def test_the_package_import_narrows_the_hook_that_imports_it(pytester: pytest.Pytester) -> None:
    """``import pytest_budget`` (pytest's hook loading the entry point) narrows the rewrite
    hook in ``sys.meta_path`` before the package's other modules load."""
    import sys

    from pytest_budget._core.rewrite_mark import narrow_rewrite_marks

    hook, config = _marked_hook(pytester, "pytest_budget", "anyio")  # anyio: another plugin
    assert _rewritten(hook, config, "pytest_budget._core.registry")
    sys.meta_path.insert(0, hook)
    try:
        narrow_rewrite_marks()
    finally:
        sys.meta_path.remove(hook)
    assert hook._must_rewrite == {"pytest_budget.suites", "anyio"}
    assert not _rewritten(hook, config, "pytest_budget._core.registry")
    assert not _rewritten(hook, config, "pytest_budget.plugin")
    assert _rewritten(hook, config, "pytest_budget.suites.test_planning")
