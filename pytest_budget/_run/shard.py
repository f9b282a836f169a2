"""``--budget-shard=i/N``: which shard of a run each test belongs to.

A test's shard is a pure function of its own identity string (for the bundled suites
``pytest_budget.suites/<module>::<test>[<parametrisation id>]``, for your own tests the
pytest node id), so:

* every process computes the same selection without talking to the others (xdist
  workers, CI matrix legs, Kubernetes pods);
* adding or removing cells never moves another cell to a different shard;
* going from N to N + 1 shards only moves cells into the new shard (rendezvous hashing:
  each cell goes to the shard whose ``sha256(shard, identity)`` is highest), so caches
  kept per shard stay mostly valid when the shard count grows.

Shard sizes are balanced in expectation, not exactly: each of C cells lands in a given
shard with probability 1/N independently, so a shard holds C/N cells give or take about
``sqrt(C/N)``.  Plain Python (no pytest); the plugin maps items to identities.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "SUITES_PREFIX",
    "Shard",
    "ShardSpecError",
    "parse_shard",
    "partition",
    "shard_of",
    "shard_sizes",
    "suite_identity",
]

#: Identity prefix of the bundled suite modules, wherever the package is installed.
SUITES_PREFIX = "pytest_budget.suites"

_EXAMPLE = "e.g. --budget-shard=2/3 for the second of three shards"


class ShardSpecError(ValueError):
    """A malformed ``--budget-shard`` value; the message is one line."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ShardSpecError(f"shard {self.index}/{self.count}: need 1 <= i <= N")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def as_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    def holds(self, identity: str) -> bool:
        return shard_of(identity, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """``"2/3"`` -> ``Shard(2, 3)``; anything else is a one-line :class:`ShardSpecError`."""
    raw = str(text).strip()
    head, sep, tail = raw.partition("/")
    if not sep or not head.strip().isdecimal() or not tail.strip().isdecimal():
        raise ShardSpecError(
            f"--budget-shard: {raw!r} is not I/N with whole numbers I and N ({_EXAMPLE})"
        )
    index, count = int(head), int(tail)
    if count < 1:
        raise ShardSpecError(f"--budget-shard: {raw!r}: the shard count N must be at least 1")
    if index < 1:
        raise ShardSpecError(
            f"--budget-shard: {raw!r}: shards are numbered from 1, so I is 1..{count} "
            f"(a 0-based index such as Kubernetes' JOB_COMPLETION_INDEX needs + 1)"
        )
    if index > count:
        raise ShardSpecError(
            f"--budget-shard: {raw!r}: shard {index} is past the shard count {count}; "
            f"I is 1..{count}"
        )
    return Shard(index, count)


def _weight(identity: str, index: int) -> int:
    digest = hashlib.sha256(f"{index}\x00{identity}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def shard_of(identity: str, count: int) -> int:
    """The 1-based shard of ``identity`` among ``count`` shards (rendezvous hashing).

    Ties between two 64-bit weights go to the lower index, so the answer is total.
    """
    if count < 1:
        raise ValueError(f"shard count must be at least 1, got {count}")
    best, best_weight = 1, -1
    for index in range(1, count + 1):
        weight = _weight(identity, index)
        if weight > best_weight:
            best, best_weight = index, weight
    return best


def partition(identities: Iterable[str], shard: Shard) -> tuple[list[int], list[int]]:
    """Positions of the identities this shard keeps, and of those it leaves to others."""
    kept: list[int] = []
    dropped: list[int] = []
    for position, identity in enumerate(identities):
        (kept if shard.holds(identity) else dropped).append(position)
    return kept, dropped


def suite_identity(nodeid: str, module_name: str | None) -> str:
    """A test's identity for sharding.

    ``module_name`` is the file name of a bundled suite module (``test_triage.py``) or
    ``None`` for any other test.  A suite test's node id depends on where the package is
    installed relative to the rootdir (``::test_x[...]`` from outside, a
    ``.venv/.../suites/test_x.py::test_x[...]`` path from a project whose virtualenv lives
    inside it), so its identity keeps only the module's file name and what follows it.
    """
    if module_name is None:
        return nodeid
    _, sep, rest = nodeid.partition("::")
    return f"{SUITES_PREFIX}/{module_name}::{rest if sep else nodeid}"


def shard_sizes(identities: Sequence[str], count: int) -> list[int]:
    """How many of ``identities`` each of ``count`` shards holds (index 0 = shard 1)."""
    sizes = [0] * count
    for identity in identities:
        sizes[shard_of(identity, count) - 1] += 1
    return sizes
