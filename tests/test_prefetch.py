"""Start-up and finish overhead of an engaged run (issue 33): the xdist controller imports its
session finish's modules while the last worker runs (``_plugin/prefetch``). That the run hooks
and fixture modules hold no assert to rewrite is checked in tests/test_assert_rewrite.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import SimpleNamespace

import pytest

from pytest_budget._plugin import prefetch


def test_prefetch_imports_in_a_thread_and_skips_a_failed_import() -> None:
    # A fresh interpreter: the modules are surely not imported yet.
    code = (
        "import sys\n"
        "from pytest_budget._plugin.prefetch import prefetch\n"
        "assert 'json.tool' not in sys.modules and 'fractions' not in sys.modules\n"
        "thread = prefetch(['json.tool', 'pytest_budget_no_such_module', 'fractions'])\n"
        "thread.join(60)\n"
        "loaded = ['json.tool' in sys.modules, 'fractions' in sys.modules]\n"
        "print(thread.name, thread.daemon, *loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["budget-prefetch", "True", "True", "True"]


def test_the_first_worker_down_starts_it_once_and_unconfigure_joins_it(
    pytester: pytest.Pytester,
) -> None:
    config = pytester.parseconfig("-p", "no:cacheprovider")
    node = SimpleNamespace(config=config)  # xdist's WorkerController: only .config is read
    prefetch.pytest_testnodedown(node, None)
    first = config.stash[prefetch._THREAD]
    prefetch.pytest_testnodedown(node, None)
    assert config.stash[prefetch._THREAD] is first
    prefetch.pytest_unconfigure(config)
    assert not first.is_alive()
    assert all(name in sys.modules for name in prefetch.finish_modules())


def test_every_prefetched_module_exists_and_the_suites_tables_are_among_them() -> None:
    modules = prefetch.finish_modules()
    assert [m for m in modules if importlib.util.find_spec(m) is None] == []
    # Read from the registry's lazy declarations, not listed by hand.
    for suite in ("triage", "awareness", "planning"):
        assert f"pytest_budget.{suite}._summary" in modules
