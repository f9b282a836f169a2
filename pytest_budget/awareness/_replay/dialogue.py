"""What an estimator is shown, as BAGEN's estimator is shown it (fact sheet §3.4, §3.5, §5).

BAGEN does not flatten a rollout into one prompt: it *replays* the actor's dialogue as chat
messages and appends one user message with the estimation question.  This module holds
the rules and the building blocks of that conversation: the system prompts, the per-turn
token split (``probe.turns``) and the questions' text.  The functions that take a
:class:`~pytest_budget.awareness._replay.probes.Probe` (``estimator_messages``: ``probe.messages``;
``estimator_question``: ``probe.question``; ``estimator_prompt_tokens``) live beside the
type in :mod:`pytest_budget.awareness._replay.probes`, so this module never needs it.  The wording
is ours; the content and its order are BAGEN's.

Token environments (Sokoban, Search, coding-agent logs; any rollout whose budget is
``{"tokens": cap}``)
    1. ``system``: the actor's own system prompt: ``meta["actor_system_prompt"]`` of the
       rollout (imported chat logs carry their first system message there); else, for the
       built-in Sokoban and Search environments, the system prompt the built-in actor
       protocol gives an LLM actor (:func:`pytest_budget.awareness._prompts.actor_system`; the
       reference actors play by the same protocol); else BAGEN's fallback, the estimator's
       own system prompt (:func:`fallback_system`: :data:`ESTIMATION_SYSTEM` naming the
       environment label).
    2. For each completed turn i <= k: ``user`` with what the actor was shown
       (``Turn.observation``) and ``assistant`` with what it wrote (``Turn.action``); a turn
       without logged text shows :data:`NO_TEXT`.
    3. ``user``: the question (:func:`token_question`): turns done; per turn ``input X
       tokens, output Y tokens, total Z tokens`` (``unknown`` where a count was not logged),
       items separated by ``"; "``; the token cap; the four-part task; a worked example; what
       a turn is; the answer format.  As in BAGEN no cumulative sum and no remaining budget
       is given.

Warehouse (budget ``time_weeks``, ``warehouse_item_weeks``, ``cumulative_cost_usd``)
    1. ``system``: a warehouse estimation prompt (:data:`WAREHOUSE_ESTIMATION_SYSTEM`); the
       actor's system prompt is *not* included (BAGEN §5).
    2. The replayed turns as above.
    3. ``user`` (``probes.warehouse_question``), in this order: weeks and turns completed; the
       usage so far of the three budgets; current cash and the target final cash; the
       per-step history ``Day d: time +t weeks, warehouse +w item-weeks, cost +c USD``
       (increments clipped at 0) separated by ``"; "``; the three caps as ``<= cap``; the
       task; the answer format.  Every number is a whole number.

Per-turn token split (:func:`turn_tokens`): *input* is what the turn read for the first
time, excluding history re-sent from earlier turns (§3.5); *output* is what it wrote.
Read, in this order, from the turn's ``info``: ``reported_input_tokens`` /
``reported_output_tokens`` (a provider's counts, input then taken as the turn's usage minus
its output, i.e. net of re-sent history); ``new_input_tokens`` / ``completion_tokens``
(imported chat logs); ``input_tokens`` / ``output_tokens`` when they add up to the turn's
usage; else, when the reference tokenizer's counts of the observation and the reply add up
to the usage (a self-contained observation), those two counts; else unknown.

Plain Python: no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_budget.awareness._prompts import actor_system, env_family
from pytest_budget.awareness._replay.rollouts import Turn

__all__ = [
    "ESTIMATION_SYSTEM",
    "NO_TEXT",
    "WAREHOUSE_DIMS",
    "WAREHOUSE_ESTIMATION_SYSTEM",
    "ProbeTurn",
    "actor_system_prompt",
    "answer_format",
    "fallback_system",
    "probe_turns",
    "signed_number",
    "token_question",
    "token_question_text",
    "turn_tokens",
    "turn_usage",
    "warehouse_step",
    "warehouse_steps",
    "whole",
]

#: Shown for a replayed turn with no logged text (chat APIs refuse empty messages).
NO_TEXT = "(no text was logged for this turn)"

#: BAGEN's fallback when a token rollout carries no actor system prompt (our wording).
ESTIMATION_SYSTEM = (
    "You are watching another agent work through a task turn by turn, and you will be asked "
    "how many more tokens it needs to finish. The conversation below replays what the agent "
    "was shown and what it wrote; the last message asks the question."
)

#: The Warehouse estimator's system prompt (BAGEN §5: not the actor's; our wording).
WAREHOUSE_ESTIMATION_SYSTEM = (
    "You are reviewing a supply-chain agent that runs a warehouse business in two-week steps. "
    "The conversation below replays what the agent was shown and what it decided at each "
    "step. You will be asked whether it can still reach its cash target within three budgets "
    "(elapsed weeks, warehouse item-weeks and operating cost in USD), and if so how much of "
    "each budget it will still use."
)

_BUILT_IN_ACTOR_FAMILIES = ("sokoban", "search")


def fallback_system(env: str) -> str:
    """:data:`ESTIMATION_SYSTEM` naming the environment label (the only context there is)."""
    return f"{ESTIMATION_SYSTEM} The agent works in the environment {env!r}."


WAREHOUSE_DIMS = ("time_weeks", "warehouse_item_weeks", "cumulative_cost_usd")


@dataclass(frozen=True)
class ProbeTurn:
    """One completed turn as the estimator sees it.

    ``index`` counts from 1; ``input_tokens`` is what the turn read for the first time (no
    re-sent history), ``output_tokens`` what it wrote; either is None when it was not logged.
    ``usage`` is the turn's usage per budget dimension (``usage["tokens"]`` = input + output
    for token environments).
    """

    index: int
    observation: str | None
    action: str | None
    usage: Mapping[str, float]
    input_tokens: float | None
    output_tokens: float | None

    @property
    def total_tokens(self) -> float | None:
        value = self.usage.get("tokens")
        return None if value is None else float(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def signed_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def turn_tokens(turn: Turn) -> tuple[float | None, float | None]:
    """``(input, output)`` tokens of one turn by the rules of the module docstring."""
    info = turn.info
    total = _number(turn.usage.get("tokens"))
    reported_out = _number(info.get("reported_output_tokens"))
    if reported_out is not None and _number(info.get("reported_input_tokens")) is not None:
        if total is not None and total >= reported_out:
            return total - reported_out, reported_out
    for read_key, wrote_key in (
        ("new_input_tokens", "completion_tokens"),
        ("input_tokens", "output_tokens"),
    ):
        read, wrote = _number(info.get(read_key)), _number(info.get(wrote_key))
        if read is not None and wrote is not None and (total is None or read + wrote == total):
            return read, wrote
    if total is not None and turn.observation is not None:
        from pytest_budget._core.tokens import count_tokens

        read_count = float(count_tokens(turn.observation))
        wrote_count = float(count_tokens(turn.action or ""))
        if read_count + wrote_count == total:
            return read_count, wrote_count
    return None, None


def probe_turns(prefix: Sequence[Turn]) -> tuple[ProbeTurn, ...]:
    """The completed turns of a probe with their token split."""
    out = []
    for index, turn in enumerate(prefix, start=1):
        read, wrote = turn_tokens(turn)
        out.append(ProbeTurn(index, turn.observation, turn.action, turn.usage, read, wrote))
    return tuple(out)


def actor_system_prompt(env: str, recorded: str | None) -> str | None:
    """The actor's system prompt for a token rollout (None: unknown, use the fallback).

    ``recorded`` is the rollout's ``meta["actor_system_prompt"]`` when it has one.
    """
    if isinstance(recorded, str) and recorded.strip():
        return recorded
    if env_family(env) in _BUILT_IN_ACTOR_FAMILIES:
        return actor_system(env)
    return None


def whole(value: float) -> str:
    return str(round(value))


def _count(value: float | None) -> str:
    return "unknown" if value is None else whole(value)


def answer_format(dimensions: Sequence[str]) -> str:
    """The answer instructions for one or several budget dimensions."""
    if len(dimensions) == 1:
        return (
            "Answer with the remaining amount as an interval, "
            "<answer>[low, high]</answer>, for example <answer>[300, 650]</answer>; or, if "
            "you believe the agent cannot succeed within the budget, <answer>impossible"
            "</answer>. You may reason first inside <think>...</think>; write nothing after "
            "the answer tag."
        )
    example = ", ".join(f"{dim}:[low, high]" for dim in dimensions)
    return (
        "Answer with one interval per budget, exactly in this form: "
        f"<answer>{example}</answer>; or, if you believe the target cannot be reached within "
        "all budgets, <answer>impossible</answer>. You may reason first inside "
        "<think>...</think>; write nothing after the answer tag."
    )


def turn_usage(t: ProbeTurn) -> str:
    return (
        f"Turn {t.index}: input {_count(t.input_tokens)} tokens, output "
        f"{_count(t.output_tokens)} tokens, total {_count(t.total_tokens)} tokens"
    )


def token_question(turns: Sequence[ProbeTurn], cap: float) -> str:
    """The last user message for a token budget (BAGEN §3.4's content and order)."""
    return token_question_text(len(turns), "; ".join(turn_usage(t) for t in turns), cap)


def token_question_text(k: int, usage: str, cap: float) -> str:
    return "\n".join(
        [
            f"The agent has completed {k} turn{'s' if k != 1 else ''} so far.",
            "Tokens per turn (input counts only what was new to the agent in that turn, "
            f"not the conversation re-sent with it): {usage}.",
            f"Token budget for the whole task, input and output together: {whole(cap)} tokens.",
            "",
            "Please do the following:",
            "1. Decide whether the agent will finish the task successfully without its "
            "total input plus output going over the budget.",
            "2. If it will, estimate how many more tokens (input plus output) it will use "
            "from its next turn until it is done, as an interval [low, high].",
            "3. If it will not, answer impossible.",
            "4. The finish-or-not judgement matters most; make the interval as narrow as "
            "you can while still containing the true amount.",
            "",
            "Example: if three more turns follow and they read 200, 150 and 120 new tokens "
            "and write 60, 40 and 30, the amount to estimate is 600.",
            "One turn is one message to the agent plus its reply, counted without the "
            "earlier conversation that is sent along with it.",
            "",
            "Keep any reasoning short, a sentence or two. " + answer_format(("tokens",)),
        ]
    )


def _day(weeks: float) -> int:
    return round(weeks * 7)


def warehouse_steps(prefix: Sequence[Turn]) -> list[str]:
    """Warehouse's per-step history items, one per turn of ``prefix``."""
    history = []
    elapsed = 0.0
    for turn in prefix:
        item, elapsed = warehouse_step(elapsed, turn)
        history.append(item)
    return history


def warehouse_step(elapsed: float, turn: Turn) -> tuple[str, float]:
    """One history item of Warehouse's question and the weeks elapsed after its step."""
    step = {d: max(0.0, float(turn.usage.get(d, 0.0))) for d in WAREHOUSE_DIMS}
    elapsed += step["time_weeks"]
    item = (
        f"Day {_day(elapsed)}: time +{whole(step['time_weeks'])} weeks, warehouse "
        f"+{whole(step['warehouse_item_weeks'])} item-weeks, cost "
        f"+{whole(step['cumulative_cost_usd'])} USD"
    )
    return item, elapsed
