"""Phase 0: measure each item's baseline (solved y_i, output tokens c_i) with the solver.

Results are cached on disk, one small JSON file per key written atomically, so a second
run makes no solver calls and concurrent xdist workers can never leave a torn file.  The
key holds everything that determines a result (:func:`solver_identity`: the solver's
name and, for a model solver, provider, model, base URL, token cap, temperature and the
digest of its prompts; the Phase 0 cap; the run's seed; the item's id, text, domain,
grader and answer), so changing any of them is a miss, never a stale hit.  A pool line
that carries its own ``baseline`` skips the solver entirely.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from pytest_budget._core.concurrency import for_each_bounded
from pytest_budget._core.files import write_atomic
from pytest_budget._core.replies import safe_repr
from pytest_budget._core.roles import AgentError, agent_name, call_role
from pytest_budget._core.tokens import count_tokens
from pytest_budget._core.written import shared_work
from pytest_budget.triage._graders import extract_answer, grade
from pytest_budget.triage._types import Baseline, Item, Problem, Solution

__all__ = [
    "BaselineReport",
    "Phase0Cache",
    "coerce_solution",
    "is_truncated",
    "measure_baselines",
    "solver_identity",
]


def solver_identity(solver: Any) -> dict[str, Any]:
    """Everything about ``solver`` that can change a Phase 0 result, as plain JSON data.

    A solver may describe itself with a ``cache_identity()`` method (the built-in model
    solver gives provider, model, base URL, token cap, temperature and its prompts'
    digest); otherwise its name, its class (or function) and any ``max_tokens`` /
    ``temperature`` attribute are used.
    """
    identity: dict[str, Any] = {"name": agent_name(solver)}
    describe = getattr(solver, "cache_identity", None)
    if callable(describe):
        described = describe()
        if isinstance(described, Mapping):
            identity.update({str(key): value for key, value in described.items()})
            return identity
    kind = solver if inspect.isfunction(solver) or inspect.ismethod(solver) else type(solver)
    identity["kind"] = f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', '')}"
    for attribute in ("max_tokens", "temperature"):
        value = getattr(solver, attribute, None)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            identity[attribute] = value
    return identity


#: Part of every cache key: bump it when what a key covers changes.
_KEY_VERSION = 2


def is_truncated(reply: object) -> bool:
    """True when an agent's reply says it was cut at its cap (a ``truncated`` attribute,
    as model solutions and plans carry from the provider's finish reason)."""
    try:
        return getattr(reply, "truncated", False) is True
    except Exception:  # a user object whose attribute access raises: not truncated
        return False


def coerce_solution(raw: object) -> Solution:
    """Turn whatever a solver returned into a :class:`Solution`.

    Accepts a Solution, a mapping with ``text`` (and optional ``tokens``/``answer``), or raw
    text.  Raw text is counted with the reference tokenizer and its final answer extracted.
    ``None`` or another type raises ``TypeError`` with a reason for the report.
    """
    if isinstance(raw, Solution):
        # Built by the agent: its fields are whatever it put there.
        if not isinstance(raw.text, str):
            raise TypeError(f"solver returned a Solution whose text is {type(raw.text).__name__}")
        count: object = raw.tokens
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise TypeError(
                f"solver returned a Solution with tokens of type {type(count).__name__}; "
                "expected a non-negative integer"
            )
        if raw.answer is not None and not isinstance(raw.answer, str):
            raise TypeError(
                f"solver returned a Solution whose answer is {type(raw.answer).__name__}"
            )
        return raw
    if isinstance(raw, str):
        return Solution(text=raw, tokens=count_tokens(raw), answer=extract_answer(raw))
    if isinstance(raw, Mapping):
        text = raw.get("text", "")
        if not isinstance(text, str):
            raise TypeError("solver returned a mapping whose 'text' is not a string")
        tokens = raw.get("tokens")
        if tokens is None:
            tokens = count_tokens(text)
        if (
            isinstance(tokens, bool)
            or not isinstance(tokens, int | float)
            or not 0 <= tokens < 2**63  # NaN and infinities fail too
        ):
            raise TypeError(
                f"solver returned tokens={safe_repr(tokens)}; expected a non-negative integer"
            )
        answer = raw.get("answer")
        if answer is None:
            answer = extract_answer(text)
        elif not isinstance(answer, str | int | float) or isinstance(answer, bool):
            raise TypeError(
                f"solver returned an answer of type {type(answer).__name__}; expected text"
            )
        return Solution(
            text=text, tokens=int(tokens), answer=None if answer is None else str(answer)
        )
    if raw is None:
        raise TypeError("solver returned None; return a Solution, a mapping or the raw text")
    raise TypeError(
        f"solver returned {type(raw).__name__}; return a Solution, a mapping or the raw text"
    )


