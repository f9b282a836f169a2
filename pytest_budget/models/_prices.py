"""Model prices in USD per million tokens, and the cost of one call.

Out of the box a model's price comes from the maintained ``genai-prices`` package (its data
ships inside the package; it is read offline, never fetched at run time).  The user's own
table overrides it, model by model: ini lines (``budget_prices``) and/or a file
(``--budget-price-file``), in one of two forms::

    # ini, one model per line: INPUT OUTPUT [CACHED_READ [CACHE_WRITE]] USD per 1M tokens
    budget_prices =
        gpt-4o-mini = 0.15 0.60 0.075
        anthropic:claude-sonnet-4-5 = 3 15 0.30 3.75

    # file: JSON object, or the same lines as above (one per line, '#' comments)
    {"gpt-4o-mini": {"input": 0.15, "output": 0.60, "cached_read": 0.075}}

A model is looked up as ``provider:model`` first, then as the bare model name.  A cached-read
price defaults to the input price, a cache-write price to the input price.  A typo is a
one-line :class:`PriceTableError` naming the file (or ini) and the entry.

Cost of a call, from :class:`~pytest_budget.models._usage.TokenUsage` (whose ``input`` includes
cached tokens and ``output`` includes reasoning tokens)::

    usd = (uncached_input * input + cached_read * cached_read_price
           + cached_write * cache_write_price + output * output_price) / 1e6
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_budget.models._usage import TokenUsage

__all__ = [
    "ModelPrice",
    "PriceTable",
    "PriceTableError",
    "library_price",
    "load_price_table",
    "price_hint",
]

_FIELDS = ("input", "output", "cached_read", "cache_write")


class PriceTableError(ValueError):
    """A price table entry that cannot be read; the message is one line."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens for one model."""

    input: float
    output: float
    cached_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: TokenUsage) -> float:
        """USD for one call's reported usage (0 when the server reported none)."""
        read = self.input if self.cached_read is None else self.cached_read
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.uncached_input * self.input
            + usage.cached_read * read
            + usage.cached_write * write
            + usage.output * self.output
        )
        return total / 1_000_000


#: Tokens per priced probe: small enough to stay in the first tier of a tiered price.
_PROBE_TOKENS = 1000


