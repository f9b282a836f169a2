"""Real runs the HTML browser tests share, made once per test session.

``tests/test_html_browser.py`` and ``tests/test_html_drill_browser.py`` both need the page
and JSON report of one small run of every suite (seed 42, :data:`RUN_ARGS`); each used to
make its own.  :func:`shared_run` makes it once: under ``pytest -n`` the first worker to ask
makes it in the session's temporary folder, holding a file lock, and a worker that asks
later (or while it is being made) reads it from there.  Without xdist it is made once in
this process's temporary folder.  The folder is per session (pytest's base temporary
folder), so nothing is reused from an earlier session.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

# Small but complete: every figure has data (several alphas and unsolvable ratios, a
# three-budget environment, two static levels and two blocking families).
RUN_ARGS = (
    "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-q", "--budget-gate=off", "--budget-suite=all",
    "--budget-pool-size=6", "--budget-alpha=0.25,0.5,1", "--budget-unsolvable=0,0.5,1",
    "--budget-env=sokoban-6x6,warehouse", "--budget-rollout-count=8",
    "--budget-task=dining,shopping", "--budget-query-count=2",
    "--budget-scenario=static@1,static@3,ban_tool:1@3,cost_change:2@3",
)  # fmt: skip

#: The seed-42 run: its JSON report ``r42.json`` and its ``--budget-html`` page ``page.html``.
SEED_42 = (*RUN_ARGS, "--budget-seed=42", "--budget-report=r42.json", "--budget-html=page.html")


def run_env() -> dict[str, str]:
    """This process's environment without PYTEST_ADDOPTS (the runs take only their args)."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}


def _root(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    # xdist workers' base folders (popen-gwN) share the session's folder above them
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_run(factory: pytest.TempPathFactory, args: tuple[str, ...]) -> Path:
    """The folder a ``pytest *args`` run wrote its files in (run once per session).

    Read-only for callers: copy a file before changing it.
    """
    key = hashlib.sha256("\0".join(args).encode()).hexdigest()[:16]
    root = _root(factory)
    folder = root / f"html-run-{key}"
    done = folder / ".done"
    with FileLock(str(root / f"html-run-{key}.lock")):
        if done.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # a failed attempt's leftovers
        folder.mkdir()
        run = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=folder, env=run_env(), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert run.returncode == 0, f"shared run failed:\n{run.stdout[-3000:]}{run.stderr[-2000:]}"
        done.write_text("ok\n", encoding="utf-8")
    return folder
