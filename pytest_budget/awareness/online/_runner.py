"""One online episode, turn by turn, under a hard cap; and the replay pass beside it.

Per turn (online mode):

1. The actor is called ``act(observation, used, cap)`` (:mod:`.protocol`).
2. The reply is read: action, estimate (single-call), stop.  Its tokens are split into
   acting and estimation tokens.  The turn *charges* its acting tokens (``charge="acting"``,
   the default) or both (``charge="both"``).
3. Token environments: a turn whose charge would take the run over the cap is not executed
   and ends the run as failed (``cap``), as BAGEN ends an episode at its token cap.
   Warehouse: the step runs and a budget past its cap ends the run as failed.
4. A reply with ``<stop/>`` ends the run as stopped (not a success); nothing in it is
   executed.  To *measure* what stopping bought, the same agent then goes on from that
   state in replay mode (no budget shown, ``cap=None``, only the action read: the
   *continuation*), under the same hard cap, until the episode ends or the cap stops it: a
   continuation that succeeds is a success lost to stopping, one that fails is a failed
   run whose remaining tokens were saved.  (Replay mode, not "stopping unavailable": an
   agent that keeps asking to stop would otherwise never act, and every stop would look
   like a saving.)
5. Two-call protocol: after an executed action that did not end the episode, the agent's
   ``estimate(probe)`` is called separately (a
   :class:`~pytest_budget.awareness._replay.probes.Probe`
   of the run so far); its tokens are estimation tokens.

An estimate is scored as a probe at ``j`` completed turns (single-call: the estimate sent
with turn ``j + 1``'s action; two-call: the call after turn ``j``), against the realized
remaining charge ``C_T - C_j`` and the run's outcome (a stopped run: its continuation's),
exactly the replay probe's definition.  Probes after the final turn of a run that ended on
its own are not scored (nothing remains), as in BAGEN.

Replay mode runs the same episode with ``cap=None`` shown to the actor, no budget block and
no estimates or stops read: the rollout BAGEN's replay protocol would log at that cap.

Plain Python and anyio: no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from pytest_budget._core.roles import AgentError, InvalidOutput, call_role
from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness._replay.answers import Estimate, Impossible, Invalid, ParsePolicy
from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._replay.rollouts import Rollout, Turn
from pytest_budget.awareness.online._protocol import (
    OnlineObservation,
    ReadReply,
    budget_block,
    read_online_reply,
    split_tokens,
)

__all__ = ["EpisodeTurn", "OnlineRun", "run_episode", "run_to_rollout"]

CHARGES = ("acting", "both")


@dataclass
class EpisodeTurn:
    """One turn of an online run (``phase``: ``run`` or ``continuation``)."""

    number: int
    phase: str
    acting_tokens: float
    estimation_tokens: float
    usage: dict[str, float]  # charged usage of the turn in the budget dimensions
    executed: bool
    observation: str
    action: str
    info: dict[str, Any] = field(default_factory=dict)
    estimate: Estimate | None = None  # single-call or two-call estimate read this turn
    estimate_k: int | None = None  # completed turns the estimate is about
    stop: bool = False


@dataclass
class OnlineRun:
    """A finished episode: turns, outcome, and the measured continuation after a stop."""

    rollout_id: str
    env: str
    mode: str
    protocol: str
    charge: str
    cap: dict[str, float]
    turns: list[EpisodeTurn]
    success: bool
    end_reason: str
    stopped_at: int | None = None  # turn number of the stop reply
    continuation_success: bool | None = None
    continuation_end: str | None = None
    task: dict[str, Any] = field(default_factory=dict)
    agent_error: str | None = None

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.cap)

    def phase_turns(self, phase: str) -> list[EpisodeTurn]:
        return [t for t in self.turns if t.phase == phase]

    def acting_tokens(self, phase: str = "run") -> float:
        return sum(t.acting_tokens for t in self.phase_turns(phase))

    def estimation_tokens(self, phase: str = "run") -> float:
        return sum(t.estimation_tokens for t in self.phase_turns(phase))

    @property
    def would_succeed(self) -> bool:
        """The outcome without stopping: the continuation's for a stopped run."""
        if self.stopped_at is not None:
            return bool(self.continuation_success)
        return self.success

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.rollout_id,
            "success": self.success,
            "end": self.end_reason,
            "turns": len(self.phase_turns("run")),
            "acting_tokens": self.acting_tokens(),
            "estimation_tokens": self.estimation_tokens(),
        }
        if self.stopped_at is not None:
            out["stopped_at"] = self.stopped_at
            out["continuation_success"] = self.continuation_success
            out["continuation_acting_tokens"] = self.acting_tokens("continuation")
        if self.agent_error:
            out["agent_error"] = self.agent_error
        return out


