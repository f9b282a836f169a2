"""Live-run progress lines (issue 21, item 6): what each finished cell cost, and the run so far.

The controller (or the only process) prints one line as a cell's test finishes::

    budget: model calls 9/~27 (tests 1/3): 0 replayed, 0 retries, 0 failed; tokens 450 in /
    63 out; spent $0.0001 | cell e1-openai:m: 9 calls, 450 in / 63 out tokens, $0.0001

(one line on the terminal).
The run part is :func:`~pytest_budget.models._setup.progress_line` (read from the run's shared
ledger, so under xdist it sums every worker); the cell part comes with the test's report
from the process that ran it (``report.budget_cell_calls``, the cell's
:class:`~pytest_budget.models._runtime.CellCalls`).  On a terminal the lines come at most
every :data:`EVERY_S` seconds; on a non-terminal output (CI logs) exactly one per finished
cell.  Offline runs (no model agent) print none.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["EVERY_S", "cell_part", "due"]

#: Seconds between two progress lines on a terminal.
EVERY_S = 2.0


def due(tty: bool, now: float, last: float) -> bool:
    """Whether a line is printed now: every finished cell off a terminal, else throttled."""
    return not tty or now - last >= EVERY_S


def _short(nodeid: str) -> str:
    """``.../test_triage.py::test_triage[arith-u0-a0.5-A-openai:m]`` -> the bracketed id."""
    name = nodeid.rpartition("::")[2]
    start = name.find("[")
    return name[start + 1 : -1] if start >= 0 and name.endswith("]") else name


def cell_part(nodeid: str, payload: str | None) -> str:
    """`` | cell ID: N calls, X in / Y out tokens, $Z`` (empty without the cell's counts)."""
    if not payload:
        return ""
    try:
        data: dict[str, Any] = json.loads(payload)
    except ValueError:
        return ""
    replayed = int(data.get("replayed", 0))
    extra = f" ({replayed:,} replayed)" if replayed else ""
    failed = int(data.get("failed", 0)) + int(data.get("refused", 0))
    if failed:
        extra += f" ({failed:,} failed)"
    return (
        f" | cell {_short(nodeid)}: {int(data.get('calls', 0)):,} calls{extra}, "
        f"{int(data.get('input_tokens', 0)):,} in / {int(data.get('output_tokens', 0)):,} out "
        f"tokens, ${float(data.get('usd', 0.0)):.4f}"
    )
