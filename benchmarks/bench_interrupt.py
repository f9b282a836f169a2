"""Seconds from Ctrl-C to the end of a live triage run, with and without xdist (issue 21
item 5: within 5 s).

    python benchmarks/bench_interrupt.py [--workers 0 2] [--repeats 3]

A real ``pytest --budget-suite=triage`` subprocess against tests/model_server.py on loopback
(0.4 s per answer, 4 calls in flight per process); once the server has received 12 requests,
SIGINT goes to the run's whole process group (what Ctrl-C in a terminal does).  Prints, per
worker count, the seconds until the run exited (min / median / max over the repeats) and
the exit status (2: interrupted).

Most of what is left is other plugins' end of session: with ``PYTHONDONTWRITEBYTECODE=1``
and no cached rewrite, hypothesis's pytest plugin imports (and pytest assertion-rewrites)
the whole hypothesis package at every session end, about 1.5 s on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.model_server import ModelServer


def once(workers: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as folder, ModelServer(latency=0.4) as server:
        command = [
            sys.executable, "-m", "pytest", "--budget-suite=triage", "--budget-agent=openai:m",
            "--budget-pool-size=30", "--budget-alpha=0.25,0.5,0.75,1", "--budget-gate=off",
            "--budget-concurrency=4", "--budget-cache-dir=cache", "--budget-report=r.json",
            "-p", "no:cacheprovider", "-n", workers, f"--budget-base-url={server.url}",
        ]  # fmt: skip
        env = {**os.environ, "PYTEST_ADDOPTS": "", "OPENAI_API_KEY": "bench"}
        run = subprocess.Popen(
            command, cwd=folder, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while len(server.requests) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGINT)
        start = time.monotonic()
        code = run.wait(timeout=60)
        return time.monotonic() - start, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", nargs="+", default=["0", "2"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for workers in args.workers:
        results = [once(workers) for _ in range(args.repeats)]
        took = sorted(t for t, _ in results)
        codes = sorted({c for _, c in results})
        print(
            f"-n {workers}: Ctrl-C to exit {took[0]:.2f} / {statistics.median(took):.2f} / "
            f"{took[-1]:.2f} s (min / median / max of {len(took)}), exit status {codes}"
        )


if __name__ == "__main__":
    main()
