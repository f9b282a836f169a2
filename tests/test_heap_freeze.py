"""An engaged run keeps the garbage collector off what is alive after collection
(``pytest_budget._plugin.heap``) and hands it back at its end; an unrelated run does not."""

from __future__ import annotations

import gc

import pytest

from tests import inprocess

_PROBE = """
import gc

def test_probe():
    print("FROZEN", gc.get_freeze_count())
"""


def _frozen_during(pytester: pytest.Pytester, *args: str) -> int:
    pytester.makepyfile(test_probe=_PROBE)
    result = inprocess.run(pytester, "-s", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    (line,) = [line for line in result.outlines if "FROZEN" in line]
    return int(line.split("FROZEN")[1])


def test_an_engaged_run_freezes_after_collection_and_unfreezes_at_its_end(
    pytester: pytest.Pytester,
) -> None:
    assert gc.get_freeze_count() == 0
    frozen = _frozen_during(pytester, "--budget-seed=7")
    # Everything alive after collection: the test item, its module, pytest's own objects.
    assert frozen > 1000
    assert gc.get_freeze_count() == 0


def test_an_unrelated_run_freezes_nothing(pytester: pytest.Pytester) -> None:
    assert _frozen_during(pytester) == 0
    assert gc.get_freeze_count() == 0


def test_objects_frozen_by_someone_else_are_left_to_them(pytester: pytest.Pytester) -> None:
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        # Frozen objects freed meanwhile leave the count; the run adds none (it would add
        # thousands, as above) and unfreezes none.
        assert _frozen_during(pytester, "--budget-seed=7") <= before
        assert 0 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()


_AT_EXIT = """
import atexit, gc, os

def _report():
    with open(os.environ["FREEZE_LOG"], "a") as log:
        log.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {gc.get_freeze_count()}\\n")

atexit.register(_report)
"""


def _frozen_at_exit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> dict[str, int]:
    log = pytester.path / "freeze.log"
    monkeypatch.setenv("FREEZE_LOG", str(log))
    # Under this suite's own -n 2 the test runs in an xdist worker, whose variables the
    # command would inherit: the command's own process must log as "main".
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(_AT_EXIT)
    pytester.makepyfile(test_probe="def test_probe():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    return {name: int(count) for name, count in (x.split() for x in log.read_text().splitlines())}


def test_a_process_that_ends_with_the_run_exits_frozen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pytest command and each xdist worker keep what is alive frozen to their exit, so
    # the interpreter's closing collection walks nothing (the in-process runs above unfreeze).
    counts = _frozen_at_exit(pytester, monkeypatch, "--budget-seed=7", "-n", "1")
    assert sorted(counts) == ["gw0", "main"]
    assert all(count > 1000 for count in counts.values()), counts


def test_an_unrelated_command_exits_unfrozen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _frozen_at_exit(pytester, monkeypatch) == {"main": 0}


_CONTROLLER_PROBE = """
import gc, os

def pytest_runtest_logreport(report):
    if report.when == "call" and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(os.environ["FREEZE_LOG"], "a") as log:
            log.write(f"{gc.get_freeze_count()}\\n")
"""


def test_an_xdist_controller_freezes_before_the_reports_come(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The controller collects nothing; it freezes when its worker has collected, so the
    # reports it reads find its start-up heap frozen, and it unfreezes at its end.
    log = pytester.path / "freeze.log"
    monkeypatch.setenv("FREEZE_LOG", str(log))
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    assert gc.get_freeze_count() == 0
    pytester.makeconftest(_CONTROLLER_PROBE)
    pytester.makepyfile(test_probe="def test_probe():\n    pass\n")
    result = inprocess.run(pytester, "-p", "no:cacheprovider", "--budget-seed=7", "-n", "1")
    result.assert_outcomes(passed=1)
    (count,) = [int(line) for line in log.read_text().splitlines()]
    assert count > 1000
    assert gc.get_freeze_count() == 0
