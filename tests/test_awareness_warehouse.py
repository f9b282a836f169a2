"""Warehouse environment (BAGEN App. C), its reference actors and challenge-conditioned budgets."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from pytest_budget.awareness._replay.answers import WAREHOUSE_DIMENSIONS
from pytest_budget.awareness._replay.rollouts import (
    ActorObservation,
    Rollout,
    read_rollouts,
    rollout_to_dict,
    write_rollouts,
)
from pytest_budget.awareness.warehouse import (
    PANEL_COLUMNS,
    ActionError,
    DemandPanel,
    InTransit,
    Invoice,
    Order,
    Shipment,
    WarehouseAction,
    WarehouseConfig,
    WarehouseEnv,
    condition_challenges,
    format_action,
    generate_rollouts,
    load_demand_panel,
    panel_to_csv,
    parse_action,
    synthesize_demand_panel,
)
from pytest_budget.awareness.warehouse._policy import (
    NoisyReorderPointPolicy,
    ReorderPointPolicy,
)

FLAT = WarehouseConfig(demand_noise=0.0, permute_skus=False)


def flat_panel(units: int = 0, price: float = 10.0, weeks: int = 22) -> DemandPanel:
    """Every (retailer, SKU) sells ``units`` a week at ``price``: demand is hand-computable."""
    return DemandPanel(
        units=np.full((5, 5, weeks), units, dtype=np.int64),
        prices=np.full((5, 5, weeks), price),
        source="<flat>",
    )


def observe(env: WarehouseEnv, rollout_id: str = "r") -> ActorObservation:
    return ActorObservation(
        env="warehouse",
        rollout_id=rollout_id,
        turn=env.state.step + 1,
        text=env.render(),
        state=env.state_dict(),
    )


def random_action(rng: np.random.Generator, env: WarehouseEnv) -> WarehouseAction:
    """Anything an erratic agent might do: big orders, floods, credit churn, factoring."""
    skus = [s.name for s in env.config.skus]
    retailers = [r.name for r in env.config.retailers]
    orders = tuple(
        Order(s, int(rng.integers(0, 7000)), "air" if rng.random() < 0.5 else "ocean")
        for s in skus
        if rng.random() < 0.6
    )
    shipments = tuple(
        Shipment(r, s, int(rng.integers(0, 9000)))
        for r in retailers
        for s in skus
        if rng.random() < 0.3
    )
    return WarehouseAction(
        orders,
        shipments,
        credit_draw=float(rng.choice([0.0, rng.uniform(0, 300_000)])),
        credit_repay=float(rng.choice([0.0, rng.uniform(0, 300_000)])),
        factor=float(rng.choice([0.0, rng.uniform(0, 1)])),
    )


def digest(rollouts: list[Rollout]) -> str:
    text = json.dumps([rollout_to_dict(r) for r in rollouts], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


# ------------------------------------------------------------------------ conservation


def hoard(env: WarehouseEnv) -> WarehouseAction:
    """Order 3x MOQ of everything by air every step, draw the whole line, never ship."""
    orders = tuple(Order(s.name, 3 * s.moq, "air") for s in env.config.skus)
    return WarehouseAction(orders=orders, credit_draw=200_000)


@pytest.mark.parametrize("kind", ["reference", "noisy", "random", "hoarder", "rich-hoarder"])
def test_cash_and_inventory_balance_every_step(kind: str) -> None:
    panel = load_demand_panel()
    policy = NoisyReorderPointPolicy(noise=0.6, seed=1) if kind == "noisy" else ReorderPointPolicy()
    steps_checked = lost = bankrupt = stalled = 0
    for seed in range(12):
        env = WarehouseEnv(panel, seed=seed)
        if kind == "rich-hoarder":
            env.state.cash_cents = 500_000_000  # $5M: enough to overfill the warehouse
        rng = np.random.default_rng(seed)
        cash = env.state.cash_cents
        ordered = billed = cost = 0
        inflows: dict[str, int] = {}
        while not env.done:
            if kind == "random":
                action: WarehouseAction | str = random_action(rng, env)
            elif kind.endswith("hoarder"):
                action = hoard(env)
            else:
                action = policy.act(observe(env, f"w-{seed}"))
            report = env.step(action)
            assert report.conservation_errors() == []
            assert report.cash_before_cents == cash
            cash = report.cash_after_cents
            assert cash == env.state.cash_cents
            for key, value in report.inflows.items():
                inflows[key] = inflows.get(key, 0) + value
            ordered += sum(
                env.quote(o.sku, o.qty, o.mode).qty for o in report.action.orders if o.qty
            )
            billed += report.revenue_cents
            cost += report.cost_cents
            usage = report.usage
            assert usage["time_weeks"] == 2.0
            assert usage["cumulative_cost_usd"] == pytest.approx(report.cost_cents / 100)
            assert usage["warehouse_item_weeks"] >= 0
            steps_checked += 1
            lost += report.lost_units
            bankrupt += report.bankrupt
            stalled += any("waiting" in note for note in report.notes)
        st = env.state
        # Every invoiced cent is collected, factored, or still open.
        open_ar = sum(i.amount_cents for i in st.receivables)
        assert billed == inflows["collections"] + inflows["factoring"] + open_ar
        # Ordered units not yet delivered are still in production or in transit.
        assert ordered >= sum(o.qty for o in st.production) + sum(s.qty for s in st.transit)
        assert env.state.cash_cents == cash
    assert steps_checked >= 12 * 5
    # The erratic actors reach the rare paths the balances must also hold on.
    if kind == "hoarder":
        assert bankrupt == 12
    if kind == "rich-hoarder":
        assert lost > 0
    if kind == "random":
        assert stalled > 0


def test_units_are_conserved_across_the_whole_pipeline() -> None:
    env = WarehouseEnv(seed=3)
    rng = np.random.default_rng(3)
    ordered = arrived = lost = shipped = received = sold = lost_reported = 0
    while not env.done:
        report = env.step(random_action(rng, env))
        ordered += sum(env.quote(o.sku, o.qty).qty for o in report.action.orders)
        acme = report.inventory["acme"]
        arrived += sum(row["arrivals"] for row in acme.values())
        lost += sum(row["lost"] for row in acme.values())
        shipped += sum(row["out"] for row in acme.values())
        lost_reported += report.lost_units
        for name, per_sku in report.inventory.items():
            if name != "acme":
                received += sum(row["arrivals"] for row in per_sku.values())
                sold += sum(row["out"] for row in per_sku.values())
    st = env.state
    pipeline = sum(o.qty for o in st.production) + sum(s.qty for s in st.transit)
    assert ordered == pipeline + arrived
    assert shipped == received
    on_hand = sum(st.acme.values()) + sum(sum(d.values()) for d in st.dc.values())
    assert arrived - lost - sold == on_hand
    assert lost == lost_reported


# ------------------------------------------------------------------------ hand-built states


def test_moq_tiers_and_discounts() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    assert env.quote("usb_c_hub", 999).tier == 0
    one = env.quote("usb_c_hub", 1000)
    assert (one.tier, one.qty, one.unit_cents, one.total_cents) == (1, 1000, 1200, 1_200_000)
    two = env.quote("usb_c_hub", 2500)  # rounds down to 2x MOQ, 8% off $12.00
    assert (two.tier, two.qty, two.unit_cents) == (2, 2000, 1104)
    assert (two.total_cents, two.deposit_cents, two.balance_cents) == (
        2_208_000,
        662_400,
        1_545_600,
    )
    three = env.quote("usb_c_hub", 50_000, "ocean")  # capped at 3x, 15% off
    assert (three.qty, three.unit_cents, three.total_cents) == (3000, 1020, 3_060_000)
    assert three.freight_cents == 3000 * 65
    assert env.quote("usb_c_hub", 3000, "air").freight_cents == 3000 * 240

    report = env.step(
        WarehouseAction(orders=(Order("usb_c_hub", 2500), Order("dock_4k", 499, "air")))
    )
    assert report.outflows["mfg_deposit"] == 662_400
    assert any("rounded to MOQ tier 2000" in n for n in report.notes)
    assert any("below MOQ 500" in n for n in report.notes)
    [job] = env.state.production
    assert (job.sku, job.qty, job.complete_day, job.balance_cents) == (
        "usb_c_hub",
        2000,
        35,
        1_545_600,
    )
    # Completion on day 35 falls in step 3 (days 28-41): balance and freight are paid then.
    assert env.step(WarehouseAction()).outflows["mfg_balance"] == 0
    third = env.step(WarehouseAction())
    assert third.outflows["mfg_balance"] == 1_545_600
    assert third.outflows["intl_freight"] == 2000 * 65
    assert env.state.production == []
    [moving] = env.state.transit
    assert moving.arrive_day == 35 + int(env._ocean[0, 0])


def test_stalled_order_waits_for_cash() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.step(WarehouseAction(orders=(Order("usb_c_hdmi_cable", 2000, "air"),)))  # done day 25
    env.state.cash_cents = 100  # $1 left: the $4,480 + freight balance cannot be paid
    report = env.step(WarehouseAction())
    assert report.outflows["mfg_balance"] == 0
    assert env.state.production[0].stalled
    assert any("waiting" in n for n in report.notes)
    env.state.cash_cents = 10_000_000
    report = env.step(WarehouseAction())
    assert report.outflows["mfg_balance"] == 2000 * 320 - 192_000
    # Released on day 28 (the step's day 0), flown in within the step, held until day 42.
    arrival = 28 + int(env._air[0, 2])
    assert report.inventory["acme"]["usb_c_hdmi_cable"]["arrivals"] == 2000
    assert env.state.acme["usb_c_hdmi_cable"] == 2000
    assert report.usage["warehouse_item_weeks"] == 2000 * (42 - arrival) / 7


def test_factoring_sells_a_share_of_every_open_invoice() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.state.receivables = [Invoice("MegaMart", 10_000_000, 100), Invoice("TechZone", 3, 90)]
    report = env.step(WarehouseAction(factor=0.5))
    assert report.inflows["factoring"] == 5_000_000 + 2  # half of $100,000, half of 3c rounds up
    assert report.outflows["factoring_fee"] == 250_000  # 5% of the face value
    assert [i.amount_cents for i in env.state.receivables] == [5_000_000, 1]
    assert report.cost_cents == 250_000 + 1_600_000  # fee + two weeks of OpEx


def test_credit_draw_interest_and_clipping() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    report = env.step(WarehouseAction(credit_draw=100_000))
    assert report.inflows["credit_draw"] == 10_000_000
    assert report.outflows["interest"] == 80_000  # 0.8% of $100,000 per step
    report = env.step(WarehouseAction(credit_draw=150_000))  # only $100K of line left
    assert report.inflows["credit_draw"] == 10_000_000
    assert env.state.credit_cents == 20_000_000
    assert report.outflows["interest"] == 160_000
    assert any("clipped" in n for n in report.notes)
    report = env.step(WarehouseAction(credit_repay=250_000))
    assert report.outflows["credit_repay"] == 20_000_000
    assert report.outflows["interest"] == 0
    assert report.cost_cents == 1_600_000  # repayment is financing, not cost


def test_overstock_chargeback_above_95_percent() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.state.acme["usb_c_hub"] = 7000
    # SupplyDirect holds 7,000 units: line = 6,650, so 6,900 units are 250 over at $2.50.
    report = env.step(WarehouseAction(shipments=(Shipment("SupplyDirect", "usb_c_hub", 6900),)))
    assert report.outflows["overstock_chargeback"] == 250 * 250
    assert report.outflows["domestic_freight"] == 6900 * 25
    # No demand; the 100 hubs left at Acme are held 2 weeks at $0.35: $70 of holding.
    assert report.usage["warehouse_item_weeks"] == 200.0
    assert report.reward == -(625.0 + 16_000.0 + 70.0)
    # A shipment beyond the DC's free space is clipped (never above 100%).
    env.state.acme["usb_c_hub"] = 500
    report = env.step(WarehouseAction(shipments=(Shipment("SupplyDirect", "usb_c_hub", 500),)))
    assert report.inventory["SupplyDirect"]["usb_c_hub"]["arrivals"] == 100
    assert report.outflows["overstock_chargeback"] == (7000 - 6650) * 250


def test_stockout_chargeback_sales_and_net_30() -> None:
    env = WarehouseEnv(flat_panel(units=100, price=10.0), config=FLAT)
    env.state.dc["MegaMart"]["usb_c_hub"] = 150
    report = env.step(WarehouseAction())
    # Demand 200 per (retailer, SKU); MegaMart sells 150 hubs at $10; the rest is unfilled.
    assert report.revenue_cents == 150 * 1000
    unfilled_value = 200 * 1000 * 5 * (0.05 + 0.04 + 0.05 + 0.03 + 0.03) - 150 * 1000 * 0.05
    assert report.outflows["stockout_chargeback"] == round(unfilled_value)
    assert report.reward == pytest.approx(1500.0 - 16_000.0 - unfilled_value / 100)
    assert [(i.amount_cents, i.due_day) for i in env.state.receivables] == [(150_000, 37)]
    assert env.step(WarehouseAction()).inflows["collections"] == 0  # days 14-27
    assert env.step(WarehouseAction()).inflows["collections"] == 150_000  # day 37 is in 28-41


def test_item_weeks_holding_and_capacity_losses() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.state.acme["dock_4k"] = 700
    env.state.transit = [InTransit(9, "travel_dock", 700, 7)]
    report = env.step(WarehouseAction())
    # 700 units all 14 days + 700 units from day 7: (700*14 + 700*7) / 7 item-weeks.
    assert report.usage["warehouse_item_weeks"] == 2100.0
    assert report.outflows["holding"] == 2100 * 35
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.state.acme["dock_4k"] = 49_800
    env.state.transit = [InTransit(1, "usb_c_hub", 500, 3)]
    report = env.step(WarehouseAction())
    row = report.inventory["acme"]["usb_c_hub"]
    assert (row["arrivals"], row["lost"], row["after"]) == (500, 300, 200)
    assert report.lost_units == 300
    assert report.conservation_errors() == []


def test_two_stage_bankruptcy_floor() -> None:
    env = WarehouseEnv(flat_panel(), config=FLAT)
    env.state.cash_cents = -10_000_000  # -$100K: penalty, but the episode goes on
    report = env.step(WarehouseAction())
    assert report.reward == -16_000.0 - 50_000.0
    assert report.cash_after_cents == -11_600_000  # the penalty is reward, not cash
    assert not report.done and not report.bankrupt
    env.state.cash_cents = -19_000_000
    report = env.step(WarehouseAction())  # -$206K < -$200K: truncated
    assert report.bankrupt and report.done and env.done
    assert report.reward == -66_000.0
    with pytest.raises(RuntimeError):
        env.step(WarehouseAction())


# ------------------------------------------------------------------------ actions


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("order 2000 hubs please", "no <answer>"),
        ("<answer>{not json</answer>", "not valid JSON"),
        ("<answer>[1, 2]</answer>", "JSON object"),
        ('<answer>{"buy": 1}</answer>', "unknown field 'buy'"),
        ('<answer>{"orders": [{"sku": "laptop", "qty": 1}]}</answer>', "laptop"),
        ('<answer>{"orders": [{"sku": "dock_4k", "qty": -5}]}</answer>', "between 0"),
        ('<answer>{"orders": [{"sku": "dock_4k", "qty": 5.5}]}</answer>', "whole number"),
        ('<answer>{"orders": [{"sku": "dock_4k", "qty": true}]}</answer>', "number"),
        ('<answer>{"orders": [{"sku": "dock_4k", "qty": 500, "mode": "rail"}]}</answer>', "rail"),
        (
            '<answer>{"orders": [{"sku": "dock_4k", "qty": 500}, {"sku": "dock_4k", "qty": 500}]}'
            "</answer>",
            "twice",
        ),
        ('<answer>{"factor": 1.5}</answer>', "between 0 and 1"),
        ('<answer>{"credit_draw": NaN}</answer>', "finite"),
        (
            '<answer>{"shipments": [{"retailer": "Nope", "sku": "dock_4k", "qty": 1}]}</answer>',
            "Nope",
        ),
        ("<answer>{}</answer><answer>{}</answer>", "more than one"),
    ],
)
def test_malformed_action_is_a_noop_turn_with_an_error(reply: str, problem: str) -> None:
    with pytest.raises(ActionError) as caught:
        parse_action(reply)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)
    env = WarehouseEnv(flat_panel(), config=FLAT)
    report = env.step(reply)
    assert report.error == str(caught.value)
    assert report.action == WarehouseAction()
    assert env.state.step == 1  # time passed
    spent = {k: v for k, v in report.outflows.items() if v}
    assert spent == {"opex": 1_600_000}
    assert report.info()["error"] == report.error
    assert "not a valid action" in env.render()


def test_action_text_round_trip_and_lenient_wrapping() -> None:
    action = WarehouseAction(
        orders=(Order("usb_c_hub", 2000, "air"),),
        shipments=(Shipment("ValueCo", "dock_4k", 12),),
        credit_draw=1234.5,
        factor=0.25,
    )
    assert parse_action(format_action(action)) == action
    wrapped = "<think>maybe <answer>{}</answer></think>Sure.\n<ANSWER>```json\n{}\n```</ANSWER>"
    assert parse_action(wrapped) == WarehouseAction()


def test_garbage_never_raises_anything_but_action_error() -> None:
    rng = np.random.default_rng(0)
    alphabet = list('{}[]":,0123456789.-eE abcnulltrue<>/answer')
    for _ in range(500):
        body = "".join(rng.choice(alphabet, size=int(rng.integers(0, 40))))
        try:
            parse_action(f"<answer>{body}</answer>")
        except ActionError:
            pass


def test_observation_documents_the_schema_and_state() -> None:
    env = WarehouseEnv(seed=1)
    text = env.render()
    assert "step 1 of 11" in text and "Cash $500,000.00" in text
    assert "Opening forecast" in text
    for key in ("orders", "shipments", "credit_draw", "credit_repay", "factor", "<answer>"):
        assert key in text
    state = env.state_dict()
    json.dumps(state)  # plain JSON types only
    assert state["cash"] == 500_000.0 and state["warehouse_capacity"] == 50_000
    assert sorted(state["dc_capacity"].values()) == [7000, 10_000, 15_000, 18_000, 25_000]
    env.step(WarehouseAction())
    assert "Demand last step" in env.render()


# ------------------------------------------------------------------------ demand


def test_demand_permutation_is_deterministic_per_seed() -> None:
    panel = load_demand_panel()
    a, b, c = WarehouseEnv(panel, seed=5), WarehouseEnv(panel, seed=5), WarehouseEnv(panel, seed=6)
    assert a.permutation == b.permutation
    assert np.array_equal(a.demand, b.demand)
    assert a.permutation != c.permutation or not np.array_equal(a.demand, c.demand)
    skus = [s.name for s in a.config.skus]
    for r, perm in enumerate(a.permutation.values()):
        assert sorted(perm) == sorted(skus)
        for s, source in enumerate(perm):
            j = skus.index(source)
            assert a.base_demand[r, s, 3] == panel.units[r, j, 6] + panel.units[r, j, 7]
    # Over many seeds every SKU inherits some other SKU's series somewhere.
    moved = {
        tuple(WarehouseEnv(panel, seed=k).permutation["OfficePlus"]) != tuple(skus)
        for k in range(10)
    }
    assert True in moved


def test_demand_noise_follows_the_series_spread() -> None:
    panel = load_demand_panel()
    quiet = WarehouseEnv(panel, seed=2, config=WarehouseConfig(demand_noise=0.0))
    assert np.array_equal(quiet.demand, quiet.base_demand)
    noisy = WarehouseEnv(panel, seed=2)
    assert not np.array_equal(noisy.demand, noisy.base_demand)
    assert (noisy.demand >= 0).all()


def test_bundled_panel_regenerates_identically() -> None:
    bundled = (
        resources.files("pytest_budget.awareness")
        .joinpath("data", "warehouse_demand.csv")
        .read_text(encoding="utf-8")
    )
    assert panel_to_csv(synthesize_demand_panel()) == bundled


def test_bundled_panel_has_the_stated_shape() -> None:
    panel = load_demand_panel()
    assert panel.units.shape == (5, 5, 22)
    assert (panel.units >= 0).all()
    assert abs(panel.weekly_gmv().mean() - 116_000) < 0.01 * 116_000
    early, late = panel.units[:, :, :8].mean(axis=2), panel.units[:, :, -4:].mean(axis=2)
    collapsed = [
        (panel.retailers[r], panel.skus[s])
        for r in range(5)
        for s in range(5)
        if late[r, s] < 0.25 * early[r, s]
    ]
    assert collapsed == [("OfficePlus", "usb_display_adapter")]
    shifted = ((late / early > 1.15) | (late / early < 0.85)).sum()
    assert shifted >= 5  # step changes, not a flat panel
    assert synthesize_demand_panel(7).units.tolist() != panel.units.tolist()


def test_user_panel_csv_loads_like_the_bundled_one(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text(panel_to_csv(load_demand_panel()), encoding="utf-8")
    mine = load_demand_panel(path)
    assert np.array_equal(mine.units, load_demand_panel().units)
    assert mine.source == str(path)


def _bad_panel(tmp_path: Path, line: int, replacement: str) -> Path:
    lines = panel_to_csv(load_demand_panel()).splitlines()
    lines[line - 1] = replacement
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "row", "problem"),
    [
        (4, "3,MegaMart,usb_c_hub,-3,25.76", "units must be a non-negative integer"),
        (5, "4,MegaMart,usb_c_hub,many,25.76", "units must be a number"),
        (6, "5,MegaMart,usb_c_hub,10,free", "price must be a number"),
        (7, "6,MegaMart,usb_c_hub,10,0", "price must be a positive number"),
        (8, "7,BigBox,usb_c_hub,10,25.76", "unknown retailer 'BigBox'"),
        (9, "8,MegaMart,laptop,10,25.76", "unknown sku 'laptop'"),
        (10, "x,MegaMart,usb_c_hub,10,25.76", "week must be an integer"),
        (11, "1,MegaMart,usb_c_hub,10,25.76", "duplicate row for week 1"),
        (12, "11,MegaMart,usb_c_hub,10", "expected 5 fields"),
        (1, "week,shop,sku,units,price", "header must name the columns"),
    ],
)
def test_bad_user_csv_names_file_line_and_problem(
    tmp_path: Path, line: int, row: str, problem: str
) -> None:
    path = _bad_panel(tmp_path, line, row)
    with pytest.raises(ValueError) as caught:
        load_demand_panel(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ")
    assert problem in message
    assert "\n" not in message


def test_incomplete_or_short_user_csv(tmp_path: Path) -> None:
    rows = panel_to_csv(load_demand_panel()).splitlines()
    path = tmp_path / "short.csv"
    path.write_text("\n".join(r for r in rows if not r.startswith("22,")) + "\n")
    with pytest.raises(ValueError, match=r"short\.csv:\d+: the panel needs at least 22 weeks"):
        load_demand_panel(path)
    path.write_text("\n".join(rows[:-1]) + "\n")
    with pytest.raises(ValueError, match="incomplete panel: no row for week 22, SupplyDirect"):
        load_demand_panel(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_demand_panel(tmp_path / "missing.csv")
    assert PANEL_COLUMNS == ("week", "retailer", "sku", "units", "price")


# ------------------------------------------------------------------------ rollouts


def test_generate_rollouts_shape_and_ids() -> None:
    rollouts = anyio.run(lambda: generate_rollouts(3, 42, ReorderPointPolicy()))
    assert [r.id for r in rollouts] == [
        "warehouse-s42-0000",
        "warehouse-s42-0001",
        "warehouse-s42-0002",
    ]
    for rollout in rollouts:
        assert rollout.env == "warehouse" and rollout.T == 11 and rollout.success
        assert set(rollout.budget) == set(WAREHOUSE_DIMENSIONS)
        assert rollout.total()["time_weeks"] == 22.0
        assert rollout.meta["final_cash_usd"] == rollout.turns[-1].info["cash"]
        assert rollout.meta["bankrupt"] is False
        for turn in rollout.turns:
            assert set(turn.usage) == set(WAREHOUSE_DIMENSIONS)
            assert {"reward", "cash"} <= set(turn.info)
            assert turn.observation and turn.action and "<answer>" in turn.action
    # Different episodes, not copies of one.
    assert len({r.meta["final_cash_usd"] for r in rollouts}) == 3


def test_concurrency_one_and_eight_give_identical_rollouts() -> None:
    actor = NoisyReorderPointPolicy(noise=0.4, seed=9)
    one = anyio.run(lambda: generate_rollouts(10, 5, actor, concurrency=1))
    eight = anyio.run(lambda: generate_rollouts(10, 5, actor, concurrency=8))
    assert digest(one) == digest(eight)


_DIGEST_SCRIPT = """
import anyio, hashlib, json
from pytest_budget.awareness._replay.rollouts import rollout_to_dict
from pytest_budget.awareness.warehouse import condition_challenges, generate_rollouts
from pytest_budget.awareness.warehouse._policy import NoisyReorderPointPolicy
rs = anyio.run(lambda: generate_rollouts(6, 7, NoisyReorderPointPolicy(noise=0.4, seed=3)))
rs = condition_challenges(rs, seed=42)
text = json.dumps([rollout_to_dict(r) for r in rs], sort_keys=True)
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_rollouts_are_identical_across_processes() -> None:
    actor = NoisyReorderPointPolicy(noise=0.4, seed=3)
    here = digest(condition_challenges(anyio.run(lambda: generate_rollouts(6, 7, actor)), seed=42))
    seen = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", _DIGEST_SCRIPT],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        seen.add(result.stdout.strip())
    assert seen == {here}


