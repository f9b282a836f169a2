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

import csv
import hashlib
import heapq
import io
import itertools
import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from pytest_budget.awareness.answers import WAREHOUSE_DIMENSIONS
from pytest_budget.awareness.rollouts import ActorObservation, Rollout, Turn, actor_reply
from pytest_budget.roles import AgentError, call_role
from pytest_budget.textscan import blocks as tag_blocks
from pytest_budget.textscan import strip_blocks

__all__ = [
    "CHALLENGE_PRESETS",
    "ENV_NAME",
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

ENV_NAME = "warehouse"

# ------------------------------------------------------------------------ parameters


@dataclass(frozen=True)
class SkuSpec:
    """OEM terms of one SKU; money in cents per unit."""

    name: str
    label: str
    unit_cost_cents: int
    moq: int
    lead_days: int
    ocean_freight_cents: int
    air_freight_cents: int
    domestic_freight_cents: int


@dataclass(frozen=True)
class RetailerSpec:
    """Vendor-agreement terms of one retail account."""

    name: str
    dc_capacity: int
    stockout_rate: float  # share of the wholesale value of unfilled demand
    overstock_fee_cents: int  # per unit above the overstock line
    domestic_days: int


SKUS: tuple[SkuSpec, ...] = (
    SkuSpec("usb_c_hub", "USB-C hub", 1200, 1000, 35, 65, 240, 25),
    SkuSpec("dock_4k", "4K dock", 4600, 500, 45, 130, 560, 45),
    SkuSpec("usb_c_hdmi_cable", "USB-C/HDMI cable", 320, 2000, 25, 50, 150, 15),
    SkuSpec("usb_display_adapter", "USB display adapter", 950, 1000, 30, 55, 180, 20),
    SkuSpec("travel_dock", "travel dock", 2100, 500, 40, 85, 330, 30),
)

RETAILERS: tuple[RetailerSpec, ...] = (
    RetailerSpec("MegaMart", 25_000, 0.05, 150, 4),
    RetailerSpec("TechZone", 15_000, 0.04, 200, 3),
    RetailerSpec("ValueCo", 18_000, 0.05, 125, 4),
    RetailerSpec("OfficePlus", 10_000, 0.03, 200, 3),
    RetailerSpec("SupplyDirect", 7_000, 0.03, 250, 3),
)


@dataclass(frozen=True)
class WarehouseConfig:
    """Every number of the environment; money in cents."""

    steps: int = 11
    days_per_step: int = 14
    initial_cash_cents: int = 50_000_000
    credit_limit_cents: int = 20_000_000
    credit_rate: float = 0.008
    factoring_fee: float = 0.05
    deposit_share: float = 0.30
    net_days: int = 30
    invoice_day: int = 7  # day of the step on which sell-through is invoiced
    warehouse_capacity: int = 50_000
    overstock_threshold: float = 0.95
    holding_cents_per_unit_week: int = 35
    opex_cents_per_week: int = 800_000
    negative_cash_penalty: float = 50_000.0
    bankruptcy_floor_cents: int = -20_000_000
    ocean_days: tuple[int, int] = (28, 36)
    air_days: tuple[int, int] = (5, 7)
    moq_discounts: tuple[float, float, float] = (0.0, 0.08, 0.15)
    demand_noise: float = 1.0
    permute_skus: bool = True
    skus: tuple[SkuSpec, ...] = SKUS
    retailers: tuple[RetailerSpec, ...] = RETAILERS

    @property
    def weeks_per_step(self) -> float:
        return self.days_per_step / 7.0

    @property
    def horizon_weeks(self) -> float:
        return self.steps * self.weeks_per_step

    def sku_index(self, name: str) -> int:
        return [sku.name for sku in self.skus].index(name)

    def retailer_index(self, name: str) -> int:
        return [retailer.name for retailer in self.retailers].index(name)


DEFAULT_CONFIG = WarehouseConfig()


def _cents(amount: float) -> int:
    # Half away from zero, the way an invoice rounds.
    return math.floor(abs(amount) + 0.5) * (1 if amount >= 0 else -1)


def _usd(cents: int) -> float:
    return cents / 100.0


def _money(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) / 100:,.2f}"


# ------------------------------------------------------------------------ demand panel

PANEL_COLUMNS: tuple[str, ...] = ("week", "retailer", "sku", "units", "price")
PANEL_SEED = 20_260_601
_PANEL_FILE = "warehouse_demand.csv"
_PANEL_WEEKS = 22
_TARGET_WEEKLY_GMV = 116_000.0

# Synthesis only: list price, demand mix and retailer price level of the synthetic panel.
_BASE_PRICE = {
    "usb_c_hub": 28.0,
    "dock_4k": 95.0,
    "usb_c_hdmi_cable": 9.0,
    "usb_display_adapter": 22.0,
    "travel_dock": 48.0,
}
_SKU_SHARE = {
    "usb_c_hub": 0.25,
    "dock_4k": 0.08,
    "usb_c_hdmi_cable": 0.35,
    "usb_display_adapter": 0.20,
    "travel_dock": 0.12,
}
_RETAILER_SHARE = {
    "MegaMart": 0.34,
    "TechZone": 0.22,
    "ValueCo": 0.20,
    "OfficePlus": 0.14,
    "SupplyDirect": 0.10,
}
_PRICE_LEVEL = {
    "MegaMart": 0.92,
    "TechZone": 1.05,
    "ValueCo": 0.90,
    "OfficePlus": 1.00,
    "SupplyDirect": 1.10,
}
_COLLAPSING = ("OfficePlus", "usb_display_adapter", 12)  # collapses from 0-based week 12


