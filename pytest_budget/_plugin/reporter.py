"""The run's reporter: registered per run, it counts tests, prints progress, merges the
cells the workers send, prints the score tables and the forecast beside the spend, and
writes the JSON report and the HTML page at the end.

Cells with no stored baseline (``budget_snapshot`` marks their reports with
:data:`NO_BASELINE`) pass ungated; the reporter says so once when the first one finishes,
sums them up in one line at the end with the two ways forward (record with
``--snapshot-update``, or score only with ``--budget-gate=off``), and the run exits 1: a
forgotten ``git add __budget_snapshots__`` must not turn CI green.  Under xdist the
controller counts the workers' reports, so the lines appear once.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_budget._core.record_json import cell_from_json
from pytest_budget._plugin.models import RUNTIME_PAYLOAD_KEY, is_worker, preflight
from pytest_budget._plugin.state import NO_BASELINE
from pytest_budget._run.options import BudgetOptions

if TYPE_CHECKING:
    from pytest_budget._run.session import BudgetSession

__all__ = ["NO_BASELINE", "RunReporter", "no_baseline_line"]

#: The ``user_properties`` name of a cell that had no stored baseline (value: its file).


def _lacks_baseline(report: pytest.TestReport) -> bool:
    return any(name == NO_BASELINE for name, _ in report.user_properties)


def no_baseline_line(args: Sequence[str], missing: Sequence[str], snapshot_dir: str) -> str:
    """The end-of-run line for ``missing`` cells (their baseline files) of a run started
    with ``args``: what happened and the two commands that work."""
    words = ["pytest", *(str(arg) for arg in args)]
    record = shlex.join([*words, "--snapshot-update"])
    score_only = shlex.join([*words, "--budget-gate=off"])
    count = len(missing)
    cells = "cell has" if count == 1 else "cells have"
    return (
        f"budget: {count} {cells} no stored baseline in {snapshot_dir} (scored, not gated), "
        f"so the run fails; record them: {record}  |  or score only: {score_only}"
    )


def _with_cache_dir(options: BudgetOptions, config: pytest.Config) -> BudgetOptions:
    """Default the Phase 0 cache to pytest's cache directory (when the cache plugin is on)."""
    from dataclasses import replace

    cache = getattr(config, "cache", None)
    if options.cache_dir is not None or cache is None:
        return options
    return replace(options, cache_dir=str(cache.mkdir("pytest_budget")))