def _charged(acting: float, estimation: float, charge: str) -> float:
    return acting + estimation if charge == "both" else acting


def _probe(
    session: Any, turns: Sequence[EpisodeTurn], used: Mapping[str, float], cap: Mapping[str, float]
) -> Probe:
    prefix = tuple(
        Turn(dict(t.usage), t.observation, t.action, t.info) for t in turns if t.executed
    )
    return Probe(
        session.rollout_id,
        _env_label(session),
        len(prefix),
        dict(used),
        dict(cap),
        prefix,
        dict(session.task),
    )


def _env_label(session: Any) -> str:
    preset = getattr(session, "preset", None)
    name = getattr(preset, "name", None) if preset is not None else None
    return str(name or session.env)


async def _estimate_call(
    agent: Any, probe: Probe, dims: Sequence[str], policy: ParsePolicy, limiter: Any
) -> tuple[Estimate, float]:
    """Two-call protocol: the separate estimate call and its (estimation) tokens."""
    from pytest_budget.awareness._evaluate import parse_answer

    if not callable(getattr(agent, "estimate", None)):
        return Invalid("", "two-call protocol: the agent has no estimate(probe) method"), 0.0
    try:
        raw = await call_role(agent, "online_estimator", probe, limiter=limiter)
    except InvalidOutput as exc:  # it answered (the prompt was read), with nothing usable
        return Invalid(exc.preview, exc.reason), float(count_tokens(probe.text))
    except AgentError as exc:  # it raised: what it spent is unknown, nothing is charged
        return Invalid("", f"estimate call failed: {exc.reason}"), 0.0
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    text = raw.get("text", "") if isinstance(raw, Mapping) else raw
    tokens: float | None = None
    if isinstance(usage, Mapping):
        parts = [usage.get("input_tokens"), usage.get("output_tokens")]
        numbers = [p for p in parts if isinstance(p, int | float) and not isinstance(p, bool)]
        if len(numbers) == len(parts):
            tokens = float(sum(numbers))
    try:
        estimate = parse_answer(text, dims, policy)
    except Exception as exc:
        estimate = Invalid(str(text)[:200], f"reading the estimate raised {type(exc).__name__}")
    if tokens is None:
        body = text if isinstance(text, str) else str(estimate)
        tokens = float(count_tokens(probe.text) + count_tokens(body))
    return estimate, tokens


async def run_episode(
    session: Any,
    agent: Any,
    *,
    cap: Mapping[str, float],
    mode: str = "online",
    protocol: str = "single",
    charge: str = "acting",
    policy: ParsePolicy = "bagen",
    limiter: anyio.CapacityLimiter | None = None,
) -> OnlineRun:
    """Play one episode (see the module docstring); an agent error ends it as failed."""
    dims = tuple(cap)
    token_env = not session.external
    used = dict.fromkeys(dims, 0.0)
    turns: list[EpisodeTurn] = []
    run = OnlineRun(
        session.rollout_id, _env_label(session), mode, protocol, charge, dict(cap), turns,
        False, "max_turns", task=dict(session.task),
    )  # fmt: skip
    phase = "run"
    last_estimate: Estimate | None = None
    number = 1
    while number <= session.max_turns:
        # The continuation after a stop is the agent acting on in replay mode (no budget
        # shown, nothing but the action read): what it does when it does not watch its budget.
        online = mode == "online" and phase == "run"
        seen = _observation(session, number, online, protocol, used, cap, turns, last_estimate)
        raw, run.agent_error = await _act(agent, seen, limiter)
        if run.agent_error is not None:
            _end(run, phase, "agent_error")
            break
        read, turn = _read_turn(session, raw, seen, dims, phase, policy, turns)
        if turn.estimate is not None:
            last_estimate = turn.estimate
        charge_now = _charged(turn.acting_tokens, turn.estimation_tokens, charge)
        if token_env:
            turn.usage = {dims[0]: charge_now}
            if used[dims[0]] + charge_now > cap[dims[0]]:
                turns.append(turn)
                _end(run, phase, "cap")
                break
        if read.stop and online:
            turn.stop = True
            turns.append(turn)  # its tokens are the run's; the continuation starts before it
            run.stopped_at, run.end_reason, run.success = number, "stopped", False
            phase = "continuation"
            continue  # the same turn again, stopping unavailable: the measured continuation
        step = await session.step(read.action, number)
        turn.executed, turn.info = True, {**turn.info, **step.info}
        if not token_env:
            turn.usage = dict(step.usage)
        for dim in dims:
            used[dim] += turn.usage.get(dim, 0.0)
        turns.append(turn)
        if not token_env and any(used[d] > cap[d] for d in dims):
            _end(run, phase, "cap")
            break
        if step.done:
            _end(run, phase, "done", session.success())
            break
        if online and protocol == "two":
            probe = _probe(session, turns, used, cap)
            estimate, tokens = await _estimate_call(agent, probe, dims, policy, limiter)
            turn.estimate, turn.estimate_k = estimate, probe.k
            turn.estimation_tokens += tokens  # the act call's budget block, plus this call
            last_estimate = estimate
            if charge == "both" and token_env:
                turn.usage[dims[0]] += tokens
                used[dims[0]] += tokens
                if used[dims[0]] > cap[dims[0]]:
                    _end(run, phase, "cap")
                    break
        number += 1
    else:
        _end(run, phase, "max_turns")
    return run


