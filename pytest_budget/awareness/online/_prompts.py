"""What the LLM online actor is told (our wording; BAGEN's interval/impossible format).

The per-turn prompt is the environment's own observation followed by the budget block
(:func:`~pytest_budget.awareness.online._protocol.budget_block`); these system messages add
the rules of the online protocol to the environment's actor system message.
"""

from __future__ import annotations

__all__ = ["online_system"]

_SINGLE = (
    "\n\nYou also keep an eye on your budget while you work. Every message ends with what "
    "you have used so far and the cap. In every reply, besides your action, estimate how "
    "much more you will still need to finish the task, this reply included: "
    "<estimate>[low, high]</estimate> (when there are several budgets, one interval per "
    "budget, written name:[low, high] and separated by commas), or "
    "<estimate>impossible</estimate> if you believe the task cannot be finished within the "
    "cap. Keep the interval as tight as you can while still covering what you will use. "
    "If you judge that going on is pointless, reply <stop/> instead of an action: the task "
    "then ends unfinished and the rest of the budget is saved."
)
_TWO = (
    "\n\nYou also keep an eye on your budget while you work. Every message ends with what "
    "you have used so far and the cap. If you judge that going on is pointless, reply "
    "<stop/> instead of an action: the task then ends unfinished and the rest of the budget "
    "is saved. You will be asked for budget estimates separately."
)


def online_system(actor_system: str, protocol: str) -> str:
    """The actor's system message with the online rules of ``protocol`` appended."""
    return actor_system + (_SINGLE if protocol == "single" else _TWO)
