"""The awareness suite's agent roles: the estimator under test and the environment actor.

Any object with the role's method, or a plain callable, fills the role; the method may be
sync or async (:func:`pytest_budget._core.roles.call_role` calls it).  The suite declares the
roles (with the online mode's ``online_actor`` and ``online_estimator``) in
:mod:`pytest_budget.awareness._suite`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from pytest_budget.awareness._replay.answers import Estimate
    from pytest_budget.awareness._replay.probes import Probe
    from pytest_budget.awareness._replay.rollouts import ActorObservation, ActorReply

__all__ = ["ActReply", "Actor", "EstimateReply", "Estimator"]

#: An interval, interval map, ``impossible`` (:mod:`pytest_budget.awareness._replay.answers`) or
#: raw text.
EstimateReply: TypeAlias = "Estimate | str"


@runtime_checkable
class Estimator(Protocol):
    """Answers an awareness probe with an interval, ``impossible`` or raw text."""

    def estimate(self, probe: Probe) -> EstimateReply | Awaitable[EstimateReply]: ...


#: An :class:`~pytest_budget.awareness._replay.rollouts.ActorReply`, a mapping with ``text`` and
#: ``usage``, or raw text.
ActReply: TypeAlias = "ActorReply | Mapping[str, Any] | str"


@runtime_checkable
class Actor(Protocol):
    """Acts in an environment: observation in, action (or raw text) out."""

    def act(self, observation: ActorObservation) -> ActReply | Awaitable[ActReply]: ...
