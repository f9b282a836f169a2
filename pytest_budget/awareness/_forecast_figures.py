"""The counts the awareness cost forecast takes from reference rollouts, shipped with the package.

A live run's forecast (``fixtures/awareness_forecast.py``) estimates an awareness cell from
the reference actor's rollouts of its environment: how many rollouts and turns, each turn's
observation (a model actor's prompt) and each probe's estimator prompt, in reference tokens.
Playing those rollouts was a third of ``pytest --budget-suite=all --budget-agent=MODEL
--budget-dry-run`` (issue 30, must-have 8: the forecast within 5 s), yet they depend only on
the environment, the rollout count and the seed.  So the counts of the built-in environments
at every run size's rollout count and the default seed (and of the bundled coding-agent logs)
are computed once by :func:`main` and shipped in ``data/forecast_figures.json``; the forecast
reads them instead of playing, and plays as before for anything else (another seed or count,
a demand file, a search server, a user's actor or estimator class).

The file is derived data, never edited by hand: ``python -m
pytest_budget.awareness._forecast_figures`` rewrites it, and ``tests/test_forecast_figures.py``
plays every entry again and requires the same counts.  An entry of another
:data:`~pytest_budget.awareness._environments.ROLLOUT_FORMAT_VERSION` (rollouts that changed)
is ignored, so a stale file costs time, never a wrong forecast.  Plain Python: no pytest.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FIGURES_PATH",
    "SHIPPED_ENVS",
    "SHIPPED_SEEDS",
    "CellFigures",
    "asked_probes",
    "figures_of",
    "generated_key",
    "logged_key",
    "main",
    "make_figures",
    "play_figures",
    "read_figures",
    "shipped_figures",
    "shipped_keys",
]

FIGURES_PATH = Path(__file__).with_name("data") / "forecast_figures.json"
#: The generated environments shipped (search needs its retrieval server: not forecast).
SHIPPED_ENVS = ("sokoban-8x8", "sokoban-6x6", "warehouse", "warehouse-paper")
#: The seeds shipped: the run's default (``--budget-seed``; a test holds them equal).
SHIPPED_SEEDS = (42,)


@dataclass(frozen=True)
class CellFigures:
    """What the forecast reads from one cell's rollouts (module doc)."""

    rollouts: int
    turns: int  # sum of the rollouts' turns
    #: Reference tokens of every turn's observation (``turn.observation or ""``), in order;
    #: None for logged rollouts (no actor plays them again).
    observation_tokens: tuple[int, ...] | None
    #: Reference tokens of the built-in estimator's prompt for each probe the cell asks,
    #: in the cell's order (:func:`~pytest_budget.awareness._replay.subsample.cell_probes`).
    probe_prompts: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rollouts": self.rollouts,
            "turns": self.turns,
            "observation_tokens": (
                None if self.observation_tokens is None else list(self.observation_tokens)
            ),
            "probe_prompts": list(self.probe_prompts),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellFigures:
        observed = data["observation_tokens"]
        return cls(
            int(data["rollouts"]),
            int(data["turns"]),
            None if observed is None else tuple(int(n) for n in observed),
            tuple(int(n) for n in data["probe_prompts"]),
        )


def generated_key(env: str, n: int, seed: int) -> str:
    """The entry of ``n`` reference rollouts of ``env`` under ``seed``."""
    return f"{env} n={n} seed={seed}"


def logged_key(env: str, cap: float | None) -> str:
    """The entry of a bundled log family under ``--budget-rollout-cap`` ``cap``."""
    return f"{env} cap={cap!r}"


def asked_probes(rollouts: Sequence[Any]) -> list[Any]:
    """The probes a cell over ``rollouts`` asks its estimator, in order (as the cell does)."""
    from pytest_budget.awareness._replay.probes import make_probes
    from pytest_budget.awareness._replay.subsample import cell_probes

    chosen = cell_probes(rollouts)
    asked = chosen if chosen is not None else [p for r in rollouts for p in make_probes(r)]
    return [probe for probe, _ in asked]


