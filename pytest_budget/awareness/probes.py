"""Rollout-replay: one probe per non-terminal turn of a logged rollout (BAGEN §3).

For a rollout of T turns, probe k (k = 1..T-1) shows the estimator the first k turns and
the cumulative usage C_k, never the later turns, T, the outcome or R_k.  Its ground truth
(:class:`ProbeTruth`) stays with the harness: R_k = C_T - C_k per dimension, and the rollout
is *feasible* iff it succeeded and C_T <= cap in every dimension.

A one-turn rollout yields no probe (nothing is non-terminal).  Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pytest_budget.awareness.dialogue import (
    ProbeTurn,
    answer_format,
    estimator_messages,
    estimator_question,
    probe_turns,
)
from pytest_budget.awareness.rollouts import Rollout, Turn

__all__ = [
    "Probe",
    "ProbeTruth",
    "answer_format",
    "make_probes",
    "probe_prompt",
]

# Environment-specific framing; any other env label gets the generic wording.
_ENV_INTROS: dict[str, str] = {
    "sokoban": (
        "The agent is solving a Sokoban puzzle: it pushes boxes onto targets on a small grid, "
        "issuing up to three moves per turn. Every turn costs tokens (what it read plus what "
        "it wrote). A push into a corner can make the puzzle unsolvable."
    ),
    "warehouse": (
        "The agent is running a warehouse business in two-week steps: it orders stock, "
        "chooses shipping, and manages cash, credit and factoring. It must reach a target "
        "cash balance while three budgets are consumed: elapsed weeks, warehouse item-weeks "
        "of stored inventory, and cumulative operating cost in USD."
    ),
}

# Long observations are shortened in the prompt so a long prefix stays readable; the cut is
# marked so the estimator knows text is missing.
_MAX_FIELD_CHARS = 4000


@dataclass(frozen=True)
class Probe:
    """What an estimator is asked at turn ``k`` of a rollout (nothing from the future).

    ``used`` = C_k and ``budget`` are per dimension; ``prefix`` holds turns 1..k;
    ``text`` is the whole probe flattened into one prompt (answer format included).

    What BAGEN's estimator sees (:mod:`pytest_budget.awareness.dialogue`): ``messages`` is
    the chat an LLM estimator is sent (the actor's system prompt, the replayed turns, then
    ``question``); ``turns`` gives each completed turn with its fresh ``input_tokens`` (no
    re-sent history) and ``output_tokens``.  ``actor_system_prompt`` is the one the rollout
    recorded (``meta["actor_system_prompt"]``), if any.
    """

    rollout_id: str
    env: str
    k: int
    used: Mapping[str, float]
    budget: Mapping[str, float]
    prefix: tuple[Turn, ...]
    task: Mapping[str, Any] = field(default_factory=dict)
    actor_system_prompt: str | None = None

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.budget)

    @cached_property
    def text(self) -> str:
        # Built on first use: programmatic estimators never pay for the prompt.
        return probe_prompt(self.env, self.prefix, self.used, self.budget, self.task)

    @cached_property
    def turns(self) -> tuple[ProbeTurn, ...]:
        """Turns 1..k with their per-turn input/output token split."""
        return probe_turns(self.prefix)

    @cached_property
    def question(self) -> str:
        """The estimation question: the last message of :attr:`messages`."""
        return estimator_question(self)

    @cached_property
    def messages(self) -> tuple[Mapping[str, str], ...]:
        """The chat an LLM estimator is sent: ``({"role": ..., "content": ...}, ...)``."""
        return tuple(estimator_messages(self))


@dataclass(frozen=True)
class ProbeTruth:
    """The harness's side of a probe: what actually happened after turn ``k``."""

    T: int
    total: Mapping[str, float]
    remaining: Mapping[str, float]
    success: bool
    feasible: bool


def _clip(text: str) -> str:
    if len(text) <= _MAX_FIELD_CHARS:
        return text
    half = _MAX_FIELD_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"


def _number(value: float) -> str:
    # Plain digits (never 1.5e+06): estimators read these numbers back.
    return str(int(value)) if value == int(value) else f"{value:.2f}".rstrip("0").rstrip(".")


def probe_prompt(
    env: str,
    prefix: Sequence[Turn],
    used: Mapping[str, float],
    budget: Mapping[str, float],
    task: Mapping[str, Any] | None = None,
) -> str:
    """The estimator prompt for a prefix (our wording; BAGEN's answer format)."""
    k = len(prefix)
    lines = [
        _ENV_INTROS.get(
            env.split("-")[0], f"The agent is working on a task in environment {env!r}."
        ),
        "",
        "Budget caps: " + ", ".join(f"{d} = {_number(c)}" for d, c in budget.items()) + ".",
    ]
    if task:
        lines.append("Task: " + ", ".join(f"{key} = {value}" for key, value in task.items()) + ".")
    lines += ["", f"Here are the agent's first {k} turn(s):"]
    for index, turn in enumerate(prefix, start=1):
        usage = ", ".join(f"{d} {_number(turn.usage.get(d, 0.0))}" for d in budget)
        lines.append(f"--- turn {index} (usage: {usage}) ---")
        if turn.observation:
            lines.append("shown: " + _clip(turn.observation))
        if turn.action:
            lines.append("did: " + _clip(turn.action))
    lines += [
        "",
        "Used so far: " + ", ".join(f"{d} {_number(used[d])}" for d in budget) + ".",
        "How much more will the agent use from the next turn until it finishes the task "
        "successfully?",
        answer_format(tuple(budget)),
    ]
    return "\n".join(lines)


def make_probes(rollout: Rollout) -> list[tuple[Probe, ProbeTruth]]:
    """Probes k = 1..T-1 of ``rollout`` with their ground truth, in turn order."""
    # Built once per rollout (it is frozen): every cell of an environment, its repeats and
    # its test ask for the same probes (and a shared probe builds its prompt text once).
    made: tuple[tuple[Probe, ProbeTruth], ...] | None = rollout.__dict__.get(_MADE)
    if made is None:
        made = tuple(_make_probes(rollout))
        rollout.__dict__[_MADE] = made  # as functools.cached_property stores its value
    return list(made)


_MADE = "_pytest_budget_probes"


def _make_probes(rollout: Rollout) -> list[tuple[Probe, ProbeTruth]]:
    cumulative = rollout.cumulative()
    total = rollout.total()
    feasible = rollout.feasible
    task = rollout.meta.get("task") if isinstance(rollout.meta.get("task"), Mapping) else None
    system = rollout.meta.get("actor_system_prompt")
    out = []
    for k in range(1, rollout.T):
        used = cumulative[k - 1]
        prefix = rollout.turns[:k]
        probe = Probe(
            rollout.id,
            rollout.env,
            k,
            used,
            dict(rollout.budget),
            prefix,
            dict(task or {}),
            system if isinstance(system, str) else None,
        )
        truth = ProbeTruth(
            rollout.T,
            total,
            {dim: total[dim] - used[dim] for dim in rollout.budget},
            rollout.success,
            feasible,
        )
        out.append((probe, truth))
    return out
