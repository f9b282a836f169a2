"""The triage suite's prompts: the planner prompt in three framings (TRIAGE App. B, C.2),
the re-solve banner, and the LLM agents' system messages.

Only the opening paragraph differs between variants; the rules, the problems, the budget
and the answer format are identical, so a change in scores isolates the framing.
The wording is ours; the answer format is the paper's JSON plan.

The system messages (:data:`PLANNER_SYSTEM`, :data:`SOLVER_SYSTEMS`) only tell an LLM
agent (:mod:`pytest_budget.triage._llm`) which role it plays and repeat the format rules its
reply is read by.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pytest_budget.triage._types import Problem

__all__ = [
    "PLANNER_SYSTEM",
    "SOLVER_SYSTEMS",
    "VARIANTS",
    "render_plan_prompt",
    "render_resolve_banner",
    "solver_prompt_digest",
    "solver_system",
]

#: Opening paragraph per variant: A neutral, B autonomous agent, C timed exam.
VARIANTS: dict[str, str] = {
    "A": (
        "Below is a set of {domain}. You may spend at most {budget} output tokens in total "
        "solving them. You are not required to attempt all of them: choosing which ones to "
        "work on, and in which order, is part of your task."
    ),
    "B": (
        "You are an autonomous agent with a fixed compute allowance of {budget} output tokens. "
        "You have been handed a queue of {domain}; finishing all of them within the "
        "allowance is unlikely. Select the assignments to run and their order so that the "
        "points you collect are as high as possible. Some assignments may be beyond you, and "
        "tokens spent on those earn nothing."
    ),
    "C": (
        "You are sitting a timed exam whose clock is measured in output tokens: {budget} "
        "tokens for the whole paper. In front of you is a set of {domain}. Nobody expects "
        "you to answer everything, and some questions may be too hard or impossible to answer "
        "in the time you have. Pick the questions to attempt and the order to attempt them in "
        "so that your score is as high as possible."
    ),
}

_RULES = """\
How your plan is used:
- Problems are worked on one at a time, in the order you list them.
- Each listed problem gets the number of tokens you allocate to it. Your allocations must
  add up to no more than {budget} tokens.
- When the remaining budget cannot cover the next problem, work stops there.
- A problem earns its points only if it is solved correctly.
- Problems you leave out earn nothing and cost nothing.

Problems:
{problems}

Reply with a JSON object and nothing else, in this form:
{{"plan": [{{"id": "<problem id>", "tokens": <integer>}}, ...]}}
List the problems in the order they should be worked on."""


def _problem_block(problem: Problem) -> str:
    points = f"{problem.value:g}"
    return f"[id: {problem.id}] (points: {points})\n{problem.text.strip()}"


def render_plan_prompt(
    problems: Sequence[Problem], budget: int, *, variant: str = "A", domain: str = "problems"
) -> str:
    """The full planner prompt for ``problems`` under ``budget`` tokens."""
    try:
        opening = VARIANTS[variant]
    except KeyError:
        raise ValueError(
            f"unknown prompt variant {variant!r}; choose one of {', '.join(VARIANTS)}"
        ) from None
    blocks = "\n\n".join(_problem_block(problem) for problem in problems)
    return (
        opening.format(domain=domain, budget=budget)
        + "\n\n"
        + _RULES.format(budget=budget, problems=blocks)
    )


def render_resolve_banner(tokens: int) -> str:
    """The banner stating an item's own allocation when it is re-solved, prepended to the
    standard solver prompt (TRIAGE App. C.1, verbatim)."""
    return (
        f"You have a strict output-token budget of {tokens} tokens for solving this problem, "
        "including any reasoning, drafts, or scratch work you produce. Plan your solution to "
        "fit within this limit. Be concise, skip unnecessary explanation, and commit to your "
        "final answer before exhausting the budget."
    )


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


def solver_prompt_digest() -> str:
    """A short digest of every solver prompt text (part of the Phase 0 cache key)."""
    texts = [SOLVER_SYSTEMS[key] for key in sorted(SOLVER_SYSTEMS)]
    texts.append(render_resolve_banner(0))
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]


def solver_system(domain: str | None) -> str:
    """The solver's system message for a triage domain (generic for unknown domains)."""
    return SOLVER_SYSTEMS.get(domain or "", SOLVER_SYSTEMS[""])
