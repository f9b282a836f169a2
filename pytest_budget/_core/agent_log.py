"""The errors of agents called while a test runs, for its failure report.

Kept apart from :mod:`pytest_budget._core.roles` (which imports anyio) so that the plugin can
collect per test without importing anything heavy.  A process-wide list, not a context
variable: agents run in worker threads and in event loops whose context may have been
copied before the test started.

Cells started ahead of their tests (:mod:`pytest_budget.fixtures.cells`) run while another
test is collecting: their work gets its own list in a context variable (:data:`CELL_ERRORS`,
set in the context the work is started with), and the cell's test takes that list over when
it takes the cell's result.  So an agent's traceback goes to the test of the cell whose call
raised it, never to whichever test happens to be running.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

__all__ = [
    "CELL_ERRORS",
    "agent_timeout",
    "collect_agent_errors",
    "log_agent_error",
    "set_agent_timeout",
]

_error_log: list[Any] | None = None
#: The error list of the cell whose work started ahead is running (None: the running test's).
CELL_ERRORS: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "pytest_budget_cell_errors", default=None
)
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
    """Collect every :class:`~pytest_budget._core.roles.AgentError` an agent raised inside the
    block (not :class:`~pytest_budget._core.roles.InvalidOutput`); nested blocks each see their
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
    """Add ``error`` to its cell's list (work started ahead), else to the innermost
    collecting block's list, if one is open."""
    cell = CELL_ERRORS.get()
    if cell is not None:
        cell.append(error)
        return
    log = _error_log
    if log is not None:
        log.append(error)
