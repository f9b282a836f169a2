"""How ``-n N`` hands the suites' cells to xdist workers (issue 21 item 7).

Under xdist's default ``--dist load`` the tests go to the workers one by one, alternating, so
the agents of one cell land on different workers and every worker computes the work the
agents share: a pool's Phase 0, an environment's rollouts, a task's costs and ground truths.
When ``-n`` is given without ``--dist``, the plugin instead hands out *groups* of tests
that share that work, whole, largest first, each to the next worker that runs low (xdist's
``loadscope`` scheduler with our grouping):

* each cell kind names its groups (:attr:`~pytest_budget.suite_registry.CellKind.work_group`):
  triage one per pool and unsolvable ratio (``arith-u0.5``), awareness one per environment
  (``sokoban-8x8``), planning one per task and refinement level (``dining-L5``);
* any other test (your own, or a suite test whose id is not recognised) is a group of one,
  as under ``load``.

Which worker runs a test never changes a score (every cell is seeded from stable strings),
so this changes only the wall time.  An explicit ``--dist`` is always respected.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_budget.rerun import SUITE_NODE_PREFIX
from pytest_budget.suite_registry import kind_of_test_file

__all__ = ["group_of", "make_scheduler"]

_PARAMS = re.compile(r"^(?P<path>[^:]+)::(?P<func>\w+)\[(?P<params>.*)\]$")


def group_of(nodeid: str, options: Any) -> str:
    """The work unit of ``nodeid``: the tests sharing its prepared work, else itself."""
    match = _PARAMS.match(nodeid)
    if match is None:
        return nodeid
    path = match["path"]
    kind = kind_of_test_file(path.removeprefix(SUITE_NODE_PREFIX))
    if kind is None or kind.work_group is None or not path.startswith(SUITE_NODE_PREFIX):
        return nodeid
    return kind.work_group(match["params"], options) or nodeid


def _explicit_dist(config: Any) -> bool:
    args = [str(a) for a in config.invocation_params.args]
    return any(a in ("--dist", "-d") or a.startswith("--dist=") for a in args)


def make_scheduler(config: Any, log: Any, options: Any) -> Any | None:
    """The grouping scheduler for ``-n`` without ``--dist`` (None: xdist's own)."""
    if config.getvalue("dist") != "load" or _explicit_dist(config):
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class BudgetScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, options)

    return BudgetScheduling(config, log)
