"""Bootstrap of a planning cell's scores, with the query (episode) as the unit.

Every aggregate of :func:`~pytest_budget.planning._metrics.score_episodes` is a sum or a
mean over episodes, so scoring each episode once and weighting it by how often a resample
drew it gives the scores of every resample at once: ``counts @ per_episode_values``.
This equals calling ``score_episodes`` on the resampled episode list (the test suite
checks it against exactly that).  Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pytest_budget._stats.bootstrap import (
    CIMeta,
    ResampleMatrix,
    bootstrap_seed,
    resample_draws,
)
from pytest_budget._stats.repeats import CellSummary, Consistency, summarize_cell
from pytest_budget.planning._code_metrics import POOL_FIELDS, add_eval, evaluate_episode
from pytest_budget.planning._episode_records import EpisodeRecord
from pytest_budget.planning._evaluate import PlanningOutcome
from pytest_budget.planning._metrics import COUNT_FIELDS, EXCLUSIONS, score_episode

__all__ = [
    "SUCCESS",
    "UNIT",
    "cell_summary",
    "exact_matches",
    "outcome_columns",
    "resampled_scores",
]

#: The resampling unit named in a planning cell's ``ci_meta``.
UNIT = "query"
#: What one trial's success means in the planning suite's pass^k consistency.
SUCCESS = "the episode's tool sequence exactly matches an optimal one (EM = 1)"


def _columns(episodes: Sequence[EpisodeRecord]) -> dict[str, npt.NDArray[np.float64]]:
    """Per-episode values whose weighted sums give every aggregate."""
    cols: dict[str, list[float]] = {}

    def put(name: str, value: float) -> None:
        cols.setdefault(name, []).append(float(value))

    for episode in episodes:
        score = score_episode(episode)
        counted = score.counted
        sums = dict.fromkeys(POOL_FIELDS, 0.0)
        add_eval(sums, evaluate_episode(episode))
        for name, value in sums.items():
            put(f"code_{name}", value)
        put("one", 1.0)
        put("applied", episode.blocks_applied)
        put("dropped", episode.blocks_dropped)
        for reason in EXCLUSIONS:
            put(reason, score.exclusion == reason)
        put("counted", counted)
        for name in COUNT_FIELDS:
            put(name, getattr(score, name) if counted else 0)
        put("answered", counted and score.answer_correct)
        has_hit = counted and score.intent_hit is not None
        put("hit_n", has_hit)
        put("hit", has_hit and bool(score.intent_hit))
        has_path = counted and score.edit_distance is not None
        put("path_n", has_path)
        put("ed", (score.edit_distance or 0) if has_path else 0)
        put("ned", (score.normalized_edit_distance or 0.0) if has_path else 0.0)
        put("em", has_path and bool(score.exact_match))
        has_cost = counted and score.cost_gap is not None and score.cost_gap_clean is not None
        put("cost_n", has_cost)
        put("gap", (score.cost_gap or 0.0) if has_cost else 0.0)
        put("gap_clean", (score.cost_gap_clean or 0.0) if has_cost else 0.0)
        abs_gap = abs_clean = 0.0
        if has_cost:
            assert score.agent_cost is not None and score.agent_cost_clean is not None
            assert score.ground_truth_cost is not None
            abs_gap = round(score.agent_cost - score.ground_truth_cost, 2)
            abs_clean = round(score.agent_cost_clean - score.ground_truth_cost, 2)
        put("abs_gap", abs_gap)
        put("abs_gap_clean", abs_clean)
    return {name: np.asarray(values, dtype=np.float64) for name, values in cols.items()}


def outcome_columns(outcome: PlanningOutcome) -> dict[str, npt.NDArray[np.float64]]:
    """:func:`_columns` of the outcome's episodes, kept on the outcome (while its episode
    list is the same list of the same length) for the intervals and the per-query parts."""
    episodes = outcome.episodes
    kept = outcome.columns
    if kept is not None and kept[0] is episodes and kept[1] == len(episodes):
        columns: dict[str, npt.NDArray[np.float64]] = kept[2]
        return columns
    columns = _columns(episodes)
    outcome.columns = (episodes, len(episodes), columns)
    return columns


def _ratio(num: npt.NDArray[np.float64], den: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: npt.NDArray[np.float64] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out


def resampled_scores(
    episodes: Sequence[EpisodeRecord],
    counts: npt.NDArray[np.int64],
    reading: str = "code",
    *,
    columns: dict[str, npt.NDArray[np.float64]] | None = None,
) -> ResampleMatrix:
    """Every key of ``score_episodes(..., reading=reading)`` for each row of ``counts``
    (resamples x episodes).  ``columns``: ``_columns(episodes)`` when already built.

    Undefined aggregates (no eligible episode in the resample) are ``NaN``.
    """
    if counts.shape[1] != len(episodes):
        raise ValueError(f"counts has {counts.shape[1]} columns for {len(episodes)} episodes")
    cols = _columns(episodes) if columns is None else columns
    weights = counts.astype(np.float64)
    s = {name: weights @ values for name, values in cols.items()}
    out: ResampleMatrix = {
        "emr": _ratio(s["em"], s["path_n"]),
        "aed": _ratio(s["ed"], s["path_n"]),
        "aned": _ratio(s["ned"], s["path_n"]),
        "cost_gap": _ratio(s["gap"], s["cost_n"]),
        "cost_gap_clean": _ratio(s["gap_clean"], s["cost_n"]),
        "cost_gap_abs": _ratio(s["abs_gap"], s["cost_n"]),
        "cost_gap_abs_clean": _ratio(s["abs_gap_clean"], s["cost_n"]),
        "uihr": _ratio(s["hit"], s["hit_n"]),
        "uihr_all": _ratio(s["answered"], s["counted"]),
        "itur": _ratio(s["invalid_calls"], s["total_calls"]),
        "n_episodes": s["one"],
        "n_counted": s["counted"],
        "n_path": s["path_n"],
        "n_cost": s["cost_n"],
        "n_uihr": s["hit_n"],
        "excluded": sum((s[reason] for reason in EXCLUSIONS), np.zeros(len(weights))),
    }
    for reason in EXCLUSIONS:
        out[reason] = s[reason]
    out["blocks_applied"] = s["applied"]
    out["blocks_dropped"] = s["dropped"]
    for name in COUNT_FIELDS:
        out[name] = s[name]
    if reading == "code":
        c = {name: s[f"code_{name}"] for name in POOL_FIELDS}
        out.update(
            emr=_ratio(c["em_p"], c["n_p"]),
            aed=_ratio(c["ed_p"], c["n_p"]),
            aned=_ratio(c["ned_p"], c["n_p"]),
            cost_gap=_ratio(c["cost_diff_c"], c["n_c"]),
            uihr=_ratio(c["correct_a"], c["n_a"]),
            itur=_ratio(c["invalid_steps_m"], c["steps_m"]),
            n_path=c["n_p"],
            n_cost=c["n_c"],
            n_uihr=c["n_a"],
            n_m=c["n_m"],
        )
    return out


def exact_matches(episodes: Sequence[EpisodeRecord]) -> list[bool]:
    """Per episode: its tool sequence exactly matches an optimum (an excluded episode does
    not); the success of one trial in the planning suite's pass^k consistency."""
    return [bool(score_episode(e).exact_match) for e in episodes]


