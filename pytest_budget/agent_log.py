"""The errors of agents called while a test runs, for its failure report.

Kept apart from :mod:`pytest_budget.roles` (which imports anyio) so that the plugin can
collect per test without importing anything heavy.  A process-wide list, not a context
variable: agents run in worker threads and in event loops whose context may have been
copied before the test started.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["agent_timeout", "collect_agent_errors", "log_agent_error", "set_agent_timeout"]

_error_log: list[Any] | None = None
# Seconds one agent call may take (--budget-agent-timeout), per process; 0: no limit.  Kept
# here (no heavy imports) so the plugin sets it without importing anyio.
_agent_timeout = 900.0


def set_agent_timeout(seconds: float) -> None:
    """The deadline of every agent call of this process (the plugin sets it at start-up)."""
    global _agent_timeout
    _agent_timeout = float(seconds)


def agent_timeout() -> float:
    """The deadline of one agent call, in seconds (0: no limit)."""
    return _agent_timeout


@contextlib.contextmanager
def collect_agent_errors() -> Iterator[list[Any]]:
    """Collect every :class:`~pytest_budget.roles.AgentError` an agent raised inside the
    block (not :class:`~pytest_budget.roles.InvalidOutput`); nested blocks each see their
    own."""
    global _error_log
    previous = _error_log
    log: list[Any] = []
    _error_log = log
    try:
        yield log
    finally:
        _error_log = previous


def log_agent_error(error: Any) -> None:
    """Add ``error`` to the innermost collecting block's list, if one is open."""
    log = _error_log
    if log is not None:
        log.append(error)