@dataclass(frozen=True, eq=False)
class DemandPanel:
    """Weekly sell-through per (retailer, SKU): ``units[r, s, w]`` and ``prices[r, s, w]``.

    Retailers and SKUs are in the order of :data:`RETAILERS` and :data:`SKUS`; weeks count
    from 0 here and from 1 in the CSV.
    """

    units: np.ndarray
    prices: np.ndarray
    source: str = "<synthetic>"
    retailers: tuple[str, ...] = tuple(r.name for r in RETAILERS)
    skus: tuple[str, ...] = tuple(s.name for s in SKUS)

    @property
    def weeks(self) -> int:
        return int(self.units.shape[2])

    def weekly_gmv(self) -> np.ndarray:
        """GMV (units x price, USD) summed over retailers and SKUs, per week."""
        return np.asarray((self.units * self.prices).sum(axis=(0, 1)), dtype=float)

    def price_cents(self) -> np.ndarray:
        """Wholesale price per (retailer, SKU) in cents: the pair's mean panel price."""
        return np.asarray(
            [[_cents(float(p) * 100) for p in row] for row in self.prices.mean(axis=2)],
            dtype=np.int64,
        )


def _gauss(rng: random.Random) -> float:
    # Box-Muller on random.random(): stable across Python and numpy versions, so the
    # bundled file regenerates byte for byte.
    u1 = 1.0 - rng.random()
    u2 = rng.random()
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def synthesize_demand_panel(seed: int = PANEL_SEED) -> DemandPanel:
    """The synthetic 22-week panel bundled as ``data/warehouse_demand.csv``.

    Shape, as App. C describes the real one: weekly GMV averaging ~$116K; per series a
    random level, a mild drift, 12% multiplicative week-to-week noise and, for about 40% of
    the series, a step change (x0.65-0.80 or x1.20-1.50) from a random week; one OfficePlus
    series (the USB display adapter) collapses from week 13 to a few percent of its level.
    Units are scaled so the mean weekly GMV is $116K, then rounded.  Price is the list price
    times the retailer's price level, constant over weeks.  Regenerate the file with
    ``python -m pytest_budget.awareness.warehouse``.
    """
    rng = random.Random(seed)
    retailers = [r.name for r in RETAILERS]
    skus = [s.name for s in SKUS]
    raw = np.zeros((len(retailers), len(skus), _PANEL_WEEKS))
    prices = np.zeros_like(raw)
    for r, retailer in enumerate(retailers):
        for s, sku in enumerate(skus):
            level = _RETAILER_SHARE[retailer] * _SKU_SHARE[sku] * (0.85 + 0.3 * rng.random())
            drift = 0.02 * (rng.random() - 0.5)
            step_week, step_factor = _PANEL_WEEKS, 1.0
            if rng.random() < 0.4:
                step_week = 4 + int(rng.random() * 14)
                up = rng.random() < 0.5
                step_factor = 1.2 + 0.3 * rng.random() if up else 0.65 + 0.15 * rng.random()
            collapse = (retailer, sku) == _COLLAPSING[:2]
            for w in range(_PANEL_WEEKS):
                mean = level * (1.0 + drift * w)
                if w >= step_week:
                    mean *= step_factor
                if collapse and w >= _COLLAPSING[2]:
                    mean *= max(0.03, 0.4 ** (w - _COLLAPSING[2] + 1))
                raw[r, s, w] = mean * max(0.2, 1.0 + 0.12 * _gauss(rng))
            prices[r, s, :] = round(_BASE_PRICE[sku] * _PRICE_LEVEL[retailer], 2)
    gmv = float((raw * prices).sum()) / _PANEL_WEEKS
    scaled = raw * (_TARGET_WEEKLY_GMV / gmv)
    units = np.asarray(
        [[[math.floor(x + 0.5) for x in row] for row in block] for block in scaled],
        dtype=np.int64,
    )
    return DemandPanel(units=units, prices=prices, source="<synthetic>")


