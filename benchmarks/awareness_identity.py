"""Bit-identity check of the default awareness run between two installs (before / after).

    python benchmarks/awareness_identity.py BEFORE_VENV AFTER_VENV OUT_DIR

Each venv runs ``pytest --budget-suite=awareness`` in a fresh empty folder (cold) and again
in the same folder (warm, reading its .pytest_cache), with ``-n 0`` and ``-n 2``, writing
``--budget-report``.  Every field of the two reports is compared except timings and paths
(``created``, ``duration_s``, the option paths); cells are matched by node id.  The
``.pytest_cache`` folders (rollout cache files) must be byte-identical too.  Exit 1 on any
difference.  Run it on a quiet machine: under heavy load a cold run's bundled search server
can miss its 5 s health check.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

IGNORED = {"created", "duration_s", "report_path", "snapshot_dir", "cache_dir", "html_path"}
ADDOPTS = "-p no:hypothesispytest -p no:benchmark -p no:platformdirs"


def _runs(venv: Path, out: Path) -> None:
    """cold-n{0,2}.json, warm-n{0,2}.json and cache-n{0,2}/ under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTEST_ADDOPTS": ADDOPTS}
    for workers in (0, 2):
        with tempfile.TemporaryDirectory() as folder:
            for kind in ("cold", "warm"):
                report = out / f"{kind}-n{workers}.json"
                cmd = [str(venv / "bin" / "pytest"), "-q", "--budget-suite=awareness"]
                cmd += ["-n", str(workers), f"--budget-report={report}"]
                subprocess.run(cmd, cwd=folder, env=env, capture_output=True, check=False)
            shutil.copytree(Path(folder) / ".pytest_cache", out / f"cache-n{workers}")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _differences(a: Any, b: Any, path: str, out: list[str]) -> int:
    """Leaf values compared; differences appended to ``out``."""
    if type(a) is not type(b):
        out.append(f"{path}: {type(a).__name__} != {type(b).__name__}")
        return 1
    if isinstance(a, dict):
        out += [f"{path}/{k}: in one report only" for k in sorted(set(a) ^ set(b))]
        return sum(_differences(a[k], b[k], f"{path}/{k}", out) for k in sorted(set(a) & set(b)))
    if isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)}")
            return 1
        return sum(
            _differences(x, y, f"{path}[{i}]", out)
            for i, (x, y) in enumerate(zip(a, b, strict=True))
        )
    if a != b and not (a != a and b != b):  # NaN equals NaN here
        out.append(f"{path}: {a!r:.80} != {b!r:.80}")
    return 1


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if (
        cmp.left_only
        or cmp.right_only
        or filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)[1:] != ([], [])
    ):
        return False
    return all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def main(before: Path, after: Path, out: Path) -> int:
    _runs(before, out / "before")
    _runs(after, out / "after")
    failed = False
    for name in ("cold-n0", "warm-n0", "cold-n2", "warm-n2"):
        a, b = (
            _plain(json.loads((out / s / f"{name}.json").read_text())) for s in ("before", "after")
        )
        for report in (a, b):
            report["cells"].sort(key=lambda cell: cell["nodeid"])
        found: list[str] = []
        leaves = _differences(a, b, "", found)
        print(f"{name}: {len(a['cells'])} cells, {leaves} values, {len(found)} differences")
        print("".join(f"  {line}\n" for line in found[:20]), end="")
        failed = failed or bool(found)
    for workers in (0, 2):
        same = _same_tree(out / "before" / f"cache-n{workers}", out / "after" / f"cache-n{workers}")
        print(f"cache-n{workers}: {'byte-identical' if same else 'DIFFERENT'}")
        failed = failed or not same
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*(Path(arg) for arg in sys.argv[1:])))
