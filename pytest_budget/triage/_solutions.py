"""What every triage domain's solver and estimator share: the :class:`Estimate` a cheap
text-only estimator returns, and :func:`capped_solution` (a solution under an enforced
output cap).  Below :mod:`pytest_budget.triage._domains` and the domains themselves, so that
neither imports the registry (re-exported from :mod:`~pytest_budget.triage._domains`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_budget._core.tokens import count_tokens
from pytest_budget.triage._types import Solution

__all__ = ["Estimate", "capped_solution", "truncate_tokens"]


@dataclass(frozen=True)
class Estimate:
    """A prediction from the problem text alone: output tokens and chance of success."""

    tokens: int
    p_solve: float


_TOKEN = re.compile(
    r"\w+|[^\w\s]"
)  # the reference tokenizer's pattern (pytest_budget._core.tokens)


def truncate_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` holding at most ``max_tokens`` whole tokens."""
    if max_tokens <= 0:
        return ""
    end = 0
    for count, match in enumerate(_TOKEN.finditer(text), start=1):
        if count > max_tokens:
            break
        end = match.end()
    else:
        return text  # fewer tokens than the cap: keep trailing whitespace too
    return text[:end]


def capped_solution(text: str, answer: str | None, max_tokens: int | None) -> Solution:
    """A solution under an enforced output cap.

    Solvers write their final ``Answer:`` line last, so a text that does not fit has lost
    (part of) that line: it is cut to ``max_tokens`` whole tokens and its answer dropped.
    """
    tokens = count_tokens(text)
    if max_tokens is None or tokens <= max_tokens:
        return Solution(text=text, tokens=tokens, answer=answer)
    cut = truncate_tokens(text, max_tokens)
    return Solution(text=cut, tokens=count_tokens(cut), answer=None)
