"""One awareness cell: replay rollouts as probes, ask the estimator, parse, score.

Every probe is asked concurrently (bounded by the limiter).  An answer that cannot be read
is ``invalid`` with its reason and scored as a wrong answer; an estimator that raises makes
that probe an ``error``: it is left out of the scores and counted, and the cell goes on.
Plain Python: no pytest.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget._core.concurrency import for_each_bounded
from pytest_budget._core.replies import safe_repr
from pytest_budget._core.roles import AgentError, InvalidOutput, agent_name, call_role
from pytest_budget.awareness._replay.answers import (
    Estimate,
    Impossible,
    Interval,
    IntervalMap,
    Invalid,
    ParsePolicy,
    ReversedPolicy,
    parse_estimate,
)
from pytest_budget.awareness._replay.probes import Probe, ProbeTruth, make_probes
from pytest_budget.awareness._replay.rollouts import Rollout
from pytest_budget.awareness._scoring.metrics import (
    MISS_BINS,
    MultiProbeRecord,
    ProbeRecord,
    ProbeTable,
    late_recognition_curve,
    miss_bin_count,
    per_dimension_scores,
    progress_curves,
    project_dimension,
    score_notes,
    score_probes,
)

__all__ = [
    "PARSE_POLICIES",
    "AwarenessOutcome",
    "ProbeResult",
    "awareness_outcome",
    "cell_miss_bins",
    "parse_answer",
    "result_curves",
    "result_notes",
    "run_awareness_cell",
    "score_results",
    "summarize_rollouts",
]

#: ``--budget-parse`` names -> what a reversed interval (lo > hi) becomes.
PARSE_POLICIES: dict[str, ReversedPolicy] = {"bagen": "swap", "strict": "invalid"}


@dataclass(frozen=True)
class ProbeResult:
    """One asked probe: the parsed estimate, or the error that prevented an answer."""

    probe: Probe
    truth: ProbeTruth
    estimate: Estimate | None
    error: str | None = None
    #: The estimator's reply as text (for the report's samples); None when it raised.
    raw: str | None = None
    #: Whether ``raw`` is the reply itself (text), not a preview of an object: the RL
    #: reward then reads it with BAGEN's RL parser.
    raw_is_reply: bool = False


@dataclass
class AwarenessOutcome:
    """A scored cell: the scores plus the counts a reader needs to trust them."""

    estimator: str
    scores: dict[str, float | int | None]
    n_probes: int
    n_errors: int
    # Every asked probe in order (errors included): the bootstrap resamples them by rollout.
    results: list[ProbeResult] = field(default_factory=list)
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    first_error: str | None = None
    outcome: str = "ok"
    reason: str = ""
    # Figure data for the HTML report (see ``result_curves``); not scores, never gated.
    curves: dict[str, Any] = field(default_factory=dict)
    # The scoring tables of ``results`` (see ``_tables``), kept so the samples reuse them.
    tables: Any = field(default=None, repr=False, compare=False)


def _bound(value: object) -> float | str:
    """A bound as a float, or why it is not one (a string, None, a number past float)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"bound of type {type(value).__name__}, expected a number"
    try:
        return float(value)
    except (OverflowError, ValueError, TypeError):
        return "bound too large for a float"


def _checked_interval(value: Interval, policy: ParsePolicy, where: str) -> Interval | Invalid:
    """The text parser's rules applied to an :class:`Interval` an agent returned directly."""
    lo, hi = _bound(value.lo), _bound(value.hi)
    for bound in (lo, hi):
        if isinstance(bound, str):
            return Invalid(safe_repr(value), f"{where}{bound}")
    assert isinstance(lo, float) and isinstance(hi, float)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Invalid(safe_repr(value), f"{where}non-finite value (nan/inf)")
    if lo < 0 or hi < 0:
        return Invalid(safe_repr(value), f"{where}negative bound")
    if lo > hi:
        if PARSE_POLICIES[policy] == "invalid":
            return Invalid(safe_repr(value), f"{where}reversed interval (lo > hi)")
        return Interval(hi, lo)
    if (lo, hi) != (value.lo, value.hi) or type(value) is not Interval:
        return Interval(lo, hi)  # plain floats from here on (ints, numpy numbers, subclasses)
    return value


