"""Writes the run's Markdown summary (:mod:`pytest_budget.report._markdown`) at its end.

``--budget-markdown=PATH`` writes it to a file; when ``GITHUB_STEP_SUMMARY`` is set it is
appended there too, unless ``--budget-step-summary=off`` (ini ``budget_step_summary``).
Under xdist only the controller writes (it holds every cell); the re-run command of each
failed cell travels with its test report (the ``budget: re-run this cell`` section).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["MarkdownSummary", "add_markdown_options", "configure_markdown"]

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
_RERUN_SECTION = "budget: re-run this cell"
_WHY_LINES = 5  # regressed metrics shown per failed cell


def add_markdown_options(group: Any, addini: Any) -> None:
    group.addoption(
        "--budget-markdown",
        metavar="PATH",
        help="write a GitHub-flavoured Markdown summary of the run here (scores, intervals, "
        "spend, each cell's gate verdict, re-run commands of failed cells)",
    )
    group.addoption(
        "--budget-step-summary",
        choices=("on", "off"),
        help="on (default): when GITHUB_STEP_SUMMARY is set, append the Markdown summary "
        "to it; off: never",
    )
    addini(
        "budget_step_summary",
        "on/off: append the Markdown summary to GITHUB_STEP_SUMMARY when it is set",
        default="on",
    )


class MarkdownSummary:
    """Collects the failed cells' re-run commands and writes the summary at the end."""

    def __init__(self, config: pytest.Config, paths: list[Path]) -> None:
        self.config = config
        self.paths = paths  # first: --budget-markdown (written), then step summary (appended)
        self.rerun: dict[str, str] = {}
        self.why: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            for name, text in report.sections:
                if name == _RERUN_SECTION:
                    self.rerun.setdefault(report.nodeid, text.strip())
            # The gate's own words: the metrics that regressed (the snapshot's message).
            found = [
                line[1:].strip()
                for line in report.longreprtext.splitlines()
                if line.startswith("E ") and "regressed" in line
            ]
            if found:
                self.why.setdefault(report.nodeid, found[:_WHY_LINES])

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        result = yield  # after the run's reporter has decided the pooled gate
        from pytest_budget._plugin.state import budget_session
        from pytest_budget.report._markdown import render_markdown

        state = budget_session(self.config)
        reporter = self.config.pluginmanager.get_plugin("budget-run")
        pooled = getattr(reporter, "_pooled", None) or []
        text = render_markdown(
            state.report(),
            rerun=self.rerun,
            why=self.why,
            pooled=[regression.message() for regression in pooled],
        )
        written = self.config.option.budget_markdown
        for path in self.paths:
            if written and str(path) == written:
                path.write_text(text, encoding="utf-8")
            elif not state.cells:
                continue  # a run of no cell adds nothing to the CI page
            else:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(text)
        return result


def configure_markdown(config: pytest.Config) -> None:
    """Register the summary writer when the run asks for one (controller only); a bad path
    or value is a usage error, before any cell runs."""
    from pytest_budget._core.option_checks import OptionError, check_output_file

    value = config.getoption("budget_markdown", None)
    switch = config.getoption("budget_step_summary", None) or str(
        config.getini("budget_step_summary") or "on"
    )
    if switch.strip().lower() not in ("on", "off"):
        raise pytest.UsageError(f"budget_step_summary: {switch!r} is not on or off")
    paths: list[Path] = []
    if value:
        target = (config.invocation_params.dir / str(value)).resolve()
        try:
            check_output_file("--budget-markdown", str(target))
        except OptionError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.option.budget_markdown = str(target)
        paths.append(target)
    step = os.environ.get(STEP_SUMMARY_ENV, "")
    if step and switch.strip().lower() == "on":
        paths.append(Path(step))
    if paths and not hasattr(config, "workerinput"):  # xdist: the controller writes
        config.pluginmanager.register(MarkdownSummary(config, paths), "budget-markdown")