def cell_summary(
    outcomes: Sequence[PlanningOutcome],
    *,
    seed: int,
    cell_id: str,
    level: float,
    resamples: int,
    seeds: Sequence[int] = (),
    reading: str = "code",
) -> CellSummary:
    """Scores, intervals and (K > 1) repeat spread of a planning cell run K times.

    Every outcome must hold one episode per query, in query order.  Resamples are seeded
    from the run's seed and the cell id (shared by every agent of the cell).
    """
    per_run = [outcome.episodes for outcome in outcomes]
    n = len(per_run[0])
    matrices: list[ResampleMatrix] | None = None
    meta: CIMeta | None = None
    if resamples > 0 and n > 0:
        _, counts = resample_draws(n, resamples, bootstrap_seed(seed, "planning", cell_id))
        matrices = [
            resampled_scores(o.episodes, counts, reading, columns=outcome_columns(o))
            for o in outcomes
        ]
        meta = CIMeta(level, resamples, UNIT, n, repeats=len(outcomes))
    consistency = None
    if len(outcomes) > 1:
        matched = [exact_matches(episodes) for episodes in per_run]
        consistency = Consistency(UNIT, SUCCESS, [list(row) for row in zip(*matched, strict=True)])
    return summarize_cell(
        [outcome.scores for outcome in outcomes],
        matrices=matrices,
        meta=meta,
        consistency=consistency,
        seeds=seeds,
        outcomes=[outcome.outcome for outcome in outcomes],
        repeat_draws=bootstrap_seed(seed, "planning", cell_id, "repeats"),
    )
