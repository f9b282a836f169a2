"""What installing pytest-budget costs an unrelated pytest run (target: ratio <= 1.05).

    python benchmarks/bench_import_cost.py                 # 200 trivial tests, 10 runs each
    python benchmarks/bench_import_cost.py --tests 500 --runs 20

A throwaway project with ``--tests`` trivial tests is run with ``pytest -q`` as installed
(the plugin loads through its entry point) and with ``pytest -q -p no:budget``, alternating
the two so machine noise hits both alike.  Prints the median wall time of each and their
ratio, and which heavy modules (numpy, the HTTP stack) the plugin run imported (none is
the goal: they load only when a budget suite or a budget fixture is used).
"""

from __future__ import annotations

import argparse
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


def timed_run(folder: Path, *extra: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *extra],
        cwd=folder,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


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
        with_plugin: list[float] = []
        without: list[float] = []
        for _ in range(args.runs):
            with_plugin.append(timed_run(folder))
            without.append(timed_run(folder, "-p", "no:budget"))
        a, b = statistics.median(with_plugin), statistics.median(without)
        print(f"{args.tests} trivial tests, median of {args.runs} runs of pytest -q")
        print(f"  with pytest-budget : {a:.3f} s")
        print(f"  -p no:budget       : {b:.3f} s")
        print(f"  ratio              : {a / b:.3f} (target <= 1.05)")
        print(f"  imported with the plugin (heavy, pytest_budget modules): {loaded_heavy(folder)}")


if __name__ == "__main__":
    main()
