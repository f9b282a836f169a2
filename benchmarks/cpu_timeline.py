"""Where a run's CPU goes, per process (the controller and each xdist worker), by phase.

A pytest plugin and its read-out.  Wall times on a shared machine mislead; each process's
own CPU time (``time.process_time``) does not depend on what else the machine runs, so a
``-n 2`` run can be accounted against the same run at ``-n 0``: start-up (imports, plugin
loading, collection), the cells, the end.  The process's CPU after ``atexit`` (the
interpreter's own finalization) is the total from ``/usr/bin/time`` minus the sum of the
processes' ``exit`` figures.  Usage, from a fresh folder (VENV: a pip-installed virtualenv):

    CPU_TIMELINE=/tmp/tl PYTHONPATH=/path/to/benchmarks /usr/bin/time -f "%e %U %S" \
        VENV/bin/pytest -p cpu_timeline --budget-suite=all -q -n 2
    python benchmarks/cpu_timeline.py /tmp/tl

Each process writes ``/tmp/tl/<ctrl|gwN>.json``: its events (name, CPU s, wall s since its
start), each test's CPU seconds and the garbage collector's CPU seconds by generation (up to
the ``atexit`` dump).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_OUT = os.environ.get("CPU_TIMELINE", "")
_WALL0 = time.time()
_events: list[tuple[str, float, float]] = []
_items: dict[str, float] = {}
_started: dict[str, float] = {}
#: CPU seconds spent in the garbage collector, by generation (its start time while one runs).
_gc_cpu = [0.0, 0.0, 0.0]
_gc_start = [0.0]


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_start[0] = time.process_time()
    else:
        _gc_cpu[info["generation"]] += time.process_time() - _gc_start[0]


def _log(what: str) -> None:
    _events.append((what, round(time.process_time(), 3), round(time.time() - _WALL0, 3)))


def pytest_configure(config: Any) -> None:
    _log("configured")


def pytest_collection_finish(session: Any) -> None:
    _log("collected")


def pytest_runtest_protocol(item: Any, nextitem: Any) -> None:
    if not _items and not _started:
        _log("first test")
    _started[item.nodeid] = time.process_time()


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    start = _started.pop(nodeid, None)
    if start is not None:
        _items[nodeid] = round(time.process_time() - start, 4)


def pytest_sessionfinish(session: Any) -> None:
    _log("session finish")


def _dump() -> None:
    _log("exit")
    if _OUT:
        Path(_OUT).mkdir(parents=True, exist_ok=True)
        name = os.environ.get("PYTEST_XDIST_WORKER", "ctrl")
        data = {"events": _events, "items": _items, "gc": [round(x, 3) for x in _gc_cpu]}
        (Path(_OUT) / f"{name}.json").write_text(json.dumps(data))


_log("imported")
atexit.register(_dump)
gc.callbacks.append(_gc_timer)


def _show(folder: Path) -> None:
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        phases = " ".join(f"{name}={cpu:.2f}c/{wall:.2f}w" for name, cpu, wall in data["events"])
        by_suite: dict[str, float] = defaultdict(float)
        for nodeid, cpu in data["items"].items():
            by_suite[nodeid.split("::")[-1].split("[")[0]] += cpu
        cells = " ".join(f"{k}={v:.2f}" for k, v in sorted(by_suite.items()))
        print(f"{path.stem}: {phases}\n    tests' CPU {sum(by_suite.values()):.2f} s: {cells}")
        if "gc" in data:  # the collector's CPU (any phase), generations 0/1/2
            print(
                f"    gc CPU {sum(data['gc']):.2f} s: " + "/".join(f"{x:.2f}" for x in data["gc"])
            )


if __name__ == "__main__":
    _show(Path(sys.argv[1]))