def _checked_object(reply: Estimate, dimensions: Sequence[str], policy: ParsePolicy) -> Estimate:
    if isinstance(reply, Impossible):
        return reply
    if isinstance(reply, Invalid):  # the estimator's own: its fields are whatever it put there
        reason = reply.reason if isinstance(reply.reason, str) and reply.reason else ""
        raw = reply.raw if isinstance(reply.raw, str) else safe_repr(reply.raw)
        if reason and raw is reply.raw:
            return reply
        return Invalid(raw, reason or "the estimator returned Invalid without a reason")
    if isinstance(reply, Interval):
        if len(dimensions) > 1:
            return Invalid(safe_repr(reply), "single interval for a multi-dimension probe")
        return _checked_interval(reply, policy, "")
    given = reply.as_dict()
    if set(given) != set(dimensions):
        return Invalid(
            safe_repr(reply),
            f"intervals for {sorted(map(str, given))}, expected exactly {sorted(dimensions)}",
        )
    checked = {
        d: _checked_interval(given[d], policy, f"{d}: ")
        if isinstance(given[d], Interval)
        else Invalid(safe_repr(reply), f"{d}: {type(given[d]).__name__}, expected an Interval")
        for d in dimensions
    }
    for value in checked.values():
        if isinstance(value, Invalid):
            return value
    if len(dimensions) == 1:
        only = checked[dimensions[0]]
        assert isinstance(only, Interval)
        return only
    return IntervalMap(tuple((d, v) for d, v in checked.items() if isinstance(v, Interval)))


def parse_answer(reply: Any, dimensions: Sequence[str], policy: ParsePolicy) -> Estimate:
    """An estimator's reply as an :class:`Estimate`; never raises on agent output.

    Text goes through :func:`~pytest_budget.awareness._replay.answers.parse_estimate` (``bagen``:
    BAGEN's public parser; ``strict``: the stricter reading); estimate
    objects get the same checks (finite, non-negative, the reversed-interval policy, exactly
    the probe's dimensions).
    """
    if isinstance(reply, Interval | IntervalMap | Impossible | Invalid):
        return _checked_object(reply, dimensions, policy)
    if not isinstance(reply, str):
        return Invalid(safe_repr(reply), f"answer is {type(reply).__name__}, expected text")
    return parse_estimate(
        reply,
        policy=policy,
        dimensions=tuple(dimensions) if len(dimensions) > 1 else None,
    )


def _read_answer(reply: Any, dimensions: Sequence[str], policy: ParsePolicy) -> Estimate:
    """:func:`parse_answer`; anything it raises on a hostile object is an invalid answer."""
    try:
        return parse_answer(reply, dimensions, policy)
    except Exception as exc:
        reason = f"reading the answer ({type(reply).__name__}) raised {type(exc).__name__}"
        return Invalid(safe_repr(reply), reason)


def answered_records(results: Sequence[ProbeResult]) -> list[MultiProbeRecord]:
    """Scoring records of answered probes (every result must carry an estimate)."""
    out = []
    for result in results:
        assert result.estimate is not None
        probe, truth = result.probe, result.truth
        out.append(
            MultiProbeRecord(
                probe.rollout_id,
                probe.k,
                truth.T,
                probe.used,
                truth.total,
                probe.budget,
                truth.success,
                truth.feasible,
                result.estimate,
                result.raw if result.raw_is_reply else None,
            )
        )
    return out


_Tables = tuple[list[MultiProbeRecord], dict[str, ProbeTable]]


def _tables(results: Sequence[ProbeResult], dimensions: Sequence[str]) -> _Tables:
    """The answered probes' records and one scoring table per dimension, built once for
    the scores, notes and curves of a cell (building a table is most of their cost)."""
    multi = answered_records([r for r in results if r.estimate is not None])
    if len(dimensions) > 1:
        projected = {dim: project_dimension(multi, dim) for dim in dimensions}
    else:
        projected = {dimensions[0]: single_dimension_records(multi, dimensions[0])}
    return multi, {dim: ProbeTable.from_records(records) for dim, records in projected.items()}


