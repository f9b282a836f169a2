"""How ``-n N`` hands the suites' cells to xdist workers (issue 21 item 7).

Under xdist's default ``--dist load`` the tests go to the workers one by one, alternating, so
the agents of one cell land on different workers and every worker computes the work the
agents share: a pool's Phase 0, an environment's rollouts, a task's costs and ground truths.
When ``-n`` is given without ``--dist``, the plugin instead hands out *groups* of tests
that share that work, whole, largest first, each to the next worker that runs low (xdist's
``loadscope`` scheduler with our grouping):

* triage: one group per pool and unsolvable ratio (``arith-u0.5``);
* awareness: one group per environment (``sokoban-8x8``);
* planning: one group per task and refinement level (``dining-L5``);
* any other test (your own, or a suite test whose id is not recognised) is a group of one,
  as under ``load``.

Which worker runs a test never changes a score (every cell is seeded from stable strings),
so this changes only the wall time.  An explicit ``--dist`` is always respected.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["group_of", "make_scheduler"]

_SUITES = "pytest_budget/suites/"
_PARAMS = re.compile(r"^(?P<path>[^:]+)::(?P<func>\w+)\[(?P<params>.*)\]$")
_TRIAGE = re.compile(r"^(?P<pool>.+-u[0-9.]+)-a[0-9.]+-")
_PLANNING = re.compile(r"^(?P<task>[a-z]+)-.*?-L(?P<level>\d+)-")


def group_of(nodeid: str, envs: Sequence[str] = ()) -> str:
    """The work unit of ``nodeid``: the tests sharing its prepared work, else itself.

    ``envs`` are the awareness environments of the run (their names may hold ``-``).
    """
    match = _PARAMS.match(nodeid)
    if match is None or not match["path"].startswith(_SUITES):
        return nodeid
    module, params = match["path"].removeprefix(_SUITES), match["params"]
    if module == "test_triage.py":
        found = _TRIAGE.match(params)
        return f"triage:{found['pool']}" if found else nodeid
    if module == "test_planning.py":
        found = _PLANNING.match(params)
        return f"planning:{found['task']}-L{found['level']}" if found else nodeid
    if module == "test_awareness.py":
        for env in sorted(envs, key=len, reverse=True):
            if params.startswith(f"{env}-"):
                return f"awareness:{env}"
    return nodeid


def _explicit_dist(config: Any) -> bool:
    args = [str(a) for a in config.invocation_params.args]
    return any(a in ("--dist", "-d") or a.startswith("--dist=") for a in args)


def make_scheduler(config: Any, log: Any, envs: Sequence[str]) -> Any | None:
    """The grouping scheduler for ``-n`` without ``--dist`` (None: xdist's own)."""
    if config.getvalue("dist") != "load" or _explicit_dist(config):
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class BudgetScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, envs)

    return BudgetScheduling(config, log)
