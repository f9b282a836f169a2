"""Awareness scores: interval metrics per probe and per rollout. Private: import from
:mod:`pytest_budget.awareness`.
"""
