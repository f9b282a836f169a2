"""Warehouse rollouts (an actor running the environment) and the challenge presets that
condition their budgets.  Re-exported by :mod:`pytest_budget.awareness.warehouse`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import numpy as np

from pytest_budget._core.roles import AgentError, call_role
from pytest_budget.awareness._replay.answers import WAREHOUSE_DIMENSIONS
from pytest_budget.awareness._replay.rollouts import ActorObservation, Rollout, Turn, actor_reply
from pytest_budget.awareness.warehouse._actions import WarehouseAction, format_action
from pytest_budget.awareness.warehouse._env import WarehouseEnv, _rng_seed
from pytest_budget.awareness.warehouse._market import (
    DEFAULT_CONFIG,
    ENV_NAME,
    DemandPanel,
    WarehouseConfig,
    _usd,
    load_demand_panel,
)

# ------------------------------------------------------------------------ rollouts


def _placeholder_budget(config: WarehouseConfig) -> dict[str, float]:
    # The horizon, a full warehouse for the whole horizon, $10M: generous on purpose.
    return {
        "time_weeks": config.horizon_weeks,
        "warehouse_item_weeks": float(config.warehouse_capacity) * config.horizon_weeks,
        "cumulative_cost_usd": 10_000_000.0,
    }


#: Caps of freshly generated rollouts (default config); :func:`condition_challenges` sets
#: the real ones.
PLACEHOLDER_BUDGET: dict[str, float] = _placeholder_budget(DEFAULT_CONFIG)


def make_rollout_id(seed: int, index: int) -> str:
    """``warehouse-s42-0003``: the id of rollout ``index`` generated with ``seed``."""
    return f"{ENV_NAME}-s{seed}-{index:04d}"


async def run_rollout(
    actor: object,
    *,
    rollout_id: str,
    seed: int,
    panel: DemandPanel | None = None,
    config: WarehouseConfig = DEFAULT_CONFIG,
    limiter: anyio.CapacityLimiter | None = None,
) -> Rollout:
    """Roll ``actor`` out for one episode (env seed ``seed``) with no budget constraint.

    The actor is called through :func:`~pytest_budget._core.roles.call_role` with an
    :class:`ActorObservation` (``state`` is :meth:`WarehouseEnv.state_dict`) and may reply
    with text (JSON in the answer tag), a mapping with ``text``, or a
    :class:`WarehouseAction`.  An actor that raises ends the rollout; the reason is in
    ``meta["actor_error"]``.  ``budget`` is :data:`PLACEHOLDER_BUDGET`; ``success`` means the
    episode ran to the horizon without bankruptcy or an actor error.
    """
    env = WarehouseEnv(panel, seed=seed, config=config)
    turns: list[Turn] = []
    actor_error: str | None = None
    malformed = 0
    while not env.done:
        text = env.render()
        observation = ActorObservation(
            env=ENV_NAME,
            rollout_id=rollout_id,
            turn=env.state.step + 1,
            text=text,
            state=env.state_dict(),
        )
        try:
            raw = await call_role(actor, "actor", observation, limiter=limiter)
        except AgentError as exc:
            actor_error = exc.reason
            break
        if isinstance(raw, WarehouseAction):
            reply_text = format_action(raw)
            report = env.step(raw)
        else:
            reply_text = actor_reply(raw).text
            report = env.step(reply_text)
        malformed += report.error is not None
        turns.append(
            Turn(usage=dict(report.usage), observation=text, action=reply_text, info=report.info())
        )
    st = env.state
    meta: dict[str, Any] = {
        "env_seed": seed,
        "final_cash_usd": _usd(st.cash_cents),
        "credit_balance_usd": _usd(st.credit_cents),
        "receivables_usd": _usd(sum(i.amount_cents for i in st.receivables)),
        "net_cash_usd": _usd(st.cash_cents - st.credit_cents),
        "bankrupt": st.bankrupt,
        "steps": st.step,
        "total_reward": round(st.total_reward, 2),
        "malformed_actions": malformed,
        "sku_permutation": {r: list(p) for r, p in env.permutation.items()},
        "budget_kind": "placeholder",
    }
    if actor_error is not None:
        meta["actor_error"] = actor_error
    success = actor_error is None and not st.bankrupt
    budget = _placeholder_budget(config)
    return Rollout(rollout_id, ENV_NAME, budget, success, tuple(turns), meta)


async def generate_rollouts(
    n: int,
    seed: int,
    actor: object,
    *,
    panel: DemandPanel | None = None,
    concurrency: int = 8,
    config: WarehouseConfig = DEFAULT_CONFIG,
) -> list[Rollout]:
    """``n`` rollouts ``warehouse-s{seed}-0000`` .. in id order, at most ``concurrency`` at once.

    Rollout ``i`` plays the episode seeded by sha256 of (``seed``, ``i``), so the result does
    not depend on ``concurrency`` or on scheduling.  An actor error ends only its rollout.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    panel = panel if panel is not None else load_demand_panel()
    results: list[Rollout | None] = [None] * n
    # Two separate bounds: a rollout slot is held for a whole episode, while the thread
    # limiter is taken per actor call (a task cannot hold two tokens of one limiter).
    slots = anyio.Semaphore(concurrency)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(index: int) -> None:
        async with slots:
            results[index] = await run_rollout(
                actor,
                rollout_id=make_rollout_id(seed, index),
                seed=_rng_seed("warehouse-rollout", seed, index),
                panel=panel,
                config=config,
                limiter=limiter,
            )

    async with anyio.create_task_group() as group:
        for index in range(n):
            group.start_soon(one, index)
    return [r for r in results if r is not None]


