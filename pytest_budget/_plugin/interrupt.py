"""Ctrl-C under xdist: a worker of a live run stops at once (issue 21, item 5).

When Ctrl-C reaches the process group, every xdist worker gets SIGINT too.  Left alone, a
worker then renders the KeyboardInterrupt's traceback for a terminal nobody sees, runs every
plugin's end-of-session work (seconds under load) and only then exits, while the controller
waits for it.  A worker of a live run has nothing more to hand over: the results of its
finished tests reached the controller as they finished, every answered model call is already
in the record cache, and its spend counters are written here.  So :class:`WorkerInterrupt`,
registered in workers of live runs only, cancels the cells started ahead, writes the
ledger, closes the event loop (waiting for the call being recorded, if any) and exits the
process with pytest's "interrupted" status; the controller then writes the partial report.
A rerun replays every recorded call and makes only the ones that were in flight.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_budget._run.session import BudgetSession

__all__ = ["WorkerInterrupt"]


class WorkerInterrupt:
    """The worker's Ctrl-C hook (see the module doc)."""

    def __init__(self, session: BudgetSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        scheduler = self.session.cell_scheduler
        if scheduler is not None:
            scheduler.cancel_all()
        loop_module = sys.modules.get("pytest_budget.models._loop")
        if loop_module is not None:
            loop_module.cancel_worker_loop()
            loop_module.close_worker_loop()
        runtime = self.session.model_runtime
        if runtime is not None:
            runtime.flush()  # after the loop: no call adds to the counters any more
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(int(pytest.ExitCode.INTERRUPTED))
