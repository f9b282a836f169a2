"""The online actor's turn: what it is shown, what it may answer, and the token split.

Online budget awareness (issue 24): the agent under test acts in the environment *and*
reports, while it acts, how much budget it still needs, and may give up.  Every turn the
harness calls the ``online_actor`` role as ``act(observation, used, cap)``:

* ``observation`` is an :class:`OnlineObservation`: the environment's own prompt
  (``env_text``, exactly what an actor reads in replay mode) followed by a *budget block*
  (``budget_text``: usage so far, the cap, what to estimate and how to stop); ``text`` is
  the two joined, the prompt a model reads.  ``probe`` is the run so far as an awareness
  :class:`~pytest_budget.awareness._replay.probes.Probe` (programmatic agents may hand it to an
  estimator).  In the *replay* pass (the same agent acting with no budget shown, for the
  comparison) ``cap`` is ``None``, ``budget_text`` is empty and nothing but the action is
  read.
* ``used`` and ``cap`` map each budget dimension to a number (``{"tokens": 812.0}``; the
  three Warehouse budgets there).

The reply may be

* text: the action in the environment's own format, plus ``<estimate>[low, high]
  </estimate>`` or ``<estimate>impossible</estimate>`` (Warehouse:
  ``<estimate>time_weeks:[l, h], warehouse_item_weeks:[l, h], cumulative_cost_usd:[l, h]
  </estimate>``) and optionally ``<stop/>`` (or ``<stop>reason</stop>``) to give up;
* a mapping or an :class:`OnlineReply` with ``action`` (text, or a Warehouse action object),
  ``estimate`` (text, an Interval/IntervalMap/Impossible, or None), ``stop`` (bool) and
  optionally ``usage`` (``input_tokens``/``output_tokens`` of the call) and
  ``estimation_usage`` (the estimate's own share of it).

Estimates are read with the awareness suite's answer parser (``--budget-parse``), so an
estimate that cannot be read is ``invalid`` with the parser's reason and the run goes on.
A reply the environment cannot read as an action is the environment's business: it wastes
the turn by the environment's own rules.

Token split (why: BAGEN §3.2 leaves online estimation out because estimation spends tokens
that would be confused with task tokens; here they are kept apart).  *Estimation tokens* are
everything the harness adds for budget awareness: the budget block in the prompt, the
``<estimate>``/``<stop>`` text in the reply, and, in the two-call protocol, the whole
separate estimate call.  *Acting tokens* are what the environment counts for the rest, by
its replay-mode rules, so an online run's acting tokens compare one to one with a replay
rollout's.  When the actor reports provider counts, the estimation share (counted with the
reference tokenizer, at most the reported amount) is taken out of them.

Plain Python: no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_budget._core.replies import safe_repr
from pytest_budget._core.textscan import blocks, count_opens, strip_blocks
from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness._replay.answers import (
    Estimate,
    Impossible,
    Interval,
    IntervalMap,
    Invalid,
    ParsePolicy,
)
from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._replay.rollouts import ActorObservation

__all__ = [
    "PROTOCOLS",
    "OnlineObservation",
    "OnlineReply",
    "ReadReply",
    "budget_block",
    "read_online_reply",
]

#: Protocol names as the report shows them (option values ``single`` and ``two``).
PROTOCOLS: dict[str, str] = {"single": "single-call", "two": "two-call"}
Protocol = Literal["single", "two"]

_STOP_TAGS = ("<stop/>", "<stop />")


@dataclass(frozen=True)
class OnlineObservation(ActorObservation):
    """One online turn (see the module docstring); ``text`` = ``env_text`` + budget block."""

    env_text: str = ""
    budget_text: str = ""
    mode: str = "online"  # "online", or "replay" for the comparison pass
    protocol: str = "single"
    may_stop: bool = True
    used: Mapping[str, float] = field(default_factory=dict)
    cap: Mapping[str, float] | None = None
    probe: Probe | None = None
    #: The estimate read on the previous turn (two-call: the separate call's), or None.
    last_estimate: Estimate | None = None
    task: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OnlineReply:
    """A structured reply: the action, an optional estimate, whether to stop."""

    action: Any = None
    estimate: Any = None
    stop: bool = False
    usage: Mapping[str, Any] | None = None
    estimation_usage: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ReadReply:
    """A reply as the harness reads it: what the environment gets and the token parts."""

    action: Any  # text for the environment's parser, or a Warehouse action object
    acting_text: str  # the reply minus estimate/stop blocks (what acting tokens count)
    estimation_text: str  # the estimate/stop blocks (estimation output tokens)
    estimate: Estimate | None  # None: no estimate given
    stop: bool
    reported_input: float | None = None
    reported_output: float | None = None
    reported_estimation: float | None = None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def budget_block(
    dims: Sequence[str],
    used: Mapping[str, float],
    cap: Mapping[str, float],
    *,
    protocol: str,
    may_stop: bool,
    task: Mapping[str, Any] | None = None,
) -> str:
    """The budget block of an online prompt (our wording; BAGEN's answer format)."""
    status = "; ".join(
        f"{d}: used {_number(used.get(d, 0.0))} of {_number(cap[d])} "
        f"({_number(max(0.0, cap[d] - used.get(d, 0.0)))} left)"
        for d in dims
    )
    lines = [f"Budget so far -- {status}. Going over a cap ends the task as failed."]
    if task:
        lines.append("Goal: " + ", ".join(f"{k} = {v}" for k, v in task.items()) + ".")
    if protocol == "single":
        if len(dims) == 1:
            form = "<estimate>[low, high]</estimate>"
            what = f"how many more {dims[0]} you will need, this reply included, to finish"
        else:
            form = "<estimate>" + ", ".join(f"{d}:[low, high]" for d in dims) + "</estimate>"
            what = "how much more of each budget you will need to reach the goal"
        lines.append(
            f"Together with your action, estimate {what}: add {form}, or "
            "<estimate>impossible</estimate> if you believe you cannot succeed within the "
            "budget."
        )
    if may_stop:
        lines.append("If you decide to give up, reply <stop/> instead of an action.")
    else:
        lines.append("Giving up is not available on this turn: reply with an action.")
    return "\n".join(lines)


def _count(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _reported(usage: object) -> tuple[float | None, float | None]:
    if not isinstance(usage, Mapping):
        return None, None
    return _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))


