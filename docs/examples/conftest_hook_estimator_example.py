r"""An awareness estimator through the ``pytest_budget_estimator`` hook, returning objects.

Copy this file to ``conftest.py`` (a hook works from any conftest), put
``rollouts_example.jsonl`` next to it and run your estimator next to the linear baseline::

    pytest --budget-suite=awareness --budget-rollouts=rollouts_example.jsonl \
        --budget-agent=user,linear-knows-T --budget-gate=off

A programmatic estimator can skip the text format and return ``Interval``,
``IntervalMap`` (one interval per budget dimension) or ``Impossible`` objects.
"""

from pytest_budget.awareness import Impossible, Interval, IntervalMap

#: How many turns a task usually takes, e.g. the median of your own logs.
TYPICAL_TURNS = 3


class PaceEstimator:
    name = "pace"

    def estimate(self, probe):
        turns_left = max(TYPICAL_TURNS - probe.k, 1)
        intervals = {}
        for dim, cap in probe.budget.items():
            guess = probe.used[dim] / probe.k * turns_left  # usage per turn so far x turns left
            if probe.used[dim] + guess > cap:
                return Impossible()
            intervals[dim] = Interval(0.8 * guess, 1.2 * guess)
        if len(intervals) == 1:
            return intervals.popitem()[1]
        return IntervalMap(tuple(intervals.items()))


def pytest_budget_estimator(config):
    return PaceEstimator()
