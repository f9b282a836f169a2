"""The gate's statistics: tolerance, paired and sequential tests, bootstrap, repeats.

Plain Python over numpy; imports only the core. Private: the gate is used through the
plugin's options and :func:`pytest_budget.compare`.
"""
