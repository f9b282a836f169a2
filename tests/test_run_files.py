"""What the run writes: one file mode for the report, the HTML page and the snapshots (the
mode of any new file under the umask), and snapshot names that never start with ``.``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_budget._core.files import current_umask, new_file_mode, write_atomic
from pytest_budget._plugin.snapshot import cell_file_name, extension_for
from pytest_budget.report._document import write_report

PLANNER = """
def pytest_budget_planner(config):
    def plan(request):
        ids = [p.id for p in request.items][:4]
        return {"plan": [{"id": i, "tokens": request.budget // 4} for i in ids]}
    return plan
"""
ARGS = ("--budget-suite=triage", "-p", "no:cacheprovider", "--budget-pool-size=6",
        "--budget-alpha=0.5", "--budget-unsolvable=0")  # fmt: skip


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_report_page_and_snapshots_share_the_umask_mode(
    pytester: pytest.Pytester, umask: int
) -> None:
    pytester.makeconftest(PLANNER)
    # The child process inherits the umask (pytester's subprocess run).
    old = os.umask(umask)
    try:
        result = pytester.runpytest_subprocess(
            *ARGS, "--snapshot-update", "--budget-report=r.json", "--budget-html=page.html"
        )
    finally:
        os.umask(old)
    result.assert_outcomes(passed=2)
    expected = 0o666 & ~umask
    written = [pytester.path / "r.json", pytester.path / "page.html"]
    written += sorted((pytester.path / "__budget_snapshots__" / "triage").glob("*.json"))
    assert len(written) == 4
    assert {path.name: oct(mode(path)) for path in written} == {
        path.name: oct(expected) for path in written
    }


def test_write_atomic_gives_the_mode_of_a_new_file(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        assert new_file_mode() == 0o640
        target = write_atomic(tmp_path / "a.txt", "x")
        write_report(tmp_path / "r.json", {"cells": []})
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(old)
    assert mode(target) == mode(tmp_path / "r.json") == mode(plain) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "plain.txt", "r.json"]


def test_every_writer_of_the_run_gives_the_umask_mode(tmp_path: Path) -> None:
    """Rollouts, corpora, the spend ledger and the Phase 0 cache go through the one helper:
    none is left with ``mkstemp``'s private 0600."""
    from pytest_budget.awareness._replay.rollouts import (
        Rollout,
        Turn,
        read_rollouts,
        write_rollouts,
    )
    from pytest_budget.awareness.search._corpus import build_corpus, dump_corpus, load_corpus
    from pytest_budget.models._ledger import SpendLedger

    old = os.umask(0o022)
    try:
        rollout = Rollout(
            id="r1", env="search", budget={"tokens": 5}, success=True, turns=(Turn({"tokens": 3}),)
        )
        rollouts = write_rollouts(tmp_path / "r.jsonl", [rollout])
        corpus = build_corpus(seed=0, n_questions=2)
        docs = dump_corpus(corpus, tmp_path / "docs.jsonl", tmp_path / "questions.jsonl")
        ledger = SpendLedger(tmp_path / "ledger.json", max_usd=1.0)
        assert ledger.reserve(0.25)
    finally:
        os.umask(old)
    assert read_rollouts(rollouts)[0].id == "r1"
    assert len(load_corpus(docs, tmp_path / "questions.jsonl").questions) == 2
    assert ledger.read().reserved_usd == 0.25
    written = sorted(p for p in tmp_path.iterdir() if p.suffix != ".lock")
    assert [p.name for p in written] == ["docs.jsonl", "ledger.json", "questions.jsonl", "r.jsonl"]
    assert {p.name: oct(mode(p)) for p in written} == {p.name: oct(0o644) for p in written}


def test_one_atomic_write_helper() -> None:
    """Temporary file + rename lives in ``pytest_budget/_core/files.py`` only."""
    package = Path(__file__).resolve().parents[1] / "pytest_budget"
    copies = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "files.py"
        and any(word in path.read_text(encoding="utf-8") for word in ("mkstemp", "os.replace("))
    )
    assert copies == []


@pytest.mark.parametrize(
    ("cell_id", "expected"),
    [
        (".hidden", "hidden"),
        ("..", "cell"),
        ("../x", "x"),
        ("._x", "x"),
        (":.x", "x"),
        ("openai:gpt-4o", "openai_gpt-4o"),
        ("a.b", "a.b"),
    ],
)
def test_snapshot_names_never_start_with_a_dot(cell_id: str, expected: str) -> None:
    name = cell_file_name(cell_id)
    assert name == expected
    assert not name.startswith(".")
    extension = extension_for(
        suite="triage", cell_id=cell_id, snapshot_dir="/snaps", specs=(), exact=False,
        fallback_dir=None,
    )  # fmt: skip
    assert Path(extension.location) == Path("/snaps/triage") / f"{expected}.json"
