"""Budgets over named dimensions, and meters that enforce them across nested scopes.

A :class:`Usage` is what was spent (``tokens``, ``tool_calls``, ``usd``, ``seconds`` or any
environment-defined dimension such as ``time_weeks``); a :class:`Budget` holds caps of the
same shape.  A :class:`Meter` accumulates usage in one scope (a turn, a rollout, a problem or
the whole session) and forwards every charge to its parent, so a turn meter inside a rollout
meter inside the session meter enforces all three caps at once.  Breaking any cap raises the
one exception type, :class:`BudgetExceeded`.

Code deep inside an agent call does not need the meter passed down: ``meter.scope(...)`` and
``meter.activate()`` make a meter *current* (a :mod:`contextvars` variable, so each anyio or
asyncio task sees its own) and the module-level :func:`charge` charges it::

    session = Meter("session", Budget(tokens=100_000))
    with session.scope("turn", Budget(tokens=2500)) as turn:
        reply = client.complete(prompt, max_tokens=turn.max_tokens_for_next_call())
        charge(Usage(tokens=reply.output_tokens, usd=reply.cost))

Nothing here measures time by itself: callers charge ``seconds`` like any other dimension.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, get_args

__all__ = [
    "KNOWN_DIMENSIONS",
    "SCOPES",
    "Budget",
    "BudgetExceeded",
    "Meter",
    "Scope",
    "Usage",
    "charge",
    "current_meter",
]

KNOWN_DIMENSIONS: tuple[str, ...] = ("tokens", "tool_calls", "usd", "seconds")
"""Dimensions every suite understands; environments may add their own names."""

Scope = Literal["turn", "rollout", "problem", "session"]
"""Where a cap applies; a meter's scope names it in :class:`BudgetExceeded`."""

SCOPES: tuple[str, ...] = get_args(Scope)

# Summed float costs (0.1 + 0.2 against a 0.3 cap) must not count as an overrun, so a cap is
# broken only when usage exceeds it by more than this relative slack.
_SLACK = 1e-9