def score_results(
    results: Sequence[ProbeResult],
    dimensions: Sequence[str],
    *,
    tables: _Tables | None = None,
    all_failed_rollouts: int | None = None,
) -> dict[str, float | int | None]:
    """Scores over the answered probes (errors excluded).

    One dimension: :func:`~pytest_budget.awareness._scoring.metrics.score_probes`.  Several
    (Warehouse):
    the feasibility metrics do not depend on the dimension, so they come from the first
    dimension's projection (so do the early-stop shares, measured in that dimension);
    interval score, hit rate, MRE, reward, the miss bins and the linear baseline are scored
    per dimension (``<metric>_<dim>``) and their mean replaces the single-dimension value,
    except ``linear_error_reduction``, which is in each dimension's own units: it is only
    reported per dimension and the plain key is ``None``.

    ``all_failed_rollouts``: unsuccessful rollouts of the whole set (those without a probe
    included), the denominator of ``failed_stopped_share`` (BAGEN §2.8).
    """
    multi, by_dim = tables or _tables(results, dimensions)
    bins = cell_miss_bins(results)
    scores = score_probes(by_dim[dimensions[0]], bins=bins, all_failed_rollouts=all_failed_rollouts)
    if len(dimensions) > 1:
        # The projected tables _tables built: the same records, scored once.
        scores.update(per_dimension_scores(multi, dimensions, bins=bins, tables=by_dim))
        scores["linear_error_reduction"] = None
    return scores


def cell_miss_bins(results: Sequence[ProbeResult]) -> int:
    """The miss-bin count of a cell, from its environment label (BAGEN §2.6: 10, 5 for
    Search-R1; :func:`~pytest_budget.awareness._scoring.metrics.miss_bin_count`)."""
    return miss_bin_count(results[0].probe.env) if results else MISS_BINS


def single_dimension_records(multi: Sequence[MultiProbeRecord], dim: str) -> list[ProbeRecord]:
    """One-dimension probe records (the answer stays a plain Interval; project_dimension
    expects a map)."""
    return [
        ProbeRecord(
            r.rollout_id, r.k, r.T, r.used[dim], r.total[dim], r.budget[dim], r.success,
            r.feasible, r.estimate, r.reply,
        )
        for r in multi
    ]  # fmt: skip


def result_notes(
    results: Sequence[ProbeResult], dimensions: Sequence[str], *, tables: _Tables | None = None
) -> dict[str, str]:
    """Why some scores are 0 or absent by definition (see ``score_notes``), per score name.

    Feasibility notes come from :func:`~pytest_budget.awareness._scoring.metrics.score_notes`; a
    multi-dimension cell also says that ``linear_error_reduction`` is per dimension only.
    """
    _, by_dim = tables or _tables(results, dimensions)
    notes = score_notes(by_dim[dimensions[0]])
    if len(dimensions) > 1:
        notes["linear_error_reduction"] = (
            "reported per dimension only (linear_error_reduction_<dim>): the dimensions "
            "have different units"
        )
    return notes


#: Budget shares at which the late-recognition curve is sampled (0, 0.05, ..., 1).
LATE_RECOGNITION_GRID = tuple(round(i / 20, 2) for i in range(21))


def result_curves(
    results: Sequence[ProbeResult],
    dimensions: Sequence[str],
    *,
    bins: int = 5,
    tables: _Tables | None = None,
) -> dict[str, Any]:
    """Per-progress-bin curves per budget dimension and the late-recognition curve.

    The late-recognition curve is measured in the first dimension, like the early-stop
    shares; the width and linear-baseline curves are per dimension (each normalised by
    its own cap).
    """
    _, by_dim = tables or _tables(results, dimensions)
    per_dim = {dim: progress_curves(by_dim[dim], bins) for dim in dimensions}
    curve, n_failed = late_recognition_curve(by_dim[dimensions[0]], LATE_RECOGNITION_GRID)
    return {
        "bin_edges": [round(i / bins, 6) for i in range(bins + 1)],
        "dimensions": per_dim,
        "late_recognition": {
            "dimension": dimensions[0],
            "budget_share": list(LATE_RECOGNITION_GRID),
            "still_feasible": curve,
            "failed_rollouts": n_failed,
        },
    }


