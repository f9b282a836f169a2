"""Setting up one run's model runtime from the options, and summarising what it did.

The plugin calls these on the xdist controller (or the only process): which ``provider:model``
agents the run names, the runtime's settings (record mode resolved per cassette, the ledger
file shared by every worker), the up-front price check for ``--budget-max-usd``, and the
``models`` block of the report and the terminal lines.  Workers get the settings as a plain
dict (:func:`config_to_payload`) so every process of a run agrees.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from pytest_budget.models._ledger import LedgerState
from pytest_budget.models._prices import PriceTable, load_price_table
from pytest_budget.models._provider import PROVIDERS
from pytest_budget.models._recorder import resolve_mode
from pytest_budget.models._retry import RetryPolicy
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig

__all__ = [
    "SPEND_SKIP_MARK",
    "RunOptions",
    "config_from_payload",
    "config_to_payload",
    "model_agents",
    "models_report",
    "new_runtime_config",
    "price_table",
    "progress_line",
    "runtime_from_payload",
    "spend_skip_reason",
    "summary_line",
    "unpriced_models",
]


class RunOptions(Protocol):
    """What this module reads of the run's options
    (:class:`pytest_budget._run.options.BudgetOptions`
    has it): a protocol, so the model layer does not import the plugin's option layer."""

    @property
    def agents(self) -> tuple[str, ...]: ...
    @property
    def role_agents(self) -> Mapping[str, str]: ...
    @property
    def prices(self) -> tuple[str, ...]: ...
    @property
    def price_file(self) -> str | None: ...
    @property
    def record_mode(self) -> str: ...
    @property
    def max_usd(self) -> float | None: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def retry_max_s(self) -> float: ...


#: Start of the skip reason of a cell skipped for the spend cap (the controller counts them).
SPEND_SKIP_MARK = "budget spend cap"


def spend_skip_reason(runtime: ModelRuntime, during_cell: int = 0) -> str:
    """Why a cell is skipped: the cap, what was spent, and (mid-cell) how many calls failed."""
    ledger = runtime.ledger
    spent = ledger.read().spent_usd if ledger is not None else 0.0
    cap = runtime.config.max_usd
    head = f"{SPEND_SKIP_MARK} ${cap:g} reached (${spent:.4f} spent)"
    if during_cell:
        return f"{head} during this cell: {during_cell} calls refused, scores would be partial"
    return f"{head}: no further model calls are made"


def model_agents(options: RunOptions) -> list[tuple[str, str]]:
    """``(provider, model)`` of every model agent the run names (``--budget-agent`` and ini
    ``budget_role_agents``), in order, without repeats."""
    found: list[tuple[str, str]] = []
    for name in (*options.agents, *options.role_agents.values()):
        provider, sep, model = name.partition(":")
        if sep and provider in PROVIDERS and model and (provider, model) not in found:
            found.append((provider, model))
    return found


def price_table(options: RunOptions) -> PriceTable:
    return load_price_table(options.prices, options.price_file)


def unpriced_models(options: RunOptions, table: PriceTable) -> list[str]:
    """Named model agents without a price (a spend cap cannot hold for them)."""
    return [
        f"{provider}:{model}"
        for provider, model in model_agents(options)
        if table.lookup(provider, model) is None
    ]


def new_runtime_config(
    options: RunOptions, *, cache_root: str | os.PathLike[str], run_id: str
) -> RuntimeConfig:
    """The run's runtime settings: recordings under ``cache_root/models``, the ledger under
    ``cache_root/runs/<run_id>.json``, ``once`` resolved per named model now."""
    records = Path(cache_root) / "models"
    resolved = {
        f"{provider}:{model}": resolve_mode(options.record_mode, records, provider, model)
        for provider, model in model_agents(options)
    }
    return RuntimeConfig(
        record_mode=options.record_mode,
        cache_dir=str(records),
        ledger_path=str(Path(cache_root) / "runs" / f"{run_id}.json"),
        max_usd=options.max_usd,
        concurrency=options.concurrency,
        retry=RetryPolicy(max_attempts=options.retries + 1, max_total_s=options.retry_max_s),
        resolved_modes=resolved,
    )


