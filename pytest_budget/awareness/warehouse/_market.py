"""Warehouse's market: SKUs, retailers, the environment's parameters and the weekly demand
panel (synthesized once, bundled as ``data/warehouse_demand.csv``, read at run time).
Re-exported by :mod:`pytest_budget.awareness.warehouse`.
"""

from __future__ import annotations

import csv
import io
import math
import os
import random
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

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
        return _position(self._sku_positions, name)

    def retailer_index(self, name: str) -> int:
        return _position(self._retailer_positions, name)

    # Name -> position, built once (the environment looks names up ~50,000 times a run).
    @cached_property
    def _sku_positions(self) -> dict[str, int]:
        return _positions([sku.name for sku in self.skus])

    @cached_property
    def _retailer_positions(self) -> dict[str, int]:
        return _positions([retailer.name for retailer in self.retailers])


def _positions(names: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for index, name in enumerate(names):
        out.setdefault(name, index)  # the first, as list.index finds it
    return out


def _position(positions: dict[str, int], name: str) -> int:
    try:
        return positions[name]
    except (KeyError, TypeError):
        raise ValueError(f"{name!r} is not in list") from None


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