def panel_to_csv(panel: DemandPanel) -> str:
    """The CSV text of a panel (columns :data:`PANEL_COLUMNS`, weeks from 1, ``\\n`` endings)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(PANEL_COLUMNS)
    for r, retailer in enumerate(panel.retailers):
        for s, sku in enumerate(panel.skus):
            for w in range(panel.weeks):
                price = float(panel.prices[r, s, w])
                writer.writerow([w + 1, retailer, sku, int(panel.units[r, s, w]), f"{price:.2f}"])
    return out.getvalue()


def _parse_panel(text: str, source: str) -> DemandPanel:
    retailers = [r.name for r in RETAILERS]
    skus = [s.name for s in SKUS]
    reader = csv.reader(io.StringIO(text))

    def fail(line: int, problem: str) -> ValueError:
        return ValueError(f"{source}:{line}: {problem}")

    header = next(reader, None)
    if header is None:
        raise fail(1, "empty file; expected the header " + ",".join(PANEL_COLUMNS))
    names = [name.strip().lower() for name in header]
    if sorted(names) != sorted(PANEL_COLUMNS):
        raise fail(1, f"header must name the columns {','.join(PANEL_COLUMNS)}, got {header}")
    col = {name: names.index(name) for name in PANEL_COLUMNS}
    rows: dict[tuple[int, int, int], tuple[int, float]] = {}
    last_line = 1
    for row in reader:
        line = reader.line_num
        last_line = line
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(PANEL_COLUMNS):
            raise fail(line, f"expected {len(PANEL_COLUMNS)} fields, got {len(row)}")
        cells = {name: row[col[name]].strip() for name in PANEL_COLUMNS}
        try:
            week = int(cells["week"])
        except ValueError:
            raise fail(line, f"week must be an integer, got {cells['week']!r}") from None
        if week < 1:
            raise fail(line, f"week must be >= 1, got {week}")
        if cells["retailer"] not in retailers:
            raise fail(
                line, f"unknown retailer {cells['retailer']!r} (expected one of {retailers})"
            )
        if cells["sku"] not in skus:
            raise fail(line, f"unknown sku {cells['sku']!r} (expected one of {skus})")
        try:
            units_value = float(cells["units"])
        except ValueError:
            raise fail(line, f"units must be a number, got {cells['units']!r}") from None
        if not math.isfinite(units_value) or units_value < 0 or units_value != int(units_value):
            raise fail(line, f"units must be a non-negative integer, got {cells['units']!r}")
        try:
            price = float(cells["price"])
        except ValueError:
            raise fail(line, f"price must be a number, got {cells['price']!r}") from None
        if not math.isfinite(price) or price <= 0:
            raise fail(line, f"price must be a positive number, got {cells['price']!r}")
        key = (retailers.index(cells["retailer"]), skus.index(cells["sku"]), week - 1)
        if key in rows:
            raise fail(line, f"duplicate row for week {week}, {cells['retailer']}, {cells['sku']}")
        rows[key] = (int(units_value), price)
    if not rows:
        raise fail(last_line, "no data rows")
    weeks = max(key[2] for key in rows) + 1
    if weeks < _PANEL_WEEKS:
        raise fail(last_line, f"the panel needs at least {_PANEL_WEEKS} weeks, got {weeks}")
    units = np.zeros((len(retailers), len(skus), weeks), dtype=np.int64)
    prices = np.zeros((len(retailers), len(skus), weeks))
    for r, retailer in enumerate(retailers):
        for s, sku in enumerate(skus):
            for w in range(weeks):
                if (r, s, w) not in rows:
                    raise fail(
                        last_line, f"incomplete panel: no row for week {w + 1}, {retailer}, {sku}"
                    )
                units[r, s, w], prices[r, s, w] = rows[(r, s, w)]
    return DemandPanel(units=units, prices=prices, source=source)


@lru_cache(maxsize=1)
def _bundled_panel() -> DemandPanel:
    resource = resources.files("pytest_budget.awareness").joinpath("data", _PANEL_FILE)
    return _parse_panel(resource.read_text(encoding="utf-8"), f"<bundled {_PANEL_FILE}>")


def load_demand_panel(path: str | os.PathLike[str] | None = None) -> DemandPanel:
    """The bundled synthetic panel, or a user CSV with the columns :data:`PANEL_COLUMNS`.

    ``week`` counts from 1 (at least 22 weeks, every (week, retailer, sku) once), ``retailer``
    and ``sku`` use the names in :data:`RETAILERS` / :data:`SKUS`, ``units`` is weekly
    sell-through, ``price`` the wholesale price in USD.  Any problem raises ``ValueError``
    with one line ``file:line: problem``.
    """
    if path is None:
        return _bundled_panel()
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # tolerate a spreadsheet's BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}:0: cannot read demand panel ({exc})") from None
    return _parse_panel(text, str(path))


# ------------------------------------------------------------------------ actions


class ActionError(ValueError):
    """A reply that is not a valid Warehouse action; the message is one line."""


@dataclass(frozen=True)
class Order:
    sku: str
    qty: int
    mode: str = "ocean"


@dataclass(frozen=True)
class Shipment:
    retailer: str
    sku: str
    qty: int


@dataclass(frozen=True)
class WarehouseAction:
    """One step's decisions; money in USD.  ``WarehouseAction()`` does nothing."""

    orders: tuple[Order, ...] = ()
    shipments: tuple[Shipment, ...] = ()
    credit_draw: float = 0.0
    credit_repay: float = 0.0
    factor: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "orders": [{"sku": o.sku, "qty": o.qty, "mode": o.mode} for o in self.orders],
            "shipments": [
                {"retailer": s.retailer, "sku": s.sku, "qty": s.qty} for s in self.shipments
            ],
            "credit_draw": self.credit_draw,
            "credit_repay": self.credit_repay,
            "factor": self.factor,
        }


_ACTION_KEYS = ("orders", "shipments", "credit_draw", "credit_repay", "factor")
_MAX_NUMBER = 1e12  # anything larger is a typo, not a decision


