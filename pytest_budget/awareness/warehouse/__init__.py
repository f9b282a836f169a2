"""Warehouse: BAGEN's external-budget supply-chain environment (App. C), our implementation.

Acme, a consumer-electronics maker, orders five SKUs from OEMs, ships them internationally
into its own 50,000-unit warehouse and on to the distribution centres (DCs) of five retail
accounts, which sell through weekly demand read from a 22-week panel.  One step is 14 days
(two weeks); an episode is 11 steps.  Three budget dimensions are logged per step:

* ``time_weeks``: 2 per step (14 days / 7).
* ``warehouse_item_weeks``: occupancy of the *Acme warehouse* integrated over the step at day
  resolution: sum over the 14 days of the units on hand that day, divided by 7.  Units shipped
  to retailers leave on the step's first day; an international arrival counts from its
  arrival day; refused units never count.  Retailer DC stock is not included.
* ``cumulative_cost_usd``: every expense paid in the step: manufacturing deposits and
  balances, international and domestic freight, holding, OpEx, stockout and overstock
  chargebacks, credit interest and factoring fees.  Credit repayments (principal) are
  financing, not cost; the $50K negative-cash penalty is a reward term, not cash.

Money is kept in integer cents internally, so every step satisfies exactly
``cash_after = cash_before + sum(inflows) - sum(outflows)`` and, per SKU and location,
``after = before + arrivals - out - lost`` (:meth:`StepReport.conservation_errors`).

Mechanics taken from the paper: five retailers (MegaMart, TechZone, ValueCo, OfficePlus,
SupplyDirect) with DCs of 7K-25K units; five SKUs (USB-C hub, 4K dock, USB-C/HDMI cable, USB
display adapter, travel dock); zero initial inventory; $500K starting cash; manufacturing paid
30% at order and 70% on completion, an order waiting in the queue while cash is short; Net-30
receivables; a $200K credit line at 0.8% per step; 5% AR factoring; production lead 25-45 days
by SKU, ocean 32 +/- 4 days, air 6 +/- 1 days, domestic 3-4 days; MOQ tiers 1x/2x/3x with 0/8/15%
discounts; overstock chargebacks above 95% DC occupancy; holding $0.35/unit/week; OpEx
$8,000/week; the two-stage bankruptcy floor ($50K reward penalty for any step ending with
cash < 0, episode truncated once cash < -$200K); per-step reward (eq. 5)
``r_t = revenue - holding - OpEx - stockout chargebacks - overstock chargebacks
- 50,000 * [cash_t < 0]``; at reset each retailer's five demand series are permuted across
the five game SKUs (seeded) and per-step demand is the two-week sum of the assigned series
plus Gaussian noise scaled by that series' standard deviation.

Our reading, where App. C gives no number or leaves the mechanism open:

* Horizon: 11 steps of 14 days (App. C and DESIGN.md; the main text's "24 weeks, 12 turns"
  is not used).
* Event order within a step: (1) credit draw, factoring, credit repayment; (2) new production
  orders (deposit paid at once, even if cash goes negative); (3) shipments Acme -> retailer DCs
  leave on day 0 of the step, clipped to Acme stock and free DC space, and arrive within the
  step (domestic 3-4 days); (4) dated events in day order, same-day ties: collections, then
  production completions, then international arrivals; (5) retailer sales; (6) holding, OpEx
  and interest.  Stalled orders are retried on day 0 of every later step.
* Demand is sell-through billed: a retailer sells ``min(demand, DC stock)`` and is invoiced
  for those units at its wholesale price on day 7 of the step; Net-30 makes the invoice due on
  day 37, i.e. it is collected two steps later.  (At ~$116K weekly GMV that ties up ~$464K,
  the paper's figure.)  Unfilled demand costs a stockout chargeback of 3-5% (by retailer) of
  its wholesale value; chargebacks are paid in the step.
* Overstock: a DC whose occupancy after the step's deliveries exceeds 95% of capacity pays a
  per-unit fee ($1.25-$2.50 by retailer) on the units above the 95% line.
* Acme capacity is hard: units arriving when the warehouse is full are refused and written
  off (the ``lost`` column); they were paid for.
* Holding cost ($0.35/unit/week) applies to Acme warehouse stock only, as eq. 6's ``I_t`` is
  the Acme level; stock in a retailer DC is the retailer's to store, bounded by the overstock
  chargeback.  Holding = item-weeks x $0.35, so cost and occupancy agree.
* Wholesale price of (retailer, game SKU) is the mean ``price`` of that pair in the panel;
  the permutation moves demand series, not prices.
* Noise: one draw per (retailer, SKU, step), ``N(0, 1.0 * std of the weekly series)`` (the
  population std over all panel weeks; ``WarehouseConfig.demand_noise`` scales it), added
  to the two-week sum, rounded and clipped at 0.  All demand noise, the permutation and all
  transit times are drawn at reset, so randomness never depends on the agent's actions.
* Transit: ocean uniform on 28..36 days, air on 5..7 days, drawn per (step, SKU);
  domestic 4 days for MegaMart and ValueCo, 3 days for the others.
* MOQ: an order quantity is rounded down to 1x, 2x or 3x MOQ (at most 3x per SKU per step);
  below 1x MOQ the line is skipped with a note.  Unit costs are rounded to the cent.
* Credit: draws are clipped to the unused line, repayments to the balance and to positive
  cash; interest is 0.8% of the balance at the end of the step, paid in cash.
* Factoring: ``factor`` is the share (0..1) of every outstanding invoice sold now; Acme
  receives the face value (inflow) and pays the 5% fee (outflow, a cost).
* The $50K penalty only enters the reward; cash is not debited.
* Before the first step nothing has been observed, so the first observation shows each
  retailer's opening forecast: the noise-free panel demand for step 1.
* Final cash is the cash balance at the end (credit outstanding is not netted; it is
  reported separately as ``net_cash_usd``).
* A malformed reply (no answer tag, bad JSON, unknown field/SKU/retailer, bad number) makes
  the step a no-op: time passes, demand and events happen, nothing is ordered, shipped,
  drawn, repaid or factored; the turn's ``info`` carries the error and the next observation
  says so.
* Numbers App. C only bounds, chosen by us: unit cost, MOQ, lead days (25/30/35/40/45, so
  cable-by-air lands in ~2.2 steps and dock-by-ocean in ~5.5, as App. C says) and freight in
  :data:`SKUS`; DC capacity (25K/15K/18K/10K/7K), chargeback rates and domestic days in
  :data:`RETAILERS`.
* Rollouts (:func:`run_rollout`): generated with :data:`PLACEHOLDER_BUDGET`; ``success`` =
  the episode reached the horizon without bankruptcy or an actor error (App. C has no task
  success label).  An actor error ends the rollout with the turns so far.
* Challenges (:func:`condition_challenges`, App. B.4): "reaching the target" is judged on the
  logged rollout's *final* cash; a rollout that passes the target early is not truncated, so
  the remaining budgets of every probe run to the logged end.  The reachable time cap is the
  realized ``time_weeks`` total; caps are rounded up to the cent and are at least 0.01 (a
  rollout file rejects zero caps); the target is rounded to the cent.

The bundled demand panel is synthetic (the paper's is not public), and so are its wholesale
prices (list price x a retailer price level); see :func:`synthesize_demand_panel`.  Rollout
generation (:func:`generate_rollouts`) and challenge-conditioned budgets
(:func:`condition_challenges`) close the module.  Plain Python, numpy and anyio: no pytest.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_budget.awareness.warehouse._actions import (
    ActionError,
    InTransit,
    Invoice,
    Order,
    OrderQuote,
    ProductionOrder,
    Shipment,
    StepReport,
    WarehouseAction,
    WarehouseState,
    action_from_dict,
    format_action,
    parse_action,
)
from pytest_budget.awareness.warehouse._challenges import (
    CHALLENGE_PRESETS,
    LEAKING_PRESETS,
    PLACEHOLDER_BUDGET,
    condition_challenges,
    generate_rollouts,
    make_rollout_id,
    run_rollout,
)
from pytest_budget.awareness.warehouse._env import WarehouseEnv
from pytest_budget.awareness.warehouse._market import (
    _PANEL_FILE,
    ENV_NAME,
    PANEL_COLUMNS,
    PANEL_SEED,
    RETAILERS,
    SKUS,
    DemandPanel,
    RetailerSpec,
    SkuSpec,
    WarehouseConfig,
    load_demand_panel,
    panel_to_csv,
    synthesize_demand_panel,
)
from pytest_budget.awareness.warehouse._policy import ReorderPointPolicy

__all__ = [
    "CHALLENGE_PRESETS",
    "ENV_NAME",
    "LEAKING_PRESETS",
    "PANEL_COLUMNS",
    "PANEL_SEED",
    "PLACEHOLDER_BUDGET",
    "RETAILERS",
    "SKUS",
    "ActionError",
    "DemandPanel",
    "InTransit",
    "Invoice",
    "Order",
    "OrderQuote",
    "ProductionOrder",
    "ReorderPointPolicy",
    "RetailerSpec",
    "Shipment",
    "SkuSpec",
    "StepReport",
    "WarehouseAction",
    "WarehouseConfig",
    "WarehouseEnv",
    "WarehouseState",
    "action_from_dict",
    "condition_challenges",
    "format_action",
    "generate_rollouts",
    "load_demand_panel",
    "make_rollout_id",
    "panel_to_csv",
    "parse_action",
    "run_rollout",
    "synthesize_demand_panel",
]

# ------------------------------------------------------------------------ script


def _write_bundled_panel(path: str | os.PathLike[str] | None = None) -> Path:
    target = Path(path) if path else Path(__file__).parents[1] / "data" / _PANEL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(panel_to_csv(synthesize_demand_panel()), encoding="utf-8", newline="")
    return target


if __name__ == "__main__":  # pragma: no cover - maintenance script
    import sys

    print(_write_bundled_panel(sys.argv[1] if len(sys.argv) > 1 else None))
