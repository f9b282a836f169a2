"""The triage bootstrap's plan-free tables on disk (``triage._shared_store.SharedTables``):
a rerun reads what the first run wrote, bit for bit, and scores the same."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import numpy as np

from pytest_budget.triage._intervals import warm_shared
from pytest_budget.triage._shared_store import SharedTables, code_digest
from tests.test_live_speed import _cell, _summary


def _warmed(folder: Path) -> tuple[SharedTables, Any]:
    items, baselines, plan = _cell(40, 1)
    tables = SharedTables(folder)
    warm_shared(items, baselines, 0.5, seed=3, cell_id="c", resamples=300, cache=tables)
    return tables, (items, baselines, plan)


def test_a_rerun_reads_the_tables_bit_for_bit_and_scores_the_same(tmp_path: Path) -> None:
    first, cell = _warmed(tmp_path)
    alone = _summary(*cell, {})
    (key,) = first
    files = list(tmp_path.glob("*/*.npz"))
    assert [f.name for f in files] == [f"{key}.npz"]
    assert files[0].parent.name == f"triage-shared-{code_digest()}"

    rerun = SharedTables(tmp_path)
    assert len(rerun) == 0
    for stored, computed in zip(rerun.get(key), first[key], strict=True):
        assert stored.dtype == computed.dtype and stored.tobytes() == computed.tobytes()
    again = _summary(*cell, SharedTables(tmp_path))
    assert again.report_fields() == alone.report_fields()
    assert again.snapshot_fields() == alone.snapshot_fields()


def test_the_summary_uses_the_stored_tables(tmp_path: Path) -> None:
    # Tables altered on disk move the scores: the rerun read them rather than computing.
    first, cell = _warmed(tmp_path)
    (key,) = first
    v_oracle, v_random = first[key]
    SharedTables(tmp_path)[key] = (v_oracle, np.zeros_like(v_random))
    alone = _summary(*cell, {})
    altered = _summary(*cell, SharedTables(tmp_path))
    assert altered.report_fields() != alone.report_fields()


def test_a_file_cut_short_is_computed_again(tmp_path: Path) -> None:
    first, cell = _warmed(tmp_path)
    (path,) = tmp_path.glob("*/*.npz")
    path.write_bytes(path.read_bytes()[:100])
    assert SharedTables(tmp_path).get(next(iter(first))) is None
    assert _summary(*cell, SharedTables(tmp_path)).report_fields() == (
        _summary(*cell, {}).report_fields()
    )


def test_only_finished_tables_under_a_digest_key_are_written(tmp_path: Path) -> None:
    tables = SharedTables(tmp_path)
    pending: concurrent.futures.Future[Any] = concurrent.futures.Future()
    assert tables.setdefault("a" * 64, pending) is pending
    tables["not-a-digest"] = (np.zeros(3), np.ones(3))
    assert list(tmp_path.rglob("*.npz")) == []
    assert tables.get("b" * 64, "absent") == "absent"
