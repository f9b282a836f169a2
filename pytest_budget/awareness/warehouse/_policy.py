"""Reference Warehouse actors: a reorder-point heuristic and its noisy variant.

Both read only the structured observation (``ActorObservation.state``, the dict from
:meth:`~pytest_budget.awareness.warehouse.WarehouseEnv.state_dict`) and reply with the JSON
action inside ``<answer>...</answer>``, exactly what an LLM actor would write.  They keep no
state between calls, so one instance can serve many concurrent rollouts; the noisy variant
draws its noise from a generator seeded by sha256 of (seed, rollout id, turn), never from
Python's salted ``hash()``, so a rollout replays identically in any process.

The heuristic, per step:

* demand forecast per (retailer, SKU) = mean of the last two observed steps (the opening
  forecast before any step has been observed);
* shipments top every retailer DC up to ``dc_cover`` steps of its forecast, within 90% of
  the DC's capacity (below the overstock line) and the Acme stock (shared pro rata);
* orders: the inventory position (Acme + DCs + in production + in transit) is compared with
  the demand until the order could reach a shelf plus ``cover_steps``; below it, order the
  gap rounded up to a MOQ tier.  Ocean when the position bridges the ocean lead time, air
  otherwise; no order that could only sell in the last step.  Orders are placed most urgent
  first while cash + unused credit - balances already due - ``reserve`` covers them;
* finance: draw credit when cash would end the step below ``reserve``, factor receivables when
  that is not enough, repay when cash is well above it; on the last step every receivable is
  factored (final cash is what counts).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pytest_budget.awareness._replay.rollouts import ActorObservation
from pytest_budget.awareness.warehouse._actions import (
    Order,
    Shipment,
    WarehouseAction,
    format_action,
)

__all__ = ["NoisyReorderPointPolicy", "ReorderPointPolicy", "policy_seed"]

_MEAN_OCEAN_DAYS = 32
_MEAN_AIR_DAYS = 6
_DC_FILL = 0.90  # stay clear of the 95% overstock line
_NOOP = "<answer>{}</answer>"


def policy_seed(seed: int, rollout_id: str, turn: int) -> int:
    """The noise seed of one decision: sha256 of (seed, rollout id, turn), 63 bits."""
    digest = hashlib.sha256(f"{seed}\x1f{rollout_id}\x1f{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class ReorderPointPolicy:
    """Reorder-point actor; ``noise`` > 0 jitters its decisions (see the module docstring)."""

    noise: float = 0.0
    seed: int = 0
    reserve: float = 60_000.0
    cover_steps: float = 1.0
    dc_cover: float = 1.25
    name: str = "reorder-point"
    run_inline: ClassVar[bool] = True  # a few arithmetic rules a turn: no worker thread

    def __post_init__(self) -> None:
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a finite number >= 0, got {self.noise!r}")

    def act(self, observation: ActorObservation) -> str:
        state = observation.state
        if not isinstance(state, Mapping):
            return _NOOP  # nothing to read: do nothing rather than guess
        rng = np.random.default_rng(
            policy_seed(self.seed, observation.rollout_id, observation.turn)
        )
        return format_action(self.decide(state, rng))

    # -- the heuristic

    def _jitter(self, rng: np.random.Generator) -> float:
        if self.noise == 0:
            return 1.0
        return max(0.0, 1.0 + self.noise * float(rng.standard_normal()))

    # Kept whole: reads as the module docstring's heuristic, step by step, in one place.
    def decide(self, state: Mapping[str, Any], rng: np.random.Generator) -> WarehouseAction:
        """The action for one structured observation (``rng`` only matters when noisy)."""
        step, steps, day = int(state["step"]), int(state["steps"]), int(state["day"])
        per_step = int(state["days_per_step"])
        skus = list(state["skus"])
        retailers = list(state["dc_capacity"])
        history = state["demand_history"] or [state["opening_forecast"]]
        recent = history[-2:]
        forecast = {
            r: {s: sum(h[r][s] for h in recent) / len(recent) for s in skus} for r in retailers
        }
        total = {s: sum(forecast[r][s] for r in retailers) for s in skus}

        shipments = self._shipments(state, forecast, skus, retailers, rng)
        position = {s: state["acme"][s] + sum(state["dc"][r][s] for r in retailers) for s in skus}
        for item in state["production"]:
            position[item["sku"]] += item["qty"]
        for item in state["transit"]:
            position[item["sku"]] += item["qty"]

        cash = float(state["cash"])
        credit_free = float(state["credit_limit"]) - float(state["credit_balance"])
        committed = sum(float(item["due_on_completion"]) for item in state["production"])
        # Open receivables come in before most balances fall due (Net-30 vs 25-45 day leads).
        open_ar = sum(float(i["amount"]) for i in state["receivables"])
        spendable = cash + credit_free + open_ar - committed - self.reserve * self._jitter(rng)
        spent_now = sum(
            ship.qty * float(state["skus"][ship.sku]["domestic_freight"]) for ship in shipments
        )
        spendable -= spent_now

        wants = []
        for s in skus:
            terms = state["skus"][s]
            if total[s] <= 0:
                continue

            def sell_step(transit: int, lead: int = int(terms["lead_days"])) -> int:
                return (day + lead + transit) // per_step + 1

            ocean, air = sell_step(_MEAN_OCEAN_DAYS), sell_step(_MEAN_AIR_DAYS)
            bridge_ocean = position[s] >= total[s] * (ocean - step)
            mode, arrive = ("ocean", ocean) if bridge_ocean else ("air", air)
            if self.noise and rng.random() < self.noise / 2:
                mode, arrive = ("air", air) if mode == "ocean" else ("ocean", ocean)
            if arrive > steps - 2:
                continue  # it would sell in the last step at best: its cash never comes back
            horizon = min(arrive - step + self.cover_steps, steps - 1 - step)
            gap = total[s] * horizon * self._jitter(rng) - position[s]
            moq = int(terms["moq"])
            if gap < 0.5 * moq:
                continue
            if self.noise and rng.random() < self.noise / 4:
                continue
            tier = min(3, max(1, math.ceil(gap / moq)))
            urgency = position[s] / max(total[s], 1.0)
            wants.append((urgency, s, tier, mode))

        orders = []
        discounts = state["moq_discounts"]
        for _, s, tier, mode in sorted(wants):
            terms = state["skus"][s]
            while tier > 0:
                qty = tier * int(terms["moq"])
                unit = float(terms["unit_cost"]) * (1.0 - float(discounts[tier - 1]))
                freight = float(terms["air_freight" if mode == "air" else "ocean_freight"])
                cost = qty * (unit + freight)
                if cost <= spendable:
                    orders.append(Order(s, qty, mode))
                    spendable -= cost
                    break
                tier -= 1

        deposits = sum(
            o.qty
            * float(state["skus"][o.sku]["unit_cost"])
            * (1.0 - float(discounts[o.qty // int(state["skus"][o.sku]["moq"]) - 1]))
            * float(state["deposit_share"])
            for o in orders
        )
        due_now = sum(
            float(item["due_on_completion"])
            for item in state["production"]
            if item["stalled"] or item["complete_day"] < day + per_step
        )
        collect = sum(
            float(i["amount"]) for i in state["receivables"] if i["due_day"] < day + per_step
        )
        opex = 8_000.0 * per_step / 7
        end_cash = cash - spent_now - deposits - due_now + collect - opex
        draw = repay = factor = 0.0
        last = step == steps - 1
        if end_cash < self.reserve:
            draw = min(credit_free, self.reserve - end_cash)
            short = self.reserve - end_cash - draw
            if short > 0 and open_ar > 0:
                factor = min(1.0, round(short / (0.95 * open_ar) + 0.005, 2))
        elif float(state["credit_balance"]) > 0 and end_cash > 3 * self.reserve and not last:
            # Repayment happens before the step's collections: use only cash on hand now.
            on_hand = cash - spent_now - deposits - due_now - self.reserve
            repay = max(
                0.0, min(float(state["credit_balance"]), end_cash - 2 * self.reserve, on_hand)
            )
        if last and state["receivables"]:
            factor = 1.0
        return WarehouseAction(
            orders=tuple(orders),
            shipments=tuple(shipments),
            credit_draw=round(draw, 2),
            credit_repay=round(repay, 2),
            factor=factor,
        )

    def _shipments(
        self,
        state: Mapping[str, Any],
        forecast: Mapping[str, Mapping[str, float]],
        skus: list[str],
        retailers: list[str],
        rng: np.random.Generator,
    ) -> list[Shipment]:
        need: dict[tuple[str, str], int] = {}
        for r in retailers:
            room = int(_DC_FILL * state["dc_capacity"][r]) - sum(state["dc"][r].values())
            for s in skus:
                want = math.ceil(self.dc_cover * forecast[r][s] * self._jitter(rng))
                gap = max(0, min(want - state["dc"][r][s], room))
                room -= gap
                need[(r, s)] = gap
        out = []
        for s in skus:
            asked = sum(need[(r, s)] for r in retailers)
            stock = int(state["acme"][s])
            share = 1.0 if asked <= stock else stock / asked
            for r in retailers:
                qty = int(need[(r, s)] * share)
                if qty > 0:
                    out.append(Shipment(r, s, qty))
        return out


@dataclass(frozen=True)
class NoisyReorderPointPolicy(ReorderPointPolicy):
    """The reorder-point actor with jittered quantities, modes and skipped orders."""

    noise: float = 0.3
    name: str = "noisy-reorder-point"
