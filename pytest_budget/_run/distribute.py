"""How ``-n N`` hands the suites' cells to xdist workers (issue 21 item 7).

Under xdist's default ``--dist load`` the tests go to the workers one by one, alternating, so
the agents of one cell land on different workers and every worker computes the work the
agents share: a pool's Phase 0, an environment's rollouts, a task's costs and ground truths.
When ``-n`` is given without ``--dist``, the plugin instead hands out *groups* of tests
that share that work, whole, largest first, each to the next worker that runs low (xdist's
``loadscope`` scheduler with our grouping):

* each cell kind names its groups (:attr:`~pytest_budget._core.registry.CellKind.work_group`):
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

from pytest_budget._core.registry import kind_of_test_file
from pytest_budget._run.rerun import SUITE_NODE_PREFIX

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


def make_scheduler(config: Any, log: Any, options: Any, *, live: bool) -> Any | None:
    """xdist's scheduler for a run (None: xdist's own).

    A run that calls a model (``live``) hands every worker all of its tests at the start
    (``--dist load`` or ``worksteal``), so its cells are in flight together and none moves
    once paid for; an offline ``-n`` run without ``--dist`` sends the tests that share
    prepared work to one worker together (the module docstring).
    """
    if live:
        return _live_scheduler(config, log)
    if config.getvalue("dist") != "load" or _explicit_dist(config):
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class BudgetScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, options)

    return BudgetScheduling(config, log)


def _worker_rank(node: Any) -> tuple[int, str]:
    """Sort key of an xdist worker: the number of its id ``gwN``."""
    worker_id = str(node.gateway.id)
    digits = worker_id.removeprefix("gw")
    return (int(digits) if digits.isdigit() else -1, worker_id)


def _live_scheduler(config: Any, log: Any) -> Any:
    """The xdist scheduler of a run that calls a model (``--dist load``, xdist's default,
    or ``worksteal``): every test is handed out at the start, test ``i`` of the collection
    to worker ``i mod n``; None for another ``--dist`` (``loadscope``, ``each``...), which
    xdist then schedules itself."""
    if config.getvalue("dist") not in ("load", "worksteal"):
        return None
    from xdist.scheduler import LoadScheduling

    class LiveScheduling(LoadScheduling):  # type: ignore[misc]
        """xdist's ``load`` scheduling, with the whole collection sent at once."""

        def schedule(self) -> None:
            # A restarted worker: xdist's own rescheduling.
            if getattr(self, "collection", None) is not None:
                super().schedule()
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            collection = list(next(iter(self.node2collection.values())))
            self.collection = collection
            self.pending[:] = []
            # In worker-id order (gw0, gw1, ...), not the order the workers came up in, so
            # that test i always runs on worker i mod n.
            nodes = sorted(self.nodes, key=_worker_rank)
            for rank, node in enumerate(nodes):
                share = list(range(rank, len(collection), len(nodes)))
                if share:
                    self.node2pending[node].extend(share)
                    node.send_runtest_some(share)
            for node in nodes:
                node.shutdown()

    return LiveScheduling(config, log)
