"""The awareness forecast's shipped reference-rollout counts (issue 30, must-have 8).

A dry run reads the counts of the reference rollouts from
``pytest_budget/awareness/data/forecast_figures.json`` instead of playing the rollouts.  Held
here: every shipped entry is what playing its rollouts gives now (a stale file fails; rewrite
it with ``python -m pytest_budget.awareness._forecast_figures``), a dry run plays no rollout
(nothing lands in the rollout cache) and prints the very forecast that playing them prints,
and a file of other rollouts is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_budget._core.sizes import SIZES
from pytest_budget._run.options import DEFAULT_SEED
from pytest_budget.awareness._environments import ROLLOUT_FORMAT_VERSION
from pytest_budget.awareness._forecast_figures import (
    FIGURES_PATH,
    SHIPPED_SEEDS,
    generated_key,
    make_figures,
    read_figures,
    shipped_figures,
    shipped_keys,
)
from tests import inprocess


def test_the_shipped_counts_are_the_default_seeds_at_every_run_size() -> None:
    assert SHIPPED_SEEDS == (DEFAULT_SEED,)
    shipped = read_figures(FIGURES_PATH)
    assert sorted(shipped) == sorted(key for key, _ in shipped_keys())
    for size in SIZES.values():
        assert generated_key("sokoban-8x8", size.rollout_count, DEFAULT_SEED) in shipped


@pytest.mark.parametrize(("key", "how"), shipped_keys(), ids=[key for key, _ in shipped_keys()])
def test_every_shipped_entry_is_what_playing_its_rollouts_gives(key: str, how: object) -> None:
    assert shipped_figures(key) == make_figures(how)


def test_a_file_of_other_rollouts_or_a_damaged_one_is_ignored(tmp_path: Path) -> None:
    data = json.loads(FIGURES_PATH.read_text(encoding="utf-8"))
    assert read_figures(FIGURES_PATH)  # the shipped file reads
    data["rollout_format"] = ROLLOUT_FORMAT_VERSION + 1
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    assert read_figures(other) == {}
    damaged = tmp_path / "damaged.json"
    damaged.write_text(FIGURES_PATH.read_text(encoding="utf-8")[:500], encoding="utf-8")
    assert read_figures(damaged) == {}
    assert read_figures(tmp_path / "missing.json") == {}


def _forecast(pytester: pytest.Pytester, *extra: str) -> list[str]:
    """The forecast lines of a dry run of the warehouse cells (the rollout cache on)."""
    result = inprocess.run(
        pytester, "--budget-suite=awareness", "--budget-env=warehouse",
        "--budget-agent=openai/gpt-4o-mini", "--budget-dry-run", "--budget-cache-dir=cache",
        "-p", "no:cacheprovider", *extra,
    )  # fmt: skip
    assert result.ret == 0
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "budget: cost forecast" in line)
    return lines[start:]


def _cached_rollouts(pytester: pytest.Pytester) -> list[str]:
    folder = pytester.path / "cache" / "rollouts"
    return sorted(p.name for p in folder.glob("*")) if folder.is_dir() else []


def test_a_dry_run_plays_no_rollout_and_forecasts_what_playing_them_forecasts(
    pytester: pytest.Pytester,
) -> None:
    """The bundled demand panel named as a file is the same panel, but a demand file is not
    covered by the shipped counts: that run plays (and caches) the 64 rollouts, and its
    forecast must be the one read from the shipped counts, line for line."""
    shipped = _forecast(pytester)
    assert _cached_rollouts(pytester) == []  # no rollout was played
    assert any("(704 turns in 64 rollouts)" in line for line in shipped)
    panel = Path(FIGURES_PATH).with_name("warehouse_demand.csv")
    played = _forecast(pytester, f"--budget-warehouse-demand={panel}")
    assert len(_cached_rollouts(pytester)) == 1  # this one played them
    assert played == shipped
