"""Wall and CPU time of the offline suites, with -n 0 and -n 2 (issue 21 item 7).

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_offline_suites.py                 # all, -n 0 then -n 2
    .venv/bin/python benchmarks/bench_offline_suites.py --suites planning,triage,awareness,all
    .venv/bin/python benchmarks/bench_offline_suites.py --workers 0,2,4
    .venv/bin/python benchmarks/bench_offline_suites.py --before /tmp/old   # before/after

``--before DIR`` also times the package found in DIR (a checkout of an older commit whose
``pytest_budget/suites`` and ``pytest_budget/fixtures`` link to its ``suites/`` and
``fixtures/``, put first on ``PYTHONPATH``), run by run right before the current one.

Each run is ``pytest --budget-suite=SUITE -p no:cacheprovider -q -n N`` in a fresh empty
temporary directory (so the default run gates against the packaged baselines, as the offline
main job does), one run after the other on the same machine.  Reported per run: wall
seconds, CPU seconds of the pytest process and its workers (user + system, from
``getrusage(RUSAGE_CHILDREN)``), and the speed-up of each worker count over the first one
(target: -n 2 at least 1.6x over -n 0 on ``all``).  A run that does not pass is reported as
failed and makes the script exit 1.  The machine may be shared: compare ratios from one
invocation, not figures across invocations.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(suite: str, workers: int, path: str | None = None) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of one run, its exit status and its last output line (``path``:
    put first on ``PYTHONPATH``)."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path
    command = [sys.executable, "-m", "pytest", f"--budget-suite={suite}", "-p", "no:cacheprovider"]
    command += ["-q", "-n", str(workers)]
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as directory:
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, check=False, env=env
        )
        wall = time.perf_counter() - start
        cpu = _children_cpu() - cpu
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return wall, cpu, done.returncode, lines[-1] if lines else done.stderr.strip()[-200:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="all", help="comma-separated (default: all)")
    parser.add_argument("--workers", default="0,2", help="comma-separated -n values")
    parser.add_argument("--before", default=None, help="also time the package in this dir")
    args = parser.parse_args()
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    failed = False
    print(f"{'suite':<10} {'code':<7} {'-n':>3} {'wall s':>8} {'cpu s':>8} {'speed-up':>9}  result")
    for suite in suites:
        first: dict[str, float] = {}
        for n in workers:
            for label, path in [("before", args.before), ("now", None)]:
                if label == "before" and not path:
                    continue
                wall, cpu, status, last = run_suite(suite, n, path)
                first.setdefault(label, wall)
                failed |= status != 0
                print(
                    f"{suite:<10} {label:<7} {n:>3} {wall:8.1f} {cpu:8.1f} "
                    f"{first[label] / wall:8.2f}x  "
                    f"{'ok' if status == 0 else f'FAILED ({status})'}: {last}",
                    flush=True,
                )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
