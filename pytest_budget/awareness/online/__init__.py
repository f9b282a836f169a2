"""Online budget awareness: the agent estimates while it acts (issue 24).

``run_online_cell`` runs one environment at one cap level with an ``online_actor``
(``act(observation, used, cap)``), the replay pass beside it, and scores both; see
:mod:`.protocol` (what the actor sees and answers, the token split), :mod:`.runner` (the
turn loop, the hard cap, stops and their measured continuation) and :mod:`.scoring`.
Plain Python: no pytest.
"""

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

if TYPE_CHECKING:  # resolved on first use (see pytest_budget._core.lazy_exports)
    from pytest_budget.awareness.online._cell import OnlineCellResult, cell_caps, run_online_cell
    from pytest_budget.awareness.online._envs import ONLINE_ENVS, default_caps
    from pytest_budget.awareness.online._protocol import (
        PROTOCOLS,
        OnlineObservation,
        OnlineReply,
        read_online_reply,
    )
    from pytest_budget.awareness.online._reference import (
        ONLINE_ESTIMATORS,
        ReferenceOnlineAgent,
        reference_online_agent,
    )
    from pytest_budget.awareness.online._runner import OnlineRun, run_episode

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "ONLINE_ENVS",
    "ONLINE_ESTIMATORS",
    "PROTOCOLS",
    "OnlineCellResult",
    "OnlineObservation",
    "OnlineReply",
    "OnlineRun",
    "ReferenceOnlineAgent",
    "cell_caps",
    "default_caps",
    "read_online_reply",
    "reference_online_agent",
    "run_episode",
    "run_online_cell",
]
