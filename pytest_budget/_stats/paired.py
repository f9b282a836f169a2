"""A paired, per-unit test of a ratio score: is the new run worse on the *same* units?

A planning score is a ratio of sums over the cell's queries (EMR = exact matches over
path-eligible episodes, cost gap = summed cost differences over cost-eligible episodes, ...).
When the baseline stores each query's numerator and denominator, a new run on the same
queries can be compared query by query: only the queries whose values changed carry
information about a regression, and the large differences *between* queries (one query is
always solved, another never) cancel out.

The test is a one-sided randomization (sign-flip) test.  If the new run is the same agent
as the baseline, the stored and new values of each query are exchangeable: swapping them
is as likely as not.  The statistic is the change of the score, ``new ratio - stored
ratio``; its p-value is the share of the ``2**m`` swap patterns of the ``m`` queries whose
values differ that give a change at least as bad as the observed one (a query whose values
are equal swaps to itself).  Up to :data:`EXACT_LIMIT` differing queries every pattern is
enumerated (an exact test: with one 0/1 value per query it is McNemar's exact test);
beyond, :data:`DRAWS` random patterns with a fixed seed estimate it, ``(1 + hits) / (1 +
draws)``.  Identical values give ``p = 1`` and never fail.

Per-unit values are stored in snapshots as compact strings (:func:`encode`: one number per
unit, blank-separated, a run of equal numbers as ``value*count``), so a baseline of 200
queries grows by a few kilobytes at most.

Plain Python and numpy: nothing here imports pytest.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "DRAWS",
    "EXACT_LIMIT",
    "PerUnit",
    "decode",
    "differing_units",
    "encode",
    "paired_p_value",
    "per_unit_fields",
    "read_per_unit",
]

#: Differing units up to which every swap pattern is enumerated (2**14 = 16,384 patterns).
EXACT_LIMIT = 14
#: Random swap patterns beyond :data:`EXACT_LIMIT` (p-values resolve to 1 / 20,001).
DRAWS = 20_000
_SEED = 20_240_517  # fixed: the same inputs give the same p-value on every run

#: Per metric, the per-unit numerators and denominators (the score is sum / sum).
PerUnit = dict[str, tuple[list[float], list[float]]]


def _text(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"per-unit value {value!r} is not finite")
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".8g")


def encode(values: Sequence[float]) -> str:
    """``[1.0, 0.0, 0.0, 0.0, 0.25]`` -> ``"1 0*3 0.25"``: 8 significant digits, a run of
    equal values as ``value*count``."""
    out: list[str] = []
    # Each distinct value is written once (a cell's columns repeat a few values).
    written: dict[float, str] = {}
    previous: str | None = None
    count = 0
    for v in values:
        value = float(v)
        text = written.get(value)
        if text is None:
            text = _text(value)  # raises on a value that is not finite
            written[value] = text
        if text == previous:
            count += 1
            continue
        if previous is not None:
            out.append(previous if count == 1 else f"{previous}*{count}")
        previous, count = text, 1
    if previous is not None:
        out.append(previous if count == 1 else f"{previous}*{count}")
    return " ".join(out)


def decode(text: str) -> list[float]:
    """The inverse of :func:`encode`; ``ValueError`` on anything else."""
    values: list[float] = []
    finite = True
    for part in text.split():
        value, star, count = part.partition("*")
        times = int(count) if star else 1
        if times < 1:
            raise ValueError(f"bad run length in {part!r}")
        number = float(value)
        finite = finite and math.isfinite(number)
        values.extend([number] * times)
    if not finite:
        raise ValueError("per-unit values must be finite")
    return values


def per_unit_fields(
    parts: Mapping[str, tuple[Sequence[float], Sequence[float]]], unit: str
) -> dict[str, Any]:
    """The snapshot's ``per_query`` object: ``{"unit", "n", "<metric>": {"num", "den"}}``.

    Values pass through :func:`encode`; the gate compares what was stored with the new run's
    values encoded the same way, so rounding never makes identical runs differ.
    """
    sizes = {len(num) for num, _ in parts.values()} | {len(den) for _, den in parts.values()}
    if len(sizes) > 1:
        raise ValueError(f"per-unit columns differ in length: {sorted(sizes)}")
    out: dict[str, Any] = {"unit": unit, "n": sizes.pop() if sizes else 0}
    for name, (num, den) in parts.items():
        out[name] = {"num": encode(num), "den": encode(den)}
    return out


def read_per_unit(data: object) -> tuple[int, PerUnit] | str:
    """``(n, parts)`` from a stored ``per_query`` object, or why it cannot be used."""
    if data is None:
        return "stores no per-query values"
    if not isinstance(data, dict) or not isinstance(data.get("n"), int):
        return "has a malformed 'per_query' object"
    n = data["n"]
    parts: PerUnit = {}
    for name, value in data.items():
        if name in ("unit", "n"):
            continue
        try:
            num, den = decode(value["num"]), decode(value["den"])
        except (TypeError, KeyError, ValueError, AttributeError):
            return f"has malformed per-query values for {name!r}"
        if len(num) != n or len(den) != n:
            return f"has {len(num)}/{len(den)} per-query values for {name!r}, not n={n}"
        parts[name] = (num, den)
    return n, parts


@functools.lru_cache(maxsize=4096)
def _column(j: int) -> npt.NDArray[np.int8]:
    """Unit ``j``'s swap bits in the :data:`DRAWS` random patterns (seeded per column, so a
    unit's bits do not depend on how many units differ)."""
    return np.random.default_rng([_SEED, j]).integers(0, 2, size=DRAWS, dtype=np.int8)


