"""Real logs read as rollouts: BAGEN dialogues, inspect_ai ``.eval`` logs, SWE-bench-style
trajectories. Private: import from :mod:`pytest_budget.awareness`.
"""
