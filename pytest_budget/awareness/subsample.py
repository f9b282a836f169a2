"""Cap the probes of long-rollout families (BAGEN App. B, SWE-bench subsampling).

Coding-agent rollouts are long, so replaying every prefix would let a few long trajectories
dominate the evaluation with many highly correlated probes.  BAGEN caps each SWE-bench
rollout family at 512 prefixes, bucketing *rollouts* (not prefixes) by length and sampling
round-robin across buckets and rollouts with seed 42.  Our exact reading:

1. A family is the rollouts sharing an ``env`` label; each family is capped on its own,
   with a fresh ``numpy.random.default_rng(seed)`` (adding a family never changes another
   family's selection).  Rollouts with fewer than two turns have no probe and take no
   part.  Rollout ids must be unique within a family.
2. The family's rollouts are sorted by number of turns (one turn = one assistant call),
   ties broken by id, and cut into ``min(buckets, n)`` contiguous buckets of near-equal
   size: sizes differ by at most one, the larger ones first (``numpy.array_split``).
3. Random draws, in this order: one permutation of the bucket indices (the order buckets
   are visited in every round); then, bucket by bucket in index order, one permutation of
   that bucket's rollouts (its rotation); then, rollout by rollout in sorted order, one
   permutation of its probe turns ``k = 1..T-1`` (the order its prefixes are taken in).
4. Round-robin: visit the buckets in their drawn order, again and again; each visit takes
   one prefix from the bucket's next rollout in its rotation that still has prefixes left
   (then moves the rotation past it); a bucket with nothing left is passed over.  Stop at
   ``max_probes`` prefixes or when every prefix is taken (a family with at most
   ``max_probes`` prefixes keeps all of them).  So the buckets, and the rollouts within a
   bucket, get equal shares as far as their prefixes allow, whatever their lengths.

The chosen ``(Probe, ProbeTruth)`` pairs come back sorted by ``(env, rollout id, k)``: the
result depends on the set of rollouts, never on their input order.  Plain Python and numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import numpy as np

from pytest_budget.awareness.probes import Probe, ProbeTruth, make_probes
from pytest_budget.awareness.rollouts import Rollout

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_MAX_PROBES",
    "DEFAULT_SEED",
    "contiguous_buckets",
    "length_buckets",
    "subsample_probes",
]

_T = TypeVar("_T")

DEFAULT_MAX_PROBES = 512
DEFAULT_BUCKETS = 8
DEFAULT_SEED = 42


def _positive(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def length_buckets(
    rollouts: Iterable[Rollout], buckets: int = DEFAULT_BUCKETS
) -> list[list[Rollout]]:
    """Rollouts sorted by ``(T, id)`` in ``min(buckets, n)`` contiguous near-equal buckets."""
    _positive(buckets, "buckets")
    return contiguous_buckets(
        sorted(rollouts, key=lambda rollout: (rollout.T, rollout.id)), buckets
    )


def contiguous_buckets(ordered: Sequence[_T], buckets: int) -> list[list[_T]]:
    """``ordered`` cut into ``min(buckets, n)`` consecutive buckets of ``n // count``, the
    first ``n % count`` one larger (as BAGEN cuts its length buckets)."""
    if not ordered:
        return []
    count = min(buckets, len(ordered))
    size, extra = divmod(len(ordered), count)
    out: list[list[_T]] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(list(ordered[start:end]))
        start = end
    return out


def _family_selection(
    rollouts: Sequence[Rollout], max_probes: int, buckets: int, seed: int
) -> list[tuple[Rollout, int]]:
    groups = length_buckets(rollouts, buckets)
    rng = np.random.default_rng(seed)
    visit = [int(b) for b in rng.permutation(len(groups))]
    rotations = [[group[int(j)] for j in rng.permutation(len(group))] for group in groups]
    turn_orders = {
        rollout.id: [int(k) + 1 for k in rng.permutation(rollout.T - 1)]
        for group in groups
        for rollout in group
    }
    target = min(max_probes, sum(rollout.T - 1 for rollout in rollouts))
    taken = dict.fromkeys(turn_orders, 0)
    cursor = [0] * len(groups)
    chosen: list[tuple[Rollout, int]] = []
    while len(chosen) < target:
        for b in visit:
            if len(chosen) >= target:
                break
            rotation = rotations[b]
            for step in range(len(rotation)):
                rollout = rotation[(cursor[b] + step) % len(rotation)]
                used = taken[rollout.id]
                if used < rollout.T - 1:
                    chosen.append((rollout, turn_orders[rollout.id][used]))
                    taken[rollout.id] = used + 1
                    cursor[b] = (cursor[b] + step + 1) % len(rotation)
                    break
    return chosen


def subsample_probes(
    rollouts: Iterable[Rollout],
    *,
    max_probes: int = DEFAULT_MAX_PROBES,
    buckets: int = DEFAULT_BUCKETS,
    seed: int = DEFAULT_SEED,
) -> list[tuple[Probe, ProbeTruth]]:
    """At most ``max_probes`` probes per family, chosen as the module doc describes."""
    _positive(max_probes, "max_probes")
    _positive(buckets, "buckets")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    families: dict[str, list[Rollout]] = {}
    seen: set[tuple[str, str]] = set()
    for rollout in rollouts:
        key = (rollout.env, rollout.id)
        if key in seen:
            raise ValueError(f"duplicate rollout id {rollout.id!r} in family {rollout.env!r}")
        seen.add(key)
        if rollout.T >= 2:
            families.setdefault(rollout.env, []).append(rollout)
    out: list[tuple[Probe, ProbeTruth]] = []
    for env in sorted(families):
        probes: dict[str, list[tuple[Probe, ProbeTruth]]] = {}
        for rollout, k in _family_selection(families[env], max_probes, buckets, seed):
            if rollout.id not in probes:
                probes[rollout.id] = make_probes(rollout)
            out.append(probes[rollout.id][k - 1])
    out.sort(key=lambda pair: (pair[0].env, pair[0].rollout_id, pair[0].k))
    return out
