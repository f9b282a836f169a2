"""An awareness cell's samples: one record per asked probe (see :mod:`pytest_budget._core.samples`).

A probe record holds what the estimator answered (its raw reply, the parsed answer, the
reason when it is ``invalid``, or the error when it raised), the truth (R_k per budget
dimension, feasible, whether the rollout succeeded) and its scores: ``score`` = BAGEN's
S_k (mean over dimensions; ``null`` for a probe of a failed rollout, which S_k leaves
out), ``reward`` = BAGEN's RL reward.  The replayed prefix is not repeated per probe: the
cell's :func:`rollout_prefixes` holds each probed rollout's turns once, and probe k shows
its first k.  Plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_budget._core.samples import Scrubber, clip
from pytest_budget.awareness._evaluate import ProbeResult, _Tables, _tables
from pytest_budget.awareness._replay.answers import Impossible, Interval, IntervalMap, Invalid
from pytest_budget.awareness._replay.rollouts import Rollout
from pytest_budget.awareness._scoring.metrics import interval_scores, rewards

__all__ = ["TURN_TEXT_LIMIT", "probe_samples", "rollout_prefixes"]

#: Longest observation or action kept per replayed turn.
TURN_TEXT_LIMIT = 1500


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(float(value), 6)


def _answer(estimate: object) -> tuple[str, dict[str, list[float | int]] | None]:
    """(text shown, intervals per dimension) of a parsed answer."""
    if isinstance(estimate, Impossible):
        return "impossible", None
    if isinstance(estimate, Invalid):
        return "invalid", None
    if isinstance(estimate, Interval):
        lo, hi = _number(estimate.lo), _number(estimate.hi)
        return f"[{lo}, {hi}]", {"": [lo, hi]}
    if isinstance(estimate, IntervalMap):
        given = {d: [_number(v.lo), _number(v.hi)] for d, v in estimate.as_dict().items()}
        text = ", ".join(f"{d}:[{lo}, {hi}]" for d, (lo, hi) in given.items())
        return text, given
    return "none", None


def _tags(result: ProbeResult, covered: bool | None) -> list[str]:
    if result.error is not None:
        return ["error"]
    estimate, feasible = result.estimate, result.truth.feasible
    if isinstance(estimate, Invalid):
        return ["invalid"]
    if isinstance(estimate, Impossible):
        return ["false abort"] if feasible else ["correct abort"]
    if not feasible:
        return ["missed failure"]
    return ["hit"] if covered else ["miss"]


def probe_samples(
    results: Sequence[ProbeResult],
    dimensions: Sequence[str],
    scrub: Scrubber,
    tables: _Tables | None = None,
) -> list[dict[str, Any]]:
    """One record per result, in the order asked (``tables``: the scoring's own tables of
    these results, reused rather than built again)."""
    answered = [r for r in results if r.estimate is not None]
    s_k: list[float] = [0.0] * len(answered)
    reward: list[float] = [0.0] * len(answered)
    if answered:
        if tables is None or len(tables[0]) != len(answered):
            tables = _tables(answered, dimensions)
        _, by_dim = tables
        per_dim_s = [interval_scores(by_dim[d]) for d in dimensions]
        per_dim_r = [rewards(by_dim[d]) for d in dimensions]
        s_k = np.mean(np.vstack(per_dim_s), axis=0).tolist()
        reward = np.mean(np.vstack(per_dim_r), axis=0).tolist()
    out = []
    index = 0
    for result in results:
        probe, truth = result.probe, result.truth
        remaining = {d: _number(truth.remaining[d]) for d in dimensions}
        record: dict[str, Any] = {
            "id": f"{probe.rollout_id}#{probe.k}",
            "rollout": probe.rollout_id,
            "k": probe.k,
            "T": truth.T,
            "used": {d: _number(probe.used[d]) for d in dimensions},
            "budget": {d: _number(probe.budget[d]) for d in dimensions},
            "remaining": remaining,
            "success": truth.success,
            "feasible": truth.feasible,
            "raw": None if result.raw is None else scrub(result.raw),
        }
        if result.estimate is None:
            record.update(
                parsed="error", error=scrub(result.error or ""), score=None, reward=None,
                tags=["error"],
            )  # fmt: skip
            out.append(record)
            continue
        text, intervals = _answer(result.estimate)
        covered = None
        if intervals is not None:
            by = intervals if len(dimensions) > 1 else {dimensions[0]: intervals[""]}
            covered = all(d in by and by[d][0] <= remaining[d] <= by[d][1] for d in dimensions)
        record["parsed"] = text
        if isinstance(result.estimate, Invalid):
            record["reason"] = scrub(str(result.estimate.reason))
        record["score"] = round(s_k[index], 6) if truth.success else None
        record["reward"] = round(reward[index], 6)
        record["tags"] = _tags(result, covered)
        index += 1
        out.append(record)
    return out


def rollout_prefixes(
    rollouts: Sequence[Rollout], results: Sequence[ProbeResult], scrub: Scrubber
) -> dict[str, dict[str, Any]]:
    """Per probed rollout: its outcome, caps and the turns any probe replayed (turn 1 up
    to the deepest probe's k), each turn's usage, observation and action (clipped)."""
    deepest: dict[str, int] = {}
    for result in results:
        rid = result.probe.rollout_id
        deepest[rid] = max(deepest.get(rid, 0), result.probe.k)
    out: dict[str, dict[str, Any]] = {}
    for rollout in rollouts:
        if rollout.id not in deepest or rollout.id in out:
            continue
        turns = []
        for turn in rollout.turns[: deepest[rollout.id]]:
            entry: dict[str, Any] = {"usage": {d: _number(v) for d, v in turn.usage.items()}}
            if turn.observation:
                entry["observation"] = clip(scrub(turn.observation), TURN_TEXT_LIMIT)
            if turn.action:
                entry["action"] = clip(scrub(turn.action), TURN_TEXT_LIMIT)
            turns.append(entry)
        out[rollout.id] = {
            "success": rollout.success,
            "T": rollout.T,
            "budget": {d: _number(v) for d, v in rollout.budget.items()},
            "turns": turns,
        }
    return out


def sample_fields(
    rollouts: Sequence[Rollout],
    results: Sequence[ProbeResult],
    dimensions: Sequence[str],
    scrub: Scrubber,
    tables: _Tables | None = None,
) -> Mapping[str, Any]:
    """The cell record's ``samples`` and ``sample_rollouts``."""
    return {
        "samples": probe_samples(results, dimensions, scrub, tables),
        "sample_rollouts": rollout_prefixes(rollouts, results, scrub),
    }
