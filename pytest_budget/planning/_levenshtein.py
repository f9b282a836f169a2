"""Levenshtein distance over tool-name sequences, plain and against segmented ground truths.

Used by both metric readings (:mod:`~pytest_budget.planning._metrics`, the paper's;
:mod:`~pytest_budget.planning._code_metrics`, CostBench's code).  ED is Levenshtein distance
(insertion, deletion, substitution cost 1).  :func:`segmented_edit_distance` compares with
the nearest concatenation of one tied path per segment, exactly, by a row-wise DP that takes
the element-wise minimum over a segment's alternatives (edit distance is min-plus linear in
the starting row, so per-segment minima compose), without enumerating combinations.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["edit_distance", "segmented_edit_distance"]


def _dp_rows(agent: Sequence[str], row: list[int], path: Sequence[str]) -> list[int]:
    """Levenshtein rows: extend ``row`` (cost of ground truth so far vs ``agent[:j]``)."""
    n = len(agent)
    for token in path:
        new = [row[0] + 1]
        left = row[0] + 1
        for j in range(1, n + 1):
            best = row[j - 1] + (agent[j - 1] != token)
            if row[j] + 1 < best:
                best = row[j] + 1
            if left + 1 < best:
                best = left + 1
            new.append(best)
            left = best
        row = new
    return row


def edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two tool-name sequences (unit insert/delete/substitute)."""
    # Common prefix and suffix never change the distance; strip them first.
    start = 0
    stop_a, stop_b = len(a), len(b)
    while start < stop_a and start < stop_b and a[start] == b[start]:
        start += 1
    while stop_a > start and stop_b > start and a[stop_a - 1] == b[stop_b - 1]:
        stop_a -= 1
        stop_b -= 1
    a, b = a[start:stop_a], b[start:stop_b]
    if not a or not b:
        return len(a) + len(b)
    return _dp_rows(a, list(range(len(a) + 1)), b)[-1]


def segmented_edit_distance(
    agent: Sequence[str], segments: Sequence[Sequence[Sequence[str]]]
) -> int:
    """Edit distance from ``agent`` to the nearest concatenation that takes one alternative
    per segment (``segments[i]`` lists segment ``i``'s tied paths; an empty list is ``()``).
    """
    if len(segments) == 1 and len(segments[0]) <= 1:
        return edit_distance(agent, segments[0][0] if segments[0] else ())
    row = list(range(len(agent) + 1))
    for alternatives in segments:
        if not alternatives:
            continue
        best: list[int] | None = None
        for path in alternatives:
            out = _dp_rows(agent, row, path)
            best = out if best is None else [min(x, y) for x, y in zip(best, out, strict=True)]
        assert best is not None
        row = best
    return row[-1]
