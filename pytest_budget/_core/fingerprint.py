"""Canonical JSON for fingerprints: the same data gives the same digest however it travelled.

A value that went through a JSON file, the pytest cache or another process can come back
with another Python type for the same number or sequence: ``2500`` read back as ``2500.0``
(a reader that validates numbers as floats), a tuple as a list, a mapping in another key
order.  A fingerprint taken with plain ``json.dumps`` then changes with the route the data
took (which process wrote a cache first, whether it was a first or a later run), and a
stored baseline no longer matches.  :func:`canonical_json` removes those differences before
hashing:

- every number is written as a float when the float holds it exactly (``2500``, ``2500.0``
  -> ``2500.0``); an integer too large for that keeps its exact digits;
- booleans stay booleans (``True`` is not ``1.0``);
- tuples and lists are both JSON arrays; mappings are sorted by key;
- NaN and infinities are refused (``ValueError``): they have no JSON form.

Core module: no pytest import.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical", "canonical_json", "fingerprint"]


def canonical(value: Any) -> Any:
    """``value`` as plain JSON types with numbers in one form (see the module docstring)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        as_float = float(value) if abs(value) <= 2**53 else math.nan
        return as_float if as_float == value else value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no canonical JSON form")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"mapping keys must be strings for a fingerprint, got {key!r}")
            out[key] = canonical(item)
        return out
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    # numpy scalars and the like: through their Python value.
    item_method = getattr(value, "item", None)
    if callable(item_method):
        return canonical(item_method())
    raise TypeError(f"{type(value).__name__} has no canonical JSON form")


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (keys sorted, ``json.dumps``' default spacing)."""
    return json.dumps(canonical(value), sort_keys=True, allow_nan=False)


def fingerprint(value: Any, length: int = 16) -> str:
    """The first ``length`` hex digits of the sha256 of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]
