"""One inner run as this project's own tests start it through pytester (the unit of their cost).

    farm-bench -n 5 --timeout 900 --vs 'python benchmarks/bench_pytester_run.py' \\
        -- python benchmarks/bench_pytester_run.py --no-hypothesis

Runs, in a fresh temporary folder and a fresh interpreter, the small triage suite most
pytester tests run (``--budget-pool-size=6``, gate off), with hypothesis's pytest plugin on
(as installed) or off (``--no-hypothesis``: ``-p no:hypothesispytest`` in PYTEST_ADDOPTS,
what tests/conftest.py gives every pytester run).  The plugin imports all of hypothesis at
the end of every run, though no such run uses it.  Exits with the inner run's exit code.

2026-11-28, 2c (a machine loaded by other jobs): cpu median 5.43 s on -> 3.63 s off, A/B cpu
0.672 (0.599-0.728 over 5 pairs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ARGS = ("--budget-suite=triage", "--budget-pool-size=6", "--budget-alpha=0.5",
        "--budget-unsolvable=0", "--budget-gate=off", "-p", "no:cacheprovider")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-hypothesis", action="store_true", help="-p no:hypothesispytest")
    options = parser.parse_args()
    env = dict(os.environ)
    quiet = "-o asyncio_default_fixture_loop_scope=function"  # as conftest.py sets it
    hypothesis_off = "-p no:hypothesispytest " if options.no_hypothesis else ""
    env["PYTEST_ADDOPTS"] = hypothesis_off + quiet
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *ARGS], cwd=folder, env=env, check=False,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