def _check_amount(what: str, name: object, value: object) -> float:
    """Validate one (dimension, amount) pair; ValueError names the dimension and the value.

    ValueError (not TypeError) for wrong types too, so callers such as the
    ``@pytest.mark.budget`` fixture can turn every bad input into one usage error.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} dimension names must be non-empty strings, got {name!r}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} {name!r} must be a number, got {value!r}")
    amount = float(value)
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"{what} {name!r} must be a non-negative finite number, got {value!r}")
    return amount


def _over(used: float, cap: float) -> bool:
    return used > cap + _SLACK * max(1.0, cap)


def _fmt(value: float) -> str:
    """2612.0 -> '2612', 0.35 -> '0.35' (messages should read like the numbers people set)."""
    if value.is_integer():
        return str(int(value))
    return f"{value:.10g}"


class Usage(Mapping[str, float]):
    """An immutable amount spent per dimension; a missing dimension reads as 0.0.

    ``Usage(tokens=10, usd=0.5)``, ``Usage.from_mapping({"time_weeks": 3})``; ``+`` and ``-``
    work per dimension (``sum(usages)`` works too) and a negative result is a ValueError.
    Equality treats a missing dimension and an explicit zero alike.
    """

    __slots__ = ("_amounts",)
    _amounts: dict[str, float]

    def __init__(self, **amounts: float) -> None:
        self._amounts = {name: _check_amount("usage", name, v) for name, v in amounts.items()}

    @classmethod
    def from_mapping(cls, amounts: Mapping[str, Any]) -> Usage:
        if isinstance(amounts, Usage):
            return amounts
        usage = cls.__new__(cls)
        usage._amounts = {name: _check_amount("usage", name, v) for name, v in amounts.items()}
        return usage

    @classmethod
    def zero(cls) -> Usage:
        return cls()

    def __getitem__(self, name: str) -> float:
        return self._amounts.get(name, 0.0)

    def __contains__(self, name: object) -> bool:
        # Mapping's default would call __getitem__, which never raises KeyError here.
        return name in self._amounts

    def get(self, name: str, default: Any = None) -> Any:
        return self._amounts.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._amounts))

    def __len__(self) -> int:
        return len(self._amounts)

    def as_dict(self) -> dict[str, float]:
        """A plain, JSON-serializable dict with sorted keys."""
        return {name: self._amounts[name] for name in sorted(self._amounts)}

    def _combine(self, other: Mapping[str, float], sign: float) -> Usage:
        merged = dict(self._amounts)
        for name in other:
            merged[name] = merged.get(name, 0.0) + sign * other[name]
        return Usage.from_mapping(merged)

    def __add__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return self._combine(other, 1.0)

    def __radd__(self, other: object) -> Usage:
        # Lets the built-in sum() start from its default 0.
        if other == 0:
            return self
        return NotImplemented

    def __sub__(self, other: object) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return self._combine(other, -1.0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        names = set(self._amounts) | set(other)
        return all(self[name] == other.get(name, 0.0) for name in names)

    def __hash__(self) -> int:
        return hash(frozenset((n, v) for n, v in self._amounts.items() if v != 0.0))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={_fmt(value)}" for name, value in self.as_dict().items())
        return f"Usage({inner})"


class Budget:
    """Caps per dimension: ``Budget(tokens=2500, usd=0.5)``; uncapped dimensions are free.

    A cap is a non-negative finite number (0 forbids the dimension outright).
    :meth:`from_mapping` skips ``None`` values, so an optional cap can be passed through.
    """

    __slots__ = ("_caps",)
    _caps: dict[str, float]

    def __init__(self, **caps: float) -> None:
        self._caps = {name: _check_amount("budget cap", name, v) for name, v in caps.items()}

    @classmethod
    def from_mapping(cls, caps: Mapping[str, Any]) -> Budget:
        budget = cls.__new__(cls)
        budget._caps = {
            name: _check_amount("budget cap", name, v) for name, v in caps.items() if v is not None
        }
        return budget

    @property
    def caps(self) -> dict[str, float]:
        """A copy of the caps, sorted by dimension."""
        return {name: self._caps[name] for name in sorted(self._caps)}

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(sorted(self._caps))

    def remaining(self, usage: Mapping[str, float]) -> Usage:
        """What is left of each capped dimension (never below zero)."""
        return Usage.from_mapping(
            {name: max(0.0, cap - usage.get(name, 0.0)) for name, cap in self._caps.items()}
        )

    def exceeded_by(self, usage: Mapping[str, float]) -> tuple[str, ...]:
        """The capped dimensions that ``usage`` is over, sorted."""
        return tuple(
            name for name in sorted(self._caps) if _over(usage.get(name, 0.0), self._caps[name])
        )

    def fits(self, usage: Mapping[str, float]) -> bool:
        return not self.exceeded_by(usage)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return self._caps == other._caps

    def __hash__(self) -> int:
        return hash(frozenset(self._caps.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={_fmt(cap)}" for name, cap in self.caps.items())
        return f"Budget({inner})"


class BudgetExceeded(Exception):
    """A cap was broken: the one exception type for every dimension and scope."""

    def __init__(self, scope: str, dimension: str, cap: float, used: float) -> None:
        super().__init__(
            f"budget exceeded in scope {scope!r}: {dimension} {_fmt(used)} > cap {_fmt(cap)}"
        )
        self.scope = scope
        self.dimension = dimension
        self.cap = cap
        self.used = used

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling would call __init__ with the message only.
        return (type(self), (self.scope, self.dimension, self.cap, self.used))


_current: contextvars.ContextVar[Meter | None] = contextvars.ContextVar(
    "pytest_budget_meter", default=None
)


def current_meter() -> Meter | None:
    """The meter made current by the innermost ``scope()``/``activate()`` in this context."""
    return _current.get()


def charge(usage: Mapping[str, float] | None = None, /, **amounts: float) -> None:
    """Charge the current meter (see :meth:`Meter.charge`); a no-op when none is active."""
    meter = _current.get()
    if meter is not None:
        meter.charge(usage, **amounts)


class Meter:
    """Usage accumulated against a budget in one scope, forwarded to every ancestor.

    All meters of one tree share one lock, so a charge is recorded in the whole chain at
    once even when agent calls run in worker threads.  The meter's scope is ``name``
    (``scope`` is the method that opens a nested, current child).
    """

    def __init__(
        self,
        scope: Scope = "session",
        budget: Budget | None = None,
        *,
        parent: Meter | None = None,
    ) -> None:
        if scope not in SCOPES:
            raise ValueError(f"unknown budget scope {scope!r}; use one of: {', '.join(SCOPES)}")
        self.name: Scope = scope
        self.budget = budget if budget is not None else Budget()
        self.parent = parent
        self._lock: threading.Lock = parent._lock if parent is not None else threading.Lock()
        self._used = Usage.zero()

    def _chain(self) -> list[Meter]:
        """This meter then its ancestors, innermost first."""
        chain: list[Meter] = []
        meter: Meter | None = self
        while meter is not None:
            chain.append(meter)
            meter = meter.parent
        return chain

    def child(self, scope: Scope, budget: Budget | None = None) -> Meter:
        """A nested meter; its charges also count here and in every ancestor."""
        return Meter(scope, budget, parent=self)

    @property
    def used(self) -> Usage:
        with self._lock:
            return self._used

    @property
    def remaining(self) -> Usage:
        """For each dimension capped anywhere in the chain, the tightest amount left."""
        with self._lock:
            left: dict[str, float] = {}
            for meter in self._chain():
                for name, amount in meter.budget.remaining(meter._used).items():
                    left[name] = min(amount, left.get(name, math.inf))
        return Usage.from_mapping(left)

    def max_tokens_for_next_call(self) -> int | None:
        """The tightest ``tokens`` left over the chain, floored; None when tokens are uncapped.

        A model client sends this as ``max_tokens`` so one call cannot overrun the budget.
        """
        left = self.remaining
        if "tokens" not in left:
            return None
        return math.floor(left["tokens"])

    def check(self, usage: Mapping[str, float] | None = None, /, **amounts: float) -> bool:
        """Whether charging ``usage`` would keep every cap in the chain (nothing recorded)."""
        extra = _as_usage(usage, amounts)
        with self._lock:
            return all(m.budget.fits(m._used + extra) for m in self._chain())

    def charge(self, usage: Mapping[str, float] | None = None, /, **amounts: float) -> None:
        """Record ``usage`` here and in every ancestor, then enforce every cap in the chain.

        The usage is recorded even when it breaks a cap, so reports show the overrun;
        BudgetExceeded names the innermost scope whose cap is broken.
        """
        extra = _as_usage(usage, amounts)
        with self._lock:
            chain = self._chain()
            for meter in chain:
                meter._used = meter._used + extra
            error = _first_overrun(chain)
        if error is not None:
            raise error

    @contextmanager
    def scope(self, scope: Scope, budget: Budget | None = None) -> Iterator[Meter]:
        """A child meter that is current (for :func:`charge`) inside the ``with`` block."""
        child = self.child(scope, budget)
        with child.activate():
            yield child

    @contextmanager
    def activate(self) -> Iterator[Meter]:
        """Make this meter current inside the ``with`` block (task- and thread-local)."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def __repr__(self) -> str:
        return f"Meter(scope={self.name!r}, budget={self.budget!r}, used={self.used!r})"


def _first_overrun(chain: list[Meter]) -> BudgetExceeded | None:
    """The error for the innermost broken cap (first dimension by name), if any.

    Called with the tree's lock held so the numbers are those of this very charge.
    """
    for meter in chain:
        dimensions = meter.budget.exceeded_by(meter._used)
        if dimensions:
            name = dimensions[0]
            return BudgetExceeded(meter.name, name, meter.budget.caps[name], meter._used[name])
    return None


def _as_usage(usage: Mapping[str, float] | None, amounts: Mapping[str, float]) -> Usage:
    base = Usage.zero() if usage is None else Usage.from_mapping(usage)
    return base + Usage.from_mapping(amounts) if amounts else base