# ------------------------------------------------------------------------ challenges

#: Challenge schemes (fact sheet §5).  ``outcome`` (the default) draws every visible number
#: alike for all rollouts and labels by the realized outcome; ``release`` is BAGEN's public
#: release code; ``paper`` (alias ``half_reachable``) is the paper's scheme, which leaks the
#: label through the time cap.
CHALLENGE_PRESETS = ("outcome", "release", "paper")
_PRESET_ALIASES = {"half_reachable": "paper"}
#: Presets whose caps give the label away to a one-number rule (marked in the report).
LEAKING_PRESETS = ("paper", "release")
#: ``outcome``: the target is the rollout set's median final cash times U(1 - s, 1 + s).
OUTCOME_TARGET_SPREAD = 0.02
_MIN_CAP = 0.01  # caps must be positive (rollout files reject 0); an unused dimension gets 1 cent
_MAX_DRAWS = 10_000


def _final_cash(rollout: Rollout) -> float:
    value = rollout.meta.get("final_cash_usd")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if rollout.turns and isinstance(rollout.turns[-1].info.get("cash"), int | float):
        return float(rollout.turns[-1].info["cash"])
    raise ValueError(
        f"rollout {rollout.id!r} has no final cash (meta['final_cash_usd'] or the last "
        "turn's info['cash']); it was not generated by the Warehouse environment"
    )


def _totals(rollout: Rollout) -> dict[str, float]:
    # Summed exactly as Rollout.cumulative() does, so the caps compare bit for bit.
    running = dict.fromkeys(WAREHOUSE_DIMENSIONS, 0.0)
    for turn in rollout.turns:
        for dim in running:
            running[dim] += float(turn.usage.get(dim, 0.0))
    return running


def _cap_up(value: float) -> float:
    return max(math.ceil(value * 100.0) / 100.0, value, _MIN_CAP)


def _meets(
    final: float, target: float, totals: Mapping[str, float], caps: Mapping[str, float]
) -> bool:
    return final >= target and all(totals[d] <= caps[d] for d in WAREHOUSE_DIMENSIONS)


def _resource_caps(rng: np.random.Generator, totals: Mapping[str, float]) -> dict[str, float]:
    """Warehouse and cost caps = realized x U(1.0, 1.2) (BAGEN's reachable draw)."""
    return {
        "warehouse_item_weeks": _cap_up(totals["warehouse_item_weeks"] * rng.uniform(1.0, 1.2)),
        "cumulative_cost_usd": _cap_up(totals["cumulative_cost_usd"] * rng.uniform(1.0, 1.2)),
    }


def _paper_draw(
    rng: np.random.Generator, reachable: bool, final: float, totals: Mapping[str, float]
) -> tuple[float, dict[str, float], dict[str, float]]:
    """The paper / submission-code scheme: reachable caps hug the realized totals (the time
    cap equals the realized horizon), unreachable ones are U(0.5, 2) x realized."""
    if reachable:
        ratios = {
            "target_cash": float(rng.uniform(0.5, 1.0)),
            "time_weeks": 1.0,
            "warehouse_item_weeks": float(rng.uniform(1.0, 1.2)),
            "cumulative_cost_usd": float(rng.uniform(1.0, 1.2)),
        }
        target = min(math.floor(final * ratios["target_cash"] * 100.0) / 100.0, final)
        caps = {d: _cap_up(totals[d] * ratios[d]) for d in WAREHOUSE_DIMENSIONS}
        caps["time_weeks"] = max(totals["time_weeks"], _MIN_CAP)
        return target, caps, ratios
    for _ in range(_MAX_DRAWS):
        draws = rng.uniform(0.5, 2.0, size=4)
        ratios = {
            "target_cash": float(draws[0]),
            **{d: float(x) for d, x in zip(WAREHOUSE_DIMENSIONS, draws[1:], strict=True)},
        }
        target = round(final * ratios["target_cash"], 2)
        caps = {d: _cap_up(totals[d] * ratios[d]) for d in WAREHOUSE_DIMENSIONS}
        if not _meets(final, target, totals, caps):
            return target, caps, ratios
    # only a rollout with zero cash and zero usage gets here
    ratios["target_cash"] = math.inf
    return final + 1.0, caps, ratios


