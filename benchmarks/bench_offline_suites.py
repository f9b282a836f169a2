"""Wall and CPU time of the offline suites, with -n 0 and -n 2 (issue 21 item 7).

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_offline_suites.py                 # all, -n 0 then -n 2
    .venv/bin/python benchmarks/bench_offline_suites.py --suites planning,triage,awareness,all
    .venv/bin/python benchmarks/bench_offline_suites.py --workers 0,2,4
    .venv/bin/python benchmarks/bench_offline_suites.py --before /tmp/old   # before/after

``--oracle`` instead times the triage bootstrap's V_oracle for one cell whose 30 items carry
their own whole values (1,000 resamples): the dynamic programme over value against the
exact solver per resample, checking they agree.

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


def oracle_cell(repeat: int = 3) -> None:
    """Per-cell V_oracle with whole values: all resamples at once vs one by one."""
    import numpy as np

    from pytest_budget._stats.bootstrap import counts_from_indices, resample_indices
    from pytest_budget.triage import _intervals as intervals
    from pytest_budget.triage._scoring import oracle_value

    rng = np.random.default_rng(3)
    costs = rng.integers(50, 4000, size=30).astype(np.int64)
    solved = rng.random(30) < 0.7
    values = rng.choice([1.0, 2.0, 3.0, 5.0, 8.0], size=30)
    indices = resample_indices(30, 1000, 7)
    counts = counts_from_indices(indices, 30)
    for alpha in (0.25, 0.5, 0.75):
        budget = np.floor(alpha * (counts @ costs).astype(np.float64) + 1e-9).astype(np.int64)
        fast = slow = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            got = intervals._oracle_values(indices, counts, costs, solved, values, budget)
            fast = min(fast, time.perf_counter() - start)
        start = time.perf_counter()
        want = [oracle_value(costs[r], solved[r], values[r], int(b)).value for r, b in zip(
            indices, budget, strict=True
        )]  # fmt: skip
        slow = time.perf_counter() - start
        assert got.tolist() == want
        print(f"alpha {alpha}: all resamples at once {fast * 1000:7.1f} ms, "
              f"per resample {slow * 1000:7.1f} ms, equal")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="all", help="comma-separated (default: all)")
    parser.add_argument("--workers", default="0,2", help="comma-separated -n values")
    parser.add_argument("--before", default=None, help="also time the package in this dir")
    parser.add_argument("--oracle", action="store_true", help="time the triage V_oracle only")
    args = parser.parse_args()
    if args.oracle:
        oracle_cell()
        return 0
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
