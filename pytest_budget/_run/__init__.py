"""One run in plain Python (no pytest): options, the session, agents by name, forecast, shards.

Sits above the suites, which it reaches only through the registry. Private.
"""
