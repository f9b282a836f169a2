"""Kendall tau-b per regime and alpha, as TRIAGE Table 3 computes it (issue 19 item 6)."""

from __future__ import annotations

from typing import Any

from pytest_budget._core.record_json import cell_from_json
from pytest_budget._core.records import CellRecord
from pytest_budget.triage._summary import variant_agreement

AGENTS = ("w", "x", "y", "z")


def _cell(alpha: float, variant: str, agent: str, pool: str, scores: dict[str, Any]) -> CellRecord:
    return cell_from_json(
        {"suite": "triage", "cell": f"{pool}-u0-a{alpha:g}-{variant}", "seed": 0, "outcome": "ok",
         "unsolvable_ratio": 0.0, "alpha": alpha, "variant": variant, "agent": agent,
         "pool": pool, "scores": scores}
    )  # fmt: skip


def _cells(
    alpha: float, variant: str, eta_u: list[float], eta_e: list[float | None]
) -> list[CellRecord]:
    return [
        _cell(alpha, variant, agent, "p", {"eta_u": u, "eta_e": e})
        for agent, u, e in zip(AGENTS, eta_u, eta_e, strict=True)
    ]


def test_tau_is_per_regime_and_alpha_never_pooled() -> None:
    cells = [
        # alpha 0.5: B swaps y and z -> one discordant pair of 6: tau = (5 - 1) / 6 = 2/3.
        *_cells(0.5, "A", [0.9, 0.7, 0.5, 0.3], [0.4, 0.3, 0.2, 0.1]),
        *_cells(0.5, "B", [0.9, 0.7, 0.3, 0.5], [0.4, 0.3, 0.2, 0.1]),
        # alpha 1: A ties w and x; B does not.  n0 = 6, n1 = 1, n2 = 0, P = 5, Q = 0:
        # tau_b = 5 / sqrt(5 * 6) = 0.913 (the paper's value for one tie).  eta_e is
        # undefined (excluded) everywhere at alpha 1, so there is no eta_e line for it.
        *_cells(1.0, "A", [1.0, 1.0, 0.5, 0.2], [None] * 4),
        *_cells(1.0, "B", [1.0, 0.8, 0.5, 0.2], [None] * 4),
    ]
    assert variant_agreement(cells) == [
        "ranking agreement eta_u alpha=0.5 A vs B: Kendall tau-b = 0.667 over 4 agents",
        "ranking agreement eta_u alpha=1 A vs B: Kendall tau-b = 0.913 over 4 agents",
        "ranking agreement eta_e alpha=0.5 A vs B: Kendall tau-b = 1.000 over 4 agents",
    ]


def test_agent_value_is_the_mean_over_its_pools_at_that_alpha() -> None:
    # Two pools per (variant, agent) at alpha 0.5: means A = [0.5, 0.4], B = [0.3, 0.4]
    # -> the order flips: tau = -1.  (Pooled with alpha 1, where both agree, it would not.)
    cells: list[CellRecord] = []
    for pool, (a, b) in {"p1": ([0.6, 0.4], [0.2, 0.4]), "p2": ([0.4, 0.4], [0.4, 0.4])}.items():
        for variant, values in (("A", a), ("B", b)):
            for agent, eta in zip(("w", "x"), values, strict=True):
                cells.append(_cell(0.5, variant, agent, pool, {"eta_u": eta, "eta_e": None}))
    assert variant_agreement(cells) == [
        "ranking agreement eta_u alpha=0.5 A vs B: Kendall tau-b = -1.000 over 2 agents"
    ]