class _Flaky:
    """Raises on turn 4 of one rollout; otherwise plays the reference policy."""

    name = "flaky"

    def __init__(self) -> None:
        self.inner = ReorderPointPolicy()

    def act(self, observation: ActorObservation) -> Any:
        if observation.rollout_id.endswith("0001") and observation.turn == 4:
            raise RuntimeError("model endpoint timed out\nsecond line")
        if observation.rollout_id.endswith("0002"):
            return 12345  # not text: a malformed action every turn
        return self.inner.act(observation)


def test_actor_errors_end_only_their_rollout() -> None:
    rollouts = anyio.run(lambda: generate_rollouts(3, 1, _Flaky()))
    ok, broken, garbage = rollouts
    assert ok.T == 11 and ok.success and "actor_error" not in ok.meta
    assert broken.T == 3 and not broken.success
    assert broken.meta["actor_error"] == "raised RuntimeError: model endpoint timed out"
    assert garbage.T == 11 and garbage.meta["malformed_actions"] == 11
    assert all("error" in t.info for t in garbage.turns)


def test_policy_is_stateless_and_noise_is_seeded() -> None:
    env = WarehouseEnv(seed=4)
    for _ in range(5):
        env.step(ReorderPointPolicy().act(observe(env)))
    obs = observe(env, "warehouse-s1-0000")
    noisy = NoisyReorderPointPolicy(noise=0.5, seed=2)
    assert noisy.act(obs) == noisy.act(obs) == NoisyReorderPointPolicy(noise=0.5, seed=2).act(obs)
    other_turn = ActorObservation("warehouse", obs.rollout_id, obs.turn + 1, obs.text, obs.state)
    replies = {noisy.act(obs), noisy.act(other_turn), NoisyReorderPointPolicy(0.5, 3).act(obs)}
    assert len(replies) > 1
    assert ReorderPointPolicy().act(ActorObservation("warehouse", "x", 1, "text only")) == (
        "<answer>{}</answer>"
    )
    with pytest.raises(ValueError):
        ReorderPointPolicy(noise=-1)