def _estimation_count(usage: object) -> float | None:
    if not isinstance(usage, Mapping):
        return None
    total = _count(usage.get("tokens"))
    if total is not None:
        return total
    parts = _reported(usage)
    return None if parts[0] is None or parts[1] is None else parts[0] + parts[1]


def _estimate_text(estimate: object) -> str:
    """How a structured estimate reads as text (for token counting)."""
    if estimate is None:
        return ""
    if isinstance(estimate, str):
        return estimate
    if isinstance(estimate, Impossible):
        return "<estimate>impossible</estimate>"
    if isinstance(estimate, Interval):
        return f"<estimate>[{estimate.lo:g}, {estimate.hi:g}]</estimate>"
    if isinstance(estimate, IntervalMap):
        inner = ", ".join(f"{d}:[{i.lo:g}, {i.hi:g}]" for d, i in estimate.as_dict().items())
        return f"<estimate>{inner}</estimate>"
    return safe_repr(estimate)


def _parse_estimate(raw: object, dims: Sequence[str], policy: ParsePolicy) -> Estimate | None:
    from pytest_budget.awareness._evaluate import parse_answer

    if raw is None:
        return None
    if isinstance(raw, Interval | IntervalMap | Impossible | Invalid):
        return parse_answer(raw, dims, policy)
    if not isinstance(raw, str):
        return Invalid(safe_repr(raw), f"estimate is {type(raw).__name__}, expected text")
    text = raw
    found = next(blocks(text, "estimate"), None)
    if found is not None:
        text = found.content
    elif count_opens(text, "estimate"):
        return Invalid(safe_repr(raw), "unclosed <estimate> tag")
    elif count_opens(text, "answer"):  # already in BAGEN's answer form
        return parse_answer(text, dims, policy)
    # The awareness parser reads BAGEN's answer tag; the estimate's content goes in one.
    try:
        return parse_answer(f"<answer>{text.strip()}</answer>", dims, policy)
    except Exception as exc:  # a hostile text must not crash the run
        return Invalid(safe_repr(raw), f"reading the estimate raised {type(exc).__name__}")


