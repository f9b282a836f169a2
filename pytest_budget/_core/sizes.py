"""Run sizes (``--budget-size``): how many items each suite runs when no count is given.

A size names a default for each suite's count option; an explicit count option
(``--budget-query-count``, ``--budget-rollout-count``, ``--budget-pool-size``) still wins.

* ``default`` is chosen by cost: a live run of all three suites with one gpt-4o-mini-class
  model forecasts at most 5,000 calls and $5 expected (the forecast of
  ``pytest --budget-suite=all --budget-agent=openai/gpt-4o-mini --budget-dry-run``:
  4,730 calls, $4.52 expected: planning 9 queries per task = 1,620 calls, $2.95;
  awareness 64 rollouts per environment = ~3,000 calls, $1.52; triage one pool of 30 per
  domain = 106 calls, $0.05).  Planning episodes are the dearest unit (6 calls of ~11,000
  prompt tokens each, expected), so planning gets the fewest items per cell; awareness
  rollouts are cheap per probe, so they get more, and not fewer than 64: at 48 the
  warehouse probes' trivial floor reaches macro-F1 0.78, above the 0.75 the suite flags.
* ``paper`` is the papers' protocol: CostBench's test split (381 queries: location 29,
  transportation 102, accommodation 51, attraction 56, dining 60, shopping 83), BAGEN's 128
  rollouts per environment, TRIAGE's pools of n_chunk = 30 items.

Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_SIZE", "SIZES", "RunSize", "parse_size"]


@dataclass(frozen=True)
class RunSize:
    """The counts a size gives each suite."""

    name: str
    query_count: int  # planning: generated queries per task
    rollout_count: int  # awareness: generated rollouts per environment
    pool_size: int  # triage: items per bundled pool
    # planning: queries per task when they differ by task (CostBench's test split)
    task_query_counts: Mapping[str, int] = field(default_factory=dict)
    why: str = ""


#: CostBench's test split, queries per task (facts/costbench.md §1).
COSTBENCH_TEST_SPLIT: dict[str, int] = {
    "location": 29, "transportation": 102, "accommodation": 51,
    "attraction": 56, "dining": 60, "shopping": 83,
}  # fmt: skip

SIZES: dict[str, RunSize] = {
    "default": RunSize(
        "default",
        query_count=9,
        rollout_count=64,
        pool_size=30,
        why="sized by cost: a live run of all suites with a gpt-4o-mini-class model "
        "forecasts at most 5,000 calls and $5 expected",
    ),
    "paper": RunSize(
        "paper",
        query_count=max(COSTBENCH_TEST_SPLIT.values()),
        rollout_count=128,
        pool_size=30,
        task_query_counts=COSTBENCH_TEST_SPLIT,
        why="the papers' protocol: CostBench's test split (381 queries), BAGEN's 128 "
        "rollouts per environment, TRIAGE's pools of 30",
    ),
}
DEFAULT_SIZE = "default"


def parse_size(value: object) -> RunSize:
    """``--budget-size`` / ini ``budget_size``: a size's name (empty: the default).

    An unknown name is a ``ValueError`` with the one-line message; the option checks turn
    it into their usage error (this module stays below them: no import circle)."""
    name = str(value or DEFAULT_SIZE).strip().lower()
    if name not in SIZES:
        raise ValueError(
            f"--budget-size: unknown size {str(value).strip()!r}; choose from "
            f"{', '.join(SIZES)} (or set the counts: --budget-query-count, "
            "--budget-rollout-count, --budget-pool-size)"
        )
    return SIZES[name]
