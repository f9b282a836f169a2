"""The trivial-estimator floor: hand-worked thresholds, and every built-in probe set."""

from __future__ import annotations

import itertools

import anyio
import numpy as np
import pytest

from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
from pytest_budget.awareness._logs.trajectories import bundled_swe_rollouts
from pytest_budget.awareness._replay.floor import (
    FLOOR_WARN,
    best_threshold_f1,
    floor_line,
    probe_features,
    trivial_floor,
)
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import Rollout, Turn
from pytest_budget.awareness._replay.subsample import subsample_probes


def _macro_f1(pred_impossible: np.ndarray, impossible: np.ndarray) -> float:
    """Macro-F1 by definition, for the brute-force check."""
    out = 0.0
    for truth, pred in ((impossible, pred_impossible), (~impossible, ~pred_impossible)):
        tp = int((truth & pred).sum())
        p = tp / pred.sum() if pred.sum() else 0.0
        r = tp / truth.sum() if truth.sum() else 0.0
        out += 2 * p * r / (p + r) if p + r else 0.0
    return out / 2


def test_threshold_hand_worked() -> None:
    # x:      1  2  3  4 ; impossible iff x > 2 separates perfectly.
    assert best_threshold_f1([1, 2, 3, 4], [False, False, True, True]) == (1.0, 2.0, "above")
    # reversed direction: impossible iff x <= 2
    assert best_threshold_f1([1, 2, 3, 4], [True, True, False, False]) == (
        1.0,
        2.0,
        "at_or_below",
    )
    # ties cannot be split: x = 5 for all -> only constant rules; one class of 4 out of 4
    # true impossible 2/4: all-impossible gives F1_imp = 2/3, F1_feas = 0 -> 1/3.
    score, t, _ = best_threshold_f1([5, 5, 5, 5], [True, True, False, False])
    assert score == pytest.approx(1 / 3) and t is None


@pytest.mark.parametrize("seed", range(20))
def test_threshold_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=15).astype(float)
    y = rng.random(15) < 0.4
    best = 0.0
    for t, above in itertools.product([-1.0, *sorted(set(x))], (True, False)):
        pred = x > t if above else x <= t
        best = max(best, _macro_f1(pred, y))
    assert best_threshold_f1(x, y)[0] == pytest.approx(best)


def test_features_are_what_the_estimator_sees() -> None:
    turns = tuple(Turn({"tokens": u}, "obs", "act") for u in (100.0, 200.0, 50.0))
    rollout = Rollout("r", "x", {"tokens": 1000.0}, True, turns, {"task": {"target": 7, "n": "a"}})
    (_, (second, _)) = make_probes(rollout)
    assert probe_features(second) == {
        "turn": 2.0,
        "cap:tokens": 1000.0,
        "used:tokens": 300.0,
        "remaining_cap:tokens": 700.0,
        "task:target": 7.0,
    }


def test_floor_line_gives_balance_and_warns() -> None:
    line = floor_line(
        "w", {"macro_f1": 0.8, "feature": "cap:t", "feasible_probes": 3, "impossible_probes": 1}
    )
    assert "3 feasible / 1 impossible (25% impossible)" in line and "WARNING" in line
    assert "WARNING" not in floor_line(
        "w", {"macro_f1": 0.75, "feature": "turn", "feasible_probes": 1, "impossible_probes": 1}
    )


def _probe_set(env: str) -> list:
    if env == "swe-synthetic":
        return subsample_probes(bundled_swe_rollouts())
    rollouts = anyio.run(lambda: generate_env_rollouts(env, 128, seed=42, actor=ReferenceActor(42)))
    return [pair for r in rollouts for pair in make_probes(r)]


@pytest.mark.parametrize(
    "env", ["sokoban-8x8", "sokoban-6x6", "warehouse", "search", "swe-synthetic"]
)
def test_every_built_in_probe_set_keeps_the_floor(env: str) -> None:
    """No one visible number separates the classes of a default probe set (issue 18)."""
    floor = trivial_floor(_probe_set(env))
    assert floor.macro_f1 <= FLOOR_WARN, floor
    assert floor.feasible_probes > 0 and floor.impossible_probes > 0


def test_the_paper_warehouse_preset_leaks_and_is_flagged() -> None:
    floor = trivial_floor(_probe_set("warehouse-paper"))
    assert floor.macro_f1 > FLOOR_WARN and floor.as_dict()["warn"] is True
    assert floor.feature == "cap:time_weeks"


def test_sokoban_6x6_is_not_nearly_single_class() -> None:
    floor = trivial_floor(_probe_set("sokoban-6x6"))
    share = floor.impossible_probes / (floor.impossible_probes + floor.feasible_probes)
    assert 0.3 <= share <= 0.7, floor


def _replay_cell(agent: str, outcome: str = "ok", **fields: object) -> dict[str, object]:
    return {
        "suite": "awareness", "cell": f"w-{agent}", "env": "w", "agent": agent, "seed": 42,
        "outcome": outcome, "actor": "reference-actor", "first_error": None,
        "scores": {"n_probes": 4, "macro_f1_all": 0.5},
        "rollouts": {"rollouts": 8, "succeeded": 6, "feasible": 5, "mean_turns": 3.5},
        **fields,
    }  # fmt: skip


def test_the_terminal_table_reads_the_typed_records() -> None:
    """awareness_table / rollout_lines / floor_value / online_table read record attributes
    (cells as the JSON report holds them, read back with cell_from_json)."""
    from pytest_budget._core.record_json import cell_from_json
    from pytest_budget.awareness._summary import awareness_table, floor_value, rollout_lines
    from pytest_budget.awareness.online._summary import online_table

    floor = {"macro_f1": 0.8, "feature": "cap:t", "feasible_probes": 3, "impossible_probes": 1,
             "warn": True}  # fmt: skip
    cells = [
        cell_from_json(_replay_cell("oracle", trivial_floor=floor)),
        cell_from_json(_replay_cell("mine", "error")),  # same env: one footer line per env
    ]
    assert floor_value(cells[0]) == "0.800!" and floor_value(cells[1]) is None
    header, _, oracle, mine, *footer = awareness_table(cells)
    assert header.split()[:5] == ["env", "estimator", "probes", "f1_all", "floor"]
    assert oracle.split()[:5] == ["w", "oracle", "4", "0.500", "0.800!"]
    assert mine.split()[:5] == ["w", "mine", "(error)", "4", "0.500"]
    assert (
        footer
        == rollout_lines(cells)
        == [
            "w: 8 rollouts by reference-actor, 6 succeeded, 5 feasible within budget, "
            "3.5 turns on average",
            floor_line("w", floor),
        ]
    )
    online = cell_from_json(
        {
            "suite": "awareness-online",
            "cell": "w-0.5x",
            "env": "w",
            "agent": "a",
            "seed": 42,
            "outcome": "ok",
            "protocol": "two-call",
            "charge": "both",
            "cap_multiplier": 0.5,
            "scores": {"success_rate": 0.25},
        }
    )
    # the awareness record is not an online cell: online_table narrows to its own type
    _, _, row, note = online_table([online, cells[0]])
    assert row.split()[:5] == ["w", "0.5x", "two-call", "a", "0.250"]
    assert note.endswith("cap charged with: both tokens")
