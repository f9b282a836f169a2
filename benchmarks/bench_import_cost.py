"""What installing pytest-budget costs an unrelated pytest run (target: ratio <= 1.05).

    python benchmarks/bench_import_cost.py                 # 200 trivial tests, 10 pairs
    python benchmarks/bench_import_cost.py --tests 500 --runs 20

A throwaway project with ``--tests`` trivial tests is run with ``pytest -q`` as installed
(the plugin loads through its entry point) and with ``pytest -q -p no:budget``, in
interleaved pairs so machine noise hits both alike.  Prints the median wall and CPU time of
each, the median of the pairs' ratios (the figure to quote: wall on a quiet machine, CPU
when other work shares it), and what the plugin run imported: which heavy modules (numpy,
the HTTP stack: none is the goal) and how many pytest_budget modules.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("numpy", "httpx", "httpcore", "httptools", "h11", "tenacity", "filelock")

# Read at unconfigure: what the plugin's session-finish work imports counts too.
_PROBE = """
import json, sys
def pytest_unconfigure(config):
    heavy = {heavy!r}
    ours = [m for m in sys.modules if m.startswith("pytest_budget")]
    with open("loaded.json", "w") as handle:
        json.dump({{"heavy": [m for m in heavy if m in sys.modules], "ours": len(ours)}}, handle)
"""


def make_project(folder: Path, tests: int) -> None:
    body = "\n".join(f"def test_{i}():\n    assert {i} + 1 > {i}\n" for i in range(tests))
    (folder / "test_trivial.py").write_text(body, encoding="utf-8")


def timed_run(folder: Path, *extra: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *extra],
        cwd=folder,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def loaded_heavy(folder: Path, *extra: str) -> str:
    probe = folder / "probe"
    probe.mkdir(exist_ok=True)
    (probe / "conftest.py").write_text(_PROBE.format(heavy=HEAVY), encoding="utf-8")
    (probe / "test_probe.py").write_text("def test_probe():\n    pass\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=probe,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return (probe / "loaded.json").read_text(encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_project(folder, args.tests)
        timed_run(folder)  # warm the file-system cache and write .pytest_cache once
        timed_run(folder, "-p", "no:budget")
        pairs: list[tuple[tuple[float, float], tuple[float, float]]] = []
        for _ in range(args.runs):
            pairs.append((timed_run(folder), timed_run(folder, "-p", "no:budget")))
        print(f"{args.tests} trivial tests, {args.runs} interleaved pairs of pytest -q")
        for index, what in enumerate(("wall", "cpu")):
            a = statistics.median(p[0][index] for p in pairs)
            b = statistics.median(p[1][index] for p in pairs)
            ratio = statistics.median(p[0][index] / p[1][index] for p in pairs)
            print(f"  {what}: with pytest-budget {a:.3f} s, -p no:budget {b:.3f} s")
            print(f"  {what} ratio (median of pairs): {ratio:.3f} (target <= 1.05)")
        print(f"  imported with the plugin (heavy, pytest_budget modules): {loaded_heavy(folder)}")


if __name__ == "__main__":
    main()