def _read_text(text: str, dims: Sequence[str], policy: ParsePolicy) -> ReadReply:
    estimation_parts: list[str] = []
    estimate: Estimate | None = None
    found = list(blocks(text, "estimate"))
    if found:
        estimate = _parse_estimate(found[0].content, dims, policy)
        if estimate is not None and isinstance(estimate, Invalid):
            estimate = Invalid(found[0].content[:200], f"estimate: {estimate.reason}")
        estimation_parts += [text[b.start : b.end] for b in found]
        acting = strip_blocks(text, "estimate")
    elif count_opens(text, "estimate"):
        estimate = Invalid(text[:200], "estimate: unclosed <estimate> tag")
        acting = text
    else:
        acting = text
    stop = False
    for tag in _STOP_TAGS:
        while tag in acting.lower():
            stop = True
            index = acting.lower().index(tag)
            estimation_parts.append(acting[index : index + len(tag)])
            acting = acting[:index] + acting[index + len(tag) :]
    stop_blocks = list(blocks(acting, "stop"))
    if stop_blocks:
        stop = True
        estimation_parts += [acting[b.start : b.end] for b in stop_blocks]
        acting = strip_blocks(acting, "stop")
    return ReadReply(acting, acting, "".join(estimation_parts), estimate, stop)


def _action_of(action: object) -> tuple[Any, str]:
    """(what the environment gets, its text) for a structured reply's ``action``."""
    if action is None:
        return "", ""
    if isinstance(action, str):
        return action, action
    from pytest_budget.awareness.warehouse import WarehouseAction, format_action

    if isinstance(action, WarehouseAction):
        return action, format_action(action)
    text = safe_repr(action)  # the environment rejects it as a malformed action
    return text, text


def read_online_reply(raw: Any, dims: Sequence[str], policy: ParsePolicy) -> ReadReply:
    """Read any reply form (see the module docstring); never raises on agent output."""
    try:
        return _read_reply(raw, dims, policy)
    except Exception as exc:  # a hostile object (its methods raise): a wasted turn
        reason = f"reading the reply ({type(raw).__name__}) raised {type(exc).__name__}"
        return ReadReply(f"<unreadable reply: {reason}>", "", "", Invalid("", reason), False)


def _read_reply(raw: Any, dims: Sequence[str], policy: ParsePolicy) -> ReadReply:
    usage: object = None
    estimation_usage: object = None
    if isinstance(raw, OnlineReply):
        raw = {
            "action": raw.action,
            "estimate": raw.estimate,
            "stop": raw.stop,
            "usage": raw.usage,
            "estimation_usage": raw.estimation_usage,
        }
    if isinstance(raw, Mapping):
        usage = raw.get("usage")
        estimation_usage = raw.get("estimation_usage")
        if "action" in raw or "estimate" in raw or "stop" in raw:
            action, text = _action_of(raw.get("action"))
            estimate_raw = raw.get("estimate")
            stop = raw.get("stop") is True
            estimation_text = _estimate_text(estimate_raw) + ("<stop/>" if stop else "")
            estimate = _parse_estimate(estimate_raw, dims, policy)
            read = ReadReply(action, text, estimation_text, estimate, stop)
        else:
            body = raw.get("text", raw.get("content", ""))
            read = _read_text(body if isinstance(body, str) else safe_repr(body), dims, policy)
    elif isinstance(raw, str):
        read = _read_text(raw, dims, policy)
    else:
        from pytest_budget.awareness._replay.rollouts import actor_reply

        read = _read_text(actor_reply(raw).text, dims, policy)
    reported_in, reported_out = _reported(usage)
    return ReadReply(
        read.action,
        read.acting_text,
        read.estimation_text,
        read.estimate,
        read.stop,
        reported_in,
        reported_out,
        _estimation_count(estimation_usage),
    )


def split_tokens(read: ReadReply, budget_text: str) -> tuple[float | None, float | None, float]:
    """(acting input, acting output, estimation tokens) of one acting call.

    Acting parts are ``None`` when the actor reported no counts (the environment counts).
    """
    block_in = float(count_tokens(budget_text)) if budget_text else 0.0
    est_out = float(count_tokens(read.estimation_text)) if read.estimation_text else 0.0
    if read.reported_estimation is not None:
        estimation = read.reported_estimation
        if read.reported_input is None or read.reported_output is None:
            return None, None, estimation
        # The agent's own split: take it out of the output first, then the input.
        out_part = min(read.reported_output, estimation)
        in_part = min(read.reported_input, estimation - out_part)
        return read.reported_input - in_part, read.reported_output - out_part, estimation
    if read.reported_input is None or read.reported_output is None:
        return None, None, block_in + est_out
    est_in = min(read.reported_input, block_in)
    est_o = min(read.reported_output, est_out)
    return read.reported_input - est_in, read.reported_output - est_o, est_in + est_o
