"""The README's main command, run the way a new user runs it: again and again in the same
directory with pytest's cache on, with and without ``-n 2`` (README.md's block of it is run
here, not by tests/test_docs_run.py).  Every run passes and prints the
same tables.

Values that travel through the pytest cache, a disk cache or JSON (rollout budgets read back
as ``2500.0`` instead of ``2500``; which xdist worker wrote the cache first) must not change
what a run compares against its baselines.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_budget._core.fingerprint import canonical_json, fingerprint
from pytest_budget.awareness._environments import ReferenceActor, RolloutCache
from pytest_budget.awareness._replay.rollouts import Rollout, Turn, as_read_back, read_rollouts

ROOT = Path(__file__).resolve().parent.parent
_TITLE = re.compile(r"^=+ (triage|awareness|planning): ")
# What follows the tables: syrupy's summary (not printed when pytest runs inside an xdist
# worker, as under this project's own `pytest -n 2`) or pytest's last line.
_AFTER = re.compile(r"^(-+ snapshot report summary -+|=+ short test summary|\d+ (passed|failed)\b)")


def tables(lines: list[str]) -> list[str]:
    """Every score table of a run (the suites' titled blocks, up to what follows them),
    without the line that says where Phase 0 results came from: a later run reads them
    from the cache, and under -n 2 which worker measured which item varies."""
    start = next(i for i, line in enumerate(lines) if _TITLE.match(line))
    end = next(i for i in range(start, len(lines)) if _AFTER.match(lines[i]))
    return [line for line in lines[start:end] if not line.startswith("Phase 0: ")]


def _main_command(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # -p cacheprovider: the cache is on, as it is for every user (pytester's own runs
    # may disable it).
    return pytester.runpytest_subprocess(
        "--budget-suite=all", "-q", "-p", "cacheprovider", "-p", "no:randomly", *args
    )


def _clone_folder(folder: Path) -> Path:
    """An empty folder at the root of a clone, as far as a run can tell (as tests/doc_run.py
    makes README.md's): the clone's pytest configuration and its (here empty) tests/."""
    (folder / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def test_readme_main_command_cold_plain_then_warm_n2_and_cold_n2(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md's main command, which its block names this test for (tests/doc_run.py),
    three times at the root of a clone.  Run 1 is the README's own: plain, the first run in
    an empty folder, so it generates the rollouts and Phase 0 results into .pytest_cache.
    Run 2 (``-n 2``) reads those caches back.  Run 3 (``-n 2``) starts from a second empty
    folder: the two workers race to fill its cache.  All three pass the gate against the
    shipped baselines and print the same tables, so plain and ``-n 2``, cold and warm runs
    agree."""
    _clone_folder(pytester.path)
    runs = [_main_command(pytester), _main_command(pytester, "-n", "2")]
    monkeypatch.chdir(_clone_folder(pytester.path / "second"))
    runs.append(_main_command(pytester, "-n", "2"))
    for number, result in enumerate(runs, start=1):
        assert result.ret == pytest.ExitCode.OK, f"run {number}:\n" + "\n".join(
            line for line in result.outlines if "FAILED" in line or "rollout_set" in line
        )
        # Every default cell passes (no failure, error, skip or xfail), the same count each run.
        assert set(result.parseoutcomes()) == {"passed"}, result.outlines[-1]
    assert len({result.parseoutcomes()["passed"] for result in runs}) == 1
    assert runs[0].parseoutcomes()["passed"] > 200
    for folder in (pytester.path, pytester.path / "second"):
        assert (folder / ".pytest_cache" / "d" / "pytest_budget" / "rollouts").is_dir()
    first = tables(runs[0].outlines)
    assert len(first) > 200
    assert tables(runs[1].outlines) == first
    assert tables(runs[2].outlines) == first


def test_recorded_awareness_snapshot_passes_when_rollouts_come_from_the_cache(
    pytester: pytest.Pytester,
) -> None:
    """A small grid: record with freshly generated rollouts, then replay from the cache."""
    args = ("--budget-suite=awareness", "--budget-env=sokoban-6x6", "--budget-agent=oracle",
            "--budget-rollout-count=8", "-p", "cacheprovider", "-p", "no:randomly")  # fmt: skip
    pytester.runpytest_subprocess(*args, "--snapshot-update").assert_outcomes(passed=1)
    (cached,) = (pytester.path / ".pytest_cache").rglob("sokoban-6x6-n8-s42-*.jsonl")
    assert cached.is_file()
    again = pytester.runpytest_subprocess(*args)
    again.assert_outcomes(passed=1)
    assert "rollout_set" not in again.stdout.str()


def test_fingerprint_ignores_the_route_the_data_took() -> None:
    a = {"b": [1, (2, 3)], "a": {"tokens": 2500}, "ok": True}
    b = {"a": {"tokens": 2500.0}, "ok": True, "b": [1.0, [2.0, 3.0]]}
    assert (
        canonical_json(a)
        == canonical_json(b)
        == ('{"a": {"tokens": 2500.0}, "b": [1.0, [2.0, 3.0]], "ok": true}')
    )
    assert fingerprint(a) == fingerprint(b)
    # What does differ still differs: a bool is not a number, 0.1 is not 0.
    assert fingerprint([True]) != fingerprint([1])
    assert fingerprint([0.1]) != fingerprint([0])
    # Integers past 2**53 keep their exact digits (a float would merge neighbours).
    assert fingerprint([2**60]) != fingerprint([2**60 + 1])
    with pytest.raises(ValueError, match="nan"):
        canonical_json([float("nan")])


def test_generated_rollouts_equal_their_cached_copy(tmp_path: Path) -> None:
    """A process that generated a set and one that read it back hold equal values."""
    generated = [
        Rollout(
            "r-1",
            "toy",
            {"tokens": 2500},
            True,
            (Turn({"tokens": 700}, "obs", "act", {"boxes": (1, 2)}), Turn({"tokens": 900})),
        )
    ]
    cache = RolloutCache(tmp_path)
    actor = ReferenceActor()
    normalized = as_read_back(generated)
    cache.store("toy", 1, 42, actor, normalized)
    path = cache.path("toy", 1, 42, actor)
    assert path is not None
    read = read_rollouts(path)
    assert read == normalized
    assert isinstance(normalized[0].budget["tokens"], float)
    assert normalized[0].turns[0].info == {"boxes": [1, 2]}
    assert cache.load("toy", 1, 42, actor) == normalized
