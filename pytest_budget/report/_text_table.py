"""Plain-text tables for the terminal summary (no dependency, stable column widths)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["format_value", "render_table"]


def format_value(value: object, digits: int = 3) -> str:
    """Render a score: fixed decimals for floats, '-' for undefined, str otherwise."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.{digits}f}"
    return str(value)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Lines of an aligned table: text columns left-aligned, numbers right-aligned."""
    cells = [[format_value(value) for value in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) or row[i] is None for row in rows) if rows else False
        for i in range(len(headers))
    ]
    widths = [
        max([len(header)] + [len(row[i]) for row in cells]) for i, header in enumerate(headers)
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(widths[i]) if numeric[i] else value.ljust(widths[i])
            for i, value in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * width for width in widths])]
    out.extend(line(row) for row in cells)
    return out
