"""The triage suite's options: its flags, ini keys and their parsed value.

:func:`add_options` registers them (the plugin calls it with pytest's option group);
:func:`parse_options` reads them into :class:`TriageOptions`, one line per bad value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_budget._core.sizes import DEFAULT_SIZE, SIZES

if TYPE_CHECKING:  # the checks load when options are parsed, not registered
    from pytest_budget._core.option_checks import OptionReader

__all__ = ["DEFAULT_ALPHAS", "DEFAULT_UNSOLVABLE", "TriageOptions", "add_options", "parse_options"]

DEFAULT_ALPHAS = "0.25,0.5,0.75,1.0"
DEFAULT_UNSOLVABLE = "0,0.5"
VARIANTS = ("A", "B", "C")
#: Past these a run would not finish (generating 10**11 pool items): usage errors, not hangs.
_MAX_ITEMS = 10_000
DESTS = (
    "budget_alpha", "budget_unsolvable", "budget_pool", "budget_pool_size", "budget_chunk_size",
    "budget_variant",
)  # fmt: skip
LIST_DESTS = ("budget_alpha", "budget_unsolvable", "budget_variant")


@dataclass(frozen=True)
class TriageOptions:
    """What a triage run was asked to do."""

    alphas: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    unsolvable: tuple[float, ...] = (0.0, 0.5)
    pools: tuple[str, ...] = ()
    pool_size: int = SIZES[DEFAULT_SIZE].pool_size
    chunk_size: int = 30
    variants: tuple[str, ...] = ("A",)
    resolve: bool = False


def add_options(add: Callable[..., None], add_ini: Callable[..., None]) -> None:
    add("--budget-alpha", help="triage budget levels alpha, comma list (default 0.25,0.5,0.75,1.0)")
    add(
        "--budget-unsolvable",
        help="triage: shares of each pool replaced with unsolvable items (default 0,0.5)",
    )
    add(
        "--budget-pool",
        action="append",
        metavar="PATH",
        help="triage: a JSONL pool file (repeatable); replaces the bundled pools",
    )
    add("--budget-pool-size", help="triage: items per bundled pool (default 30)")
    add(
        "--budget-chunk-size", help="triage: split user pools into chunks of this size (default 30)"
    )
    add("--budget-variant", help="triage: planner prompt variant(s) A, B, C (default A)")
    add(
        "--budget-resolve",
        action="store_true",
        default=False,
        help="triage: add the budget-aware re-solve cells (compliance with own allocations)",
    )
    add_ini("budget_chunk_size", "triage: chunk size for user pools", default="")


def parse_options(read: OptionReader) -> TriageOptions:
    from pytest_budget._core.option_checks import OptionError, parse_float_list, positive_int

    get: Callable[[str], Any] = read.get_option
    variants = tuple(
        v.strip().upper() for v in str(get("budget_variant") or "A").split(",") if v.strip()
    )
    for variant in variants:
        if variant not in VARIANTS:
            raise OptionError(
                f"--budget-variant: unknown prompt variant {variant!r}; choose from A, B, C"
            )
    pools = read.input_files("budget_pool", "give a JSONL pool file")
    return TriageOptions(
        alphas=parse_float_list(
            "--budget-alpha",
            get("budget_alpha") or DEFAULT_ALPHAS,
            low=0.0,
            high=1.0,
            low_open=True,
        ),
        # User pools carry their own unsolvable flags: no injection unless asked for.
        unsolvable=parse_float_list(
            "--budget-unsolvable",
            get("budget_unsolvable") or ("0" if pools else DEFAULT_UNSOLVABLE),
            low=0.0,
            high=1.0,
        ),
        pools=pools,
        pool_size=positive_int(
            "--budget-pool-size",
            get("budget_pool_size") or read.size().pool_size,
            minimum=2,
            maximum=_MAX_ITEMS,
        ),
        chunk_size=positive_int(
            "--budget-chunk-size",
            get("budget_chunk_size") or read.get_ini("budget_chunk_size") or 30,
            maximum=_MAX_ITEMS,
        ),
        variants=variants or ("A",),
        resolve=bool(get("budget_resolve")),
    )
