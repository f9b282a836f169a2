"""Warehouse's actions (what an actor may do, parsed from its reply) and the state records
the environment keeps and reports.  Re-exported by :mod:`pytest_budget.awareness.warehouse`.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_budget._core.textscan import blocks as tag_blocks
from pytest_budget._core.textscan import strip_blocks
from pytest_budget.awareness.warehouse._market import DEFAULT_CONFIG, WarehouseConfig, _usd

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
    # Lines seen so far, for the duplicate checks (a set: a reply may list many lines).
    ordered: set[object] = set()
    for index, item in enumerate(_lines(data, "orders", ("sku", "qty", "mode"))):
        sku, mode = item.get("sku"), item.get("mode", "ocean")
        if sku not in skus:
            raise ActionError(f"orders[{index}].sku {sku!r} is not one of {skus}")
        if mode not in ("ocean", "air"):
            raise ActionError(f"orders[{index}].mode must be 'ocean' or 'air', got {mode!r}")
        if sku in ordered:
            raise ActionError(f"orders lists {sku!r} twice (one order per SKU per step)")
        qty = int(_amount(item.get("qty"), f"orders[{index}].qty", integer=True))
        orders.append(Order(sku, qty, mode))
        ordered.add(sku)
    shipments: list[Shipment] = []
    shipped: set[tuple[object, object]] = set()
    for index, item in enumerate(_lines(data, "shipments", ("retailer", "sku", "qty"))):
        retailer, sku = item.get("retailer"), item.get("sku")
        if retailer not in retailers:
            raise ActionError(f"shipments[{index}].retailer {retailer!r} is not one of {retailers}")
        if sku not in skus:
            raise ActionError(f"shipments[{index}].sku {sku!r} is not one of {skus}")
        if (retailer, sku) in shipped:
            raise ActionError(f"shipments lists ({retailer}, {sku}) twice")
        qty = int(_amount(item.get("qty"), f"shipments[{index}].qty", integer=True))
        shipments.append(Shipment(retailer, sku, qty))
        shipped.add((retailer, sku))
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


@dataclass
class _StepBook:
    """One step's running accounts, shared by the parts of :meth:`WarehouseEnv._advance`."""

    state: WarehouseState
    t: int
    d0: int  # the step's first day; d1 is the next step's
    d1: int
    sku_names: list[str]
    inv: dict[str, dict[str, dict[str, int]]]  # location -> SKU -> before/arrivals/out/lost
    inflows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_INFLOWS, 0))
    outflows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_OUTFLOWS, 0))
    notes: list[str] = field(default_factory=list)
    item_days: float = 0  # unit-days in the Acme warehouse (holding cost)
    lost_units: int = 0

    @classmethod
    def open(cls, cfg: WarehouseConfig, st: WarehouseState) -> _StepBook:
        names = [s.name for s in cfg.skus]
        row = {"arrivals": 0, "out": 0, "lost": 0}
        inv = {"acme": {n: {"before": st.acme[n], **row} for n in names}}
        for r in cfg.retailers:
            inv[r.name] = {n: {"before": st.dc[r.name][n], **row} for n in names}
        d0 = st.step * cfg.days_per_step
        return cls(st, st.step, d0, d0 + cfg.days_per_step, names, inv)

    def receive(self, kind: str, cents: int) -> None:
        self.state.cash_cents += cents
        self.inflows[kind] += cents

    def pay(self, kind: str, cents: int) -> None:
        self.state.cash_cents -= cents
        self.outflows[kind] += cents
