"""The built-in problem domains of the triage suite and the reference solver over them.

A :class:`Domain` bundles what the suite needs of one kind of problem: a seeded generator
of ordinary items, a generator of provably unsolvable look-alikes, a reference solver and
a cheap text-only cost estimator (used by the ``cheapest-first`` planner).  Two ship:
``arith`` (multi-step exact arithmetic) and ``sokoban`` (Sokoban puzzles).

:class:`ReferenceSolver` (agent name ``reference``) is the default Phase 0 solver: it
dispatches on a problem's ``domain``, or recognises the text when the domain is empty or
unknown, and declines anything else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from pytest_budget._core.tokens import count_tokens
from pytest_budget.triage._solutions import Estimate, capped_solution, truncate_tokens
from pytest_budget.triage._types import Item, Problem, Solution

__all__ = [
    "DOMAINS",
    "Domain",
    "DomainSolver",
    "Estimate",
    "ReferenceSolver",
    "capped_solution",
    "estimate_any",
    "get_domain",
    "recognise_domain",
    "truncate_tokens",
]


class DomainSolver(Protocol):
    """What a domain's reference solver offers (the ``Solver`` role, typed)."""

    name: str

    def solve(self, problem: Problem, max_tokens: int | None = None) -> Solution: ...


@dataclass(frozen=True)
class Domain:
    """One kind of problem: generators, a reference solver factory and an estimator."""

    name: str
    generate: Callable[[int, int], tuple[Item, ...]]
    generate_unsolvable: Callable[[int, int], tuple[Item, ...]]
    solver: Callable[[], DomainSolver]
    estimate: Callable[[Problem], Estimate]


@functools.cache
def _builtin_domains() -> dict[str, Domain]:
    # Imported on first use: importing the registry stays cheap.
    import pytest_budget.triage._arithmetic as arithmetic
    import pytest_budget.triage._puzzles as puzzles

    return {
        "arith": Domain(
            name="arith",
            generate=arithmetic.generate,
            generate_unsolvable=arithmetic.generate_unsolvable,
            solver=arithmetic.ArithmeticSolver,
            estimate=arithmetic.estimate,
        ),
        "sokoban": Domain(
            name="sokoban",
            generate=puzzles.generate,
            generate_unsolvable=puzzles.generate_unsolvable,
            solver=puzzles.SokobanSolver,
            estimate=puzzles.estimate,
        ),
    }


class _DomainRegistry(Mapping[str, Domain]):
    """Read-only mapping of the built-in domains, filled on first use."""

    def __getitem__(self, name: str) -> Domain:
        return _builtin_domains()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_builtin_domains())

    def __len__(self) -> int:
        return len(_builtin_domains())

    def __repr__(self) -> str:
        return f"DOMAINS({sorted(self)})"


DOMAINS: Mapping[str, Domain] = _DomainRegistry()


def get_domain(name: str) -> Domain:
    """The built-in domain called ``name``; ``ValueError`` listing the names otherwise."""
    try:
        return DOMAINS[name]
    except KeyError:
        known = ", ".join(sorted(DOMAINS))
        raise ValueError(f"unknown domain {name!r}; built-in domains: {known}") from None


def recognise_domain(problem: Problem) -> str | None:
    """The built-in domain of ``problem``: its ``domain`` if known, else read from the text."""
    if problem.domain in DOMAINS:
        return problem.domain
    import pytest_budget.triage._arithmetic as arithmetic
    import pytest_budget.triage._puzzles as puzzles

    if puzzles.looks_like_puzzle(problem.text):
        return "sokoban"
    if arithmetic.find_expression(problem.text) is not None:
        return "arith"
    return None


_REFUSAL = "I cannot solve this kind of problem."


class ReferenceSolver:
    """The built-in offline solver: one reference solver per domain behind one name."""

    name = "reference"
    # A few milliseconds an item at most (bounded searches): no worker thread per call.
    run_inline = True

    def __init__(self) -> None:
        self._solvers: dict[str, DomainSolver] = {
            name: domain.solver() for name, domain in DOMAINS.items()
        }

    def solve(self, problem: Problem, max_tokens: int | None = None) -> Solution:
        domain = recognise_domain(problem)
        if domain is None:
            return capped_solution(_REFUSAL, None, max_tokens)
        return self._solvers[domain].solve(problem, max_tokens)


def estimate_any(problem: Problem) -> Estimate:
    """The domain estimate of ``problem``, or a generic length-based guess.

    The generic guess (unknown kinds of problem) expects a worked answer a few times as
    long as the question, at even odds.
    """
    domain = recognise_domain(problem)
    if domain is not None:
        return DOMAINS[domain].estimate(problem)
    return Estimate(tokens=max(50, 4 * count_tokens(problem.text)), p_solve=0.5)
