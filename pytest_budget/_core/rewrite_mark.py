"""Narrow pytest's assertion-rewrite mark of this distribution to the bundled suites.

pytest marks every module of each ``pytest11`` distribution for assertion rewriting; a
marked module is parsed, rewritten and compiled from source on every run that writes no
bytecode (PYTHONDONTWRITEBYTECODE=1, common in Docker images), in every xdist worker too.
This package's core asserts only narrow types: they load from the bytecode pip compiled.
The bundled suites stay marked (a failing snapshot assert explains itself); other
distributions' marks are theirs (syrupy's ``assert_match`` asserts on the user's behalf).

Called first thing when :mod:`pytest_budget` is imported (pytest's hook imports it while
loading the plugin, so the plugin module and everything it imports load unmarked, ~50 ms
of compiling a process) and again by the plugin's ``pytest_addhooks`` for a hook made
later in the same process.  No pytest import: the hook is recognised by its class name
and its ``_must_rewrite`` set, so a pytest whose hook differs is left alone.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["narrow_rewrite_marks"]

_PACKAGE = "pytest_budget"
_SUITES = "pytest_budget.suites"


def narrow_rewrite_marks(hook: Any = None) -> None:
    """Replace this package's mark in ``hook`` (default: pytest's rewrite hooks in
    ``sys.meta_path``, if any is installed) with the bundled suites'."""
    hooks: list[Any] = (
        [hook] if hook is not None else [f for f in sys.meta_path if _is_rewrite_hook(f)]
    )
    for found in hooks:
        marked = getattr(found, "_must_rewrite", None)
        if not isinstance(marked, set) or _PACKAGE not in marked:
            continue  # pytest's hook differs, or our distribution is not marked: leave it
        marked.discard(_PACKAGE)
        found.mark_rewrite(_SUITES)  # clears the hook's cache of decisions


def _is_rewrite_hook(finder: object) -> bool:
    return type(finder).__name__ == "AssertionRewritingHook" and hasattr(finder, "mark_rewrite")
