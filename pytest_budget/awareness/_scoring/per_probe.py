"""Each probe's share of an awareness cell's gated scores, for the paired gate.

The baseline and a new run answer the same probes (the same rollouts, the same points in
them), so a cell can be compared probe by probe.  Every gated score is a ratio of sums over
the probes, or the mean of two (:data:`pytest_budget._stats.paired.PerUnit`; a second term is
stored under ``<metric>.2``):

* ``fail_f1``: F1 of the impossible class is ``2 TP / (predicted + true)``, so a probe
  contributes ``2 * (infeasible and answered impossible)`` over ``(answered impossible) +
  (infeasible)``;
* ``macro_f1_all``: the mean of that ratio for both classes (feasible / interval, infeasible
  / impossible);
* ``interval_score``: S_k of a probe of a successful rollout (the mean over dimensions in
  Warehouse) over the probes of successful rollouts;
* ``invalid_rate``: an unreadable answer over the answered probes.

A probe whose estimator raised is out of every score (zeros).  With ``--budget-repeat=K`` a
probe's values are the means over the K runs.  Plain Python and numpy: nothing here
imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_budget._stats.paired import PerUnit, per_unit_fields
from pytest_budget.awareness._evaluate import (
    AwarenessOutcome,
    ProbeResult,
    answered_records,
    single_dimension_records,
)
from pytest_budget.awareness._scoring.metrics import (
    KIND_IMPOSSIBLE,
    KIND_INTERVAL,
    KIND_INVALID,
    ProbeTable,
    interval_scores,
    project_dimension,
)

__all__ = ["UNIT", "per_probe_parts", "per_probe_snapshot"]

UNIT = "probe"


def _one(results: Sequence[ProbeResult], built: Any = None) -> dict[str, np.ndarray]:
    """``built``: the outcome's scoring tables of these results (``_tables``), reused."""
    n = len(results)
    where = np.array([i for i, r in enumerate(results) if r.estimate is not None], dtype=np.int64)
    answered = [results[i] for i in where]
    cols = {
        name: np.zeros(n)
        for name in ("feasible", "interval", "impossible", "invalid", "answered", "success", "s_k")
    }
    if not answered:
        return cols
    dims = tuple(answered[0].probe.budget)
    if built is not None and len(built[0]) == len(answered) and set(built[1]) == set(dims):
        tables = [built[1][dim] for dim in dims]
    elif len(dims) == 1:
        multi = answered_records(answered)
        tables = [ProbeTable.from_records(single_dimension_records(multi, dims[0]))]
    else:
        multi = answered_records(answered)
        tables = [ProbeTable.from_records(project_dimension(multi, dim)) for dim in dims]
    t = tables[0]
    cols["feasible"][where] = t.feasible
    cols["interval"][where] = t.kind == KIND_INTERVAL
    cols["impossible"][where] = t.kind == KIND_IMPOSSIBLE
    cols["invalid"][where] = t.kind == KIND_INVALID
    cols["answered"][where] = 1.0
    cols["success"][where] = t.success
    cols["s_k"][where] = np.mean([np.where(x.success, interval_scores(x), 0.0) for x in tables], 0)
    return cols


def per_probe_parts(outcomes: Sequence[AwarenessOutcome]) -> PerUnit:
    """Per gated metric (and ``macro_f1_all.2``), each probe's (numerator, denominator),
    averaged over the runs.  Every outcome must hold the same probes in the same order."""
    if not outcomes:
        raise ValueError("per_probe_parts needs at least one run")
    runs = [_one(outcome.results, outcome.tables) for outcome in outcomes]
    c = {name: np.mean([run[name] for run in runs], axis=0) for name in runs[0]}
    # The same truth in every run; the answers are averaged.
    feasible = c["feasible"] * c["answered"]
    infeasible = (1.0 - c["feasible"]) * c["answered"]
    # Averaging over runs keeps each class's TP = truth * pred per run: the truth is fixed.
    tp_fail = infeasible * c["impossible"]
    tp_ok = feasible * c["interval"]
    fail = (2 * tp_fail, c["impossible"] + infeasible)
    ok = (2 * tp_ok, c["interval"] + feasible)

    def listed(pair: tuple[np.ndarray, np.ndarray]) -> tuple[list[float], list[float]]:
        return [float(v) for v in pair[0]], [float(v) for v in pair[1]]

    return {
        "macro_f1_all": listed(ok),
        "macro_f1_all.2": listed(fail),
        "fail_f1": listed(fail),
        "interval_score": listed((c["s_k"], c["success"])),
        "invalid_rate": listed((c["invalid"], c["answered"])),
    }


def per_probe_snapshot(outcomes: Sequence[AwarenessOutcome]) -> dict[str, Any]:
    """The snapshot's ``per_query`` object for an awareness cell (unit: the probe)."""
    return per_unit_fields(per_probe_parts(outcomes), UNIT)
