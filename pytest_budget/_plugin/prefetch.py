"""An xdist controller imports what its session finish needs while its last worker runs.

The controller scores nothing during the run, then, once every worker is done, imports numpy
(the pooled gate) and the suites' summary tables to print the run's tables: about 0.5 s on
one core while the other sits idle.  From the moment the first worker is done (one core is
free), a background thread imports them instead; the session finish then finds them loaded.
Import errors are left to the code that uses the module (it raises them itself).  The thread
is joined at unconfigure, so nothing is still importing when pytest (or pytester) tears down.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable
from typing import Any

import pytest

__all__ = ["SHARED_FINISH_MODULES", "finish_modules", "prefetch"]

#: What a controller's session finish imports for every run (reporter.py); the suites'
#: summary tables come from the registry (:func:`finish_modules`).
SHARED_FINISH_MODULES = (
    "numpy",
    "pytest_budget._stats.run_gate",
    "pytest_budget._stats.sequential",
    "pytest_budget.report._frontier",
    "pytest_budget.report._text_table",
)
_THREAD = pytest.StashKey[threading.Thread]()


def finish_modules() -> tuple[str, ...]:
    """:data:`SHARED_FINISH_MODULES`, then the module of every registered cell kind's lazy
    terminal table (``lazy("package.module:name")`` keeps its target as the qualname)."""
    from pytest_budget._core.registry import cell_kinds

    targets = (getattr(kind.table, "__qualname__", "") for kind in cell_kinds().values())
    tables = dict.fromkeys(t.partition(":")[0] for t in targets if ":" in t)
    return SHARED_FINISH_MODULES + tuple(tables)


def prefetch(modules: Iterable[str]) -> threading.Thread:
    """Import ``modules`` in a started daemon thread (a failed import is skipped)."""
    names = tuple(modules)

    def run() -> None:
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:  # raised again where the module is used
                continue

    thread = threading.Thread(target=run, name="budget-prefetch", daemon=True)
    thread.start()
    return thread


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    config = node.config
    if _THREAD not in config.stash:
        config.stash[_THREAD] = prefetch(finish_modules())


def pytest_unconfigure(config: pytest.Config) -> None:
    thread = config.stash.get(_THREAD, None)
    if thread is not None:
        thread.join()