def _swapped_sums(
    values: tuple[npt.NDArray[np.float64], ...], m: int
) -> tuple[list[npt.NDArray[np.float64]], bool]:
    """For each swap pattern over ``m`` differing units, the sum of ``values`` over the
    swapped units; and whether the patterns are all ``2**m`` of them (exact)."""
    if m <= EXACT_LIMIT:
        rows = np.arange(2**m, dtype=np.int64)[:, None] >> np.arange(m, dtype=np.int64)
        patterns = (rows & 1).astype(np.float64)
        return [patterns @ v for v in values], True
    sums = [np.zeros(DRAWS) for _ in values]
    step = 4096
    for start in range(0, m, 64):
        block = np.stack([_column(j) for j in range(start, min(m, start + 64))], axis=1)
        for lo in range(0, DRAWS, step):
            chunk = block[lo : lo + step].astype(np.float64)
            for total, v in zip(sums, values, strict=True):
                total[lo : lo + step] += chunk @ v[start : start + 64]
    return sums, False


def differing_units(
    stored: tuple[Sequence[float], Sequence[float]], new: tuple[Sequence[float], Sequence[float]]
) -> int:
    """How many units' (numerator, denominator) differ between the two runs.  The smallest
    p-value the test can give is ``2 ** -m``: below ``log2(1 / alpha)`` differing units it
    can never reject."""
    return sum(
        1
        for a, b, c, d in zip(stored[0], stored[1], new[0], new[1], strict=True)
        if a != c or b != d
    )


def paired_p_value(
    stored: tuple[Sequence[float], Sequence[float]],
    new: tuple[Sequence[float], Sequence[float]],
    direction: Literal["higher", "lower"],
) -> float | None:
    """One-sided p-value that ``new`` (numerators, denominators) scores worse than ``stored``
    on the same units, by the randomization test of the module docstring.

    ``None`` when either ratio is undefined (a zero denominator sum).
    """
    old_num, old_den = (np.asarray(v, dtype=np.float64) for v in stored)
    new_num, new_den = (np.asarray(v, dtype=np.float64) for v in new)
    if not (len(old_num) == len(old_den) == len(new_num) == len(new_den)):
        raise ValueError("stored and new per-unit values differ in length")
    on, od, nn, nd = (float(a.sum()) for a in (old_num, old_den, new_num, new_den))
    if od == 0 or nd == 0:
        return None
    d_num, d_den = new_num - old_num, new_den - old_den
    differ = (d_num != 0) | (d_den != 0)
    m = int(differ.sum())
    if m == 0:
        return 1.0
    (s_num, s_den), exact = _swapped_sums((d_num[differ], d_den[differ]), m)
    # A swapped unit moves its difference from the new run to the stored one.
    new_d, old_d = nd - s_den, od + s_den
    ok = (new_d != 0) & (old_d != 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        change = (nn - s_num) / new_d - (on + s_num) / old_d
    observed = nn / nd - on / od
    sign = -1.0 if direction == "higher" else 1.0
    hits = int(np.count_nonzero(ok & (sign * change >= sign * observed - 1e-12)))
    total = int(np.count_nonzero(ok))
    return hits / total if exact else (1 + hits) / (1 + total)
