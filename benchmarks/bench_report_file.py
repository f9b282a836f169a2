"""The report file's size and its write/read time, in each form (issue 33).

Run a report first, then give it (any form: this version's pooled ``.json`` or
``.json.gz``, or a version 1 report with the samples in place)::

    pytest --budget-suite=all -n 2 --budget-report=r.json      # from an empty directory
    python benchmarks/bench_report_file.py r.json

For the forms below it prints the bytes on disk and the median of 5 interleaved write and
read times (``load_report`` reads every form; the expanded forms are written with
``json.dumps``, the pooled ones with ``write_report``):

* ``expanded, indent=2``: what version 1 wrote (samples in place, indented);
* ``expanded, compact``: the same without indentation;
* ``pooled .json``: what ``--budget-report=r.json`` writes now;
* ``pooled .json.gz``: what ``--budget-report=r.json.gz`` writes.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_budget.report._document import _encode, load_report, write_report


def _expanded(report: dict[str, Any], indent: int | None) -> Callable[[Path], None]:
    separators = None if indent else (",", ":")

    def write(path: Path) -> None:
        text = json.dumps(report, indent=indent, separators=separators, default=_encode)
        path.write_text(text + "\n", encoding="utf-8")

    return write


def _pooled(report: dict[str, Any]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        write_report(path, report)

    return write


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python benchmarks/bench_report_file.py REPORT", file=sys.stderr)
        return 2
    report = load_report(argv[0])
    cells = report["cells"]
    samples = sum(len(cell.samples or []) for cell in cells)
    print(f"{argv[0]}: {len(cells)} cells, {samples} samples")
    forms: list[tuple[str, str, Callable[[Path], None], Callable[[Path], Any]]] = [
        ("expanded, indent=2 (version 1)", "a.json", _expanded(report, 2), load_report),
        ("expanded, compact", "b.json", _expanded(report, None), load_report),
        ("pooled .json", "c.json", _pooled(report), load_report),
        ("pooled .json.gz", "d.json.gz", _pooled(report), load_report),
    ]
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, *_ in forms}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(5):  # interleaved: a drift of the machine's speed hits every form
            for name, file, write, read in forms:
                path = Path(folder) / file
                start = time.perf_counter()
                write(path)
                middle = time.perf_counter()
                read(path)
                times[name][0].append(middle - start)
                times[name][1].append(time.perf_counter() - middle)
        print(f"{'form':<32} {'bytes':>12} {'write s':>8} {'read s':>8}")
        for name, file, *_ in forms:
            size = (Path(folder) / file).stat().st_size
            write_s, read_s = (statistics.median(t) for t in times[name])
            print(f"{name:<32} {size:>12,} {write_s:>8.2f} {read_s:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
