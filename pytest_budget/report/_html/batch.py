"""Draw a page's figures together, on every core the run may use.

Drawing the figures is nearly all of the time a page takes (matplotlib lays out and
rasterises every panel, its ticks and texts; the tables and samples are a few percent), and
each figure is drawn on its own.  Inside :func:`batched`, :func:`~pytest_budget.report._html.
figures.draw_chart` only records the drawing and :func:`~pytest_budget.report._html.layout.
chart_html` leaves a placeholder; :meth:`Batch.fill` then draws every recorded figure,
in forked worker processes when the machine has more than one core to give, and puts each
figure in its place.  A worker runs the very same drawing code on a copy of this process,
so the page is the same bytes whichever way it was drawn (a test checks it).

Workers are forked (the drawings are closures over the report's cells, which need no
pickling then); where fork is unsafe (not Linux, or other threads running, as with live
model clients) or there is one core, everything is drawn here, one figure after the other.
A worker that dies leaves its figures to this process.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pytest_budget.report._html.figures import BATCH, Chart, Drawing, drawn_chart

__all__ = ["Batch", "batched", "default_workers", "placeholder"]

#: More workers than this gain little (15 figures a page) and cost memory.
MAX_WORKERS = 4


def default_workers(jobs: int) -> int:
    """Processes to draw ``jobs`` figures with: the cores this process may run on (at most
    :data:`MAX_WORKERS`), or 1 where forking is not safe."""
    if jobs < 2 or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, jobs, MAX_WORKERS))


@dataclass
class _Job:
    token: str
    key: str
    title: str
    caption: str
    draw: Drawing
    prefix: str | None = None  # set when the page places the figure


@dataclass
class Batch:
    """The figures recorded while a page is assembled, drawn by :meth:`fill`."""

    workers: int | None = None
    # A random part no report text can know in advance, so a placeholder is never forged.
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))
    jobs: dict[str, _Job] = field(default_factory=dict)

    def add(self, key: str, title: str, caption: str, draw: Drawing) -> Chart:
        token = f"\x00figure-{self.nonce}-{len(self.jobs)}\x00"
        self.jobs[token] = _Job(token, key, title, caption, draw)
        return Chart(key, title, caption, pending=token)

    def fill(self, html: str, render: Callable[[Chart, str], str]) -> str:
        """``html`` with every placeholder replaced by ``render(chart, prefix)`` of its
        drawn figure (figures never placed are not drawn)."""
        placed = [job for job in self.jobs.values() if job.prefix is not None]
        charts = _draw_all(placed, self.workers)
        for job, chart in zip(placed, charts, strict=True):
            html = html.replace(job.token, render(chart, job.prefix or ""))
        return html


def placeholder(chart: Chart, prefix: str) -> str:
    """What the page holds for a recorded figure until :meth:`Batch.fill` draws it."""
    batch = BATCH.get()
    token = chart.pending or ""
    if batch is None or token not in batch.jobs:
        raise RuntimeError(f"figure {chart.key} was recorded outside this page's batch")
    batch.jobs[token].prefix = prefix
    return token


@contextlib.contextmanager
def batched(workers: int | None = None) -> Iterator[Batch]:
    """Figures drawn inside are recorded in the batch yielded, for :meth:`Batch.fill`."""
    batch = Batch(workers)
    token = BATCH.set(batch)
    try:
        yield batch
    finally:
        BATCH.reset(token)


#: The jobs of the batch being drawn, read by forked workers (inherited, never pickled).
_JOBS: list[_Job] = []


def _draw_one(index: int) -> Chart:
    job = _JOBS[index]
    return drawn_chart(job.key, job.title, job.caption, job.draw)


def _draw_all(jobs: list[_Job], workers: int | None) -> list[Chart]:
    count = default_workers(len(jobs)) if workers is None else max(1, min(workers, len(jobs)))
    results: dict[int, Chart] = {}
    if count > 1:
        results = _draw_in_workers(jobs, count)
    # Here: everything on one core, or what a failed worker left.
    return [
        results[i] if i in results else drawn_chart(job.key, job.title, job.caption, job.draw)
        for i, job in enumerate(jobs)
    ]


def _draw_in_workers(jobs: list[_Job], count: int) -> dict[int, Chart]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # Loaded once here, so no worker loads matplotlib or its fonts again.
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    global _JOBS
    _JOBS = jobs
    results: dict[int, Chart] = {}
    # A figure whose worker failed, or a pool that could not start, is drawn here instead
    # (see _draw_all): the page never loses a figure to the workers.
    try:
        with contextlib.suppress(Exception):
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(count, mp_context=context) as pool:
                futures = {pool.submit(_draw_one, i): i for i in range(len(jobs))}
                for future, index in futures.items():
                    with contextlib.suppress(Exception):
                        results[index] = future.result()
    finally:
        _JOBS = []
    return results
