"""The page's figures drawn together (pytest_budget.report._html.batch): a worker that dies loses
no figure, and no report text stands for one.  That workers draw the same bytes is
checked on the full page in test_html_report.py."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from tests.test_html_report import _report, _triage_cell

pytest.importorskip("matplotlib")

FORKS = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="figures are drawn in forked workers on Linux"
)


def _figure() -> object:
    from pytest_budget.report._html.figures import finish, new_figure

    fig, axes = new_figure(1, 1, 3.0, 2.0)
    axes[0].plot([0, 1, 2], [1, 0, 2])
    return finish(fig)


@FORKS
def test_a_worker_that_dies_leaves_its_figure_to_the_page() -> None:
    from pytest_budget.report._html.batch import batched
    from pytest_budget.report._html.figures import draw_chart
    from pytest_budget.report._html.layout import chart_html

    here = os.getpid()

    def dies_in_a_worker() -> object:
        if os.getpid() != here:
            os._exit(3)  # as a worker killed by the kernel would
        return _figure()

    with batched(workers=2) as batch:
        page = "".join(
            chart_html(draw_chart(f"f{i}", f"figure {i}", "", dies_in_a_worker), "")
            for i in range(3)
        )
    filled = batch.fill(page, chart_html)
    assert filled.count("data:image/png;base64,") == 3
    with batched(workers=1) as batch:
        alone = chart_html(draw_chart("f0", "figure 0", "", _figure), "")
    assert batch.fill(alone, chart_html) in filled


def test_no_workers_while_other_threads_run() -> None:
    from pytest_budget.report._html.batch import default_workers

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert default_workers(15) == 1  # fork with threads running could deadlock
    finally:
        stop.set()
        thread.join()
    assert default_workers(1) == 1


def test_a_report_text_cannot_stand_for_a_figure() -> None:
    from pytest_budget.report._html import render_html

    cells = [_triage_cell("a", 0.5, 0.0)]
    cells[0]["reason"] = "\x00figure-0\x00 not a figure"
    cells[0]["outcome"] = "error"
    page = render_html([("r", _report(cells))], workers=1)
    assert "\x00figure-0\x00 not a figure" in page