async def run_awareness_cell(
    rollouts: Sequence[Rollout],
    estimator: object,
    *,
    policy: ParsePolicy = "bagen",
    limiter: anyio.CapacityLimiter | None = None,
    probes: Sequence[tuple[Probe, ProbeTruth]] | None = None,
) -> AwarenessOutcome:
    """Ask ``estimator`` every probe of ``rollouts`` (or the given ``probes``) and score."""
    if probes is None:
        probes = [pair for rollout in rollouts for pair in make_probes(rollout)]
    name = agent_name(estimator)
    if not probes:
        return AwarenessOutcome(
            name, {}, 0, 0, outcome="error", reason="no probes: every rollout has a single turn"
        )
    dims = {frozenset(probe.budget) for probe, _ in probes}
    if len(dims) != 1:
        found = sorted(sorted(d) for d in dims)
        raise ValueError(f"probes of one cell must share budget dimensions, got {found}")
    # Order as the first rollout lists them (the sets are equal, the order may differ).
    dimensions = tuple(probes[0][0].budget)
    bind = getattr(estimator, "with_ground_truth", None)
    if callable(bind):
        estimator = bind({(p.rollout_id, p.k): t for p, t in probes})
    bind_rollouts = getattr(estimator, "with_rollouts", None)
    if callable(bind_rollouts):  # the logged estimator keys answers by the rollouts' meta
        estimator = bind_rollouts({r.id: r.meta for r in rollouts})
    results: list[ProbeResult | None] = [None] * len(probes)

    async def ask(index: int) -> None:
        probe, truth = probes[index]
        try:
            reply = await call_role(estimator, "estimator", probe, limiter=limiter)
        except InvalidOutput as exc:  # None, a number, megabytes: invalid, never a crash
            results[index] = ProbeResult(
                probe, truth, Invalid(exc.preview, exc.reason), raw=exc.preview
            )
            return
        except AgentError as exc:
            results[index] = ProbeResult(probe, truth, None, exc.reason)
            return
        text = isinstance(reply, str)
        raw = reply if text else safe_repr(reply)
        results[index] = ProbeResult(
            probe, truth, _read_answer(reply, dimensions, policy), raw=raw, raw_is_reply=text
        )

    await for_each_bounded(len(probes), ask, limiter)
    return awareness_outcome(name, [r for r in results if r is not None], rollouts, dimensions)


def awareness_outcome(
    name: str,
    done: list[ProbeResult],
    rollouts: Sequence[Rollout],
    dimensions: tuple[str, ...],
) -> AwarenessOutcome:
    """The scored cell of these answered probes (all of the cell's, or the batches the
    sequential gate ran) of ``rollouts``."""
    errors = [r.error for r in done if r.error is not None]
    reasons = Counter(r.estimate.reason for r in done if isinstance(r.estimate, Invalid))
    outcome = AwarenessOutcome(
        name,
        {},
        len(done),
        len(errors),
        results=done,
        invalid_reasons=dict(reasons.most_common()),
        first_error=errors[0] if errors else None,
    )
    if len(errors) == len(done):
        outcome.outcome = "error"
        outcome.reason = f"estimator {name!r} failed on all {len(done)} probes: {errors[0]}"
        return outcome
    tables = _tables(done, dimensions)
    # BAGEN divides stopped failed rollouts by all of them, those without a probe included
    # (one-turn rollouts, rollouts left out by subsampling).
    failed = sum(not r.success for r in rollouts) if rollouts else None
    outcome.scores = score_results(done, dimensions, tables=tables, all_failed_rollouts=failed)
    outcome.scores["n_errors"] = len(errors)
    outcome.notes = result_notes(done, dimensions, tables=tables)
    outcome.curves = result_curves(done, dimensions, tables=tables)
    outcome.tables = tables
    return outcome


#: ``meta["success_rule"]`` of a coding-agent log whose success is its exit status only.
SUBMITTED_RULE = "exit_status == 'Submitted'"


def summarize_rollouts(rollouts: Sequence[Rollout]) -> Mapping[str, float | int]:
    """Counts that describe a rollout set (for the report, not for gating)."""
    n = len(rollouts)
    feasible = sum(r.feasible for r in rollouts)
    out: dict[str, float | int] = {
        "rollouts": n,
        "succeeded": sum(r.success for r in rollouts),
        "feasible": feasible,
        "mean_turns": round(sum(r.T for r in rollouts) / n, 3) if n else 0,
    }
    # Coding-agent logs whose outcome is only the agent's own "Submitted": no verdict.
    unverified = sum(r.meta.get("success_rule") == SUBMITTED_RULE for r in rollouts)
    if unverified:
        out["success_unverified"] = unverified
    return out