class Phase0Cache:
    """Solutions on disk under ``directory``; ``None`` disables caching.

    ``solver`` arguments are a :func:`solver_identity` (a plain name is accepted too);
    ``max_tokens`` is the Phase 0 cap passed to the solver and ``seed`` the run's seed.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.directory = None if directory is None else Path(directory)

    @staticmethod
    def key(
        solver: Mapping[str, Any] | str,
        item: Item,
        *,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> str:
        payload = json.dumps(
            {
                "version": _KEY_VERSION,
                "solver": solver,
                "max_tokens": max_tokens,
                "seed": seed,
                # Not the answer: y_i is graded again from the stored answer on every read.
                "item": [item.id, item.text, item.domain, item.grader],
            },
            ensure_ascii=False,
            sort_keys=True,
            default=repr,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _path(
        self, solver: Mapping[str, Any] | str, item: Item, max_tokens: int | None, seed: int | None
    ) -> Path | None:
        if self.directory is None:
            return None
        key = self.key(solver, item, max_tokens=max_tokens, seed=seed)
        return self.directory / key[:2] / f"{key}.json"

    def get(
        self,
        solver: Mapping[str, Any] | str,
        item: Item,
        *,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Solution | None:
        found = self.lookup(solver, item, max_tokens=max_tokens, seed=seed)
        return None if found is None else found[0]

    def lookup(
        self,
        solver: Mapping[str, Any] | str,
        item: Item,
        *,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> tuple[Solution, bool] | None:
        """The stored solution and whether it was cut at the cap (truncated)."""
        path = self._path(solver, item, max_tokens, seed)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            solution = Solution(
                text=data["text"], tokens=int(data["tokens"]), answer=data["answer"]
            )
            return solution, data.get("truncated") is True
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is re-measured, never trusted

    def put(
        self,
        solver: Mapping[str, Any] | str,
        item: Item,
        solution: Solution,
        *,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> None:
        path = self._path(solver, item, max_tokens, seed)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            # The name only: a base URL may carry credentials and stays in the hashed key.
            "solver": solver.get("name") if isinstance(solver, Mapping) else solver,
            "item": item.id,
            "text": solution.text,
            "tokens": solution.tokens,
            "answer": solution.answer,
            "truncated": is_truncated(solution),
        }
        write_atomic(path, json.dumps(record, ensure_ascii=False))


@dataclass
class BaselineReport:
    """Phase 0 for one set of items: baselines, and what could not be measured."""

    baselines: dict[str, Baseline] = field(default_factory=dict)
    solutions: dict[str, Solution] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    solver_calls: int = 0
    cache_hits: int = 0
    from_file: int = 0
    #: Where each item's result came from: ``cache``, ``solver`` or ``file``.
    sources: dict[str, str] = field(default_factory=dict)
    #: Ids of the items whose solution was cut at the solver's cap (finish reason
    #: ``length`` or the provider's equivalent): their c_i is the cap, not a natural cost.
    truncated: set[str] = field(default_factory=set)


def _baseline(item: Item, solution: Solution) -> Baseline:
    solved = grade(item, solution.answer)
    # c_i > 0 is part of the model (TRIAGE §3.2); an empty output still cost one token.
    return Baseline(solved=solved, tokens=max(1, solution.tokens))


async def measure_baselines(
    items: Sequence[Item],
    solver: Any,
    *,
    cache: Phase0Cache,
    limiter: anyio.CapacityLimiter | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
) -> BaselineReport:
    """Phase 0 over ``items`` with ``solver`` (concurrently, bounded by ``limiter``)."""
    report = BaselineReport()
    identity = solver_identity(solver)

    async def one(item: Item) -> None:
        if item.baseline is not None:
            report.baselines[item.id] = item.baseline
            report.from_file += 1
            report.sources[item.id] = "file"
            return
        found = cache.lookup(identity, item, max_tokens=max_tokens, seed=seed)
        if found is not None:
            cached, cut = found
            report.cache_hits += 1
            report.sources[item.id] = "cache"
            if cut:
                report.truncated.add(item.id)
            report.solutions[item.id] = cached
            report.baselines[item.id] = _baseline(item, cached)
            return
        problem = Problem(id=item.id, text=item.text, value=item.value, domain=item.domain)
        report.solver_calls += 1
        try:
            with shared_work():  # Phase 0 is every planner's: counted in no cell
                raw = await call_role(solver, "solver", problem, max_tokens, limiter=limiter)
            solution = coerce_solution(raw)
            baseline = _baseline(item, solution)
        except AgentError as exc:
            report.errors[item.id] = exc.reason
            return
        except TypeError as exc:
            report.errors[item.id] = str(exc)
            return
        except Exception as exc:  # a hostile reply object: an error of this item, not a crash
            report.errors[item.id] = f"reading the solver's reply raised {type(exc).__name__}"
            return
        cache.put(identity, item, solution, max_tokens=max_tokens, seed=seed)
        report.sources[item.id] = "solver"
        if is_truncated(solution):
            report.truncated.add(item.id)
        report.solutions[item.id] = solution
        report.baselines[item.id] = baseline

    async def at(index: int) -> None:
        await one(items[index])

    await for_each_bounded(len(items), at, limiter)
    return report
