"""Bundled pools and unsolvable injection.

Bundled pools are generated deterministically from the run's seed (one pool per domain);
injection replaces a share of a pool's items with provably unsolvable ones of the same
domain, keeping the pool size constant, as in TRIAGE §4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from pytest_budget.triage._domains import DOMAINS, get_domain
from pytest_budget.triage._planners import derive_seed
from pytest_budget.triage._types import Item, Pool

__all__ = ["bundled_pools", "inject_unsolvable", "injection_count", "unsolvable_supply"]


def bundled_pools(
    seed: int, size: int = 30, domains: Sequence[str] | None = None
) -> tuple[Pool, ...]:
    """One generated pool of ``size`` items per domain (default: every built-in domain)."""
    names = list(domains) if domains is not None else sorted(DOMAINS)
    pools = []
    for name in names:
        domain = get_domain(name)
        items = domain.generate(size, derive_seed(seed, "pool", name))
        pools.append(Pool(name=name, items=tuple(items), domain=name))
    return tuple(pools)


def unsolvable_supply(domain: str, count: int, seed: int) -> tuple[Item, ...]:
    """``count`` provably unsolvable items of ``domain`` (generated from the seed)."""
    return tuple(
        get_domain(domain).generate_unsolvable(count, derive_seed(seed, "unsolvable", domain))
    )


def injection_count(size: int, ratio: float) -> int:
    """How many items a ratio replaces (round half up, so 0.25 of 30 is 8)."""
    return min(size, math.floor(ratio * size + 0.5))


def inject_unsolvable(pool: Pool, ratio: float, supply: Sequence[Item], *, seed: int) -> Pool:
    """Replace ``ratio`` of the pool's items with items from ``supply`` (size unchanged).

    Which positions are replaced is drawn from the seed; a replacement takes over the slot
    and the id of the item it replaces, so neither the order nor the ids give it away.
    """
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"unsolvable ratio must be within [0, 1], got {ratio}")
    count = injection_count(len(pool), ratio)
    if count == 0:
        return pool
    if count > len(supply):
        raise ValueError(
            f"pool {pool.name!r} needs {count} unsolvable items, only {len(supply)} available"
        )
    rng = np.random.default_rng(derive_seed(seed, "inject", pool.name, ratio))
    slots = sorted(int(i) for i in rng.choice(len(pool), size=count, replace=False))
    items = list(pool.items)
    for slot, replacement in zip(slots, supply, strict=False):
        items[slot] = replace(replacement, id=items[slot].id)
    return Pool(name=pool.name, items=tuple(items), domain=pool.domain)
