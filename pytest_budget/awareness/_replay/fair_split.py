"""BAGEN's own 512-probe SWE-bench selection (``fair_split_random``), exactly as coded
(shared/facts/logs.md §2.3), for BAGEN's dialogue logs: the probes it picks are the ones
its released estimation outputs answer.

Input: the flattened probe list P, rollouts in file order (``rollout_index``), k ascending.
If the cap covers P, all of it in order and no draw.  Otherwise one ``random.Random(seed)``:

1. group P's positions by rollout (groups by rollout_index) and shuffle each group;
2. sort the rollouts with probes by ``(T, rollout_index)``; ``nb = min(bins, n)``
   consecutive buckets of ``n // nb``, the first ``n % nb`` one larger;
3. each bucket's members in ascending rollout_index, shuffled, buckets taken in order of
   their smallest rollout_index; a cursor per rollout, a pointer per bucket;
4. passes: shuffle a copy of the active buckets and visit them; in a bucket try up to
   ``|members|`` times member ``[pointer mod |members|]`` (advancing the pointer) and take
   that rollout's next probe if it has one left; keep the bucket iff a member has probes
   left; stop at the cap, with no active bucket, or after a pass that took nothing;
5. if still short, shuffle the unselected positions (ascending first) and append.

The selection order (before BAGEN's cache-friendly reordering, which keeps membership) is
returned.  CPython's ``random`` is what makes it BAGEN's: plain Python, no numpy.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from pytest_budget.awareness._replay.probes import Probe, ProbeTruth, make_probes
from pytest_budget.awareness._replay.rollouts import Rollout

__all__ = ["bagen_probes", "contiguous_buckets", "fair_split_random"]

_T = TypeVar("_T")


def fair_split_random(
    turns: Sequence[tuple[int, int]], cap: int = 512, seed: int = 42, bins: int = 8
) -> list[tuple[int, int]]:
    """``(rollout_index, k)`` chosen from rollouts given as ``(rollout_index, T)``."""
    flat = [(index, k) for index, t in sorted(turns) for k in range(1, t)]
    if cap >= len(flat):
        return flat
    rng = random.Random(seed)
    groups: dict[int, list[int]] = {}
    for position, (index, _) in enumerate(flat):
        groups.setdefault(index, []).append(position)
    for index in sorted(groups):
        rng.shuffle(groups[index])
    lengths = dict(turns)
    ordered = sorted(groups, key=lambda index: (lengths[index], index))
    buckets = sorted((sorted(b) for b in contiguous_buckets(ordered, bins)), key=min)
    for members in buckets:
        rng.shuffle(members)
    cursor = dict.fromkeys(groups, 0)
    pointer = [0] * len(buckets)
    chosen: list[int] = []
    active = list(range(len(buckets)))
    while len(chosen) < cap and active:
        order = list(active)
        rng.shuffle(order)
        kept: list[int] = []
        took = False
        for b in order:
            if len(chosen) >= cap:
                break
            members = buckets[b]
            for _ in range(len(members)):
                index = members[pointer[b] % len(members)]
                pointer[b] = (pointer[b] + 1) % len(members)
                if cursor[index] < len(groups[index]):
                    chosen.append(groups[index][cursor[index]])
                    cursor[index] += 1
                    took = True
                    break
            if any(cursor[i] < len(groups[i]) for i in members):
                kept.append(b)
        active = kept
        if not took:
            break
    if len(chosen) < cap:
        rest = sorted(set(range(len(flat))) - set(chosen))
        rng.shuffle(rest)
        chosen += rest[: cap - len(chosen)]
    return [flat[p] for p in chosen]


def bagen_probes(
    rollouts: Sequence[Rollout], cap: int = 512, seed: int = 42, bins: int = 8
) -> list[tuple[Probe, ProbeTruth]]:
    """BAGEN's selection per dialogue file and family of BAGEN-log rollouts (BAGEN selects
    per input file, by ``meta["rollout_index"]``), sorted by ``(env, rollout id, k)``."""
    families: dict[tuple[str, str], list[Rollout]] = {}
    for rollout in rollouts:
        families.setdefault((rollout.env, str(rollout.meta.get("source"))), []).append(rollout)
    out: list[tuple[Probe, ProbeTruth]] = []
    for key in sorted(families):
        by_index = {int(r.meta["rollout_index"]): r for r in families[key]}
        picked = fair_split_random(
            [(i, r.T) for i, r in by_index.items() if r.T >= 2], cap, seed, bins
        )
        probes = {i: make_probes(r) for i, r in by_index.items() if r.T >= 2}
        for index, k in picked:
            out.append(probes[index][k - 1])
    out.sort(key=lambda pair: (pair[0].env, pair[0].rollout_id, pair[0].k))
    return out


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