def test_reference_policy_runs_a_solvent_business() -> None:
    rollouts = anyio.run(lambda: generate_rollouts(16, 11, ReorderPointPolicy()))
    cash = [r.meta["final_cash_usd"] for r in rollouts]
    assert not any(r.meta["bankrupt"] for r in rollouts)
    assert min(cash) > 500_000  # it makes money over the episode
    assert all(r.meta["malformed_actions"] == 0 for r in rollouts)


# ------------------------------------------------------------------------ challenges


@pytest.fixture(scope="module")
def rollouts() -> list[Rollout]:
    return anyio.run(lambda: generate_rollouts(21, 3, NoisyReorderPointPolicy(noise=0.5)))


def test_paper_challenges_split_half_reachable_half_unreachable(rollouts: list[Rollout]) -> None:
    conditioned = condition_challenges(rollouts, preset="paper", seed=42)
    alias = condition_challenges(rollouts, preset="half_reachable", seed=42)
    assert digest(alias) == digest(conditioned)
    assert [r.id for r in conditioned] == [r.id for r in rollouts]  # input order kept
    labels = [r.meta["challenge"] for r in conditioned]
    assert labels.count("reachable") == 11 and labels.count("unreachable") == 10
    for before, after in zip(rollouts, conditioned, strict=True):
        final = before.meta["final_cash_usd"]
        total = before.total()
        target = after.meta["target_cash_usd"]
        assert after.meta["task"] == {"target_cash_usd": target}
        assert after.turns == before.turns
        if after.meta["challenge"] == "reachable":
            assert after.feasible and after.success
            assert 0.5 * final - 0.01 <= target <= final
            assert after.budget["time_weeks"] == total["time_weeks"]
            for dim in ("warehouse_item_weeks", "cumulative_cost_usd"):
                assert total[dim] <= after.budget[dim] <= 1.2 * total[dim] + 0.01
        else:
            assert not after.feasible
            ratios = after.meta["challenge_ratios"]
            assert all(0.5 <= ratios[k] < 2.0 for k in ratios)
            assert after.success == (final >= target)
            assert after.budget["time_weeks"] == pytest.approx(
                ratios["time_weeks"] * total["time_weeks"], abs=0.01
            )


