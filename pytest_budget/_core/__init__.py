"""Plain core: budgets, tokens, text scans, records, the suite registry and agent calls.

No pytest, no numpy at import; every other layer may import it. Private: import the
public names from :mod:`pytest_budget` and :mod:`pytest_budget.extend`.
"""
