"""The terminal score tables per ``suite`` value of a cell record: title and renderer.

Read by the run's session (:mod:`pytest_budget.session`) and by ``budget-report merge``
(:mod:`pytest_budget.merge`), which must not import the plugin layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Renderer", "tables"]

Renderer = Callable[[Sequence[Mapping[str, Any]]], list[str]]


def tables() -> dict[str, tuple[str, Renderer]]:
    """Table title and renderer per ``suite`` value of a cell record.

    Imported on first use (the renderers pull in numpy): a pytest run that records no cell
    never loads them.
    """
    from pytest_budget.awareness.online.summary import online_table
    from pytest_budget.awareness.summary import awareness_table
    from pytest_budget.planning.summary import planning_table
    from pytest_budget.triage.summary import resolve_table, triage_table

    return {
        "triage": ("triage: triage efficiency (eta), regret, detection and waste", triage_table),
        "triage-resolve": ("triage: budget-aware re-solve (stated allocation)", resolve_table),
        "awareness": ("awareness: feasibility, interval quality and early stop", awareness_table),
        "planning": ("planning: cost-optimal tool use (CostBench)", planning_table),
        "awareness-online": (
            "awareness online: acting under a cap while estimating (issue 24)",
            online_table,
        ),
    }