def test_outcome_challenges_draw_alike_and_label_by_the_outcome(rollouts: list[Rollout]) -> None:
    """The default scheme: one target distribution and one cap draw for every rollout."""
    conditioned = condition_challenges(rollouts, seed=42)
    finals = [r.meta["final_cash_usd"] for r in rollouts]
    median = float(np.median(finals))
    horizon = max(r.total()["time_weeks"] for r in rollouts)
    for before, after, final in zip(rollouts, conditioned, finals, strict=True):
        target = after.meta["target_cash_usd"]
        assert after.meta["challenge_preset"] == "outcome"
        assert 0.98 * median - 0.01 <= target <= 1.02 * median + 0.01
        assert after.budget["time_weeks"] == horizon
        total = before.total()
        for dim in ("warehouse_item_weeks", "cumulative_cost_usd"):
            assert total[dim] <= after.budget[dim] <= 1.2 * total[dim] + 0.01
        # the label is the realized outcome; the caps never bind
        assert after.feasible == (final >= target)
        assert after.meta["challenge"] == ("reachable" if final >= target else "unreachable")


def test_release_challenges_differ_only_in_the_target(rollouts: list[Rollout]) -> None:
    """BAGEN's release code: caps drawn alike; the target alone makes a probe unreachable."""
    conditioned = condition_challenges(rollouts, preset="release", seed=42)
    labels = [r.meta["challenge"] for r in conditioned]
    assert labels.count("reachable") == 11 and labels.count("unreachable") == 10
    for before, after in zip(rollouts, conditioned, strict=True):
        final, total = before.meta["final_cash_usd"], before.total()
        target = after.meta["target_cash_usd"]
        assert after.budget["time_weeks"] == total["time_weeks"]
        for dim in ("warehouse_item_weeks", "cumulative_cost_usd"):
            assert total[dim] <= after.budget[dim] <= 1.2 * total[dim] + 0.01
        if after.meta["challenge"] == "reachable":
            assert 0.5 * final - 0.01 <= target <= final and after.feasible
        else:
            assert final < target <= 2.0 * final + 0.01 and not after.feasible