async def _act(
    agent: Any, seen: OnlineObservation, limiter: anyio.CapacityLimiter | None
) -> tuple[Any, str | None]:
    """The actor's reply (an unusable one stands as an invalid reply), or the reason its
    call failed."""
    try:
        raw = await call_role(
            agent,
            "online_actor",
            seen,
            dict(seen.used),
            dict(seen.cap) if seen.cap is not None else None,
            limiter=limiter,
        )
    except InvalidOutput as exc:
        return f"<invalid output: {exc.reason}>", None
    except AgentError as exc:
        return None, exc.reason
    return raw, None


def _observation(
    session: Any,
    number: int,
    online: bool,
    protocol: str,
    used: dict[str, float],
    cap: Mapping[str, float],
    turns: list[EpisodeTurn],
    last_estimate: Estimate | None,
) -> OnlineObservation:
    """What the actor sees on turn ``number``: the environment's text, and online (where it
    may stop) the budget block and the probe."""
    env_text, state = session.prompt(number)
    dims = tuple(cap)
    budget_text = (
        budget_block(dims, used, cap, protocol=protocol, may_stop=online, task=session.task)
        if online
        else ""
    )
    text = f"{env_text}\n\n{budget_text}" if budget_text else env_text
    return OnlineObservation(
        session.env,
        session.rollout_id,
        number,
        text,
        state,
        env_text=env_text,
        budget_text=budget_text,
        mode="online" if online else "replay",
        protocol=protocol,
        may_stop=online,
        used=dict(used),
        cap=dict(cap) if online else None,
        probe=_probe(session, turns, used, cap) if online else None,
        last_estimate=last_estimate,
        task=dict(session.task),
    )


def _read_turn(
    session: Any,
    raw: Any,
    seen: OnlineObservation,
    dims: tuple[str, ...],
    phase: str,
    policy: ParsePolicy,
    turns: list[EpisodeTurn],
) -> tuple[ReadReply, EpisodeTurn]:
    """The actor's reply read (in replay, the action only) and the turn it makes, with its
    acting and estimation tokens and, single-call online, its estimate."""
    online = seen.mode == "online"
    read: ReadReply = read_online_reply(raw, dims, policy)
    if not online:  # the replay pass reads the action only
        read = ReadReply(
            read.action,
            read.acting_text,
            "",
            None,
            False,
            read.reported_input,
            read.reported_output,
        )
    acting_in, acting_out, estimation = split_tokens(read, seen.budget_text)
    reported = None if acting_in is None or acting_out is None else (acting_in, acting_out)
    acting, info = session.acting_tokens(seen.env_text, read.acting_text, reported)
    turn = EpisodeTurn(
        seen.turn, phase, acting, estimation, {}, False, seen.env_text, read.acting_text, info
    )
    if online and seen.protocol == "single" and read.estimate is not None:
        turn.estimate, turn.estimate_k = (
            read.estimate,
            len([t for t in turns if t.executed and t.phase == "run"]),
        )
    return read, turn


def _end(run: OnlineRun, phase: str, reason: str, success: bool = False) -> None:
    if phase == "run":
        run.end_reason, run.success = reason, success
    else:
        run.continuation_end, run.continuation_success = reason, success


def run_to_rollout(run: OnlineRun) -> Rollout:
    """A replay-pass run as a logged :class:`Rollout` (executed turns, acting usage)."""
    turns = tuple(
        Turn(dict(t.usage), t.observation, t.action, t.info)
        for t in run.turns
        if t.executed and t.phase == "run"
    )
    if not turns:  # a rollout needs a turn: the unexecuted one, for the record
        first = run.turns[0] if run.turns else None
        usage = dict(first.usage) if first else dict.fromkeys(run.cap, 0.0)
        turns = (Turn({d: usage.get(d, 0.0) for d in run.cap}, None, None, {}),)
    meta = {"end_reason": run.end_reason, "online_mode": run.mode}
    return Rollout(run.rollout_id, run.env, dict(run.cap), run.success, turns, meta)


def is_impossible(estimate: Estimate | None) -> bool:
    return isinstance(estimate, Impossible)
