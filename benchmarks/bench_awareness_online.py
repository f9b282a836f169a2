"""Wall time of the default offline run with and without the awareness online cells.

    python benchmarks/bench_awareness_online.py          # each command twice, fresh dirs

The online mode is opt-in (``--budget-awareness-mode=replay`` is the default), so the
default ``pytest --budget-suite=all`` must not get slower than 25% (issue 24); the second
command shows what ``--budget-awareness-mode=both`` adds (48 online cells: 4 environments x
3 cap levels x 4 reference agents, 32 episodes each, online and in replay mode).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "default (replay)": ["--budget-suite=all"],
    "with online cells": ["--budget-suite=all", "--budget-awareness-mode=both"],
}


def run(args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q"],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}")
    return elapsed


def main() -> None:
    for label, args in COMMANDS.items():
        times = [run(args) for _ in range(2)]
        print(f"{label:20s} {' '.join(args):55s} " + "  ".join(f"{t:6.1f} s" for t in times))


if __name__ == "__main__":
    main()
