"""The planning suite's prompts: CostBench's system message content in our own words (fact
sheet §4.2) and the user message, which is the query's text as CostBench sends it."""

from __future__ import annotations

import functools

from pytest_budget.planning._blocking import MAX_TOOL_STEPS
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._tools import atomic_chain, goal_type, task_label

__all__ = ["example_paths", "system_prompt", "user_prompt"]

_REFINEMENT_DIMENSIONS = (
    "availability and seasonality",
    "transportation convenience",
    "user ratings and reviews",
    "policies and regulations",
    "cost efficiency",
)


def example_paths(n: int) -> list[list[int]]:
    """Segment sizes of every way to cover ``n`` letter tools with contiguous tools other
    than the full-length one, in the prompt example's order: more segments first, then the
    earlier first multi-letter segment, then the sizes lexicographically."""

    def compositions(total: int) -> list[list[int]]:
        if total == 0:
            return [[]]
        return [[k, *rest] for k in range(1, total + 1) for rest in compositions(total - k)]

    def first_multi(parts: list[int]) -> int:
        return next((i for i, size in enumerate(parts) if size > 1), len(parts))

    found = [parts for parts in compositions(n) if parts != [n]]
    return sorted(found, key=lambda parts: (-len(parts), first_multi(parts), parts))


@functools.cache  # a pure function of the level: built once, not once per episode
def _example(refinement_level: int) -> str:
    n = refinement_level + 3
    letters = [chr(ord("A") + i) for i in range(n)]
    composites = ["".join(letters[i : i + k]) for k in range(2, n) for i in range(n - k + 1)]
    lines = [
        f"Example (abstract): say the atomic tools are {', '.join(letters)} and must run in "
        "that order, and the composite tools "
        f"{', '.join(composites)} each run the letters they name in one call. Tool X costs "
        "Cost_X. The possible paths are:"
    ]
    for number, parts in enumerate(example_paths(n), start=1):
        tools, start = [], 0
        for size in parts:
            tools.append("".join(letters[start : start + size]))
            start += size
        total = " + ".join(f"Cost_{t}" for t in tools)
        lines.append(f"<path> {number}. {' -> '.join(tools)}: total {total} </path>")
    lines.append("Work out each total from the listed costs and take the cheapest path.")
    return "\n".join(lines)


def system_prompt(task: str, refinement_level: int = 2, max_steps: int = MAX_TOOL_STEPS) -> str:
    """The system message: CostBench's ``QUERY_INSTRUCTION`` content in our own words
    (fact sheet §4.2: role, task and stages, tools and types, composite tools, the atomic
    sequence, workflow, rules, and the abstract example of every path)."""
    s = task_label(task)
    goal = goal_type(task)
    stages = (
        "preference decision, candidate search, refinement and final recommendation"
        if refinement_level > 0
        else "preference decision, candidate search and final recommendation"
    )
    given = [f"{s}Category", f"{s}Tier", f"{s}Style", f"{s}FeaturePackage"]
    if task != "location":
        given.append("LocationPreference")
    given.append("TimeInfo")
    chain = atomic_chain(task, refinement_level)
    parts = [
        f"You are an assistant that plans {task}-related travel schedules for a user.",
        "",
        f"Task: your only objective is to obtain the goal type {goal}, written as "
        f"<{s}Candidate{{Candidate_ID}}>, along the path with the lowest total cost. The task "
        f"has {4 if refinement_level > 0 else 3} stages: {stages}.",
    ]
    if refinement_level > 0:
        dims = "; ".join(_REFINEMENT_DIMENSIONS[:refinement_level])
        parts.append(
            f"Refinement applies these {refinement_level} filters, in this fixed order: {dims}."
        )
    parts += [
        "",
        "Tools: each tool's cost is in its description. A tool's input types are its "
        "parameter names and its output type is stated in its description; tools depend on "
        f"each other through these types. {', '.join(given)} come from the user's query; "
        "every other type can only be obtained as a tool's output.",
        "Atomic tools do one step; a composite tool runs several atomic tools (listed in its "
        "description) as one call, and may cost more or less than the sum of its parts.",
        "The basic atomic sequence is: "
        + ", ".join(t.name for t in chain)
        + ". Composite tools can replace parts of it where that is cheaper; compare all the "
        "equivalent paths.",
        "",
        "Workflow: 1. explain your plan, listing every candidate path with its summed cost; "
        "2. call the tool directly, without writing the call out; 3. at every step check "
        "whether something changed (costs, availability) and adapt.",
        "",
        "Rules: only the total cost matters; on a tie, use fewer calls. Call one tool per "
        "step: only the first call of a turn is executed. Use the ids you are given exactly. "
        f"Once you hold the candidate id, stop calling tools and reply "
        f"<answer> <{s}Candidate{{Candidate_ID}}> </answer>, which ends the conversation. "
        f"Braces mark placeholders. You have at most {max_steps} turns.",
        "",
        _example(refinement_level),
    ]
    return "\n".join(parts)


def user_prompt(query: Query) -> str:
    """The first user message: the query's ``query.input``, exactly as CostBench sends it."""
    return query.text
