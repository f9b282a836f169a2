"""An online actor that estimates as it acts and stops when it says ``impossible``.

Used by the online awareness tutorial (docs/tutorial/online-awareness-run.md): copy it to
``conftest.py`` and run ``pytest --budget-suite=awareness --budget-awareness-mode=online``.
The moves come from the built-in reference actor (stand-in for your agent's policy); the
budget sense is ours: tokens per turn so far, times as many turns again.
"""

from pytest_budget.awareness import ReferenceActor
from pytest_budget.awareness.online import OnlineReply


class StopWhenImpossible:
    name = "stop-when-impossible"

    def __init__(self):
        self.policy = ReferenceActor(seed=42)

    def act(self, observation, used, cap):
        action = self.policy.act(observation)
        if cap is None:  # the replay pass: act, nothing else
            return action
        done = observation.probe.k  # turns completed so far
        if done == 0:
            return action  # nothing to extrapolate from yet: no estimate
        intervals = {}
        for dim, limit in cap.items():
            guess = used[dim] / done * done  # as much again as so far
            if used[dim] + guess > limit:
                return OnlineReply(estimate="impossible", stop=True)
            intervals[dim] = (round(0.75 * guess), round(1.25 * guess) + 1)
        if len(intervals) == 1:
            (lo, hi) = next(iter(intervals.values()))
            estimate = f"[{lo}, {hi}]"
        else:
            estimate = ", ".join(f"{d}:[{lo}, {hi}]" for d, (lo, hi) in intervals.items())
        return OnlineReply(action=action, estimate=estimate)


def pytest_budget_online_actor(config):
    return StopWhenImpossible()
