"""The terminal score tables per cell kind (the ``suite`` field of a record): title and renderer.

Read by the run's session (:mod:`pytest_budget._run.session`) and by ``budget-report merge``
(:mod:`pytest_budget.report._merge`), which must not import the plugin layer.  Each suite declares
its tables in the registry (:mod:`pytest_budget._core.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_budget._core.records import CellRecord
from pytest_budget._core.registry import cell_kinds

__all__ = ["Renderer", "tables"]

Renderer = Callable[[Sequence[CellRecord]], list[str]]


def tables() -> dict[str, tuple[str, Renderer]]:
    """Table title and renderer per cell kind that has a table, in registry order.

    The renderers import their modules on first use (they pull in numpy): a pytest run
    that records no cell never loads them.
    """
    return {
        name: (kind.table_title or name, kind.table)
        for name, kind in cell_kinds().items()
        if kind.table is not None
    }
