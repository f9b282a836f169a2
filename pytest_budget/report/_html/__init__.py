"""The HTML report: one self-contained page of score tables and the papers' figures.

``pytest --budget-html=PATH`` writes it at the end of a run; ``budget-report render``
(:func:`render_command`) writes it from saved JSON reports, one after the other or, with
``--compare``, two runs side by side with the deltas marked.  The figures need
matplotlib, the ``report`` extra (``pip install "pytest-budget[report]"``); it is
imported only when a page is drawn, never when this package is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_budget._core.files import write_atomic

__all__ = [
    "INSTALL_HINT",
    "MissingReportExtra",
    "render_command",
    "render_html",
    "require_matplotlib",
    "write_html_report",
]

INSTALL_HINT = 'pip install "pytest-budget[report]"'


class MissingReportExtra(ImportError):
    """matplotlib is not installed; the message says how to install it (one line)."""


def require_matplotlib() -> None:
    """Fail with a one-line install hint when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401 - only checking that it imports
    except ImportError as exc:
        raise MissingReportExtra(
            f"the HTML report needs matplotlib ({exc.msg or exc}); install it with: {INSTALL_HINT}"
        ) from None


def render_html(
    reports: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    compare: bool = False,
    sample_cap: int | None = None,
    workers: int | None = None,
) -> str:
    """The page for ``(label, report document)`` pairs (see :func:`render_page`);
    ``sample_cap``: samples per cell on the page (default
    :data:`~pytest_budget.report._html.drill_data.SAMPLE_CAP`); ``workers``: processes drawing the
    figures (default: every core this process may use, up to 4; the page is the same)."""
    require_matplotlib()
    from pytest_budget.report._html.drill_data import SAMPLE_CAP
    from pytest_budget.report._html.page import render_page

    cap = SAMPLE_CAP if sample_cap is None else sample_cap
    return render_page(reports, compare=compare, sample_cap=cap, workers=workers)


def write_html_report(
    path: str | os.PathLike[str], report: Mapping[str, Any], *, label: str = "this run"
) -> Path:
    """Write the page of one report document (what ``--budget-html`` does), atomically."""
    return write_atomic(path, render_html([(label, report)]))


def render_command(
    reports: Sequence[str], output: str, *, compare: bool, sample_cap: int | None = None
) -> int:
    """``budget-report render``: exit 0 when written, 2 on a one-line error.

    A report file that cannot be used raises
    :class:`~pytest_budget.report._document.ReportFileError`
    (the command line prints it and exits 2).
    """
    from pytest_budget.report._document import load_report

    try:
        require_matplotlib()
    except MissingReportExtra as exc:
        print(f"budget-report: error: {exc}", file=sys.stderr)
        return 2
    if compare and len(reports) != 2:
        print(
            f"budget-report: error: --compare takes exactly two reports (baseline first, "
            f"then the new run), got {len(reports)}",
            file=sys.stderr,
        )
        return 2
    if sample_cap is not None and sample_cap < 0:
        print(
            f"budget-report: error: --sample-cap must be 0 or more, got {sample_cap}",
            file=sys.stderr,
        )
        return 2
    documents = [(str(path), load_report(path)) for path in reports]
    page = render_html(documents, compare=compare, sample_cap=sample_cap)
    try:
        written = write_atomic(output, page)
    except OSError as exc:
        print(
            f"budget-report: error: cannot write {output}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    kind = "comparison" if compare else f"{len(documents)} report(s)"
    print(f"budget-report: wrote {written} ({kind})")
    return 0
