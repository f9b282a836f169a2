"""Every bad option and file is one line, exit status 4 (usage error), before any work."""

from __future__ import annotations

import time

import pytest

from tests import inprocess

SUITE = ("--budget-suite=triage", "-p", "no:cacheprovider")


def _setup(pytester: pytest.Pytester) -> None:
    (pytester.path / "afile").write_text("not a directory\n", encoding="utf-8")
    (pytester.path / "adir").mkdir()
    deep = "[" * 200_000
    (pytester.path / "deep.jsonl").write_text(deep + "\n", encoding="utf-8")
    (pytester.path / "deep_prices.json").write_text("{" + '"a":' * 1 + deep + "\n", "utf-8")


CASES = {
    "pool line of 200,000 [": (
        ["--budget-pool=deep.jsonl"],
        "ERROR: *deep.jsonl:1: JSON nested too deeply to read; write one flat JSON object per line",
    ),
    "cache dir is a file": (
        ["--budget-cache-dir=afile"],
        "ERROR: --budget-cache-dir: */afile is a file; give a directory (it is created)",
    ),
    "cache dir under a file": (
        ["--budget-cache-dir=afile/sub"],
        "ERROR: --budget-cache-dir: */afile is a file, so */afile/sub cannot be created; give "
        "a directory path",
    ),
    "snapshot dir is a file": (
        ["--budget-snapshot-dir=afile"],
        "ERROR: --budget-snapshot-dir: */afile is a file; give a directory (it is created)",
    ),
    "report is a directory": (
        ["--budget-report=adir"],
        "ERROR: --budget-report: */adir is a directory; give a file path inside it",
    ),
    "report in a missing directory": (
        ["--budget-report=missing/r.json"],
        "ERROR: --budget-report: directory */missing does not exist; create it first or give a "
        "path in an existing directory",
    ),
    "html in a missing directory": (
        ["--budget-html=missing/page.html"],
        "ERROR: --budget-html: directory */missing does not exist; create it first or give a "
        "path in an existing directory",
    ),
    "pool size 99999999999": (
        ["--budget-pool-size=99999999999"],
        "ERROR: --budget-pool-size: must be at most 10000, got 99999999999",
    ),
    "empty suite": (
        ["--budget-suite="],
        "ERROR: --budget-suite: empty value ''; give a value (see pytest --help) or leave the "
        "option out for its default",
    ),
    "suite of commas": (
        ["--budget-suite=,"],
        "ERROR: --budget-suite: empty value ','; give a value (see pytest --help) or leave the "
        "option out for its default",
    ),
    "empty agent": (
        ["--budget-agent="],
        "ERROR: --budget-agent: empty value ''; give a value (see pytest --help) or leave the "
        "option out for its default",
    ),
    "empty pool": (
        ["--budget-pool="],
        "ERROR: --budget-pool: empty value ''; give a value (see pytest --help) or leave the "
        "option out for its default",
    ),
    "deep price file": (
        ["--budget-price-file=deep_prices.json"],
        "ERROR: --budget-price-file deep_prices.json: JSON nested too deeply to read",
    ),
    "repeat 10**9": (
        ["--budget-repeat=1000000000"],
        "ERROR: --budget-repeat: must be at most 1000, got 1000000000",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_one_line_and_exit_4(pytester: pytest.Pytester, case: str) -> None:
    _setup(pytester)
    args, line = CASES[case]
    started = time.monotonic()
    # In this process (tests/inprocess.py): a usage error is read off pytester's captured
    # stderr and exit status, the same as a process of its own gives.
    result = inprocess.run(pytester, *SUITE, *args)
    elapsed = time.monotonic() - started
    assert result.ret == 4, (result.stdout.str(), result.stderr.str())
    errors = [text for text in result.stderr.lines if text.strip()]
    assert len(errors) == 1, errors
    result.stderr.fnmatch_lines([line])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "collected" not in result.stdout.str()  # before any work
    assert elapsed < 60
