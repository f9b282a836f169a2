"""Narrow pytest's assertion-rewrite marks to code that holds tests.

pytest marks every module of each ``pytest11`` distribution for assertion rewriting; a
marked module is parsed, rewritten and compiled from source on every run that writes no
bytecode (PYTHONDONTWRITEBYTECODE=1, common in Docker images), in every xdist worker too.
This package's core asserts only narrow types, and anyio's and xdist's (plugins our
dependencies bring) are their own invariants: they load from the bytecode pip compiled.
Kept: the bundled suites (a failing snapshot assert explains itself) and every other
distribution's mark (syrupy's ``assert_match`` asserts on the user's behalf).

Called first thing when :mod:`pytest_budget` is imported (pytest's hook imports it while
loading the plugin: everything imported after loads unmarked) and again by the plugin's
``pytest_addhooks`` for a hook made later in the same process.  No pytest import: the hook
is recognised by its class name and its ``_must_rewrite`` set, so a pytest whose hook
differs is left alone.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["narrow_rewrite_marks"]

#: Marks pytest set that hold no test code: this package (its suites are marked again
#: below) and the library plugins of our own dependencies (their modules, e.g. anyio's
#: ``_backends._asyncio``, cost ~0.4 s of CPU a process to rewrite).
_UNMARKED = ("pytest_budget", "anyio", "xdist")
_SUITES = "pytest_budget.suites"


def narrow_rewrite_marks(hook: Any = None) -> None:
    """Drop :data:`_UNMARKED` from ``hook`` (default: pytest's rewrite hook in
    ``sys.meta_path``, if one is installed) and keep the bundled suites marked."""
    hooks = [hook] if hook is not None else [f for f in sys.meta_path if _is_rewrite_hook(f)]
    for found in hooks:
        marked = getattr(found, "_must_rewrite", None)
        if not isinstance(marked, set) or not marked.intersection(_UNMARKED):
            continue  # pytest's hook differs, or nothing of ours is marked: leave it
        ours = "pytest_budget" in marked
        marked.difference_update(_UNMARKED)
        cache = getattr(found, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()
        if ours:
            found.mark_rewrite(_SUITES)


def _is_rewrite_hook(finder: object) -> bool:
    return type(finder).__name__ == "AssertionRewritingHook" and hasattr(finder, "mark_rewrite")
