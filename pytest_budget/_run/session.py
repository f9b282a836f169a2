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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from pytest_budget._core.record_json import as_record
from pytest_budget._core.records import CellRecord
from pytest_budget._core.registry import suite_report_blocks
from pytest_budget._run.options import BudgetOptions
from pytest_budget.report._document import build_report, cell_sort_key, write_report
from pytest_budget.report._terminal_tables import tables

if TYPE_CHECKING:  # the model layer is imported only by runs that call a model
    from pytest_budget._run.forecast import Forecast
    from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig

__all__ = ["BudgetSession", "Stoppable", "tables"]

S = TypeVar("S")


class Stoppable(Protocol):
    """What the session needs of the cell scheduler (fixtures/cells.py, a layer above):
    cancel the cells started ahead whose tests will not run."""

    def cancel_all(self) -> None: ...


@dataclass
class BudgetSession:
    options: BudgetOptions
    started: float = field(default_factory=time.perf_counter)
    cells: dict[str, CellRecord] = field(default_factory=dict)
    # A run that calls a model: its settings (the controller's, handed to xdist workers)
    # and this process's runtime (record/replay, retries, spend counters).
    model_runtime_config: RuntimeConfig | None = None
    model_runtime: ModelRuntime | None = None
    # The controller's endpoint check, pending until the cost forecast has been printed:
    # (the (provider, model) agents, the runtime settings).
    preflight: tuple[list[tuple[str, str]], RuntimeConfig] | None = None
    # (gated pairs, pooled pairs) the run's alpha is split over (set after collection).
    gate_pairs: tuple[int, int] = (0, 0)
    # The controller's cost forecast (printed before the run, compared after it).
    forecast: Forecast | None = None
    # The agents conftest hooks supply, by role (asked once per process).
    hook_agents: dict[str, object] = field(default_factory=dict)
    # The cells started ahead in a live run (fixtures/cells.py), once the first test starts.
    cell_scheduler: Stoppable | None = None
    # Each suite's per-process state (pools, rollouts ...), by its type: see state_of.
    _suite_states: dict[type, object] = field(default_factory=dict, repr=False)
    # Run-level report blocks besides the cells (e.g. ``models``: calls, tokens, spend).
    extra: dict[str, Any] = field(default_factory=dict)

    def state_of(self, kind: type[S]) -> S:
        """This process's one ``kind()`` (a suite's own state class, made on first use), so
        the shared session names no suite."""
        found = self._suite_states.get(kind)
        if found is None:  # setdefault: two threads asking at once get the same one
            found = self._suite_states.setdefault(kind, kind())
        return cast(S, found)

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
        from pytest_budget.report._html import write_html_report

        return write_html_report(self.options.html_path, report or self.report())
