"""The awareness suite as the shared layers see it (see :mod:`pytest_budget._core.registry`).

Two cell kinds: ``awareness`` (BAGEN's rollout-replay: mid-rollout feasibility and
interval estimates) and ``awareness-online`` (the agent acts under a cap while it
estimates; ``--budget-awareness-mode=online|both``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_budget._core.metric_spec import MetricSpec
from pytest_budget._core.registry import (
    CellKind,
    ReplyRule,
    Role,
    Suite,
    SuiteOptions,
    lazy,
    reference_agent,
)
from pytest_budget.awareness._options import (
    DESTS,
    LIST_DESTS,
    AwarenessOptions,
    add_options,
    parse_options,
)

__all__ = ["SUITE"]


def _work_group(params: str, options: Any) -> str | None:
    # Cells of one environment share its rollouts; names may hold "-": longest first.
    for env in sorted(options.of(AwarenessOptions).envs, key=len, reverse=True):
        if params.startswith(f"{env}-"):
            return f"awareness:{env}"
    return None


def _test_files(options: Any) -> tuple[str, ...]:
    own = options.of(AwarenessOptions)
    files = () if own.awareness_mode == "online" else ("test_awareness.py",)
    return (*files, *(("test_awareness_online.py",) if own.awareness_online else ()))


def _online(name: str) -> Callable[[int], object]:
    def make(seed: int) -> object:
        from pytest_budget.awareness.online._reference import reference_online_agent

        return reference_online_agent(name, seed)

    return make


def _llm_roles() -> Mapping[str, type]:
    from pytest_budget.awareness._llm import LLM_ROLES
    from pytest_budget.awareness.online._llm import LLM_ROLES as ONLINE_ROLES

    return {**LLM_ROLES, **ONLINE_ROLES}


def _is_estimate(value: object) -> bool:
    from pytest_budget.awareness._replay.answers import Impossible, Interval, IntervalMap, Invalid

    return isinstance(value, Interval | IntervalMap | Impossible | Invalid)


#: Where its reference agents live (imported on first use).
_ESTIMATORS = "pytest_budget.awareness._estimators:"


SUITE = Suite(
    name="awareness",
    kinds=(
        CellKind(
            name="awareness",
            test_file="test_awareness.py",
            metrics=(
                MetricSpec("macro_f1_all", "higher", 0.05, "feasibility macro-F1 over all probes"),
                MetricSpec("fail_f1", "higher", 0.05, "F1 of the impossible class"),
                MetricSpec("interval_score", "higher", 0.05, "mean S_k over feasible probes"),
                MetricSpec("invalid_rate", "lower", 0.05, "share of unreadable answers"),
            ),
            reference_agents=(
                "linear-knows-T",
                "linear-visible",
                "always-feasible",
                "always-impossible",
                "random",
                "oracle",
            ),
            table_title="awareness: feasibility, interval quality and early stop",
            table=lazy("pytest_budget.awareness._summary:awareness_table"),
            page_title="awareness: mid-rollout budget estimation (BAGEN)",
            columns=lazy("pytest_budget.awareness._page:awareness_columns"),
            footer=lazy("pytest_budget.awareness._summary:rollout_lines"),
            charts=lazy("pytest_budget.awareness._figures:awareness_charts"),
            always_on_page=True,
            sample_script=Path(__file__).with_name("samples.js"),
            record_type="pytest_budget.awareness._cell_records:AwarenessCellRecord",
            work_group=_work_group,
        ),
        CellKind(
            name="awareness-online",
            test_file="test_awareness_online.py",
            metrics=(
                MetricSpec("success_rate", "higher", 0.05, "runs that succeed within the cap"),
                MetricSpec(
                    "macro_f1_all", "higher", 0.05, "feasibility macro-F1 of online estimates"
                ),
                MetricSpec("fail_f1", "higher", 0.05, "F1 of the impossible class, online"),
                MetricSpec(
                    "net_value", "higher", 0.05, "early-stop net value under the cost model"
                ),
            ),
            # The reference actors with an online estimator.
            reference_agents=("linear-visible", "always-feasible", "always-impossible", "random"),
            table_title="awareness online: acting under a cap while estimating",
            table=lazy("pytest_budget.awareness.online._summary:online_table"),
            page_title="awareness, online mode: acting under a cap while estimating",
            charts=lazy("pytest_budget.awareness.online._figures:online_charts"),
            record_type="pytest_budget.awareness._cell_records:OnlineCellRecord",
        ),
    ),
    test_files=_test_files,
    options=SuiteOptions(
        add=add_options,
        parse=parse_options,
        dests=DESTS,
        list_dests=LIST_DESTS,
    ),
    # Pairs each probe's new answer with the stored one (issue 30: a noisy estimator's
    # baseline is one draw too; benchmarks/bench_gate_runs.py).
    default_gate="paired",
    fixture_modules=(
        "pytest_budget.fixtures.awareness",
        "pytest_budget.fixtures.awareness_forecast",
    ),
    # Forecast: one interval with a short reasoning, or one move; an environment episode
    # (and an online one) takes about ten turns.
    roles=(
        Role(
            "estimator",
            method="estimate",
            protocol="pytest_budget.awareness._roles:Estimator",
            reply=ReplyRule(
                "text, an Interval, an IntervalMap or Impossible", accepts=_is_estimate
            ),
            evaluated=True,
            output_tokens=150,
        ),
        Role(
            "actor",
            method="act",
            protocol="pytest_budget.awareness._roles:Actor",
            fallback=lazy("pytest_budget.awareness._environments:ReferenceActor"),
            output_tokens=150,
            turns=10,
        ),
        # act(observation, used, cap): the online mode's actor.
        Role("online_actor", method="act", output_tokens=150, turns=10),
        # Its two-call estimate: text, or a mapping with usage.
        Role("online_estimator", method="estimate"),
    ),
    llm_roles=_llm_roles,
    reference_agents={
        "oracle": {"estimator": reference_agent(_ESTIMATORS + "OracleEstimator")},
        "random": {
            "estimator": reference_agent(_ESTIMATORS + "RandomEstimator", seeded=True),
            "online_actor": _online("random"),
        },
        "linear-knows-T": {"estimator": reference_agent(_ESTIMATORS + "LinearEstimator")},
        "linear-visible": {
            "estimator": reference_agent(_ESTIMATORS + "LinearVisibleEstimator"),
            "online_actor": _online("linear-visible"),
        },
        "always-feasible": {
            "estimator": reference_agent(_ESTIMATORS + "AlwaysFeasibleEstimator"),
            "online_actor": _online("always-feasible"),
        },
        "always-impossible": {
            "estimator": reference_agent(_ESTIMATORS + "AlwaysImpossibleEstimator"),
            "online_actor": _online("always-impossible"),
        },
        # Replays --budget-logged-estimates (never a default agent: not in the kind's list).
        "logged": {
            "estimator": reference_agent("pytest_budget.awareness._replay.logged:LoggedEstimator")
        },
    },
    # bench_gate_runs.py --sizes default --designs wired --only none: 0.811 of the calls.
    sequential_shares={"estimator": 0.78},
)
