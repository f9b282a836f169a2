"""Checks of option values and paths that must fail before any work starts.

Each failure is an :class:`~pytest_budget.options.OptionError`: one line naming the
option, the value and the fix (pytest shows it as a usage error, exit status 4).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "LIST_OPTIONS",
    "MAXIMUMS",
    "OPTION_DESTS",
    "check_directory_option",
    "check_empty_values",
    "check_output_file",
]

#: Every string-valued ``--budget-*`` option (its ``dest``): none may be given empty.
OPTION_DESTS = (
    "budget_suite", "budget_agent", "budget_seed", "budget_concurrency", "budget_report",
    "budget_html", "budget_alpha", "budget_unsolvable", "budget_pool", "budget_pool_size",
    "budget_chunk_size", "budget_variant", "budget_snapshot_dir", "budget_gate",
    "budget_ci_level", "budget_ci_resamples", "budget_repeat", "budget_env", "budget_rollouts",
    "budget_rollout_count", "budget_rollout_format", "budget_rollout_env",
    "budget_rollout_missing_usage", "budget_rollout_cap", "budget_search_url",
    "budget_warehouse_demand", "budget_parse", "budget_scenario", "budget_task",
    "budget_query_count", "budget_queries", "budget_base_url", "budget_api_key_env",
    "budget_model_header",
    "budget_max_usd", "budget_record_mode", "budget_price_file", "budget_model_timeout",
    "budget_cache_dir", "budget_retries", "budget_retry_max_s", "budget_shard",
    "budget_max_output_chars",
)  # fmt: skip

#: Comma-list options: a value with no item in it (``--budget-suite=,``) is empty too.
LIST_OPTIONS = (
    "budget_suite", "budget_agent", "budget_alpha", "budget_unsolvable", "budget_variant",
    "budget_env", "budget_task", "budget_scenario",
)  # fmt: skip

#: Upper bounds of whole-number options: past these a run would not finish (generating
#: 10**11 pool items) or not fit in memory, so they are usage errors, not hangs.
MAXIMUMS: dict[str, int] = {
    "--budget-pool-size": 10_000,
    "--budget-chunk-size": 10_000,
    "--budget-rollout-count": 100_000,
    "--budget-query-count": 10_000,
    "--budget-concurrency": 10_000,
    "--budget-repeat": 1_000,
    "--budget-ci-resamples": 1_000_000,
    "--budget-retries": 100,
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_empty_values(get_option: Callable[[str], Any], dests: tuple[str, ...]) -> None:
    """An option given with nothing in it (``--budget-suite=``) is an error, not the
    default: the user meant something and would otherwise get another run than asked."""
    from pytest_budget.options import OptionError

    for dest in dests:
        try:
            value = get_option(dest)
        except ValueError:  # not registered (a caller with its own getter)
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if not isinstance(item, str):
                continue
            empty = not item.strip()
            if dest in LIST_OPTIONS and not empty:
                empty = not any(part.strip() for part in item.split(","))
            if empty:
                raise OptionError(
                    f"{_flag(dest)}: empty value {item!r}; give a value (see pytest --help) "
                    "or leave the option out for its default"
                )


def check_output_file(option: str, path: str) -> None:
    """A report path must name a file in an existing, writable directory."""
    from pytest_budget.options import OptionError

    target = Path(path)
    if target.is_dir():
        raise OptionError(f"{option}: {path} is a directory; give a file path inside it")
    parent = target.parent
    if not parent.exists():
        raise OptionError(
            f"{option}: directory {parent} does not exist; create it first or give a path "
            "in an existing directory"
        )
    if not parent.is_dir():
        raise OptionError(f"{option}: {parent} is not a directory; give a path in a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OptionError(f"{option}: cannot write in {parent} (permission denied)")


def check_directory_option(option: str, path: str) -> None:
    """A directory the run creates (cache, snapshots): it, and every parent that exists,
    must be a directory (not a file)."""
    from pytest_budget.options import OptionError

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise OptionError(f"{option}: {path} is a file; give a directory (it is created)")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OptionError(
                    f"{option}: {parent} is a file, so {path} cannot be created; give a "
                    "directory path"
                )
            break