def config_to_payload(config: RuntimeConfig) -> dict[str, Any]:
    data = asdict(config)
    data["resolved_modes"] = dict(config.resolved_modes)
    return data


def config_from_payload(data: Mapping[str, Any]) -> RuntimeConfig:
    values = dict(data)
    values["retry"] = RetryPolicy(**values["retry"])
    values["resolved_modes"] = dict(values.get("resolved_modes") or {})
    return RuntimeConfig(**values)


def runtime_from_payload(data: Mapping[str, Any], options: RunOptions) -> ModelRuntime:
    return ModelRuntime(config_from_payload(data), price_table(options))


def models_report(config: RuntimeConfig, state: LedgerState, skipped_cells: int) -> dict[str, Any]:
    """The report's ``models`` block: what the run's model calls did and cost."""
    counts = state.as_dict()
    cap_reached = config.max_usd is not None and (
        state.count("refused") > 0 or state.spent_usd >= config.max_usd
    )
    unpriced = state.count("unpriced")
    return {
        "record_mode": config.record_mode,
        "cache_dir": config.cache_dir,
        "max_usd": config.max_usd,
        # Unknown when some live call had no price: never report a partial sum as the total.
        "spent_usd": None if unpriced else counts["spent_usd"],
        "spent_usd_priced": counts["spent_usd"],
        "cap_reached": cap_reached,
        "cells_skipped_for_spend": skipped_cells,
        "usage_reported": state.count("unreported_usage") == 0,
        **{key: value for key, value in counts.items() if key != "spent_usd"},
    }


def _spend(config: RuntimeConfig, state: LedgerState) -> str:
    unpriced = state.count("unpriced")
    if unpriced and not state.spent_usd:
        spent = f"unknown (no price for {unpriced} calls; see budget_prices)"
    else:
        spent = f"${state.spent_usd:.4f}"
        if unpriced:
            spent += f" (+{unpriced} calls without a price)"
    if config.max_usd is not None:
        spent += f" of ${config.max_usd:g}"
    return spent


def progress_line(
    config: RuntimeConfig, state: LedgerState, tests_done: int, tests_total: int
) -> str:
    """One live line: calls done of the projected total, tokens and spend so far.

    A cell's number of calls is not known before it runs (multi-turn agents stop when they
    choose), so the total is projected from the calls per finished test and marked ``~``.
    """
    calls = state.count("calls") + state.count("replayed")
    if tests_done and tests_total:
        projected = max(calls, round(calls * tests_total / tests_done))
        total = f"/~{projected:,}"
        tests = f" (tests {tests_done}/{tests_total})"
    else:
        total, tests = "", f" (tests {tests_done}/{tests_total})" if tests_total else ""
    return (
        f"budget: model calls {calls:,}{total}{tests}: {state.count('replayed'):,} replayed, "
        f"{state.count('retries')} retries, {state.count('errors')} failed; tokens "
        f"{state.count('input_tokens'):,} in / {state.count('output_tokens'):,} out; "
        f"spent {_spend(config, state)}"
    )


def summary_line(config: RuntimeConfig, state: LedgerState, skipped_cells: int) -> list[str]:
    """The end-of-run lines for the terminal summary."""
    lines = [
        f"model calls: {state.count('calls')} live, {state.count('replayed')} replayed, "
        f"{state.count('retries')} retries ({state.count('rate_limited')} rate-limited), "
        f"{state.count('errors')} failed; tokens {state.count('input_tokens'):,} in / "
        f"{state.count('output_tokens'):,} out; spent {_spend(config, state)}"
    ]
    if state.count("unreported_usage"):
        lines.append(
            f"usage not reported by the server for {state.count('unreported_usage')} calls: "
            "their tokens are unknown and not counted"
        )
    if state.count("refused") or skipped_cells:
        lines.append(
            f"spend cap reached: {state.count('refused')} calls refused, {skipped_cells} cells "
            "skipped"
        )
    if state.count("not_recorded"):
        lines.append(
            f"{state.count('not_recorded')} calls had no recording (record mode "
            f"{config.record_mode})"
        )
    return lines
