"""Awareness metrics over whole rollouts: late recognition and early stop of failing runs,
the linear-extrapolation baseline and the RL reward.  Re-exported by
:mod:`pytest_budget.awareness._scoring.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pytest_budget.awareness._scoring.probe_metrics import (
    KIND_IMPOSSIBLE,
    KIND_INTERVAL,
    REWARD_COVERED,
    REWARD_IMPOSSIBLE,
    FloatArray,
    IntArray,
    Probes,
    ProbeTable,
    _coverage_and_tightness,
    _mean,
    _table,
    rl_reward_of_text,
)

# --------------------------------------------------------------------------- early failure


def _first_impossible(t: ProbeTable) -> tuple[IntArray, FloatArray]:
    """Per rollout code: smallest k answered impossible (-1 if none) and C_k at that k."""
    big = np.iinfo(np.int64).max
    first_k = np.full(t.n_rollouts, big, dtype=np.int64)
    imp = t.kind == KIND_IMPOSSIBLE
    np.minimum.at(first_k, t.rollout[imp], t.k[imp])
    used_at = np.full(t.n_rollouts, np.nan)
    hit = imp & (t.k == first_k[t.rollout])
    used_at[t.rollout[hit]] = t.used[hit]
    return np.where(first_k == big, -1, first_k), used_at


def _per_rollout(t: ProbeTable, values: FloatArray) -> FloatArray:
    out = np.full(t.n_rollouts, np.nan)
    out[t.rollout] = values
    return out


@dataclass(frozen=True, slots=True)
class LateRecognition:
    """On failed rollouts: C_k / budget at the first ``impossible`` answer."""

    shares: tuple[float, ...]
    n_failed: int
    n_flagged: int
    mean: float | None
    median: float | None


def late_recognition(probes: Probes) -> LateRecognition:
    """Share of budget consumed when the estimator first says impossible, per failed rollout.

    Rollouts never flagged are counted in ``n_failed`` but have no share.
    """
    t = _table(probes)
    first_k, used_at = _first_impossible(t)
    feasible = _per_rollout(t, t.feasible.astype(np.float64)) == 1.0
    present = np.zeros(t.n_rollouts, dtype=np.bool_)
    present[t.rollout] = True
    budget = _per_rollout(t, t.budget)
    failed = present & ~feasible
    flagged = failed & (first_k >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        shares = used_at[flagged] / budget[flagged]
    return LateRecognition(
        shares=tuple(float(s) for s in shares),
        n_failed=int(failed.sum()),
        n_flagged=int(flagged.sum()),
        mean=float(shares.mean()) if shares.size else None,
        median=float(np.median(shares)) if shares.size else None,
    )


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """The stop-at-first-impossible policy (§2.8; worked back from BAGEN's table).

    ``false_abort_rate``: ``impossible`` answers on truly feasible probes divided by **all**
    probes (the caption says "of successful rollouts"; the reported numbers, e.g. Sokoban
    GPT 7/661, divide by every probe; the numerator is inferred).  Failed rollouts are the
    unsuccessful ones.  ``failed_stopped``: failed rollouts with at least one ``impossible``
    answer; ``failed_rollouts``: failed rollouts among the probed ones (pass the whole set's
    count to :func:`score_probes` for the rate over all failed rollouts, those without a
    probe included).  ``saved_token_share``: over failed rollouts, sum of (C_T - C_k at the
    first ``impossible``) over sum of C_T.
    """

    false_abort_rate: float | None
    false_abort_count: int
    feasible_probes: int
    saved_token_share: float | None
    failed_stopped: int
    failed_rollouts: int
    succeeded_stopped: int


def early_stop(probes: Probes) -> EarlyStop:
    t = _table(probes)
    imp = t.kind == KIND_IMPOSSIBLE
    n_feas = int(t.feasible.sum())
    n_false = int((imp & t.feasible).sum())
    first_k, used_at = _first_impossible(t)
    present = np.zeros(t.n_rollouts, dtype=np.bool_)
    present[t.rollout] = True
    feasible = _per_rollout(t, t.feasible.astype(np.float64)) == 1.0
    succeeded = _per_rollout(t, t.success.astype(np.float64)) == 1.0
    total = _per_rollout(t, t.total)
    failed = present & ~succeeded
    stopped = first_k >= 0
    # clamped at 0 in case a rollout's probes disagree on C_T (they should not)
    saved = np.where(failed & stopped, np.maximum(total - np.nan_to_num(used_at), 0.0), 0.0)
    denom = float(total[failed].sum())
    return EarlyStop(
        false_abort_rate=n_false / len(t) if len(t) else None,
        false_abort_count=n_false,
        feasible_probes=n_feas,
        saved_token_share=float(saved[failed].sum()) / denom if denom > 0 else None,
        failed_stopped=int((failed & stopped).sum()),
        failed_rollouts=int(failed.sum()),
        succeeded_stopped=int((present & feasible & stopped).sum()),
    )


# --------------------------------------------------------------------------- linear baseline


def linear_extrapolation(probes: Probes) -> FloatArray:
    """R_lin = (C_k / k) * T - C_k per probe (k >= 1)."""
    t = _table(probes)
    k = np.maximum(t.k, 1).astype(np.float64)
    result: FloatArray = (t.used / k) * t.T - t.used
    return result


@dataclass(frozen=True, slots=True)
class LinearBaseline:
    """Agent midpoint vs R_lin on feasible interval probes, absolute errors against R_k.

    ``mean_reduction`` = mean(|R_lin - R_k| - |midpoint - R_k|): positive when the agent
    is closer. ``win_rate``: share of probes where the agent is strictly closer.
    """

    n: int
    mae_agent: float | None
    mae_linear: float | None
    mean_reduction: float | None
    win_rate: float | None


def linear_baseline(probes: Probes) -> LinearBaseline:
    t = _table(probes)
    mask = t.feasible & (t.kind == KIND_INTERVAL)
    r = t.remaining[mask]
    agent = np.abs((t.lo[mask] + t.hi[mask]) / 2.0 - r)
    lin = np.abs(linear_extrapolation(t)[mask] - r)
    return LinearBaseline(
        n=int(mask.sum()),
        mae_agent=_mean(agent),
        mae_linear=_mean(lin),
        mean_reduction=_mean(lin - agent),
        win_rate=_mean((agent < lin).astype(np.float64)),
    )


# --------------------------------------------------------------------------- RL reward


def rewards(probes: Probes) -> FloatArray:
    """BAGEN's RL reward per probe (bagen.md §2.9).

    A probe answered in text is scored from that text with BAGEN's RL parser (§1c,
    :func:`reward_from_text`): a capitalised tag, a reversed interval, a prose range or
    three numbers earn nothing there, whatever the scoring parser read.  A probe answered
    with an estimate object: feasible, 1.8 * max(0, 1 - (H - L)/r) when the interval covers
    r (r = 0: only [0, 0], reward 1.8), else 0; infeasible, 0.2 for ``impossible``, else 0;
    invalid answers score 0.
    """
    t = _table(probes)
    _, tight = _coverage_and_tightness(t.lo, t.hi, t.remaining, t.kind == KIND_INTERVAL)
    feasible_part = REWARD_COVERED * tight
    structured = np.where(
        t.feasible,
        feasible_part,
        np.where(t.kind == KIND_IMPOSSIBLE, REWARD_IMPOSSIBLE, 0.0),
    )
    out: FloatArray = np.where(np.isnan(t.rl_reward), structured, t.rl_reward)
    return out


def reward(probes: Probes) -> float | None:
    """Mean RL reward over all probes."""
    return _mean(rewards(probes))


def reward_from_text(text: str, remaining: float, feasible: bool) -> float:
    """BAGEN's RL reward of one raw reply (§2.9), read with the RL parser (§1c,
    :func:`~pytest_budget.awareness._replay.answers.parse_rl`).

    Invalid -> 0.  Truly impossible: 0.2 for ``impossible``, else 0.  Truly possible:
    ``impossible``, a scalar or a reversed interval -> 0; r = 0 -> 1.8 only for [0, 0];
    lo <= r <= hi -> 1.8 * max(0, 1 - (hi - lo)/r); not covered -> 0.
    """
    return rl_reward_of_text(text, remaining, feasible)
