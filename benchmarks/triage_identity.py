"""Are two checkouts' triage scores bit-identical?  Runs the default triage suite with each
``pytest`` (cold folder, then warm: the same folder again; ``-n 0`` and ``-n 2``), writes
``--budget-report`` files and compares every field of them except wall times, creation
date, interpreter and file paths (and, under ``-n 2``, the two Phase 0 counters the
workers race for: :data:`RACED`).  Floats compare by their exact ``repr``.

Run: ``python benchmarks/triage_identity.py BEFORE/bin/pytest AFTER/bin/pytest [-- EXTRA ...]``
(EXTRA: more pytest options for both, e.g. ``-- --budget-seed=7``).  Exit status 1 on any
difference, each difference printed with its path in the report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Fields that differ between any two runs (timings, dates, paths), at any depth.
IGNORED = {"duration_s", "created", "python", "cache_dir", "report_path", "html_path"}
IGNORED |= {"snapshot_dir", "price_file"}
#: Under -n 2 also these Phase 0 counters: which worker measures a shared item first (and
#: which one reads it from the other's cache) is a race, so they differ between two runs
#: of the same checkout too.
RACED = {"from_cache", "measured"}


def _run(pytest: str, folder: Path, extra: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest -p no:benchmark -p no:platformdirs"
    command = [pytest, "-q", "--budget-suite=triage", "--budget-report=r.json", *extra]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True)
    if done.returncode not in (0, 1):  # 1: cells failed their gate (compared too)
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]!r}")
    report: dict[str, Any] = json.loads((folder / "r.json").read_text())
    report["exit status"] = done.returncode
    return report


def _normal(value: Any, ignored: set[str] = IGNORED) -> Any:
    """The comparable form: ignored keys dropped, cells in a fixed order, floats as repr."""
    if isinstance(value, dict):
        return {k: _normal(v, ignored) for k, v in value.items() if k not in ignored}
    if isinstance(value, list):
        items = [_normal(v, ignored) for v in value]
        if items and all(isinstance(v, dict) and "cell" in v for v in items):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    if isinstance(value, float):
        return repr(value)
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in set(a) ^ set(b)]
        for key in sorted(set(a) & set(b)):
            out += _differences(a[key], b[key], f"{path}/{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:80]} != {str(b)[:80]}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    failed = False
    for workers in (["-n", "0"], ["-n", "2"]):
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
            for state in ("cold", "warm"):
                extra = [*workers, *args.extra]
                ignored = IGNORED | RACED if workers[1] != "0" else IGNORED
                before = _normal(_run(args.before, Path(one), extra), ignored)
                after = _normal(_run(args.after, Path(two), extra), ignored)
                found = _differences(before, after)
                cells = len(before.get("cells", []))
                print(f"{' '.join(workers)} {state}: {cells} cells, {len(found)} differences")
                for line in found[:20]:
                    print("  ", line)
                failed |= bool(found) or cells == 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