def figures_of(rollouts: Sequence[Any], *, logged: bool = False) -> CellFigures:
    """The counts of ``rollouts`` (``logged``: bundled logs, no observation counts)."""
    from pytest_budget._core.tokens import count_tokens
    from pytest_budget.awareness._replay.probes import Probe, estimator_prompt_tokens

    probes = asked_probes(rollouts)
    if not all(type(probe) is Probe for probe in probes):
        raise TypeError("figures are made of the built-in Probe only")
    observed = None
    if not logged:
        observed = tuple(count_tokens(t.observation or "") for r in rollouts for t in r.turns)
    return CellFigures(
        len(rollouts),
        sum(r.T for r in rollouts),
        observed,
        tuple(estimator_prompt_tokens(probes)),
    )


def read_figures(path: Path) -> dict[str, CellFigures]:
    """The entries of a figures file; none when it is missing, damaged or made from
    rollouts of another :data:`~pytest_budget.awareness._environments.ROLLOUT_FORMAT_VERSION`
    (every cell then plays its rollouts)."""
    from pytest_budget.awareness._environments import ROLLOUT_FORMAT_VERSION

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("rollout_format") != ROLLOUT_FORMAT_VERSION:
            return {}
        return {key: CellFigures.from_dict(value) for key, value in data["cells"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


@functools.cache
def _shipped() -> dict[str, CellFigures]:
    return read_figures(FIGURES_PATH)


def shipped_figures(key: str) -> CellFigures | None:
    """The shipped entry ``key`` (:func:`generated_key`, :func:`logged_key`), or None."""
    return _shipped().get(key)


def play_figures(env: str, n: int, seed: int) -> CellFigures:
    """Play ``n`` reference rollouts of ``env`` as the forecast would and count them."""
    from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
    from pytest_budget.awareness._replay.rollouts import as_read_back
    from pytest_budget.models._loop import run_blocking

    actor = ReferenceActor(seed)
    played = run_blocking(lambda: generate_env_rollouts(env, n, seed=seed, actor=actor))
    return figures_of(as_read_back(played))


def shipped_keys() -> list[tuple[str, Any]]:
    """Every entry :func:`main` writes, with how to make it: ``(env, n, seed)`` or ``cap``."""
    from pytest_budget._core.sizes import SIZES
    from pytest_budget.awareness._logs.formats import SYNTHETIC_ENV

    counts = sorted({size.rollout_count for size in SIZES.values()})
    keys: list[tuple[str, Any]] = [
        (generated_key(env, n, seed), (env, n, seed))
        for env in SHIPPED_ENVS
        for n in counts
        for seed in SHIPPED_SEEDS
    ]
    keys.append((logged_key(SYNTHETIC_ENV, None), None))
    return keys


def make_figures(how: Any) -> CellFigures:
    """The entry ``how`` of :func:`shipped_keys`, computed now."""
    if how is None:
        from pytest_budget.awareness._logs.trajectories import bundled_swe_rollouts

        return figures_of(bundled_swe_rollouts(budget=None), logged=True)
    return play_figures(*how)


def main() -> None:
    """Rewrite :data:`FIGURES_PATH` (one line per entry, so a diff shows what moved)."""
    from pytest_budget.awareness._environments import ROLLOUT_FORMAT_VERSION

    lines = [
        f"{json.dumps(key)}: {json.dumps(make_figures(how).as_dict(), separators=(',', ':'))}"
        for key, how in shipped_keys()
    ]
    about = "derived: python -m pytest_budget.awareness._forecast_figures rewrites it"
    FIGURES_PATH.write_text(
        f'{{"about": {json.dumps(about)},\n"rollout_format": {ROLLOUT_FORMAT_VERSION},\n'
        '"cells": {\n' + ",\n".join(lines) + "\n}}\n",
        encoding="utf-8",
    )
    print(f"wrote {FIGURES_PATH}")


if __name__ == "__main__":
    main()
