"""The Warehouse environment: one business run in two-week steps (see
:mod:`pytest_budget.awareness.warehouse` for the model).  Re-exported there.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from typing import Any

import numpy as np

from pytest_budget.awareness.warehouse._actions import (
    ActionError,
    InTransit,
    Invoice,
    OrderQuote,
    ProductionOrder,
    StepReport,
    WarehouseAction,
    WarehouseState,
    _StepBook,
    action_from_dict,
    parse_action,
)
from pytest_budget.awareness.warehouse._market import (
    DEFAULT_CONFIG,
    DemandPanel,
    WarehouseConfig,
    _cents,
    _money,
    _usd,
    load_demand_panel,
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
        # Python copies for the per-step loops (a numpy element read costs ~10x a list's).
        self._price_rows: list[list[int]] = self.prices.tolist()
        self._demand_rows: list[list[list[int]]] = self.demand.tolist()
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
        return self._price_rows[self.config.retailer_index(retailer)][self.config.sku_index(sku)]

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
        """One step in the paper's order: (1) financing, (2) production orders, (3) shipments
        to the DCs, (4) dated events, (5) sales, (6) holding, OpEx and interest."""
        book = _StepBook.open(self.config, self.state)
        cash_before = self.state.cash_cents
        self._finance(action, book)
        self._place_orders(action, book)
        received = self._ship(action, book)
        self._run_events(book)
        revenue = self._sell(received, book)
        return self._close(action, error, book, revenue, cash_before)

    def _finance(self, action: WarehouseAction, book: _StepBook) -> None:
        """(1) Credit draw, factoring of the receivables, credit repayment."""
        cfg, st, notes = self.config, self.state, book.notes
        draw = min(_cents(action.credit_draw * 100), cfg.credit_limit_cents - st.credit_cents)
        if draw > 0:
            book.receive("credit_draw", draw)
            st.credit_cents += draw
        if draw < _cents(action.credit_draw * 100):
            notes.append(f"credit draw clipped to the unused line ({_money(max(draw, 0))})")
        if action.factor > 0:
            for invoice in st.receivables:
                face = _cents(invoice.amount_cents * action.factor)
                invoice.amount_cents -= face
                book.receive("factoring", face)
                book.pay("factoring_fee", _cents(face * cfg.factoring_fee))
            st.receivables = [i for i in st.receivables if i.amount_cents > 0]
        repay = min(_cents(action.credit_repay * 100), st.credit_cents, max(st.cash_cents, 0))
        if repay > 0:
            book.pay("credit_repay", repay)
            st.credit_cents -= repay
        if repay < _cents(action.credit_repay * 100):
            notes.append(f"credit repayment clipped to {_money(repay)} (balance or cash)")

    def _place_orders(self, action: WarehouseAction, book: _StepBook) -> None:
        """(2) Production orders: rounded to an MOQ tier, the deposit paid now."""
        cfg, st = self.config, self.state
        for order in action.orders:
            quote = self.quote(order.sku, order.qty, order.mode)
            if quote.tier == 0:
                if order.qty > 0:
                    spec = cfg.skus[cfg.sku_index(order.sku)]
                    book.notes.append(
                        f"order {order.sku} {order.qty} is below MOQ {spec.moq}: skipped"
                    )
                continue
            if quote.qty != order.qty:
                book.notes.append(f"order {order.sku} {order.qty} rounded to MOQ tier {quote.qty}")
            book.pay("mfg_deposit", quote.deposit_cents)
            s = cfg.sku_index(order.sku)
            transit = int((self._air if order.mode == "air" else self._ocean)[book.t, s])
            spec = cfg.skus[s]
            st.production.append(
                ProductionOrder(
                    st.next_order_id,
                    order.sku,
                    quote.qty,
                    order.mode,
                    book.d0 + spec.lead_days,
                    quote.balance_cents,
                    quote.freight_cents,
                    transit,
                )
            )
            st.next_order_id += 1

    def _ship(self, action: WarehouseAction, book: _StepBook) -> dict[str, dict[str, int]]:
        """(3) Shipments to retailer DCs: leave on day 0, arrive within the step (the units
        received per retailer and SKU)."""
        cfg, st = self.config, self.state
        received = {r.name: dict.fromkeys(book.sku_names, 0) for r in cfg.retailers}
        for ship in action.shipments:
            retailer = cfg.retailers[cfg.retailer_index(ship.retailer)]
            space = (
                retailer.dc_capacity
                - sum(st.dc[ship.retailer].values())
                - sum(received[ship.retailer].values())
            )
            qty = max(0, min(ship.qty, st.acme[ship.sku], space))
            if qty < ship.qty:
                book.notes.append(
                    f"shipment {ship.retailer}/{ship.sku} {ship.qty} clipped to {qty} "
                    "(Acme stock or DC space)"
                )
            if qty == 0:
                continue
            st.acme[ship.sku] -= qty
            book.inv["acme"][ship.sku]["out"] += qty
            received[ship.retailer][ship.sku] += qty
            spec = cfg.skus[cfg.sku_index(ship.sku)]
            book.pay("domestic_freight", qty * spec.domestic_freight_cents)
        return received

    def _run_events(self, book: _StepBook) -> None:
        """(4) Dated events in day order: collections, completed orders, arrivals."""
        cfg, st, d0, d1 = self.config, self.state, book.d0, book.d1
        book.item_days = sum(st.acme.values()) * cfg.days_per_step
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
                book.receive("collections", event.amount_cents)
                st.receivables.remove(event)
            elif isinstance(event, ProductionOrder):
                due = event.balance_cents + event.freight_cents
                if st.cash_cents < due:
                    if not event.stalled:
                        book.notes.append(
                            f"order #{event.order_id} ({event.sku}) is waiting: "
                            f"{_money(due)} due on completion exceeds cash"
                        )
                    event.stalled = True
                    continue
                book.pay("mfg_balance", event.balance_cents)
                book.pay("intl_freight", event.freight_cents)
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
                row = book.inv["acme"][event.sku]
                row["arrivals"] += event.qty
                row["lost"] += event.qty - accepted
                book.lost_units += event.qty - accepted
                book.item_days += accepted * (d1 - day)
                st.transit.remove(event)
        if book.lost_units:
            book.notes.append(
                f"{book.lost_units} arriving units refused: the Acme warehouse was full"
            )

    def _sell(self, received: dict[str, dict[str, int]], book: _StepBook) -> int:
        """(5) Deliveries, overstock, sales and invoices (the revenue billed, in cents)."""
        cfg, st, t, inv = self.config, self.state, book.t, book.inv
        revenue = 0
        demand_seen: dict[str, dict[str, int]] = {}
        for r_index, retailer in enumerate(cfg.retailers):
            demand_row, price_row = self._demand_rows[r_index], self._price_rows[r_index]
            stock = st.dc[retailer.name]
            for name in book.sku_names:
                stock[name] += received[retailer.name][name]
                inv[retailer.name][name]["arrivals"] += received[retailer.name][name]
            line = math.floor(cfg.overstock_threshold * retailer.dc_capacity)
            over = sum(stock.values()) - line
            if over > 0:
                book.pay("overstock_chargeback", over * retailer.overstock_fee_cents)
            billed = 0
            demand_seen[retailer.name] = {}
            for s_index, name in enumerate(book.sku_names):
                wanted = demand_row[s_index][t]
                demand_seen[retailer.name][name] = wanted
                sold = min(wanted, stock[name])
                stock[name] -= sold
                inv[retailer.name][name]["out"] += sold
                price = price_row[s_index]
                billed += sold * price
                unfilled = wanted - sold
                if unfilled:
                    book.pay(
                        "stockout_chargeback", _cents(unfilled * price * retailer.stockout_rate)
                    )
            if billed:
                due = book.d0 + cfg.invoice_day + cfg.net_days
                st.receivables.append(Invoice(retailer.name, billed, due))
            revenue += billed
        st.demand_history.append(demand_seen)
        return revenue

    def _close(
        self,
        action: WarehouseAction,
        error: str | None,
        book: _StepBook,
        revenue: int,
        cash_before: int,
    ) -> StepReport:
        """(6) Holding, OpEx and interest; the reward (eq. 5), the two-stage floor and the
        step's report."""
        cfg, st, outflows, notes = self.config, self.state, book.outflows, book.notes
        item_days = book.item_days
        book.pay("holding", _cents(item_days / 7.0 * cfg.holding_cents_per_unit_week))
        book.pay("opex", _cents(cfg.opex_cents_per_week * cfg.weeks_per_step))
        book.pay("interest", _cents(st.credit_cents * cfg.credit_rate))
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
        for location, per_sku in book.inv.items():
            for name in book.sku_names:
                per_sku[name]["after"] = (
                    st.acme[name] if location == "acme" else st.dc[location][name]
                )
        cost = sum(v for k, v in outflows.items() if k != "credit_repay")
        report = StepReport(
            step=book.t,
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
            inflows=book.inflows,
            outflows=outflows,
            inventory=book.inv,
            lost_units=book.lost_units,
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
