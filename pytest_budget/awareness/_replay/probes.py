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

from pytest_budget.awareness._prompts import estimator_system
from pytest_budget.awareness._replay.dialogue import (
    NO_TEXT,
    WAREHOUSE_DIMS,
    WAREHOUSE_ESTIMATION_SYSTEM,
    ProbeTurn,
    actor_system_prompt,
    answer_format,
    fallback_system,
    probe_turns,
    signed_number,
    token_question,
    token_question_text,
    turn_tokens,
    turn_usage,
    warehouse_step,
    warehouse_steps,
    whole,
)
from pytest_budget.awareness._replay.rollouts import Rollout, Turn

__all__ = [
    "Probe",
    "ProbeTruth",
    "answer_format",
    "estimator_messages",
    "estimator_prompt_tokens",
    "estimator_question",
    "make_probes",
    "probe_prompt",
    "warehouse_question",
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

    What BAGEN's estimator sees (:mod:`pytest_budget.awareness._replay.dialogue`): ``messages`` is
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


# What an LLM estimator is sent for a probe, as BAGEN's estimator is shown it.  The chat's
# rules and building blocks are in pytest_budget.awareness._replay.dialogue (its module docstring);
# the functions that take a Probe live here, beside the type, so dialogue never needs it.


def warehouse_question(probe: Probe) -> str:
    """The last user message for Warehouse (BAGEN §5's content and order)."""
    history = warehouse_steps(probe.prefix)
    return _warehouse_question(probe, "; ".join(history) if history else "none yet")


def _warehouse_question(probe: Probe, history: str) -> str:
    dims = [d for d in WAREHOUSE_DIMS if d in probe.budget] or list(probe.budget)
    k = probe.k
    weeks = probe.used.get("time_weeks", 0.0)
    last = probe.prefix[-1].info if probe.prefix else {}
    cash = signed_number(last.get("cash"))  # negative cash is still cash
    target = signed_number(probe.task.get("target_cash_usd"))
    cash_text = "unknown" if cash is None else f"{whole(cash)} USD"
    target_text = "not given" if target is None else f"{whole(target)} USD"
    return "\n".join(
        [
            f"Weeks completed: {whole(weeks)}. Turns completed: {k}.",
            "Usage so far: "
            + ", ".join(f"{d} {whole(probe.used.get(d, 0.0))}" for d in dims)
            + ".",
            f"Cash now: {cash_text}. Final cash needed to count as finished: {target_text}.",
            "Usage per step: " + history + ".",
            "Budgets: " + ", ".join(f"{d} <= {whole(probe.budget[d])}" for d in dims) + ".",
            "",
            "Can the agent end with at least the target cash while staying within all three "
            "budgets? If yes, give for each budget an interval for how much more it will use "
            "from its next step to the end. If not, answer impossible. Getting the "
            "feasibility right matters more than narrow intervals.",
            "",
            "Keep any reasoning short, one to three sentences. " + answer_format(tuple(dims)),
        ]
    )


def _is_warehouse(probe: Probe) -> bool:
    return set(WAREHOUSE_DIMS) <= set(probe.budget)


def estimator_question(probe: Probe) -> str:
    """The last user message of :func:`estimator_messages`.

    Token budgets get :func:`token_question`, Warehouse :func:`warehouse_question`; any other
    budget (a user's own dimensions) gets the flattened :attr:`Probe.text`.
    """
    if _is_warehouse(probe):
        return warehouse_question(probe)
    if tuple(probe.budget) == ("tokens",):
        return token_question(probe.turns, probe.budget["tokens"])
    return probe.text


def estimator_messages(probe: Probe) -> list[dict[str, str]]:
    """The chat an LLM estimator is sent for ``probe`` (module docstring).

    A budget that is neither ``tokens`` nor Warehouse's three (a user's own dimensions)
    keeps the flattened form: the estimator's system prompt and :attr:`Probe.text`, which
    already lists the turns.
    """
    if _is_warehouse(probe):
        system = WAREHOUSE_ESTIMATION_SYSTEM
    elif tuple(probe.budget) == ("tokens",):
        system = actor_system_prompt(probe.env, probe.actor_system_prompt) or fallback_system(
            probe.env
        )
    else:
        return [
            {"role": "system", "content": estimator_system(tuple(probe.budget))},
            {"role": "user", "content": probe.text},
        ]
    messages = [{"role": "system", "content": system}]
    for turn in probe.prefix:
        messages.append({"role": "user", "content": turn.observation or NO_TEXT})
        messages.append({"role": "assistant", "content": turn.action or NO_TEXT})
    messages.append({"role": "user", "content": probe.question})
    return messages


def estimator_prompt_tokens(probes: Sequence[Probe]) -> list[int]:
    """Reference tokens of :func:`estimator_messages` for each probe, without building them.

    Building every probe's chat re-renders all its earlier turns (quadratic in the turns);
    the dry run only needs the count.  The reference tokenizer's tokens never cross a space
    or a punctuation mark, and every join below is at one (``"; "`` between items, ``": "``
    and ``"."`` around the list), so a question's count is its template's count (list left
    empty) plus the items' counts plus one ``;`` per separator; the replayed turns are
    separate messages, counted separately anyway.  Per-turn counts are summed along each
    prefix once (``nodes``: a prefix is its last turn and the prefix before it).
    """
    from pytest_budget._core.tokens import count_tokens

    nodes: dict[tuple[int, int], int] = {}
    # Per node: (turn messages' tokens, question items' tokens, elapsed weeks) so far.
    sums: list[tuple[int, int, float]] = [(0, 0, 0.0)]
    out = []
    for probe in probes:
        warehouse = _is_warehouse(probe)
        if not probe.prefix or not (warehouse or tuple(probe.budget) == ("tokens",)):
            out.append(sum(count_tokens(m["content"]) for m in estimator_messages(probe)))
            continue
        node = 0
        for index, turn in enumerate(probe.prefix, start=1):
            key = (node, id(turn))
            if key not in nodes:
                said, items, elapsed = sums[node]
                said += count_tokens(turn.observation or NO_TEXT)
                said += count_tokens(turn.action or NO_TEXT)
                if warehouse:
                    item, elapsed = warehouse_step(elapsed, turn)
                else:
                    read, wrote = turn_tokens(turn)
                    item = turn_usage(ProbeTurn(index, None, None, turn.usage, read, wrote))
                nodes[key] = len(sums)
                sums.append((said, items + count_tokens(item), elapsed))
            node = nodes[key]
        said, items, _ = sums[node]
        items += len(probe.prefix) - 1  # one ";" per separator
        if warehouse:
            system = WAREHOUSE_ESTIMATION_SYSTEM
            template = _warehouse_question(probe, "")
        else:
            system = actor_system_prompt(probe.env, probe.actor_system_prompt) or (
                fallback_system(probe.env)
            )
            template = token_question_text(len(probe.prefix), "", probe.budget["tokens"])
        out.append(count_tokens(system) + said + count_tokens(template) + items)
    return out