class RunReporter:
    """Registered per run in ``pytest_configure``: merges cells, prints tables, writes JSON."""

    def __init__(self, config: pytest.Config, session: BudgetSession) -> None:
        self.config = config
        self.session = session
        self.tests_total = 0
        self.tests_done = 0
        self.spend_skipped = 0
        self.spend_incomplete: list[dict[str, str]] = []  # cells not run for the spend cap
        self._last_progress = -math.inf
        self._cell_calls: dict[str, str | None] = {}  # running cells' own calls (JSON)
        self.no_baseline: list[str] = []  # baseline files of cells that had none
        # The paired gate's per-unit changes, per (cell kind, metric): one list per cell.
        self._gate_changes: dict[tuple[str, str], list[tuple[list[float], Any]]] = {}
        self._pooled: list[Any] | None = None
        # The same per unit with its cell's test id and first batch, and the (kind, metric)
        # pairs some of whose cells ran sequentially (their pooled test is an e-process).
        self._gate_batches: dict[tuple[str, str], list[tuple[str, list[float], int, Any, int]]] = {}
        self._sequential_kinds: set[tuple[str, str]] = set()

    def pytest_sessionstart(self) -> None:
        # config.cache exists only after every plugin's pytest_configure has run.
        self.session.options = _with_cache_dir(self.session.options, self.config)
        pending, self.session.preflight = self.session.preflight, None
        if pending is not None and not is_worker(self.config):
            from pytest_budget._plugin.forecast_hooks import forecast_before_run

            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_sep("=", "budget: cost forecast")
            write = reporter.write_line if reporter is not None else print
            forecast_before_run(self.config, self.session, write)
            preflight(self.session.options, *pending)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: every worker gets the controller's runtime settings (one ledger, one
        record-mode decision)."""
        runtime_config = self.session.model_runtime_config
        if runtime_config is not None:
            from pytest_budget.models._setup import config_to_payload

            node.workerinput[RUNTIME_PAYLOAD_KEY] = json.dumps(config_to_payload(runtime_config))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Every process (xdist workers too) splits the run's alpha over the same pairs.
        self.session.gate_pairs = _gate_pairs(
            [item.nodeid for item in session.items], self.session.options
        )
        if not is_worker(self.config) and session.items:
            self.tests_total = len(session.items)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any | None:
        """xdist's scheduler.  A run that calls a model hands every worker all of its tests
        at the start (``--dist load`` or ``worksteal``), so its cells are in flight together
        and none moves once paid for; an offline ``-n`` run without ``--dist`` sends the
        tests that share prepared work to one worker together
        (:mod:`pytest_budget._run.distribute`).  None: xdist's own scheduler."""
        from pytest_budget._run.distribute import make_scheduler

        live = self.session.model_runtime_config is not None
        return make_scheduler(config, log, self.session.options, live=live)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.tests_total = max(self.tests_total, len(ids))
        self.session.gate_pairs = _gate_pairs(ids, self.session.options)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_worker(self.config):
            return
        if report.skipped and self.session.model_runtime_config is not None:
            from pytest_budget.models._setup import SPEND_SKIP_MARK

            if SPEND_SKIP_MARK in str(report.longrepr):
                self.spend_skipped += 1
                longrepr = report.longrepr
                reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
                reason = reason.removeprefix("Skipped: ")
                self.spend_incomplete.append({"nodeid": report.nodeid, "reason": reason})
        if report.when == "call":
            self._cell_calls[report.nodeid] = getattr(report, "budget_cell_calls", None)
            self._note_no_baseline(report)
        if report.when == "teardown":
            self.tests_done += 1
            self._progress(report.nodeid)
        changes = getattr(report, "budget_gate", None)
        if changes is not None and report.when == "call":
            data = json.loads(changes)
            for metric, value in data["metrics"].items():
                self._gate_changes.setdefault((data["kind"], metric), []).append(
                    (value["d"], value["direction"])
                )
                # In canonical order for the sequential gate's pooled e-process; a cell
                # that ran whole is one batch.
                first = int(value.get("first", len(value["d"])))
                self._gate_batches.setdefault((data["kind"], metric), []).append(
                    (
                        str(data.get("cell", report.nodeid)), value["d"], first,
                        value["direction"], int(value.get("total", len(value["d"]))),
                    )
                )  # fmt: skip
                if "first" in value:
                    self._sequential_kinds.add((data["kind"], metric))
        record = getattr(report, "budget_cell", None)
        if record is None or report.when not in ("setup", "call"):
            return
        cell = cell_from_json(json.loads(record))
        spend = getattr(report, "budget_cell_calls", None)
        written = getattr(report, "budget_cell_written", None)
        if report.when == "call" and (spend is not None or written is not None):
            from pytest_budget._core.written import with_written

            # The cell's model calls and its reference-counted tokens, per role.
            calls = json.loads(spend) if spend is not None else None
            cell.spend = with_written(calls, json.loads(written) if written else {})
        cell.test_outcome = report.outcome
        cell.duration_s = round(report.duration, 4)
        self.session.add_cell(cell)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Any:
        """A cell that passed ungated for want of a baseline is shown as such: ``b``
        (``NO BASELINE`` with -v) and ``N no baseline`` in the last line, not as passed."""
        if report.when == "call" and report.passed and _lacks_baseline(report):
            return "no baseline", "b", ("NO BASELINE", {"yellow": True})
        return None

    def _note_no_baseline(self, report: pytest.TestReport) -> None:
        """Count a cell that had no stored baseline; the first one is said at once."""
        found = [value for name, value in report.user_properties if name == NO_BASELINE]
        if not found:
            return
        first = not self.no_baseline
        self.no_baseline.extend(str(value) for value in found)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if not first or reporter is None:
            return
        writer = getattr(reporter, "_tw", None)
        if getattr(writer, "width_of_current_line", 0):  # after the progress dots
            reporter.write("\n")
        reporter.write_line(
            f"budget: no stored baseline for {found[0]}: cells without one are scored, not "
            "gated, and fail the run once at its end (record them with --snapshot-update, or "
            "score only with --budget-gate=off)"
        )

    def _ledger_state(self) -> Any:
        runtime = self.session.model_runtime
        if runtime is not None:
            runtime.flush()  # this process's own buffered counters (no xdist)
        runtime_config = self.session.model_runtime_config
        if runtime_config is None or runtime_config.ledger_path is None:
            return None, None
        from pytest_budget.models._ledger import SpendLedger

        return runtime_config, SpendLedger(runtime_config.ledger_path).read()

    def _progress(self, nodeid: str = "") -> None:
        """A live line of model calls, tokens and spend, and the finished cell's own
        (:mod:`pytest_budget._run.progress`: one per cell off a terminal; silent under -q)."""
        if self.config.get_verbosity() < 0 or self.session.model_runtime_config is None:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        from pytest_budget._run.progress import cell_part, due

        now = time.monotonic()
        cell = self._cell_calls.pop(nodeid, None)
        if not due(bool(getattr(reporter, "isatty", False)), now, self._last_progress):
            return
        runtime_config, state = self._ledger_state()
        if state is None or not (state.count("calls") or state.count("replayed") or cell):
            return
        self._last_progress = now
        from pytest_budget.models._setup import progress_line

        line = progress_line(runtime_config, state, self.tests_done, self.tests_total)
        writer = getattr(reporter, "_tw", None)
        if getattr(writer, "width_of_current_line", 0):  # after xdist's progress dots
            reporter.write("\n")
        reporter.ensure_newline()
        reporter.write_line(line + cell_part(nodeid, cell))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config):
            return
        for title, lines in self.session.table_lines():
            terminalreporter.write_sep("=", title)
            for line in lines:
                terminalreporter.write_line(line)
        if self.session.cells:
            from pytest_budget.report._frontier import frontier_lines

            for title, lines in frontier_lines(self.session.ordered_cells()):
                terminalreporter.write_sep("-", title)
                for line in lines:
                    terminalreporter.write_line(line)
        options = self.session.options
        if self.session.cells and options.suites and options.gate != "off":
            rules = ", ".join(f"{suite} {options.gate_for(suite)}" for suite in options.suites)
            terminalreporter.write_line(f"budget gate: {rules}")
            for line in sequential_lines(self.session.ordered_cells()):
                terminalreporter.write_line(line)
        pooled = (
            [] if self.config.getoption("update_snapshots", False) else self._pooled_regressions()
        )
        if pooled:
            terminalreporter.write_sep("=", "budget: the run's pooled gate failed", red=True)
            for regression in pooled:
                terminalreporter.write_line(regression.message())
        runtime_config, state = self._ledger_state()
        if state is not None:
            from pytest_budget.models._setup import summary_line

            terminalreporter.write_sep("=", "budget: model calls")
            for line in summary_line(runtime_config, state, self.spend_skipped):
                terminalreporter.write_line(line)
            from pytest_budget._plugin.forecast_hooks import forecast_after_run

            for line in forecast_after_run(self.session, state):
                terminalreporter.write_line(line)
        if self.session.options.report_path:
            terminalreporter.write_line(f"budget report: {self.session.options.report_path}")
        if self.session.options.html_path:
            terminalreporter.write_line(f"budget html: {self.session.options.html_path}")
        if self.no_baseline:
            args = self.config.invocation_params.args
            line = no_baseline_line(args, self.no_baseline, self.session.options.snapshot_dir)
            terminalreporter.write_line(line, red=True, bold=True)

    def _pooled_tests(self) -> list[Any]:
        """The run's pooled paired tests (one per cell kind and metric), decided once."""
        if self._pooled is None:
            from pytest_budget._stats.run_gate import pooled_tests
            from pytest_budget._stats.sequential import pooled_sequential_tests

            pairs = int(self.session.gate_pairs[1])
            seq = self._sequential_kinds
            fixed = {k: v for k, v in self._gate_changes.items() if k not in seq}
            batches = {k: v for k, v in self._gate_batches.items() if k in seq}
            count = pairs or len(self._gate_changes)
            self._pooled = sorted(
                pooled_tests(fixed, pairs=count) + pooled_sequential_tests(batches, pairs=count),
                key=lambda test: (test.kind, test.metric),
            )
        return self._pooled

    def _pooled_regressions(self) -> list[Any]:
        return [test for test in self._pooled_tests() if test.regressed]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config):
            return
        # A pooled regression fails the run (its cells themselves may all have passed);
        # so does a cell without a stored baseline (said once, with the ways forward).
        gated = self.session.options.gate != "off" and not session.config.getoption(
            "update_snapshots", False
        )
        pooled_failed = gated and bool(self._pooled_regressions())
        if (self.no_baseline or pooled_failed) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if gated and self._gate_changes:  # the pooled tests, failed or not, in the report
            self.session.extra["pooled_gate"] = [t.as_json() for t in self._pooled_tests()]
        runtime_config, state = self._ledger_state()
        if state is not None:
            from pytest_budget.models._setup import models_report

            self.session.extra["models"] = models_report(runtime_config, state, self.spend_skipped)
            from pytest_budget._plugin.forecast_hooks import forecast_report

            self.session.extra["models"]["forecast"] = forecast_report(self.session)
            self.session.extra["models"]["cells_incomplete"] = self.spend_incomplete
        report = self.session.report()
        self.session.write_report(report)
        self.session.write_html(report)


