"""Reference online agents: the built-in actors paired with a reference estimator.

The built-in actor (:class:`~pytest_budget.awareness._environments.ReferenceActor`: the
Sokoban solver policy with slips, the Search multi-hop retriever, the Warehouse
reorder-point policy) acts; a reference estimator that needs no hindsight
(``linear-visible``, ``always-feasible``, ``always-impossible``, ``random``) estimates from
the run so far (``observation.probe``); the agent stops as soon as its estimate says
``impossible`` (single-call: in the same reply; two-call: on the turn after the separate
estimate call said so).  The hindsight baselines (``oracle``, ``linear-knows-T``) cannot
run online: the future they read has not happened yet.

Deterministic per seed and stateless (decisions depend on the episode id and turn only),
so one instance serves concurrent episodes.  Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_budget.awareness._replay.answers import Impossible
from pytest_budget.awareness.online._protocol import OnlineReply

__all__ = ["ONLINE_ESTIMATORS", "ReferenceOnlineAgent", "reference_online_agent"]

#: Reference estimators that work online (no hindsight), by agent name.
ONLINE_ESTIMATORS: tuple[str, ...] = (
    "linear-visible",
    "always-feasible",
    "always-impossible",
    "random",
)


class ReferenceOnlineAgent:
    """The reference actor with ``estimator`` (see the module docstring)."""

    run_inline = True  # microseconds per call: no worker thread

    def __init__(self, estimator: Any, *, seed: int = 42, actor: Any = None) -> None:
        from pytest_budget.awareness._environments import ReferenceActor

        self.estimator = estimator
        self.actor = actor if actor is not None else ReferenceActor(seed)
        self.name = str(getattr(estimator, "name", type(estimator).__name__))

    def estimate(self, probe: Any) -> Any:
        """The two-call protocol's estimate (and the replay pass's): the estimator's."""
        return self.estimator.estimate(probe)

    def act(self, observation: Any, used: Mapping[str, float], cap: Any) -> Any:
        action = self.actor.act(observation)
        if cap is None:  # the replay pass: act only
            return action
        estimate = None
        if getattr(observation, "protocol", "single") == "single":
            probe = observation.probe
            # Nothing done yet, nothing to extrapolate from: no estimate on the first turn.
            if probe is not None and probe.k >= 1:
                estimate = self.estimator.estimate(probe)
            said_impossible = isinstance(estimate, str) and "impossible" in estimate.lower()
        else:
            said_impossible = isinstance(observation.last_estimate, Impossible)
        stop = bool(observation.may_stop and said_impossible)
        return OnlineReply(action=None if stop else action, estimate=estimate, stop=stop)


def reference_online_agent(name: str, seed: int) -> ReferenceOnlineAgent:
    """The reference online agent called ``name`` (one of :data:`ONLINE_ESTIMATORS`)."""
    import pytest_budget.awareness._estimators as estimators

    classes = {
        "linear-visible": estimators.LinearVisibleEstimator,
        "always-feasible": estimators.AlwaysFeasibleEstimator,
        "always-impossible": estimators.AlwaysImpossibleEstimator,
    }
    if name == "random":
        return ReferenceOnlineAgent(estimators.RandomEstimator(seed=seed), seed=seed)
    return ReferenceOnlineAgent(classes[name](), seed=seed)