@functools.cache
def library_price(provider: str, model: str) -> ModelPrice | None:
    """``provider:model``'s price from the ``genai-prices`` package's bundled data (None when
    it does not know the model).  Read offline: the package fetches only when asked to."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # (a declared dependency; a broken install prices nothing)
        return None

    def per_million(**tokens: int) -> float:
        result = calc_price(Usage(**tokens), model, provider_id=provider)
        return float(result.total_price) * 1_000_000 / _PROBE_TOKENS

    try:
        return ModelPrice(
            input=per_million(input_tokens=_PROBE_TOKENS),
            output=per_million(output_tokens=_PROBE_TOKENS),
            cached_read=per_million(input_tokens=_PROBE_TOKENS, cache_read_tokens=_PROBE_TOKENS),
            cache_write=per_million(input_tokens=_PROBE_TOKENS, cache_write_tokens=_PROBE_TOKENS),
        )
    except (LookupError, ValueError):
        return None


def library_version() -> str:
    """``genai-prices X.Y.Z`` (the price data's source, for the forecast and the report)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"genai-prices {version('genai-prices')}"
    except PackageNotFoundError:
        return "genai-prices (not installed)"


def price_hint(label: str) -> str:
    """One line saying how to price a model that has no known price."""
    return (
        f"no price for {label} (yours or {library_version()}): add '{label} = INPUT_USD "
        "OUTPUT_USD' (USD per million tokens) to ini budget_prices or --budget-price-file"
    )


@dataclass(frozen=True)
class PriceTable:
    """Prices by model key (``provider:model`` or bare ``model``); a model not in the table
    is priced from ``genai-prices`` unless ``library`` is False."""

    prices: Mapping[str, ModelPrice]
    library: bool = True

    def own(self, provider: str, model: str) -> ModelPrice | None:
        """The user's price for the model (None when the table does not list it)."""
        return self.prices.get(f"{provider}:{model}") or self.prices.get(model)

    def lookup(self, provider: str, model: str) -> ModelPrice | None:
        own = self.own(provider, model)
        if own is not None or not self.library:
            return own
        return library_price(provider, model)

    def source(self, provider: str, model: str) -> str | None:
        """Where the model's price comes from: ``yours``, ``genai-prices X.Y.Z`` or None."""
        if self.own(provider, model) is not None:
            return "yours"
        if self.library and library_price(provider, model) is not None:
            return library_version()
        return None

    def __bool__(self) -> bool:
        return bool(self.prices) or self.library


def _price_number(where: str, name: str, field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PriceTableError(
            f"{where}: {name}: {field} price {value!r} is not a number (USD per 1M tokens)"
        )
    try:
        number = float(value)
    except ValueError:
        raise PriceTableError(
            f"{where}: {name}: {field} price {value!r} is not a number (USD per 1M tokens)"
        ) from None
    if not math.isfinite(number) or number < 0:
        raise PriceTableError(f"{where}: {name}: {field} price must be >= 0, got {value!r}")
    return number


def _from_numbers(where: str, name: str, numbers: list[object]) -> ModelPrice:
    if not 2 <= len(numbers) <= 4:
        raise PriceTableError(
            f"{where}: {name}: expected 'MODEL = INPUT OUTPUT [CACHED_READ [CACHE_WRITE]]' "
            f"(USD per 1M tokens), got {len(numbers)} number(s)"
        )
    values = [_price_number(where, name, f, v) for f, v in zip(_FIELDS, numbers, strict=False)]
    return ModelPrice(*values)


def _parse_lines(where: str, lines: Iterable[str]) -> dict[str, ModelPrice]:
    prices: dict[str, ModelPrice] = {}
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        name, sep, rest = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise PriceTableError(
                f"{where} line {number}: {raw.strip()!r} is not 'MODEL = INPUT OUTPUT "
                "[CACHED_READ [CACHE_WRITE]]'"
            )
        prices[name] = _from_numbers(f"{where} line {number}", name, list(rest.split()))
    return prices


def _parse_json(where: str, data: object) -> dict[str, ModelPrice]:
    if not isinstance(data, Mapping):
        raise PriceTableError(f"{where}: expected a JSON object mapping model names to prices")
    prices: dict[str, ModelPrice] = {}
    for name, entry in data.items():
        if isinstance(entry, list):
            prices[name] = _from_numbers(where, name, entry)
            continue
        if not isinstance(entry, Mapping):
            raise PriceTableError(
                f"{where}: {name}: expected {{'input': ..., 'output': ...}} USD per 1M tokens"
            )
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise PriceTableError(
                f"{where}: {name}: unknown field {unknown[0]!r}; fields: {', '.join(_FIELDS)}"
            )
        missing = [f for f in ("input", "output") if f not in entry]
        if missing:
            raise PriceTableError(f"{where}: {name}: missing {missing[0]!r} price")
        values: dict[str, Any] = {
            f: _price_number(where, name, f, entry[f]) for f in _FIELDS if f in entry
        }
        prices[name] = ModelPrice(**values)
    return prices


def load_price_table(lines: Iterable[str] = (), path: str | None = None) -> PriceTable:
    """Prices from ini ``lines`` and an optional file (the file's entries win on a clash)."""
    prices = _parse_lines("budget_prices (ini)", lines)
    if path:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise PriceTableError(f"--budget-price-file {path}: cannot read: {exc}") from None
        where = f"--budget-price-file {file.name}"
        if text.lstrip().startswith("{"):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise PriceTableError(f"{where}: not valid JSON: {exc}") from None
            except RecursionError:
                raise PriceTableError(f"{where}: JSON nested too deeply to read") from None
            prices.update(_parse_json(where, data))
        else:
            prices.update(_parse_lines(where, text.splitlines()))
    return PriceTable(prices)