def sequential_lines(cells: list[Any]) -> list[str]:
    """The sequential gate's stops (issue 30): per cell that asked for it, its decision,
    look and units run, then the run's units against the maximum."""
    lines: list[str] = []
    run = most = 0
    for cell in cells:
        seq = getattr(cell, "sequential", None)
        if not isinstance(seq, dict):
            continue
        if seq.get("decision") == "ran whole":
            lines.append(
                f"budget sequential: {cell.suite} {cell.cell} {cell.agent}: ran whole "
                f"({seq['reason']})"
            )
            continue
        what = "regressed" if seq["decision"] == "regressed" else "no regression of the stated size"
        if seq["decision"] != "regressed" and seq["look"] == seq["looks"]:
            what = "no regression at the maximum size"
        lines.append(
            f"budget sequential: {cell.suite} {cell.cell} {cell.agent}: {what} at look "
            f"{seq['look']} of {seq['looks']} ({seq['units']} of {seq['max_units']} units)"
        )
        run, most = run + int(seq["units"]), most + int(seq["max_units"])
    if most:
        lines.append(f"budget sequential: {run} of {most} units run ({run / most:.0%})")
    return lines


def _gate_pairs(nodeids: list[str], options: BudgetOptions) -> tuple[int, int]:
    """The run's gated (cell, metric) pairs and (cell kind, metric) pairs under the paired
    rule, from the collected test ids (the controller of an xdist run sees only ids)."""
    from pytest_budget._core.registry import kind_of_test_file, suite_by_name_or_kind

    cells = 0
    kinds: set[str] = set()
    for nodeid in nodeids:
        kind = kind_of_test_file(nodeid.split("::", 1)[0].rsplit("/", 1)[-1])
        if kind is None:
            continue
        suite = suite_by_name_or_kind(kind.name)
        if options.gate_for(suite.name if suite is not None else kind.name) != "paired":
            continue
        cells += len(kind.metrics)
        kinds.add(kind.name)
    pooled = sum(len(kind.metrics) for name in kinds if (kind := _kind(name)) is not None)
    return cells, pooled


def _kind(name: str) -> Any:
    from pytest_budget._core.registry import cell_kind

    return cell_kind(name)
