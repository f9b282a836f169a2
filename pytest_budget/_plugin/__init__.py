"""The pytest adapter's plumbing: flags, state kept on pytest objects, the reporter, hook
specs, snapshots.

The only layer of the package that imports pytest (with :mod:`pytest_budget.plugin` and
the ``fixtures``/``suites`` packages). Kept empty: an unrelated pytest run imports it.
"""
