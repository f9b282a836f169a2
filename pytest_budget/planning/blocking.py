"""CostBench blocking events, their schedule, and the segmented ground truth.

Four modes (CostBench §3.2, App. B.4-B.6; DESIGN.md section 5.3), ``N`` blocks of one mode per
episode with ``N`` in 1..3:

* ``ban_tool`` - the call the agent makes at the trigger step fails with an ``[ERROR]``, is
  still charged, and its tool is banned from then on (it stays in the tool list, and every
  later call of it fails and is charged the same way).
* ``preference_change`` - a new user turn brings other preferences for the same task; the
  environment state resets (ids issued so far stop being valid).
* ``cost_change`` - every cost is regenerated from a new global seed (implicit: no message).
* ``remove_tools`` - the composites of one chosen length leave the tool list (implicit); each
  such event replaces the previous removal, atomic tools always stay.

**Schedule.**  Steps are tool calls numbered from 1.  Block ``i`` (counted from 0, i.e. the
number of blocks already resolved) of ``N`` is due at ``trigger_step(s, L, i, N) = s +
max(1, L // (N - i + 1))`` where ``s`` is the step at which the previous block was resolved
(0 at the start) and ``L`` the length of the optimal plan from the state right after it; so the
blocks spread evenly over the remaining optimal path and at least one call separates them.
A ban lands on the first call at or after the trigger step that names a listed, not yet banned
tool; the other events take effect right after the call at the trigger step.  Triggers are
computed live from the agent's own steps and state (CostBench: "triggered adaptively during
execution in response to the agent's behaviors").

**Dropped blocks.**  A block that cannot matter is dropped and counted, never applied: one due
once the goal is already held, one scheduled past the step limit or never reached because the
episode ended, a removal with no other composite length left to remove, and a ban that would
leave the goal unreachable from the current state (the run-time form of App. B.5's solvability
guarantee; from the initial state it never happens within :func:`ban_tolerance` bans).

**Segments.**  Segment 0 starts at step 1 from the initial state; every applied event opens the
next segment at the following step, re-planned with Dijkstra from the state right after the
event under the then-current tools and costs (App. B.2, eq. 12): every exactly-tied optimal
plan to the goal and the greedy plan with its first step relaxed (eqs. 10-11).  When the next
event closes a segment, the segment keeps only the stretch it covered: the first ``n`` calls of
each plan, ``n`` being the number of successful calls the run made in it (failed calls, the
banned one included, are left out on both sides, so an invalid call does not shift the
alignment), and ``optimal_cost``/``greedy_cost`` become what those calls cost plus, when a ban
closed the segment, the charge of the plan's next call (the one the ban took).  The last
segment keeps its full plans.  Concatenating ``optimal_paths[0]`` over the segments gives the
ground-truth trajectory (eq. 13) and summing ``optimal_cost`` its cost; for a run that follows
the ground truth (the oracle) these are exactly its successful calls and its total cost.
Distinct prefixes of tied plans stay listed; ``optimal_paths[0]`` is always the canonical one.
:func:`simulate_reference` plays the ground truth (or the greedy baseline) offline.

Block parameters come from ``block_seed(seed_q, i)`` (sha256 of the query seed and the block
number, never Python's salted ``hash``), so a run is reproducible in any process.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from dataclasses import dataclass
from typing import Literal

from pytest_budget.planning.costs import derive_seed, query_seed
from pytest_budget.planning.env import TravelEnv, expected_answer, fill_arguments
from pytest_budget.planning.records import Query, Segment
from pytest_budget.planning.tools import DIMENSIONS, PREFERENCE_VALUES

__all__ = [
    "BAN_MESSAGES",
    "BLOCK_MODES",
    "COST_SEED_RANGE",
    "EPISODE_MODES",
    "MAX_BLOCKS",
    "MAX_TOOL_STEPS",
    "BlockEvent",
    "Blocker",
    "ReferenceRun",
    "ban_tolerance",
    "block_seed",
    "check_mode",
    "preference_change_message",
    "simulate_reference",
    "trigger_step",
]

BLOCK_MODES: tuple[str, ...] = ("ban_tool", "preference_change", "cost_change", "remove_tools")
EPISODE_MODES: tuple[str, ...] = ("static", *BLOCK_MODES)
MAX_BLOCKS = 3
MAX_TOOL_STEPS = 20  # CostBench Table 5: maximum tool steps per query
# CostBench's config draws a cost-change seed from [1, 10000).
COST_SEED_RANGE: tuple[int, int] = (1, 10000)

# Our own wording; one is picked per ban from the block seed (CostBench varies its messages).
BAN_MESSAGES: tuple[str, ...] = (
    "this tool is out of service for the rest of the session. Please use another tool.",
    "this tool failed because its provider is down, and it will stay down. Try other tools.",
    "this tool has been withdrawn for maintenance. Continue with the remaining tools.",
    "this tool can no longer be used. Please find another way to finish the task.",
)
_PREFERENCE_OPENERS: tuple[str, ...] = (
    "Change of plans: I want different {task} preferences now.",
    "Sorry, I changed my mind about the {task}.",
    "Actually, please use new {task} preferences instead.",
)


def trigger_step(current_step: int, optimal_length: int, block_index: int, block_count: int) -> int:
    """Step at which block ``block_index`` (0-based) of ``block_count`` is due.

    ``current_step`` is where the previous block was resolved (0 at the start) and
    ``optimal_length`` the optimal plan's length from the state right after it.
    """
    if not 0 <= block_index < block_count:
        raise ValueError(f"block_index must be in 0..{block_count - 1}, got {block_index}")
    return current_step + max(1, optimal_length // (block_count - block_index + 1))


def block_seed(seed_q: int, block_index: int) -> int:
    """Seed of block ``block_index`` (0-based) for a query whose cost seed is ``seed_q``."""
    return derive_seed(f"{seed_q}:block:{block_index}")


def ban_tolerance(refinement_level: int, ban_longest: bool = False) -> int:
    """Bans that can never make the task unsolvable from the initial state (App. B.5).

    With ``m = L + 3`` atomics and every contiguous run available as a tool, the fewest bans
    that cut every path is ``m`` (the full-chain tool plus one tool from each of the ``m - 1``
    disjoint two-tool partitions), or ``m - 1`` when the full-chain tool is already dropped
    ("ban longest"); one ban fewer is always tolerated.
    """
    m = refinement_level + 3
    return (m - 1 if ban_longest else m) - 1


def check_mode(mode: str, block_count: int) -> None:
    """Reject an unknown mode or a block count outside 1..3 (0 for ``static``)."""
    if mode not in EPISODE_MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(EPISODE_MODES)}")
    if isinstance(block_count, bool) or not isinstance(block_count, int):
        raise TypeError(f"block_count must be an int, got {block_count!r}")
    if mode == "static" and block_count != 0:
        raise ValueError("the static mode takes block_count=0")
    if mode != "static" and not 1 <= block_count <= MAX_BLOCKS:
        raise ValueError(f"block_count must be in 1..{MAX_BLOCKS} for {mode}, got {block_count}")


def preference_change_message(task: str, preferences: dict[str, str], opener: int = 0) -> str:
    """The new user turn of a preference change (the values are stated explicitly)."""
    details = "; ".join(f"{d.replace('_', ' ')}: {preferences[d]}" for d in DIMENSIONS)
    head = _PREFERENCE_OPENERS[opener % len(_PREFERENCE_OPENERS)].format(task=task)
    return (
        f"{head} My new requirements are - {details}. Everything else stays the same. "
        "Results obtained for my old requirements no longer apply, so please start over."
    )


@dataclass(frozen=True)
class BlockEvent:
    """An applied blocking event: which block, at which step, and what it did."""

    index: int  # 0-based block number
    mode: str
    step: int  # the step it landed on (ban) or took effect after (the others)
    detail: str
    query: Query  # the query in force after the event (changed by a preference change)
    user_message: str | None = None  # the new user turn of a preference change


class Blocker:
    """Runs one episode's blocking schedule against a :class:`TravelEnv`.

    The driver (the agent loop or :func:`simulate_reference`) calls :meth:`before_call` with
    the step number and the called tool's name just before stepping the environment, and
    :meth:`after_call` with the step and whether the call succeeded right after;
    :meth:`finish` when the episode ends.  ``segments`` and
    ``query`` always describe the current situation.  Static mode is ``block_count=0``.
    """

    def __init__(
        self,
        env: TravelEnv,
        query: Query,
        mode: str,
        block_count: int,
        *,
        seed: int = 42,
        max_steps: int = MAX_TOOL_STEPS,
    ) -> None:
        check_mode(mode, block_count)
        if query.task != env.task:
            raise ValueError(f"query is for {query.task!r}, the environment for {env.task!r}")
        self.env = env
        self.mode = mode
        self.block_count = block_count
        self.max_steps = max_steps
        self.query = query
        self.events: list[BlockEvent] = []
        self.notes: list[str] = []
        # Block parameters hang off the query's seed at the episode's global seed; it stays
        # fixed when a cost change reseeds the costs.
        self._seed_q = query_seed(query.query_id, seed)
        self._resolved = 0
        self._trigger: int | None = None
        self._ban: tuple[int, str] | None = None  # (step, tool) of a ban not yet applied
        self._dropped_reasons: list[str] = []
        self._ok_calls = 0  # successful calls in the current segment
        self.segments: list[Segment] = [self._plan(0, 1, None)]
        self._schedule(0, len(self.segments[0].optimal_paths[0]))

    # ------------------------------------------------------------------ counts
    @property
    def blocks_applied(self) -> int:
        return len(self.events)

    @property
    def blocks_dropped(self) -> int:
        return len(self._dropped_reasons)

    @property
    def segment(self) -> int:
        """Index of the current segment."""
        return len(self.segments) - 1

    @property
    def pending_trigger(self) -> int | None:
        """Step at which the next block is due (None when none is pending)."""
        return self._trigger

    # ------------------------------------------------------------------ driver hooks
    def before_call(self, step: int, tool_name: object) -> bool:
        """Before the call at ``step``: arm a due ban on it.  True when the call is banned now
        (the environment then fails it and charges it)."""
        if self.mode != "ban_tool" or self._trigger is None or step < self._trigger:
            return False
        env = self.env
        if env.done:
            self._drop_rest(f"the goal was already held at step {step}")
            return False
        listed = {t.name for t in env.tool_specs}
        if not isinstance(tool_name, str) or tool_name not in listed or tool_name in env.banned:
            return False  # wait for a call that names a tool the ban can take away
        if not env.reachable(without=tool_name):
            self._drop(f"banning {tool_name} at step {step} would leave the goal unreachable")
            self._schedule(step)
            return False
        rng = random.Random(block_seed(self._seed_q, self._resolved))
        env.ban(tool_name, rng.choice(BAN_MESSAGES))
        self._ban = (step, tool_name)
        return True

    def after_call(self, step: int, ok: bool) -> BlockEvent | None:
        """After the call at ``step`` (``ok``: it succeeded): apply the event due here, if any,
        and return it."""
        if ok:
            self._ok_calls += 1
        if self._ban is not None and self._ban[0] == step:
            name = self._ban[1]
            self._ban = None
            self._close_segment(banned=True)
            return self._apply(step, f"banned {name}")
        if self.mode in ("static", "ban_tool") or self._trigger != step:
            return None
        env = self.env
        if env.done:
            self._drop_rest(f"the goal was already reached by step {step}")
            return None
        rng = random.Random(block_seed(self._seed_q, self._resolved))
        if self.mode == "cost_change":
            low, high = COST_SEED_RANGE
            new_seed = rng.randrange(low, high)
            while new_seed == env.global_seed:
                new_seed = rng.randrange(low, high)
            self._close_segment()
            env.reseed_costs(new_seed)
            return self._apply(step, f"costs regenerated from seed {new_seed}")
        if self.mode == "remove_tools":
            lengths = sorted(
                {len(t.components) for t in env.all_tool_specs if t.is_composite}
                - {env.removed_length}
            )
            if not lengths:
                self._drop(f"no other composite length to remove at step {step}")
                self._schedule(step)
                return None
            length = rng.choice(lengths)
            self._close_segment()
            env.remove_composites(length)
            return self._apply(step, f"removed composites of length {length}")
        # preference_change
        task = self.query.task
        values = PREFERENCE_VALUES[task]
        current = tuple(self.query.preferences[d] for d in DIMENSIONS)
        combos = [c for c in itertools.product(*(values[d] for d in DIMENSIONS)) if c != current]
        chosen = dict(zip(DIMENSIONS, rng.choice(combos), strict=True))
        message = preference_change_message(task, chosen, rng.randrange(len(_PREFERENCE_OPENERS)))
        self.query = dataclasses.replace(self.query, preferences=chosen, text=message)
        self._close_segment()
        env.reset()
        return self._apply(
            step,
            "preferences changed to " + ", ".join(chosen[d] for d in DIMENSIONS),
            message,
        )

    def finish(self, last_step: int) -> None:
        """The episode ended after ``last_step`` steps: every unresolved block is dropped."""
        while self._resolved < self.block_count:
            if self._trigger is not None and self._trigger > self.max_steps:
                reason = f"scheduled at step {self._trigger}, past the {self.max_steps}-step limit"
            elif self._trigger is not None:
                reason = f"due at step {self._trigger}, but the episode ended at step {last_step}"
                if self.env.done:
                    reason += " with the goal reached"
            else:
                reason = f"never scheduled; the episode ended at step {last_step}"
            self._drop(reason)
            self._trigger = None

    # ------------------------------------------------------------------ internals
    def _plan(self, index: int, start_step: int, event: str | None) -> Segment:
        env = self.env
        paths, cost = env.optimal_paths(env.state)
        greedy, greedy_cost = env.greedy_path(env.state)
        held = set(env.state) | {env.all_tool_specs_by_name[n].output for n in greedy}
        return Segment(
            index=index,
            start_step=start_step,
            event=event,
            optimal_paths=tuple(tuple(p) for p in paths),
            optimal_cost=cost,
            greedy_path=tuple(greedy),
            greedy_cost=greedy_cost,
            greedy_reached=env.goal in held,
        )

    def _close_segment(self, *, banned: bool = False) -> None:
        """Cut the current segment to the stretch it covered (see the module doc)."""
        segment, n = self.segments[-1], self._ok_calls
        costs = self.env.costs  # still the costs in force during the segment

        def cents(path: tuple[str, ...]) -> int:
            taken = path[n : n + 1] if banned else ()
            return sum(round(costs[name] * 100) for name in (*path[:n], *taken))

        canonical = segment.optimal_paths[0]
        self.segments[-1] = dataclasses.replace(
            segment,
            optimal_paths=tuple(sorted({path[:n] for path in segment.optimal_paths})),
            optimal_cost=cents(canonical) / 100,
            greedy_path=segment.greedy_path[:n],
            greedy_cost=cents(segment.greedy_path) / 100,
        )
        self._ok_calls = 0

    def _apply(self, step: int, detail: str, message: str | None = None) -> BlockEvent:
        event = BlockEvent(self._resolved, self.mode, step, detail, self.query, message)
        self.events.append(event)
        self.notes.append(f"block {self._resolved + 1}/{self.block_count} at step {step}: {detail}")
        self._resolved += 1
        segment = self._plan(len(self.segments), step + 1, self.mode)
        self.segments.append(segment)
        self._schedule(step, len(segment.optimal_paths[0]))
        return event

    def _drop(self, reason: str) -> None:
        self.notes.append(f"block {self._resolved + 1}/{self.block_count} dropped: {reason}")
        self._dropped_reasons.append(reason)
        self._resolved += 1

    def _drop_rest(self, reason: str) -> None:
        while self._resolved < self.block_count:
            self._drop(reason)
        self._trigger = None

    def _schedule(self, current_step: int, length: int | None = None) -> None:
        self._trigger = None
        if self._resolved >= self.block_count:
            return
        env = self.env
        if env.done:
            self._drop_rest(f"the goal was already reached by step {current_step}")
            return
        if length is None:
            length = len(env.optimal_path(env.state)[0])
        self._trigger = trigger_step(current_step, length, self._resolved, self.block_count)


@dataclass(frozen=True)
class ReferenceRun:
    """An offline run of a reference policy through the blocking schedule.

    ``path`` names every call in order (a banned call included; ``ok`` says which succeeded),
    ``cost`` is everything charged, ``answer`` the final id reached (None if the goal was not).
    With ``policy="optimal"`` this is the segmented ground-truth trajectory (App. B.2 eq. 13).
    """

    path: tuple[str, ...]
    ok: tuple[bool, ...]
    cost: float
    segments: tuple[Segment, ...]
    events: tuple[BlockEvent, ...]
    blocks_applied: int
    blocks_dropped: int
    answer: str | None
    expected_answer: str
    notes: tuple[str, ...]


def simulate_reference(
    query: Query,
    refinement_level: int,
    mode: str = "static",
    block_count: int = 0,
    *,
    policy: Literal["optimal", "greedy"] = "optimal",
    seed: int = 42,
    ban_longest: bool = False,
    max_steps: int = MAX_TOOL_STEPS,
    env: TravelEnv | None = None,
) -> ReferenceRun:
    """Play ``policy`` through the same blocking machinery the agent loop uses.

    ``optimal`` follows the current segment's canonical optimal plan (re-planned after every
    event), ``greedy`` is CostBench's greedy baseline (its chain rule relaxed for one step at
    the start and after each event).  ``env`` is a prepared, fresh environment for the same
    query and level (e.g. with hand-set costs) used instead of building one.
    """
    if policy not in ("optimal", "greedy"):
        raise ValueError(f"unknown policy {policy!r}; expected 'optimal' or 'greedy'")
    env = env or TravelEnv(
        query.task, refinement_level, query.query_id, ban_longest=ban_longest, seed=seed
    )
    blocker = Blocker(env, query, mode, block_count, seed=seed, max_steps=max_steps)
    ids: dict[str, str] = {}
    previous: str | None = None
    path: list[str] = []
    oks: list[bool] = []
    cents = 0
    step = 0
    while not env.done and step < max_steps:
        step += 1
        if policy == "optimal":
            name = env.optimal_path(env.state)[0][0]
        else:
            name = env.greedy_path(env.state, previous)[0][0]
        tool = next(t for t in env.tool_specs if t.name == name)
        blocker.before_call(step, name)
        result = env.step_detailed(
            {"name": name, "arguments": fill_arguments(tool, blocker.query, ids)}
        )
        path.append(name)
        oks.append(result.ok)
        cents += round(result.cost * 100)
        if result.ok and result.output_type and result.output_id:
            ids[result.output_type] = result.output_id
            previous = result.output_type
        event = blocker.after_call(step, result.ok)
        if event is not None:
            previous = None
            if event.mode == "preference_change":
                ids = {}
    blocker.finish(step)
    final = blocker.query
    return ReferenceRun(
        path=tuple(path),
        ok=tuple(oks),
        cost=cents / 100,
        segments=tuple(blocker.segments),
        events=tuple(blocker.events),
        blocks_applied=blocker.blocks_applied,
        blocks_dropped=blocker.blocks_dropped,
        answer=ids.get(env.goal) if env.done else None,
        expected_answer=expected_answer(
            final.task, final.preferences, final.time_info, final.location_preference
        ),
        notes=tuple(blocker.notes),
    )
