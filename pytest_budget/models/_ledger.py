"""The run's shared spend and call ledger: one JSON file, guarded by a file lock.

Every process of a run (the xdist controller and its workers) points at the same file.  A
call first *reserves* its worst-case cost (its whole ``max_tokens`` at the output price plus
an estimate of its prompt), and is refused when spent + reserved + that reservation would
pass ``--budget-max-usd``; when it completes, the reservation is swapped for the real cost
from the provider's usage.  So the cap holds across processes even with many calls in
flight, at the price of stopping a little early.  The same file carries the counters the
controller shows as progress (calls, replays, retries, errors, tokens, spend).

Readers that only display progress read the file without the lock: writes are
temp-file-and-rename, so a reader sees the previous or the next state, never half of one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_budget._core.files import write_atomic

__all__ = ["COUNTERS", "LedgerState", "SpendLedger"]

#: Integer counters kept in the ledger (besides the USD amounts).
COUNTERS: tuple[str, ...] = (
    "calls",  # live calls that returned an answer
    "replayed",  # calls answered from a recording
    "retries",  # waits before a retry
    "rate_limited",  # 429 answers seen
    "errors",  # calls that failed for good (after retries)
    "refused",  # calls not made because the spend cap was reached
    "not_recorded",  # replay-only calls with no recording
    "unreported_usage",  # answers without a usage block (tokens unknown)
    "unpriced",  # live calls for a model with no price (cost unknown)
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cached_read_tokens",
    "cached_write_tokens",
)


@dataclass
class LedgerState:
    """A snapshot of the ledger."""

    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str) -> int:
        return int(self.counts.get(name, 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "spent_usd": round(self.spent_usd, 6),
            **{name: self.count(name) for name in COUNTERS},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LedgerState:
        counts = data.get("counts")
        return cls(
            spent_usd=float(data.get("spent_usd", 0.0)),
            reserved_usd=float(data.get("reserved_usd", 0.0)),
            counts={str(k): int(v) for k, v in (counts or {}).items()},
        )


class SpendLedger:
    """File-backed ledger shared by all processes of one run (see the module doc)."""

    def __init__(self, path: str | os.PathLike[str], max_usd: float | None = None) -> None:
        self.path = Path(path)
        self.max_usd = max_usd
        self._lock = FileLock(str(self.path) + ".lock")

    # -- reading ------------------------------------------------------------------------------
    def read(self) -> LedgerState:
        """The current state (no lock: see the module doc); an absent file is all zeros."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return LedgerState()
        try:
            return LedgerState.from_json(json.loads(text))
        except (ValueError, TypeError, AttributeError):
            return LedgerState()

    def exhausted(self) -> bool:
        """Whether the run's spending is closed: the cap is reached, or a call was already
        refused (from then on every call is refused, so a run never limps on with the
        smaller calls that still fit)."""
        if self.max_usd is None:
            return False
        state = self.read()
        return state.spent_usd >= self.max_usd or state.count("refused") > 0

    # -- writing ------------------------------------------------------------------------------
    def _write(self, state: LedgerState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "spent_usd": state.spent_usd,
            "reserved_usd": max(0.0, state.reserved_usd),
            "max_usd": self.max_usd,
            "counts": state.counts,
        }
        write_atomic(self.path, json.dumps(data))

    def reserve(self, amount_usd: float) -> bool:
        """Hold ``amount_usd`` for a call about to start; False (and counted) when the cap
        would be passed.  Without a cap every reservation succeeds and nothing is written."""
        if self.max_usd is None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            state = self.read()
            closed = state.count("refused") > 0
            if closed or state.spent_usd + state.reserved_usd + amount_usd > self.max_usd + 1e-12:
                state.counts["refused"] = state.count("refused") + 1
                self._write(state)
                return False
            state.reserved_usd += amount_usd
            self._write(state)
            return True

    def record(
        self,
        *,
        cost_usd: float = 0.0,
        release_usd: float = 0.0,
        counts: Mapping[str, int] | None = None,
    ) -> LedgerState:
        """Add a finished call's cost and counters, releasing its reservation."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            state = self.read()
            state.spent_usd += cost_usd
            state.reserved_usd = max(0.0, state.reserved_usd - release_usd)
            for name, amount in (counts or {}).items():
                if amount:
                    state.counts[name] = state.count(name) + int(amount)
            self._write(state)
            return state
