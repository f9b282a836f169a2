"""The awareness suite's system messages for LLM agents: the estimator and the actors.

The suite already writes the per-call prompt: the estimator's probe
(:attr:`pytest_budget.awareness._replay.probes.Probe.text`) and the actor's observation
(:attr:`~pytest_budget.awareness._replay.rollouts.ActorObservation.text`).  These messages only tell
the model which role it plays and repeat the format rules its reply is read by; the wording
is ours, the answer formats are the papers' (BAGEN's ``<answer>[lo, hi]</answer>`` /
``impossible`` and its ``<answer>`` action tags, Search-R1's ``<search>``/``<answer>``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ACTOR_SYSTEMS",
    "ESTIMATOR_SYSTEM",
    "actor_system",
    "env_family",
    "estimator_system",
]

ESTIMATOR_SYSTEM = (
    "You predict how much budget another agent will still use. The message describes the "
    "agent's task, its budget caps and the turns it has taken so far. Estimate what it will "
    "use from its next turn until it finishes the task successfully, as an interval of plain "
    "numbers in the budget's own units (no units, no thousands separators). If you believe it "
    "cannot succeed within the caps, answer impossible. You may reason briefly inside "
    "<think>...</think>; then give exactly one <answer>...</answer> in the format the message "
    "shows, and write nothing after it."
)

_ESTIMATOR_MULTI = (
    " The task has several budgets: the answer holds one name:[low, high] pair per budget, "
    "for every budget named in the message, separated by commas."
)

#: Per environment family (the part of ``observation.env`` before the first ``-``).
ACTOR_SYSTEMS: dict[str, str] = {
    "sokoban": (
        "You are playing Sokoban, one turn at a time. Every message shows the whole current "
        "state, so you need no memory of earlier turns. Reply with the moves to play this "
        "turn inside <answer>...</answer>, separated by ' || ' (for example "
        "<answer>Left || Up</answer>), and no more moves than the message allows. You may "
        "reason briefly inside <think>...</think> first; write nothing after the answer."
    ),
    "warehouse": (
        "You run a company's supply chain in two-week steps. Every message shows the whole "
        "current state and the terms. Reply with this step's decisions as one JSON object "
        "inside a single <answer>...</answer> tag, using only the fields the message lists "
        "(an empty object {} does nothing). You may reason briefly inside <think>...</think> "
        "first; write nothing after the answer."
    ),
    "search": (
        "You answer a question by searching a document collection, one turn at a time. Every "
        "message shows the question and everything your searches returned so far. Each reply "
        "holds exactly one <search>query</search> or exactly one <answer>short answer"
        "</answer>, never both. You may reason briefly inside <think>...</think> first; "
        "write nothing after the tag."
    ),
    "": (
        "You are an agent acting in an environment, one turn at a time. Every message shows "
        "the current state and the format your reply must follow; follow it exactly."
    ),
}


def env_family(env: str) -> str:
    """``"sokoban-8x8"`` -> ``"sokoban"``: the environment label's first part, lower case."""
    return env.split("-", 1)[0].strip().lower()


def estimator_system(dimensions: Sequence[str] = ("tokens",)) -> str:
    """The estimator's system message; several budget dimensions add the per-budget rule."""
    return ESTIMATOR_SYSTEM + (_ESTIMATOR_MULTI if len(dimensions) > 1 else "")


def actor_system(env: str) -> str:
    """The actor's system message for an environment label (generic for unknown ones)."""
    return ACTOR_SYSTEMS.get(env_family(env), ACTOR_SYSTEMS[""])
