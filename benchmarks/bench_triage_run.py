"""Wall time of the default ``pytest --budget-suite=triage`` run, with -n 0 and -n 2.

Run: ``python benchmarks/bench_triage_run.py`` (uses the ``pytest`` next to this Python).
Each configuration runs in a fresh temporary directory with pytest's cache disabled, so
Phase 0 is measured too; the best of ``--repeat`` runs is reported.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time


def wall_time(extra: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--budget-suite=triage",
                "-p",
                "no:cacheprovider",
                "-q",
                *extra,
            ],
            cwd=folder,
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for label, extra in (("-n 0", ["-n", "0"]), ("-n 2", ["-n", "2"]), ("no xdist", [])):
        best = min(wall_time(extra) for _ in range(args.repeat))
        print(f"pytest --budget-suite=triage {label}: {best:.2f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