def test_challenges_are_seeded_and_survive_a_file(rollouts: list[Rollout], tmp_path: Path) -> None:
    a = condition_challenges(rollouts, seed=42)
    assert digest(a) == digest(condition_challenges(rollouts, seed=42))
    assert digest(a) != digest(condition_challenges(rollouts, seed=43))
    path = write_rollouts(tmp_path / "w.jsonl", a)
    back = read_rollouts(path)
    assert [r.feasible for r in back] == [r.feasible for r in a]
    assert [r.meta["challenge"] == "reachable" for r in back] == [r.feasible for r in back]


def test_challenges_handle_a_broke_rollout_and_reject_foreign_ones(
    rollouts: list[Rollout],
) -> None:
    base = rollouts[0]
    broke = Rollout(
        "broke", "warehouse", base.budget, False, base.turns, {"final_cash_usd": -150_000.0}
    )
    # A bankrupt run reaches no target, not even one capped at its (negative) final cash.
    for seed in range(6):
        [conditioned] = condition_challenges([broke], preset="paper", seed=seed)
        assert conditioned.meta["challenge"] == "reachable (not viable: bankrupt or actor error)"
        assert conditioned.meta["target_cash_usd"] == -150_000.0  # capped at final cash
        assert not conditioned.success and not conditioned.feasible
    pair = condition_challenges([broke, broke], seed=0)
    assert [r.feasible for r in pair] == [False, False]
    for preset in ("outcome", "release"):
        mixed = condition_challenges([*rollouts[:4], broke], preset=preset, seed=1)
        assert not mixed[-1].feasible and "not viable" in mixed[-1].meta["challenge"]
    foreign = Rollout("s", "sokoban", {"tokens": 10.0}, True, (), {})
    with pytest.raises(ValueError, match="no final cash"):
        condition_challenges([foreign])
    with pytest.raises(ValueError, match="unknown challenge preset"):
        condition_challenges(rollouts, preset="all_reachable")


def test_core_modules_do_not_import_pytest() -> None:
    code = (
        "import sys\n"
        "import pytest_budget.awareness.warehouse, pytest_budget.awareness.warehouse._policy\n"
        "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
