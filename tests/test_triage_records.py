"""The triage tables, page columns, footer and figures read typed cell records by
attribute (issue 22): with the records' dict-style reads switched off they give the same
lines, texts and figures as with them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_budget._core.record_json import cell_from_json
from pytest_budget._core.records import CellRecord
from pytest_budget._core.registry import cell_kind
from pytest_budget.triage._cell_record import ResolveCellRecord, TriageCellRecord

#: The dict-style reads a record still answers while the layers move to attributes.
DICT_READS = ("get", "__getitem__", "__contains__", "keys", "items", "__iter__", "__len__")


def _triage(agent: str, ratio: float, eta_u: float | None, **fields: Any) -> CellRecord:
    return cell_from_json({
        "suite": "triage", "cell": f"arith-u{ratio:g}-a0.5-A", "agent": agent, "seed": 1,
        "outcome": "ok", "pool": "arith", "unsolvable_ratio": ratio, "alpha": 0.5,
        "variant": "A", "budget": 70, "solver": "s", "plan_status": "ok",
        "scores": {"eta_u": eta_u, "eta_e": 0.25, "regret_u": 0.5, "regret_e": 0.75,
                   "detection": 0.5 if ratio else None, "waste": 0.1 if ratio else None},
        "ci": {"eta_u": [0.0, 1.0]} if eta_u is not None else None,
        "phase0": {"items": 10, "solved": 6, "from_cache": 4, "measured": 6, "from_file": 0},
        **fields,
    })  # fmt: skip


def _resolve(agent: str) -> CellRecord:
    return cell_from_json({
        "suite": "triage-resolve", "cell": "arith-u0-a1-A", "agent": agent, "seed": 1,
        "outcome": "ok", "pool": "arith", "unsolvable_ratio": 0.0, "alpha": 1.0,
        "variant": "A", "scores": {"n": 4, "compliance": 0.75, "acc_baseline": 0.5},
    })  # fmt: skip


CELLS = [
    _triage("oracle", 0.0, 1.0),
    _triage("random", 0.0, 0.5, plan_status="repaired", over_budget=True),
    _triage("mine", 0.5, None, outcome="invalid", plan_status="unparseable",
            eta_note="all 1 plan(s) excluded", excluded={"unparseable": 1, "plans": 1}),
    _resolve("oracle"),
]  # fmt: skip


def _drawn() -> dict[str, Any]:
    from pytest_budget.report._html.figures import agent_colors

    triage, resolve = cell_kind("triage"), cell_kind("triage-resolve")
    assert triage is not None and resolve is not None
    assert triage.table and triage.footer and triage.columns and triage.charts and resolve.table
    mine = [c for c in triage.columns() if c.header in ("plan", "note")]
    charts = triage.charts(CELLS, agent_colors(["oracle", "random", "mine"]), "t-")
    return {
        "table": triage.table(CELLS),
        "footer": triage.footer(CELLS),
        "columns": [[column.text(cell) for column in mine] for cell in CELLS],
        "resolve": resolve.table(CELLS),
        "charts": [(chart.key, chart.note, chart.png) for chart in charts],
    }


def _refuse_dict_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, *args: object) -> None:
        raise AssertionError("a triage view read a cell record like a dict")

    for name in DICT_READS:
        monkeypatch.setattr(CellRecord, name, refuse, raising=False)


@pytest.fixture
def no_dict_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    _refuse_dict_reads(monkeypatch)
    yield


def test_the_records_are_the_kinds_types() -> None:
    assert [type(c) for c in CELLS] == [TriageCellRecord] * 3 + [ResolveCellRecord]


def test_triage_views_read_attributes_only(no_dict_reads: None) -> None:
    drawn = _drawn()
    # only the kind's own records: the resolve cell is not a triage row, and back
    assert len(drawn["table"]) == 2 + 3 + 2  # header, rule, 3 rows, plans, Phase 0
    assert drawn["table"][-2:] == [
        "plans: 1 ok, 1 repaired, 1 unparseable; 1 with allocations over B; unparseable "
        "plans are excluded from eta (TRIAGE App. B)",
        "Phase 0: 8 results from the cache, 12 measured by the solver, 0 from pool files",
    ]
    assert drawn["footer"] == [
        "plans: 1 ok, 1 repaired, 1 unparseable; 1 with allocations over B",
        "Phase 0: 8 results from the cache, 12 measured by the solver, 0 from pool files",
    ]
    excluded = "every plan unparseable; 1/1 unparseable excluded (as empty: eta_u=-, eta_e=-)"
    # plan and note: the resolve cell has neither (its kind shows no such columns)
    assert drawn["columns"] == [["ok", ""], ["repaired", ""], ["unparseable", excluded], ["-", ""]]
    assert [row.split()[2] for row in drawn["resolve"][2:]] == ["oracle"]
    assert [(key, note) for key, note, _ in drawn["charts"]] == [
        ("t-triage-eta", None),
        ("t-triage-alpha", None),
        ("t-triage-detection", None),
    ]


def test_triage_views_draw_the_same_with_dict_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    with_dict_reads = _drawn()
    _refuse_dict_reads(monkeypatch)
    assert _drawn() == with_dict_reads
