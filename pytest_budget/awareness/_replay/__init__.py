"""Replay of recorded rollouts: probes cut from them, the dialogue shown to the estimator,
the floors and the fair split. Private: import from :mod:`pytest_budget.awareness`.
"""
