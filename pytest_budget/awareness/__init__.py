"""The awareness suite's core (BAGEN): rollouts, probes, estimators, parsing and metrics.

Plain Python and numpy, usable without pytest::

    from pytest_budget.awareness import read_rollouts, run_awareness_cell, LinearEstimator

The environments live in ``sokoban_env``, ``warehouse`` and ``warehouse_policy``;
``environments.generate_env_rollouts`` rolls an actor out in any of them by name.
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.awareness._cell import AwarenessCell
    from pytest_budget.awareness._environments import (
        ENVIRONMENTS,
        ReferenceActor,
        RolloutCache,
        generate_env_rollouts,
    )
    from pytest_budget.awareness._estimators import (
        AlwaysFeasibleEstimator,
        AlwaysImpossibleEstimator,
        LinearEstimator,
        LinearVisibleEstimator,
        OracleEstimator,
        RandomEstimator,
        format_answer,
    )
    from pytest_budget.awareness._evaluate import (
        PARSE_POLICIES,
        AwarenessOutcome,
        ProbeResult,
        parse_answer,
        run_awareness_cell,
        score_results,
    )
    from pytest_budget.awareness._logs.trajectories import detect_format, load_trajectories
    from pytest_budget.awareness._replay.answers import (
        WAREHOUSE_DIMENSIONS,
        Estimate,
        Impossible,
        Interval,
        IntervalMap,
        Invalid,
        ReversedPolicy,
        parse_bagen,
        parse_estimate,
        parse_rl,
        parse_strict,
    )
    from pytest_budget.awareness._replay.probes import Probe, ProbeTruth, make_probes
    from pytest_budget.awareness._replay.rollouts import (
        ROLLOUT_SCHEMA_VERSION,
        ActorObservation,
        ActorReply,
        Rollout,
        RolloutFileError,
        Turn,
        actor_reply,
        read_rollouts,
        write_rollouts,
    )
    from pytest_budget.awareness._scoring.metrics import (
        ClassF1,
        EarlyStop,
        LateRecognition,
        LinearBaseline,
        MissBins,
        MultiProbeRecord,
        ProbeRecord,
        ProbeTable,
        class_f1,
        early_stop,
        fail_f1,
        hit_rate,
        interval_score,
        interval_scores,
        invalid_rate,
        late_recognition,
        linear_baseline,
        linear_extrapolation,
        macro_f1,
        midpoint_relative_error,
        miss_bins,
        per_dimension_scores,
        project_dimension,
        reward,
        reward_from_text,
        rewards,
        score_probes,
    )

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "ENVIRONMENTS",
    "PARSE_POLICIES",
    "ROLLOUT_SCHEMA_VERSION",
    "WAREHOUSE_DIMENSIONS",
    "ActorObservation",
    "ActorReply",
    "AlwaysFeasibleEstimator",
    "AlwaysImpossibleEstimator",
    "AwarenessCell",
    "AwarenessOutcome",
    "ClassF1",
    "EarlyStop",
    "Estimate",
    "Impossible",
    "Interval",
    "IntervalMap",
    "Invalid",
    "LateRecognition",
    "LinearBaseline",
    "LinearEstimator",
    "LinearVisibleEstimator",
    "MissBins",
    "MultiProbeRecord",
    "OracleEstimator",
    "Probe",
    "ProbeRecord",
    "ProbeResult",
    "ProbeTable",
    "ProbeTruth",
    "RandomEstimator",
    "ReferenceActor",
    "ReversedPolicy",
    "Rollout",
    "RolloutCache",
    "RolloutFileError",
    "Turn",
    "actor_reply",
    "class_f1",
    "detect_format",
    "early_stop",
    "fail_f1",
    "format_answer",
    "generate_env_rollouts",
    "hit_rate",
    "interval_score",
    "interval_scores",
    "invalid_rate",
    "late_recognition",
    "linear_baseline",
    "linear_extrapolation",
    "load_trajectories",
    "macro_f1",
    "make_probes",
    "midpoint_relative_error",
    "miss_bins",
    "parse_answer",
    "parse_bagen",
    "parse_estimate",
    "parse_rl",
    "parse_strict",
    "per_dimension_scores",
    "project_dimension",
    "read_rollouts",
    "reward",
    "reward_from_text",
    "rewards",
    "run_awareness_cell",
    "score_probes",
    "score_results",
    "write_rollouts",
]