def _release_draw(
    rng: np.random.Generator, reachable: bool, final: float, totals: Mapping[str, float]
) -> tuple[float, dict[str, float], dict[str, float]]:
    """BAGEN's public release code: the caps are drawn alike; only the target separates."""
    caps = {"time_weeks": max(totals["time_weeks"], _MIN_CAP), **_resource_caps(rng, totals)}
    if reachable:
        ratio = float(rng.uniform(0.5, 1.0))
        target = min(final, round(final * ratio, 2))
    else:
        ratio = float(rng.uniform(1.01, 2.0))
        target = round(final * ratio, 2)
        if target <= final:  # negative or zero cash
            target = final + max(1.0, round(0.05 * abs(final), 2))
    ratios = {"target_cash": ratio, **{d: caps[d] / max(totals[d], _MIN_CAP) for d in caps}}
    return target, caps, ratios


def condition_challenges(
    rollouts: Sequence[Rollout], *, preset: str = "outcome", seed: int = 42
) -> list[Rollout]:
    """Challenge-conditioned feasibility probes (BAGEN App. B.4, fact sheet §5), in order.

    ``outcome`` (default, leak-free): every rollout gets the same kind of draw, whatever its
    outcome.  The target cash is m x U(1 - 0.02, 1 + 0.02), m the median final cash of the
    viable rollouts; the time cap is the longest realized horizon of the set (every viable
    rollout runs the full horizon); warehouse and cost caps are realized x U(1.0, 1.2) as in
    BAGEN's release.  The label is the realized outcome: reachable iff the rollout is viable
    and its final cash >= the target (the caps never bind), so the balance is near, not
    exactly, 50/50.  No visible number (target, caps, turn, usage) separates the classes:
    the trivial floor stays below 0.75 (``floor.py``).

    ``release``: the rollouts are shuffled (seed ``seed``); the first half (rounded up) is
    reachable with target = final x U(0.5, 1), the rest unreachable with target =
    final x U(1.01, 2); caps drawn alike.  ``paper`` (``half_reachable``): reachable as in
    ``release`` but the time cap equals the realized horizon exactly; unreachable: target
    and the three caps = realized x four U(0.5, 2) ratios, redrawn until the check fails.
    Both leak the label (the target in ``release``, the time cap in ``paper``); they are kept
    to reproduce BAGEN and are marked as leaking.  Caps are rounded up to the cent.

    Our reading of "reaching the target": the logged rollout is judged at its end, with no
    truncation when cash passes the target earlier.  A rollout that went bankrupt or whose
    actor failed (``success`` False on input) reaches no target.  ``meta`` gains
    ``challenge`` ("reachable"/"unreachable"), ``challenge_preset``, ``target_cash_usd``,
    the drawn ``challenge_ratios`` and ``task`` = {"target_cash_usd": ...} (shown to probes).
    """
    preset = _PRESET_ALIASES.get(preset, preset)
    if preset not in CHALLENGE_PRESETS:
        raise ValueError(f"unknown challenge preset {preset!r} (known: {CHALLENGE_PRESETS})")
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(len(rollouts))]
    reachable_n = (len(rollouts) + 1) // 2
    finals = [_final_cash(r) for r in rollouts]
    viable_finals = [f for f, r in zip(finals, rollouts, strict=True) if r.success] or finals
    median_final = float(np.median(viable_finals)) if viable_finals else 0.0
    horizon = max((_totals(r)["time_weeks"] for r in rollouts), default=0.0)
    out: list[Rollout | None] = [None] * len(rollouts)
    for rank, index in enumerate(order):
        rollout = rollouts[index]
        final = finals[index]
        totals = _totals(rollout)
        if preset == "outcome":
            ratio = float(rng.uniform(1.0 - OUTCOME_TARGET_SPREAD, 1.0 + OUTCOME_TARGET_SPREAD))
            target = round(median_final * ratio, 2)
            caps = {"time_weeks": max(horizon, _MIN_CAP), **_resource_caps(rng, totals)}
            ratios = {"target_cash_of_median": ratio}
            label = "reachable" if final >= target else "unreachable"
        else:
            draw = _paper_draw if preset == "paper" else _release_draw
            label = "reachable" if rank < reachable_n else "unreachable"
            target, caps, ratios = draw(rng, label == "reachable", final, totals)
        task = dict(rollout.meta.get("task") or {})
        task["target_cash_usd"] = target
        meta = {
            **rollout.meta,
            "challenge": label,
            "challenge_preset": preset,
            "challenge_seed": seed,
            "challenge_ratios": ratios,
            "target_cash_usd": target,
            "budget_kind": "challenge",
            "task": task,
        }
        # A bankrupt run, or one whose actor failed, reaches no target (however low).
        viable = rollout.success
        if not viable:
            meta["challenge"] = f"{label} (not viable: bankrupt or actor error)"
        conditioned = Rollout(
            rollout.id, rollout.env, caps, viable and final >= target, rollout.turns, meta
        )
        # The two halves must be what they claim; a failure here is a bug, not bad input.
        if conditioned.feasible != (viable and label == "reachable"):
            raise AssertionError(f"challenge for {rollout.id!r} came out the wrong side")
        out[index] = conditioned
    return [r for r in out if r is not None]