def _amount(value: Any, where: str, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionError(f"{where} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or number > _MAX_NUMBER:
        raise ActionError(f"{where} must be a finite number between 0 and 1e12, got {value!r}")
    if integer and number != int(number):
        raise ActionError(f"{where} must be a whole number of units, got {value!r}")
    return number


def _lines(data: Mapping[str, Any], key: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    raw = data.get(key, [])
    if not isinstance(raw, list):
        raise ActionError(f"{key!r} must be a list of objects")
    out = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ActionError(f"{key}[{index}] must be an object")
        unknown = sorted(set(item) - set(fields))
        if unknown:
            raise ActionError(f"{key}[{index}] has unknown field {unknown[0]!r}")
        out.append(item)
    return out


def action_from_dict(data: Any, config: WarehouseConfig = DEFAULT_CONFIG) -> WarehouseAction:
    """Validate the JSON form of an action; raises :class:`ActionError` (one line)."""
    if not isinstance(data, dict):
        raise ActionError(f"the answer must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_ACTION_KEYS))
    if unknown:
        raise ActionError(f"unknown field {unknown[0]!r} (allowed: {', '.join(_ACTION_KEYS)})")
    skus = [s.name for s in config.skus]
    retailers = [r.name for r in config.retailers]
    orders: list[Order] = []
    for index, item in enumerate(_lines(data, "orders", ("sku", "qty", "mode"))):
        sku, mode = item.get("sku"), item.get("mode", "ocean")
        if sku not in skus:
            raise ActionError(f"orders[{index}].sku {sku!r} is not one of {skus}")
        if mode not in ("ocean", "air"):
            raise ActionError(f"orders[{index}].mode must be 'ocean' or 'air', got {mode!r}")
        if any(o.sku == sku for o in orders):
            raise ActionError(f"orders lists {sku!r} twice (one order per SKU per step)")
        qty = int(_amount(item.get("qty"), f"orders[{index}].qty", integer=True))
        orders.append(Order(sku, qty, mode))
    shipments: list[Shipment] = []
    for index, item in enumerate(_lines(data, "shipments", ("retailer", "sku", "qty"))):
        retailer, sku = item.get("retailer"), item.get("sku")
        if retailer not in retailers:
            raise ActionError(f"shipments[{index}].retailer {retailer!r} is not one of {retailers}")
        if sku not in skus:
            raise ActionError(f"shipments[{index}].sku {sku!r} is not one of {skus}")
        if any(s.retailer == retailer and s.sku == sku for s in shipments):
            raise ActionError(f"shipments lists ({retailer}, {sku}) twice")
        qty = int(_amount(item.get("qty"), f"shipments[{index}].qty", integer=True))
        shipments.append(Shipment(retailer, sku, qty))
    draw = _amount(data.get("credit_draw", 0), "credit_draw")
    repay = _amount(data.get("credit_repay", 0), "credit_repay")
    factor = _amount(data.get("factor", 0), "factor")
    if factor > 1:
        raise ActionError(f"factor is a share of receivables between 0 and 1, got {factor!r}")
    return WarehouseAction(tuple(orders), tuple(shipments), draw, repay, factor)


def _unfence(body: str) -> str:
    """The inside of a ```` ```json ... ``` ```` fence (the whole body), else ``body``."""
    if len(body) < 6 or not (body.startswith("```") and body.endswith("```")):
        return body
    inner = body[3:-3]
    if inner[:4].lower() == "json":
        inner = inner[4:]
    return inner.strip()


def parse_action(text: str, config: WarehouseConfig = DEFAULT_CONFIG) -> WarehouseAction:
    """Read the JSON action inside ``<answer>...</answer>``; ``<think>`` blocks are ignored.

    Raises :class:`ActionError` with a one-line reason; never anything else.
    """
    # Linear time on any text (tags.py), unlike the regular expressions it replaces.
    stripped = strip_blocks(text, "think")
    found = list(itertools.islice(tag_blocks(stripped, "answer"), 2))
    if not found:
        raise ActionError("no <answer>...</answer> tag with a JSON action")
    if len(found) > 1:
        raise ActionError("more than one <answer> tag")
    body = _unfence(found[0].content.strip())
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # ValueError beyond JSONDecodeError: an integer of more than 4300 digits
        if isinstance(exc, json.JSONDecodeError):
            msg = exc.msg
        elif isinstance(exc, RecursionError):
            msg = "nested too deeply"
        else:
            msg = "a number is too long"
        raise ActionError(f"the answer is not valid JSON ({msg})") from None
    return action_from_dict(data, config)


def format_action(action: WarehouseAction) -> str:
    """The reply text for an action: its JSON inside the answer tag."""
    return f"<answer>{json.dumps(action.to_dict())}</answer>"


# ------------------------------------------------------------------------ state


@dataclass
class Invoice:
    retailer: str
    amount_cents: int
    due_day: int


@dataclass
class ProductionOrder:
    order_id: int
    sku: str
    qty: int
    mode: str
    complete_day: int
    balance_cents: int
    freight_cents: int
    transit_days: int
    stalled: bool = False


@dataclass
class InTransit:
    order_id: int
    sku: str
    qty: int
    arrive_day: int


@dataclass
class WarehouseState:
    """The mutable episode state; tests and tools may edit it between steps.

    ``acme[sku]`` and ``dc[retailer][sku]`` are units on hand; money is in cents;
    ``demand_history`` holds the realized demand ``[retailer][sku]`` of finished steps.
    """

    step: int
    cash_cents: int
    credit_cents: int
    acme: dict[str, int]
    dc: dict[str, dict[str, int]]
    receivables: list[Invoice] = field(default_factory=list)
    production: list[ProductionOrder] = field(default_factory=list)
    transit: list[InTransit] = field(default_factory=list)
    demand_history: list[dict[str, dict[str, int]]] = field(default_factory=list)
    next_order_id: int = 1
    bankrupt: bool = False
    total_reward: float = 0.0
    last_error: str | None = None
    last_summary: str | None = None


@dataclass(frozen=True)
class OrderQuote:
    """What a production order costs: quantity snapped to a MOQ tier, money in cents."""

    sku: str
    tier: int
    qty: int
    unit_cents: int
    total_cents: int
    deposit_cents: int
    balance_cents: int
    freight_cents: int


@dataclass(frozen=True)
class StepReport:
    """Everything one step did, with the ledgers the conservation checks read."""

    step: int
    action: WarehouseAction
    error: str | None
    notes: tuple[str, ...]
    usage: Mapping[str, float]
    reward: float
    revenue_cents: int
    cash_before_cents: int
    cash_after_cents: int
    inflows: Mapping[str, int]
    outflows: Mapping[str, int]
    inventory: Mapping[str, Mapping[str, Mapping[str, int]]]
    lost_units: int
    done: bool
    bankrupt: bool
    credit_after_cents: int = 0
    receivables_after_cents: int = 0

    @property
    def cost_cents(self) -> int:
        return sum(v for k, v in self.outflows.items() if k != "credit_repay")

    def conservation_errors(self) -> list[str]:
        """Empty when cash and every inventory balance add up exactly."""
        errors = []
        expected = self.cash_before_cents + sum(self.inflows.values()) - sum(self.outflows.values())
        if expected != self.cash_after_cents:
            errors.append(f"cash: expected {expected} cents, got {self.cash_after_cents}")
        for location, per_sku in self.inventory.items():
            for sku, row in per_sku.items():
                want = row["before"] + row["arrivals"] - row["out"] - row["lost"]
                if want != row["after"] or min(row.values()) < 0:
                    errors.append(f"{location}/{sku}: {dict(row)} does not balance")
        return errors

    def info(self) -> dict[str, Any]:
        """The JSON-ready ``Turn.info`` of this step (USD)."""
        out: dict[str, Any] = {
            "step": self.step + 1,
            "reward": round(self.reward, 2),
            "cash": _usd(self.cash_after_cents),
            "revenue": _usd(self.revenue_cents),
            "stockout_chargeback": _usd(self.outflows.get("stockout_chargeback", 0)),
            "overstock_chargeback": _usd(self.outflows.get("overstock_chargeback", 0)),
            "lost_units": self.lost_units,
            "credit_balance": _usd(self.credit_after_cents),
            "receivables": _usd(self.receivables_after_cents),
        }
        if self.error:
            out["error"] = self.error
        if self.notes:
            out["notes"] = list(self.notes)
        if self.bankrupt:
            out["bankrupt"] = True
        return out


_INFLOWS = ("collections", "factoring", "credit_draw")
_OUTFLOWS = (
    "credit_repay",
    "factoring_fee",
    "mfg_deposit",
    "mfg_balance",
    "intl_freight",
    "domestic_freight",
    "overstock_chargeback",
    "stockout_chargeback",
    "holding",
    "opex",
    "interest",
)


# ------------------------------------------------------------------------ environment


def _rng_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class WarehouseEnv:
    """One Warehouse episode; construct a new one (or call :meth:`reset`) per episode."""

    def __init__(
        self,
        panel: DemandPanel | None = None,
        *,
        seed: int = 0,
        config: WarehouseConfig = DEFAULT_CONFIG,
    ) -> None:
        self.panel = panel if panel is not None else load_demand_panel()
        self.config = config
        self.seed = seed
        self.reset()

    # -- setup

    def reset(self) -> None:
        """Fresh episode from ``seed``: permutation, demand noise and transit times."""
        cfg, panel = self.config, self.panel
        n_r, n_s, steps = len(cfg.retailers), len(cfg.skus), cfg.steps
        if panel.units.shape[:2] != (n_r, n_s) or panel.prices.shape != panel.units.shape:
            raise ValueError(
                f"{panel.source}: panel shape {panel.units.shape} does not match "
                f"{n_r} retailers x {n_s} SKUs"
            )
        if panel.weeks < 2 * steps:
            raise ValueError(f"{panel.source}: needs {2 * steps} weeks, has {panel.weeks}")
        rng = np.random.default_rng(_rng_seed("warehouse-env", self.seed))
        perms = [rng.permutation(n_s) if cfg.permute_skus else np.arange(n_s) for _ in range(n_r)]
        self.permutation: dict[str, list[str]] = {
            r.name: [cfg.skus[int(j)].name for j in perms[i]] for i, r in enumerate(cfg.retailers)
        }
        noise = rng.standard_normal((n_r, n_s, steps))
        self._ocean = rng.integers(cfg.ocean_days[0], cfg.ocean_days[1] + 1, size=(steps, n_s))
        self._air = rng.integers(cfg.air_days[0], cfg.air_days[1] + 1, size=(steps, n_s))
        units = panel.units.astype(float)
        self.base_demand = np.zeros((n_r, n_s, steps), dtype=np.int64)
        self.demand = np.zeros((n_r, n_s, steps), dtype=np.int64)
        for r in range(n_r):
            for s in range(n_s):
                series = units[r, int(perms[r][s]), : 2 * steps]
                sd = float(units[r, int(perms[r][s]), :].std())
                for t in range(steps):
                    base = series[2 * t] + series[2 * t + 1]
                    self.base_demand[r, s, t] = int(base)
                    value = base + cfg.demand_noise * sd * float(noise[r, s, t])
                    self.demand[r, s, t] = max(0, math.floor(value + 0.5))
        self.prices = panel.price_cents()
        self.state = WarehouseState(
            step=0,
            cash_cents=cfg.initial_cash_cents,
            credit_cents=0,
            acme={s.name: 0 for s in cfg.skus},
            dc={r.name: {s.name: 0 for s in cfg.skus} for r in cfg.retailers},
        )

    @property
    def done(self) -> bool:
        return self.state.bankrupt or self.state.step >= self.config.steps

    def price(self, retailer: str, sku: str) -> int:
        """Wholesale price in cents."""
        return int(self.prices[self.config.retailer_index(retailer), self.config.sku_index(sku)])

    def quote(self, sku: str, qty: int, mode: str = "ocean") -> OrderQuote:
        """Price a production order: ``qty`` rounded down to 1x/2x/3x MOQ (tier 0 = none)."""
        spec = self.config.skus[self.config.sku_index(sku)]
        tier = min(3, qty // spec.moq)
        units = tier * spec.moq
        discount = self.config.moq_discounts[tier - 1] if tier else 0.0
        unit = _cents(spec.unit_cost_cents * (1.0 - discount))
        total = unit * units
        deposit = _cents(total * self.config.deposit_share)
        per_unit = spec.air_freight_cents if mode == "air" else spec.ocean_freight_cents
        return OrderQuote(sku, tier, units, unit, total, deposit, total - deposit, per_unit * units)

    # -- stepping

    def step(self, action: WarehouseAction | str) -> StepReport:
        """Advance one 14-day step; a malformed text action makes the step a no-op."""
        if self.done:
            raise RuntimeError("the episode is over; reset() or make a new WarehouseEnv")
        error: str | None = None
        try:
            if isinstance(action, str):
                action = parse_action(action, self.config)
            else:  # a programmatic action gets the same validation as text
                action = action_from_dict(action.to_dict(), self.config)
        except ActionError as exc:
            error = str(exc)
            action = WarehouseAction()
        return self._advance(action, error)

    def _advance(self, action: WarehouseAction, error: str | None) -> StepReport:
        cfg, st = self.config, self.state
        t = st.step
        d0 = t * cfg.days_per_step
        d1 = d0 + cfg.days_per_step
        inflows = dict.fromkeys(_INFLOWS, 0)
        outflows = dict.fromkeys(_OUTFLOWS, 0)
        notes: list[str] = []
        cash_before = st.cash_cents
        sku_names = [s.name for s in cfg.skus]
        inv: dict[str, dict[str, dict[str, int]]] = {"acme": {}}
        for name in sku_names:
            inv["acme"][name] = {"before": st.acme[name], "arrivals": 0, "out": 0, "lost": 0}
        for r in cfg.retailers:
            inv[r.name] = {
                n: {"before": st.dc[r.name][n], "arrivals": 0, "out": 0, "lost": 0}
                for n in sku_names
            }

        def receive(kind: str, cents: int) -> None:
            st.cash_cents += cents
            inflows[kind] += cents

        def pay(kind: str, cents: int) -> None:
            st.cash_cents -= cents
            outflows[kind] += cents

        # (1) financing
        draw = min(_cents(action.credit_draw * 100), cfg.credit_limit_cents - st.credit_cents)
        if draw > 0:
            receive("credit_draw", draw)
            st.credit_cents += draw
        if draw < _cents(action.credit_draw * 100):
            notes.append(f"credit draw clipped to the unused line ({_money(max(draw, 0))})")
        if action.factor > 0:
            for invoice in st.receivables:
                face = _cents(invoice.amount_cents * action.factor)
                invoice.amount_cents -= face
                receive("factoring", face)
                pay("factoring_fee", _cents(face * cfg.factoring_fee))
            st.receivables = [i for i in st.receivables if i.amount_cents > 0]
        repay = min(_cents(action.credit_repay * 100), st.credit_cents, max(st.cash_cents, 0))
        if repay > 0:
            pay("credit_repay", repay)
            st.credit_cents -= repay
        if repay < _cents(action.credit_repay * 100):
            notes.append(f"credit repayment clipped to {_money(repay)} (balance or cash)")

        # (2) production orders
        for order in action.orders:
            quote = self.quote(order.sku, order.qty, order.mode)
            if quote.tier == 0:
                if order.qty > 0:
                    spec = cfg.skus[cfg.sku_index(order.sku)]
                    notes.append(f"order {order.sku} {order.qty} is below MOQ {spec.moq}: skipped")
                continue
            if quote.qty != order.qty:
                notes.append(f"order {order.sku} {order.qty} rounded to MOQ tier {quote.qty}")
            pay("mfg_deposit", quote.deposit_cents)
            s = cfg.sku_index(order.sku)
            transit = int((self._air if order.mode == "air" else self._ocean)[t, s])
            spec = cfg.skus[s]
            st.production.append(
                ProductionOrder(
                    st.next_order_id,
                    order.sku,
                    quote.qty,
                    order.mode,
                    d0 + spec.lead_days,
                    quote.balance_cents,
                    quote.freight_cents,
                    transit,
                )
            )
            st.next_order_id += 1

        # (3) shipments to retailer DCs leave on day 0 and arrive within the step
        received = {r.name: dict.fromkeys(sku_names, 0) for r in cfg.retailers}
        for ship in action.shipments:
            retailer = cfg.retailers[cfg.retailer_index(ship.retailer)]
            space = (
                retailer.dc_capacity
                - sum(st.dc[ship.retailer].values())
                - sum(received[ship.retailer].values())
            )
            qty = max(0, min(ship.qty, st.acme[ship.sku], space))
            if qty < ship.qty:
                notes.append(
                    f"shipment {ship.retailer}/{ship.sku} {ship.qty} clipped to {qty} "
                    "(Acme stock or DC space)"
                )
            if qty == 0:
                continue
            st.acme[ship.sku] -= qty
            inv["acme"][ship.sku]["out"] += qty
            received[ship.retailer][ship.sku] += qty
            spec = cfg.skus[cfg.sku_index(ship.sku)]
            pay("domestic_freight", qty * spec.domestic_freight_cents)

        # (4) dated events in day order
        item_days = sum(st.acme.values()) * cfg.days_per_step
        lost_units = 0
        heap: list[tuple[int, int, int, object]] = []
        seq = 0
        for invoice in st.receivables:
            if invoice.due_day < d1:
                heap.append((max(invoice.due_day, d0), 0, seq, invoice))
                seq += 1
        for job in st.production:
            if job.stalled or job.complete_day < d1:
                day = d0 if job.stalled else max(job.complete_day, d0)
                heap.append((day, 1, seq, job))
                seq += 1
        for shipment in st.transit:
            if shipment.arrive_day < d1:
                heap.append((max(shipment.arrive_day, d0), 2, seq, shipment))
                seq += 1
        heapq.heapify(heap)
        while heap:
            day, _, _, event = heapq.heappop(heap)
            if isinstance(event, Invoice):
                receive("collections", event.amount_cents)
                st.receivables.remove(event)
            elif isinstance(event, ProductionOrder):
                due = event.balance_cents + event.freight_cents
                if st.cash_cents < due:
                    if not event.stalled:
                        notes.append(
                            f"order #{event.order_id} ({event.sku}) is waiting: "
                            f"{_money(due)} due on completion exceeds cash"
                        )
                    event.stalled = True
                    continue
                pay("mfg_balance", event.balance_cents)
                pay("intl_freight", event.freight_cents)
                st.production.remove(event)
                arrival = InTransit(event.order_id, event.sku, event.qty, day + event.transit_days)
                st.transit.append(arrival)
                if arrival.arrive_day < d1:
                    heapq.heappush(heap, (arrival.arrive_day, 2, seq, arrival))
                    seq += 1
            elif isinstance(event, InTransit):
                space = max(0, cfg.warehouse_capacity - sum(st.acme.values()))
                accepted = min(event.qty, space)
                st.acme[event.sku] += accepted
                row = inv["acme"][event.sku]
                row["arrivals"] += event.qty
                row["lost"] += event.qty - accepted
                lost_units += event.qty - accepted
                item_days += accepted * (d1 - day)
                st.transit.remove(event)
        if lost_units:
            notes.append(f"{lost_units} arriving units refused: the Acme warehouse was full")

        # (5) deliveries, overstock, sales and invoices
        revenue = 0
        demand_seen: dict[str, dict[str, int]] = {}
        for r_index, retailer in enumerate(cfg.retailers):
            stock = st.dc[retailer.name]
            for name in sku_names:
                stock[name] += received[retailer.name][name]
                inv[retailer.name][name]["arrivals"] += received[retailer.name][name]
            line = math.floor(cfg.overstock_threshold * retailer.dc_capacity)
            over = sum(stock.values()) - line
            if over > 0:
                pay("overstock_chargeback", over * retailer.overstock_fee_cents)
            billed = 0
            demand_seen[retailer.name] = {}
            for s_index, name in enumerate(sku_names):
                wanted = int(self.demand[r_index, s_index, t])
                demand_seen[retailer.name][name] = wanted
                sold = min(wanted, stock[name])
                stock[name] -= sold
                inv[retailer.name][name]["out"] += sold
                price = int(self.prices[r_index, s_index])
                billed += sold * price
                unfilled = wanted - sold
                if unfilled:
                    pay("stockout_chargeback", _cents(unfilled * price * retailer.stockout_rate))
            if billed:
                due = d0 + cfg.invoice_day + cfg.net_days
                st.receivables.append(Invoice(retailer.name, billed, due))
            revenue += billed
        st.demand_history.append(demand_seen)

        # (6) holding, OpEx, interest
        pay("holding", _cents(item_days / 7.0 * cfg.holding_cents_per_unit_week))
        pay("opex", _cents(cfg.opex_cents_per_week * cfg.weeks_per_step))
        pay("interest", _cents(st.credit_cents * cfg.credit_rate))

        # reward (eq. 5) and the two-stage floor
        profit = revenue - outflows["holding"] - outflows["opex"]
        penalties = outflows["stockout_chargeback"] + outflows["overstock_chargeback"]
        reward = (profit - penalties) / 100.0
        if st.cash_cents < 0:
            reward -= cfg.negative_cash_penalty
        st.total_reward += reward
        st.step += 1
        if st.cash_cents < cfg.bankruptcy_floor_cents:
            st.bankrupt = True
            notes.append("cash fell below the bankruptcy floor: the episode ends")

        for location, per_sku in inv.items():
            for name in sku_names:
                per_sku[name]["after"] = (
                    st.acme[name] if location == "acme" else st.dc[location][name]
                )
        cost = sum(v for k, v in outflows.items() if k != "credit_repay")
        report = StepReport(
            step=t,
            action=action,
            error=error,
            notes=tuple(notes),
            usage={
                "time_weeks": cfg.weeks_per_step,
                "warehouse_item_weeks": item_days / 7.0,
                "cumulative_cost_usd": _usd(cost),
            },
            reward=reward,
            revenue_cents=revenue,
            cash_before_cents=cash_before,
            cash_after_cents=st.cash_cents,
            inflows=inflows,
            outflows=outflows,
            inventory=inv,
            lost_units=lost_units,
            done=self.done,
            bankrupt=st.bankrupt,
            credit_after_cents=st.credit_cents,
            receivables_after_cents=sum(i.amount_cents for i in st.receivables),
        )
        st.last_error = error
        st.last_summary = (
            f"Last step: revenue {_money(revenue)}, stockout chargebacks "
            f"{_money(outflows['stockout_chargeback'])}, overstock chargebacks "
            f"{_money(outflows['overstock_chargeback'])}, cost {_money(cost)}, "
            f"reward {reward:,.2f}."
        )
        return report

    # -- observation

    def forecast(self) -> dict[str, dict[str, int]]:
        """What the agent knows of demand: last step's, or the opening forecast at step 1."""
        if self.state.demand_history:
            return self.state.demand_history[-1]
        return {
            r.name: {s.name: int(self.base_demand[i, j, 0]) for j, s in enumerate(self.config.skus)}
            for i, r in enumerate(self.config.retailers)
        }

    def state_dict(self) -> dict[str, Any]:
        """The structured observation (JSON-ready, money in USD) for programmatic actors."""
        cfg, st = self.config, self.state
        return {
            "step": st.step,
            "steps": cfg.steps,
            "day": st.step * cfg.days_per_step,
            "days_per_step": cfg.days_per_step,
            "cash": _usd(st.cash_cents),
            "credit_balance": _usd(st.credit_cents),
            "credit_limit": _usd(cfg.credit_limit_cents),
            "credit_rate": cfg.credit_rate,
            "factoring_fee": cfg.factoring_fee,
            "receivables": [
                {"retailer": i.retailer, "amount": _usd(i.amount_cents), "due_day": i.due_day}
                for i in st.receivables
            ],
            "acme": dict(st.acme),
            "warehouse_capacity": cfg.warehouse_capacity,
            "dc": {name: dict(stock) for name, stock in st.dc.items()},
            "dc_capacity": {r.name: r.dc_capacity for r in cfg.retailers},
            "production": [
                {
                    "id": o.order_id,
                    "sku": o.sku,
                    "qty": o.qty,
                    "mode": o.mode,
                    "complete_day": o.complete_day,
                    "due_on_completion": _usd(o.balance_cents + o.freight_cents),
                    "stalled": o.stalled,
                }
                for o in st.production
            ],
            "transit": [
                {"id": s.order_id, "sku": s.sku, "qty": s.qty, "arrive_day": s.arrive_day}
                for s in st.transit
            ],
            "demand_history": [
                {r: dict(per) for r, per in step.items()} for step in st.demand_history
            ],
            "opening_forecast": self.forecast() if not st.demand_history else None,
            "prices": {
                r.name: {s.name: self.price(r.name, s.name) / 100 for s in cfg.skus}
                for r in cfg.retailers
            },
            "skus": {
                s.name: {
                    "unit_cost": _usd(s.unit_cost_cents),
                    "moq": s.moq,
                    "lead_days": s.lead_days,
                    "ocean_freight": _usd(s.ocean_freight_cents),
                    "air_freight": _usd(s.air_freight_cents),
                    "domestic_freight": _usd(s.domestic_freight_cents),
                }
                for s in cfg.skus
            },
            "moq_discounts": list(cfg.moq_discounts),
            "deposit_share": cfg.deposit_share,
            "ocean_days": list(cfg.ocean_days),
            "air_days": list(cfg.air_days),
            "domestic_days": {r.name: r.domestic_days for r in cfg.retailers},
            "invoice_due_offset_days": cfg.invoice_day + cfg.net_days,
            "last_error": st.last_error,
        }

    def render(self) -> str:
        """The actor prompt: state first (it survives clipping), terms and schema last."""
        cfg, st = self.config, self.state
        d0 = st.step * cfg.days_per_step
        skus = [s.name for s in cfg.skus]
        lines = [
            f"Warehouse, step {st.step + 1} of {cfg.steps} (days {d0}-{d0 + cfg.days_per_step - 1},"
            f" weeks {2 * st.step + 1}-{2 * st.step + 2}). You run Acme's supply chain.",
        ]
        if st.last_error:
            lines.append(
                f"Your last reply was not a valid action ({st.last_error}); nothing was done."
            )
        ar = sum(i.amount_cents for i in st.receivables)
        dues = ", ".join(f"day {i.due_day} {_money(i.amount_cents)}" for i in st.receivables)
        lines.append(
            f"Cash {_money(st.cash_cents)}. Credit drawn {_money(st.credit_cents)} of "
            f"{_money(cfg.credit_limit_cents)}. Receivables {_money(ar)}"
            + (f" ({dues})." if dues else ".")
        )
        lines.append(
            f"Acme warehouse {sum(st.acme.values()):,} of {cfg.warehouse_capacity:,} units: "
            + ", ".join(f"{n} {st.acme[n]:,}" for n in skus)
            + "."
        )
        if st.production:
            lines.append(
                "In production: "
                + "; ".join(
                    f"#{o.order_id} {o.sku} {o.qty:,} {o.mode}, done day {o.complete_day}, "
                    f"{_money(o.balance_cents + o.freight_cents)} due then"
                    + (" (WAITING for cash)" if o.stalled else "")
                    for o in st.production
                )
                + "."
            )
        if st.transit:
            lines.append(
                "In transit to Acme: "
                + "; ".join(
                    f"#{s.order_id} {s.sku} {s.qty:,} arrives day {s.arrive_day}"
                    for s in st.transit
                )
                + "."
            )
        lines.append("Retailer DC stock (units on hand / capacity):")
        for r in cfg.retailers:
            stock = st.dc[r.name]
            lines.append(
                f"  {r.name} {sum(stock.values()):,}/{r.dc_capacity:,}: "
                + ", ".join(f"{stock[n]:,}" for n in skus)
            )
        label = "Demand last step" if st.demand_history else "Opening forecast for this step"
        lines.append(f"{label} (units per retailer, columns {', '.join(skus)}):")
        for r_name, per in self.forecast().items():
            lines.append(f"  {r_name}: " + ", ".join(f"{per[n]:,}" for n in skus))
        if st.last_summary:
            lines.append(st.last_summary)
        lines += self._terms()
        return "\n".join(lines)

    def _terms(self) -> list[str]:
        cfg = self.config
        tiers = "/".join(f"{d:.0%}" for d in cfg.moq_discounts)
        lines = [
            "Terms: retailers are invoiced for what they sell (day 7 of the step) and pay "
            f"Net-{cfg.net_days}, i.e. two steps later. Unfilled demand costs a stockout "
            "chargeback ("
            + ", ".join(f"{r.name} {r.stockout_rate:.0%}" for r in cfg.retailers)
            + " of its wholesale value); a DC above "
            f"{cfg.overstock_threshold:.0%} full after deliveries pays "
            + ", ".join(f"{_money(r.overstock_fee_cents)}" for r in cfg.retailers)
            + " per unit above that line. Holding "
            f"{_money(cfg.holding_cents_per_unit_week)}/unit/week at Acme; OpEx "
            f"{_money(cfg.opex_cents_per_week)}/week; units beyond Acme's capacity are refused "
            f"and lost. Production: {cfg.deposit_share:.0%} deposit at order, the rest plus "
            "international freight on completion (the order waits while cash is short). "
            f"Order sizes 1x/2x/3x MOQ with discounts {tiers}; other sizes round down. "
            f"Transit: ocean {cfg.ocean_days[0]}-{cfg.ocean_days[1]} days, air "
            f"{cfg.air_days[0]}-{cfg.air_days[1]} days, Acme to retailer 3-4 days. Credit "
            f"interest {cfg.credit_rate:.1%}/step; factoring pays face value less "
            f"{cfg.factoring_fee:.0%}. Cash below $0 at a step's end costs a "
            f"{_money(_cents(cfg.negative_cash_penalty * 100))} penalty; below "
            f"{_money(cfg.bankruptcy_floor_cents)} you are bankrupt and the game ends.",
            "SKUs (unit cost, MOQ, lead days, ocean/air freight per unit; price by retailer "
            + "/".join(r.name for r in cfg.retailers)
            + "):",
        ]
        for s in cfg.skus:
            prices = "/".join(f"{self.price(r.name, s.name) / 100:.2f}" for r in cfg.retailers)
            lines.append(
                f"  {s.name}: {_money(s.unit_cost_cents)}, {s.moq:,}, {s.lead_days}, "
                f"{_money(s.ocean_freight_cents)}/{_money(s.air_freight_cents)}; {prices}"
            )
        lines.append(
            'Reply with JSON inside <answer></answer>, e.g. <answer>{"orders": [{"sku": '
            '"usb_c_hub", "qty": 2000, "mode": "ocean"}], "shipments": [{"retailer": '
            '"MegaMart", "sku": "usb_c_hub", "qty": 500}], "credit_draw": 0, '
            '"credit_repay": 0, "factor": 0}</answer>. Every field is optional ({} does '
            "nothing): orders (one per sku; mode ocean or air), shipments (Acme stock to a "
            "retailer DC, clipped to stock and space), credit_draw and credit_repay (USD), "
            "factor (share 0-1 of every open invoice sold now). Anything else is ignored "
            "for the step and time still passes."
        )
        return lines


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

    The actor is called through :func:`~pytest_budget.roles.call_role` with an
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


# ------------------------------------------------------------------------ script


def _write_bundled_panel(path: str | os.PathLike[str] | None = None) -> Path:
    target = Path(path) if path else Path(__file__).with_name("data") / _PANEL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(panel_to_csv(synthesize_demand_panel()), encoding="utf-8", newline="")
    return target


if __name__ == "__main__":  # pragma: no cover - maintenance script
    import sys

    print(_write_bundled_panel(sys.argv[1] if len(sys.argv) > 1 else None))
