"""The run's state: options, the cells scored so far, the tables and the JSON report.

One :class:`BudgetSession` per pytest run, owned by the plugin.  On xdist it lives on the
controller (which receives every cell on the test reports) and on each worker (which only
uses the options).  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_budget.options import BudgetOptions
from pytest_budget.record_json import as_record
from pytest_budget.records import CellRecord
from pytest_budget.report import build_report, cell_sort_key, write_report
from pytest_budget.suite_registry import suite_report_blocks
from pytest_budget.summary_tables import tables

__all__ = ["BudgetSession", "tables"]


@dataclass
class BudgetSession:
    options: BudgetOptions
    started: float = field(default_factory=time.perf_counter)
    cells: dict[str, CellRecord] = field(default_factory=dict)
    # Per-worker memo for expensive shared work (pools, Phase 0), keyed by the caller.
    memo: dict[Any, Any] = field(default_factory=dict)
    # Run-level report blocks besides the cells (e.g. ``models``: calls, tokens, spend).
    extra: dict[str, Any] = field(default_factory=dict)

    def add_cell(self, record: CellRecord | Mapping[str, Any]) -> None:
        """Keep the latest record per node id (a rerun replaces the earlier one); a JSON
        object is read into its kind's record type."""
        cell = as_record(record)
        self.cells[cell.nodeid] = cell

    def ordered_cells(self) -> list[CellRecord]:
        return sorted(self.cells.values(), key=cell_sort_key)

    def table_lines(self) -> list[tuple[str, list[str]]]:
        """(title, lines) per suite that has cells, in a stable order."""
        grouped: dict[str, list[CellRecord]] = {}
        for cell in self.ordered_cells():
            grouped.setdefault(cell.suite, []).append(cell)
        out: list[tuple[str, list[str]]] = []
        if not grouped:
            return out
        for suite, (title, render) in tables().items():
            if suite in grouped:
                out.append((title, render(grouped[suite])))
        return out

    def report(self) -> dict[str, Any]:
        """The JSON report document as it stands now (written or not)."""
        report = build_report(
            self.ordered_cells(),
            options=self.options.as_dict(),
            suites=self.options.suites,
            duration_s=time.perf_counter() - self.started,
            seed=self.options.seed,
        )
        report.update(self.extra)
        report.update(suite_report_blocks(report["cells"]))
        return report

    def write_report(self, report: Mapping[str, Any] | None = None) -> Path | None:
        if not self.options.report_path:
            return None
        return write_report(self.options.report_path, report or self.report())

    def write_html(self, report: Mapping[str, Any] | None = None) -> Path | None:
        """The HTML page of ``--budget-html`` (matplotlib is imported only here)."""
        if not self.options.html_path:
            return None
        from pytest_budget.html import write_html_report

        return write_html_report(self.options.html_path, report or self.report())
