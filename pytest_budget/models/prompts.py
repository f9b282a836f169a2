"""System prompts for the LLM-backed agents, one per role (and per environment for actors).

The suites already write the per-call prompt: the triage planner prompt
(:func:`pytest_budget.triage.prompts.render_plan_prompt`), the problem text a solver works on,
the estimator's probe (:attr:`pytest_budget.awareness.probes.Probe.text`), the actor's
observation (:attr:`~pytest_budget.awareness.rollouts.ActorObservation.text`) and the travel
conversation of the planning suite.  The messages here only tell the model which role it plays
and repeat the format rules its reply is read by; the wording is ours, the answer formats are
the papers' (TRIAGE's JSON plan, BAGEN's ``<answer>[lo, hi]</answer>`` / ``impossible`` and
its ``<answer>`` action tags, Search-R1's ``<search>``/``<answer>``).

The planning suite's conversation carries its own system message (CostBench's setting, see
:func:`pytest_budget.planning.prompts.system_prompt`), so the tool agent adds none:
:data:`TOOL_AGENT_SYSTEM` is ``None`` and the conversation is sent as the suite built it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = [
    "ACTOR_SYSTEMS",
    "ESTIMATOR_SYSTEM",
    "PLANNER_SYSTEM",
    "SOLVER_SYSTEMS",
    "TOOL_AGENT_SYSTEM",
    "actor_system",
    "env_family",
    "estimator_system",
    "solver_prompt_digest",
    "solver_system",
]

PLANNER_SYSTEM = (
    "You plan how to spend a limited budget of output tokens on a set of problems. You do not "
    "solve the problems here: you choose which ones to work on, in which order, and how many "
    "tokens each one gets. Reply with the JSON object the message asks for and nothing else: "
    'no prose and no code fence. Use the problem ids exactly as written; every "tokens" value '
    "is a whole number."
)

# The solver prompts are neutral about length, like TRIAGE's baseline solve: the measured
# output-token costs c_i are the model's natural costs, so nothing here asks for brevity
# (or for detail).  Only the answer format is fixed, so graders can read the answer.
_SOLVER_COMMON = (
    "You solve one problem at a time. Solve it, then finish with a last line of the form"
)

#: Per triage domain (``Problem.domain``); ``""`` is the generic prompt.
SOLVER_SYSTEMS: dict[str, str] = {
    "": (
        f"{_SOLVER_COMMON}\nAnswer: <your final answer>\n"
        "Write nothing after that line. If you cannot solve the problem, say so and give no "
        "Answer line."
    ),
    "arith": (
        "You solve one arithmetic problem at a time: compute the exact value of the "
        "expression. Finish with a last line of the form\n"
        "Answer: <value>\n"
        "where the value is an integer, or a fraction p/q in lowest terms when it is not "
        "whole (no decimals, no words). Write nothing after that line. If the value cannot be "
        "determined, say so and give no Answer line."
    ),
    "sokoban": (
        "You solve one Sokoban puzzle at a time: find a sequence of moves that leaves every "
        "box on a goal. Then finish with a last line of the form\nAnswer: <moves>\n"
        "listing every move in order as the words Up, Down, Left or Right separated by "
        "spaces, e.g. Answer: Up Left Left Down. Write nothing after that line. If the "
        "puzzle cannot be solved, say so and give no Answer line."
    ),
}

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

#: The tool agent sends the planning suite's conversation as it is (it has its own system
#: message), so nothing is added.
TOOL_AGENT_SYSTEM: str | None = None


def env_family(env: str) -> str:
    """``"sokoban-8x8"`` -> ``"sokoban"``: the environment label's first part, lower case."""
    return env.split("-", 1)[0].strip().lower()


def solver_prompt_digest() -> str:
    """A short digest of every solver prompt text (part of the Phase 0 cache key)."""
    from pytest_budget.triage.prompts import render_resolve_banner

    texts = [SOLVER_SYSTEMS[key] for key in sorted(SOLVER_SYSTEMS)]
    texts.append(render_resolve_banner(0))
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]


def solver_system(domain: str | None) -> str:
    """The solver's system message for a triage domain (generic for unknown domains)."""
    return SOLVER_SYSTEMS.get(domain or "", SOLVER_SYSTEMS[""])


def estimator_system(dimensions: Sequence[str] = ("tokens",)) -> str:
    """The estimator's system message; several budget dimensions add the per-budget rule."""
    return ESTIMATOR_SYSTEM + (_ESTIMATOR_MULTI if len(dimensions) > 1 else "")


def actor_system(env: str) -> str:
    """The actor's system message for an environment label (generic for unknown ones)."""
    return ACTOR_SYSTEMS.get(env_family(env), ACTOR_SYSTEMS[""])
