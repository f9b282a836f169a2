"""Scores of an online cell: success under the cap, the token split, the agent's own
estimates scored with the replay metrics, and the measured early-stop outcome.

Probes (see :mod:`.runner`): every estimate the agent gave during the run is a probe at
``k`` completed turns, scored against ``R_k = C_T - C_k`` (charged usage) and the label
"the run succeeds within the cap".  For a stopped run both come from its measured
continuation (what happened when it was made to go on), never from the stop itself, so
saying ``impossible`` and stopping cannot make the estimate right by fiat.  The replay
metrics are :mod:`pytest_budget.awareness._scoring.metrics`' own (via
:func:`~pytest_budget.awareness._evaluate.score_results`).

Early stop, measured (the cost model is stated in the report): over the cell's runs,

* ``stop_rate``: runs the agent stopped;
* ``saved_token_share``: tokens the continuations of stopped runs that would have failed
  spent, over all tokens of the runs that would have failed (BAGEN's "saved tokens on
  failed trajectories", here measured);
* ``successes_lost``: stopped runs whose continuation succeeded, per run (percentage points
  of success);
* ``net_value = tokens saved by every stop / all tokens - V x successes_lost``, where a
  success is worth ``V`` (``--budget-online-success-value``, default 1) times an average
  run's tokens.  Positive: stopping paid for itself.

Plain Python: no pytest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pytest_budget.awareness._evaluate import ProbeResult, score_results
from pytest_budget.awareness._replay.answers import Invalid
from pytest_budget.awareness._replay.probes import Probe, ProbeTruth
from pytest_budget.awareness.online._runner import EpisodeTurn, OnlineRun

__all__ = [
    "ESTIMATE_SCORES",
    "early_stop_outcome",
    "online_probe_results",
    "score_online_runs",
    "token_scores",
]

#: The replay metrics reported for the online estimates (and, prefixed ``replay_``, beside).
ESTIMATE_SCORES = (
    "macro_f1_all",
    "macro_f1_first",
    "fail_f1",
    "interval_score",
    "hit_rate",
    "mre_p50",
    "mre_p90",
    "invalid_rate",
    *(f"{side}_bin{i}" for i in range(5) for side in ("optimistic", "conservative")),
)


def _total(turns: Sequence[EpisodeTurn]) -> float:
    return sum(t.acting_tokens + t.estimation_tokens for t in turns)


def _trajectory(run: OnlineRun) -> list[EpisodeTurn]:
    """The executed turns of the run as it would have gone without stopping."""
    return [t for t in run.turns if t.executed]


def online_probe_results(runs: Sequence[OnlineRun]) -> list[ProbeResult]:
    """One probe per estimate the agent gave (module docstring)."""
    out: list[ProbeResult] = []
    for run in runs:
        dims = run.dims
        path = _trajectory(run)
        cumulative = [dict.fromkeys(dims, 0.0)]
        for turn in path:
            cumulative.append({d: cumulative[-1][d] + turn.usage.get(d, 0.0) for d in dims})
        T = len(path)
        total = cumulative[-1]
        label = run.would_succeed
        for turn in run.turns:
            if turn.phase != "run" or turn.estimate is None or turn.estimate_k is None:
                continue
            k = turn.estimate_k
            if k >= T and not turn.stop:
                continue  # after the last turn nothing remains to estimate
            used = cumulative[min(k, T)]
            remaining = {d: max(0.0, total[d] - used[d]) for d in dims}
            probe = Probe(run.rollout_id, run.env, k, used, dict(run.cap), ())
            truth = ProbeTruth(T, total, remaining, label, label)
            out.append(ProbeResult(probe, truth, turn.estimate))
    return out


def token_scores(runs: Sequence[OnlineRun]) -> dict[str, float | None]:
    n = len(runs)
    acting = sum(r.acting_tokens() for r in runs)
    estimation = sum(r.estimation_tokens() for r in runs)
    run_turns = sum(len(r.phase_turns("run")) for r in runs)
    estimated = sum(1 for r in runs for t in r.phase_turns("run") if t.estimate is not None)
    return {
        "runs": n,
        "success_rate": sum(r.success for r in runs) / n if n else None,
        "acting_tokens": acting / n if n else None,
        "estimation_tokens": estimation / n if n else None,
        "estimation_share": estimation / acting if acting else None,
        "mean_turns": run_turns / n if n else None,
        "estimate_rate": estimated / run_turns if run_turns else None,
    }


def early_stop_outcome(runs: Sequence[OnlineRun], success_value: float) -> dict[str, Any]:
    n = len(runs)
    stopped = [r for r in runs if r.stopped_at is not None]
    saved_all = sum(_total(r.phase_turns("continuation")) for r in stopped)
    failing = [r for r in runs if not r.would_succeed]
    saved_failing = sum(
        _total(r.phase_turns("continuation")) for r in stopped if not r.would_succeed
    )

    # All tokens of a run as it would have gone: its own turns (the stop reply left out)
    # plus the continuation.
    def spent(run: OnlineRun) -> float:
        return _total([t for t in run.turns if not t.stop])

    all_tokens = sum(spent(r) for r in runs)
    failing_tokens = sum(spent(r) for r in failing)
    lost = sum(1 for r in stopped if r.would_succeed)
    return {
        "stop_rate": len(stopped) / n if n else None,
        "stopped_runs": len(stopped),
        "stopped_would_fail": sum(1 for r in stopped if not r.would_succeed),
        "would_fail_runs": len(failing),
        "tokens_saved": saved_all / n if n else None,
        "saved_token_share": saved_failing / failing_tokens if failing_tokens else None,
        "successes_lost": lost / n if n else None,
        "net_value": (
            saved_all / all_tokens - success_value * lost / n if n and all_tokens else None
        ),
        "success_without_stops": sum(r.would_succeed for r in runs) / n if n else None,
    }


def score_online_runs(
    runs: Sequence[OnlineRun], *, success_value: float = 1.0
) -> tuple[dict[str, Any], dict[str, int], dict[str, str]]:
    """(scores, invalid estimate reasons, notes) of a cell's online runs."""
    scores: dict[str, Any] = dict(token_scores(runs))
    scores.update(early_stop_outcome(runs, success_value))
    results = online_probe_results(runs)
    scores["n_probes"] = len(results)
    notes: dict[str, str] = {}
    reasons = Counter(r.estimate.reason for r in results if isinstance(r.estimate, Invalid))
    if results and runs:
        estimate_scores = score_results(results, runs[0].dims)
        for name in ESTIMATE_SCORES:
            scores[name] = estimate_scores.get(name)
    else:
        for name in ESTIMATE_SCORES:
            scores[name] = None
        notes["estimates"] = "the agent gave no estimate that can be scored"
    return scores, dict(reasons.most_common()), notes
