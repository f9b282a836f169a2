"""CostBench's blocking events as its ``DynamicBlocker`` codes them (fact sheet §2).

Four modes, ``N`` blocks of one mode per episode (N in 1..3); ``remove_tools`` is CostBench's
``steplen_change``.  A *step* is one agent turn, counted from 1.

**Plan, drawn before the episode** (:func:`block_plan`), from the query's cost seed
``base_seed = stable(f"{seed}:{query_id}")`` and ``blocking_seed_b = base_seed + 100 b``:

* ``cost_change``: new seed ``Random(blocking_seed_b).choice(range(1, 10000))``, used directly
  as the query's own cost seed ``seed_q`` (not hashed with the query id again: fact sheet
  §2.4, §4.1); the whole tool set is regenerated from it (ban-longest applied again),
  nothing accumulates.
* ``preference_change``: the source query ``Random(blocking_seed_b).choice(pool)``, ``pool`` =
  the same-task queries of the query set in order without the current one (all of them when
  that leaves none); blocks draw independently.
* ``remove_tools``: all ranges from one ``Random(base_seed)``: ``lo = 2``, ``hi = 3 + L``,
  width ``w = hi // 2`` (``hi - lo`` when smaller); a pair is ``s = randint(lo, hi - w)``,
  ``e = randint(s + w, hi)``.  With ``hi - lo + 1 < 2 N`` the N pairs are taken as drawn;
  otherwise each range is the first of up to 100 pairs disjoint from the accepted ones, else
  one more pair whatever it overlaps.  The block removes every composite of the *original*
  tool set with exactly ``s`` components (``e`` is not used), replacing any earlier removal.
* ``ban_tool``: the tool the agent calls at the trigger turn is not run, is charged, and is
  banned for the rest of the episode (it stays listed).

**Triggers.**  ``t_b = t_{b-1} + max(1, P_b // (N - b + 1))`` with ``t_{-1} = 0`` and ``P_b`` the
length of the ground-truth path in force before block b (re-solved right after each block).
A ban is armed before the agent's turn ``t_b`` and takes the first call of that turn; the
other modes fire after turn ``t_b``'s tool result, provided that turn had a tool call.  A block
that never fires leaves the rest unscheduled.

**Ground truth.**  The snapshot ``G_b`` adds to ``G_{b-1}`` the outputs of the first ``k =
t_b - t_{b-1}`` tools of ``S_b`` (``k - 1`` for a ban); a ban also bans, on the ground-truth
side only, the ground truth's own tool at that step (``S_b[k - 1]``, or ``S_b[0]`` when ``k =
0``).  ``S_{b+1}`` is re-solved (CostBench's Dijkstra) from ``G_b`` - from the initial state
after a preference change - with the current tools minus the ground-truth bans.  The
segmented ground truth is ``S_0[:t_0] + S_1[:t_1 - t_0] + ... + S_last`` (slices clamped), one
:class:`~pytest_budget.planning._episode_records.Segment` per slice, each costed with the costs in
force when it was solved.  If ``S_b`` is empty when a block fires, nothing is re-solved after
(CostBench's ``gt_unblocked``).

**Messages.**  A preference change sends a new user turn: one of ten lead-ins picked by
``Random(stable(f"{seed}:{t}:preference_change_message"))``, then (not for location) the new
location sentence, the source query's requirements and a sentence saying the time still
holds.  A ban's tool result is one of ten ``[ERROR]`` sentences picked by
``Random(stable(f"{seed}:{t}:ban_tool_message"))`` plus `` Cost: X``; a later call of a
banned tool always gets ``Random(base_seed)``'s pick plus `` Cost: X.``.  Cost changes and
removals are silent.  The wording is ours.

**Greedy baseline under blocking** (:meth:`Blocker.replay_greedy`, fact sheet §5.4): CostBench
replays the blocks that fired in the agent's run.  Greedy step ``i`` (counted from 1) picks
as in a static run (:func:`~pytest_budget.planning._ground_truth.greedy_pick` over the task's tools
minus the greedy's removed ones), is charged and appended; the next replayed block fires
when its turn equals ``i`` and the goal was not reached, and is consumed either way.  A ban
takes the tool just picked (charged, on the path, removed from the candidates; the state
and the previous output stay); the other modes act after the step's output is added: a
cost change moves to the next cost snapshot, a removal of range ``[s, e]`` removes every
composite whose component count lies *outside* ``[s, e]`` (removals accumulate), a
preference change resets the state and clears the previous output.  The snapshots are the
initial costs, then the costs in force after each of the agent's tool-call turns, then one
regenerated set per replayed cost change: the k-th cost change switches to the costs after
the agent's k-th tool turn, the new costs only if the change fired at turn k (CostBench's
indexing, kept).  The relaxation of the chain rule App. B.2 describes never happens.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_budget.planning._costs import derive_seed, query_seed
from pytest_budget.planning._env import TravelEnv
from pytest_budget.planning._episode_records import Query, Segment
from pytest_budget.planning._ground_truth import GREEDY_MAX_STEPS, greedy_pick

__all__ = [
    "BAN_MESSAGES",
    "BLOCK_MODES",
    "EPISODE_MODES",
    "MAX_BLOCKS",
    "MAX_TOOL_STEPS",
    "PREFERENCE_LEAD_INS",
    "RANDOM_SEED_INTERVAL",
    "BlockEvent",
    "Blocker",
    "block_plan",
    "check_mode",
    "preference_change_message",
    "removal_ranges",
    "trigger_step",
]

BLOCK_MODES: tuple[str, ...] = ("ban_tool", "preference_change", "cost_change", "remove_tools")
EPISODE_MODES: tuple[str, ...] = ("static", *BLOCK_MODES)
MAX_BLOCKS = 3
MAX_TOOL_STEPS = 20  # CostBench's --max_tool_steps: turns per query
#: ``random_seed_interval`` of CostBench's config: block b's seed is base_seed + 100 b.
RANDOM_SEED_INTERVAL = 100
_REMOVAL_TRIES = 100

# Our wording; CostBench's ten sentences all start with [ERROR] and say the tool is
# temporarily unavailable and another should be used.
BAN_MESSAGES: tuple[str, ...] = tuple(
    f"[ERROR] {text}"
    for text in (
        "This tool is temporarily unavailable. Please use another tool.",
        "The service behind this tool is down for now; choose a different tool.",
        "This tool cannot be used at the moment. Try another one.",
        "Temporary outage: this tool is not available. Please switch tools.",
        "This tool is under maintenance right now; use an alternative.",
        "The tool is currently disabled. Pick a different tool to continue.",
        "This tool is temporarily out of service. Another tool must be used.",
        "Access to this tool is suspended for now. Please use another tool.",
        "This tool failed to respond and is unavailable for now; use something else.",
        "The tool you called is not available at this time. Please choose another.",
    )
)
PREFERENCE_LEAD_INS: tuple[str, ...] = (
    "I want to change my requirements: ",
    "Sorry, change of plans. ",
    "Actually, I've changed my mind. ",
    "Please update my request. ",
    "Wait, my needs are different now. ",
    "Let me revise what I asked for. ",
    "New plan, please. ",
    "I'd like to adjust my requirements. ",
    "Hold on, something has changed. ",
    "Scratch that, here is what I want instead. ",
)


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


def trigger_step(previous: int, path_length: int, block_index: int, block_count: int) -> int:
    """``t_b = t_{b-1} + max(1, P_b // (N - b + 1))`` (``previous`` = t_{b-1}, 0 at first)."""
    if not 0 <= block_index < block_count:
        raise ValueError(f"block_index must be in 0..{block_count - 1}, got {block_index}")
    return previous + max(1, path_length // (block_count - block_index + 1))


def removal_ranges(base_seed: int, refinement_level: int, block_count: int) -> list[list[int]]:
    """The ``[s, e]`` target range of every removal block (see the module doc)."""
    rng = random.Random(base_seed)
    lo, hi = 2, 3 + refinement_level
    width = hi // 2
    if hi - lo < width:
        width = hi - lo

    def draw() -> list[int]:
        s = rng.randint(lo, hi - width)
        return [s, rng.randint(s + width, hi)]

    if hi - lo + 1 < 2 * block_count:
        return [draw() for _ in range(block_count)]
    ranges: list[list[int]] = []
    used: set[int] = set()
    for _ in range(block_count):
        for _ in range(_REMOVAL_TRIES):
            pair = draw()
            span = set(range(pair[0], pair[1] + 1))
            if not span & used:
                break
        else:
            pair = draw()
            span = set(range(pair[0], pair[1] + 1))
        ranges.append(pair)
        used |= span
    return ranges


def block_plan(
    query: Query,
    mode: str,
    block_count: int,
    refinement_level: int,
    *,
    seed: int = 42,
    pool: Sequence[Query] = (),
) -> list[object]:
    """Each block's parameter: the new seed (cost), the source query (preference), the
    ``[s, e]`` range (removal) or the message seed (ban)."""
    check_mode(mode, block_count)
    base = query_seed(query.query_id, seed)
    if mode == "remove_tools":
        return list(removal_ranges(base, refinement_level, block_count))
    plan: list[object] = []
    candidates: list[Query] = []
    if mode == "preference_change":  # the only mode that draws from the pool
        same_task = [q for q in pool if q.task == query.task]
        candidates = [q for q in same_task if q.query_id != query.query_id] or same_task
        candidates = candidates or [query]
    for b in range(block_count):
        block_seed = base + RANDOM_SEED_INTERVAL * b
        if mode == "cost_change":
            # choice() indexes the sequence: a range draws as its list would.
            plan.append(random.Random(block_seed).choice(range(1, 10000)))
        elif mode == "preference_change":
            plan.append(random.Random(block_seed).choice(candidates))
        else:
            plan.append(block_seed)
    return plan


def preference_change_message(seed: int, step: int, source: Query) -> str:
    """The user turn of a preference change at ``step`` (see the module doc)."""
    rng = random.Random(derive_seed(f"{seed}:{step}:preference_change_message"))
    lead = rng.choice(PREFERENCE_LEAD_INS)
    where = ""
    if source.task != "location" and source.location_preference is not None:
        where = f"This time I want to go to {source.location_preference}."
    return (
        f"{lead}{where}{source.user_requirements}. "
        "The time I gave before (TimeInfo) stays the same."
    )


@dataclass(frozen=True)
class BlockEvent:
    """A block that fired: which one, at which turn, and what it did."""

    index: int  # 0-based block number
    mode: str
    step: int  # the turn it fired at
    detail: str
    query: Query  # the query in force after the event (changed by a preference change)
    user_message: str | None = None  # the new user turn of a preference change


@dataclass
class _Scenario:
    path: list[str]
    costs: dict[str, float]
    event: str | None


class Blocker:
    """Runs one episode's blocking plan against a :class:`TravelEnv`.

    The loop calls :meth:`before_call` with the turn and the called tool's name just before
    stepping the environment (True: the call is banned now), :meth:`after_call` right after,
    and :meth:`finish` when the episode ends.  ``pool`` is the query set a preference change
    draws its source from.  Static mode is ``block_count=0``.
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
        pool: Sequence[Query] = (),
        defer_solves: bool = False,
    ) -> None:
        check_mode(mode, block_count)
        if query.task != env.task:
            raise ValueError(f"query is for {query.task!r}, the environment for {env.task!r}")
        self.env = env
        self.mode = mode
        self.block_count = block_count
        self.max_steps = max_steps
        self.query = query
        self.seed = seed
        self.base_seed = query_seed(query.query_id, seed)
        self.plan = block_plan(
            query, mode, block_count, env.refinement_level, seed=seed, pool=pool or (query,)
        )
        self.events: list[BlockEvent] = []
        self.notes: list[str] = []
        self.gt_banned: set[str] = set()
        self.gt_unblocked = False
        self._original = env.all_tool_specs
        self._snapshot: frozenset[str] = env.initial_state
        greedy = env.greedy_path(env.initial_state)
        held = set(env.initial_state) | {env.all_tool_specs_by_name[n].output for n in greedy[0]}
        self._greedy_static = (tuple(greedy[0]), greedy[1], env.goal in held)
        self._scenarios = [_Scenario(self._solve(env.initial_state), dict(env.costs), None)]
        # Costs in force after each tool turn (the greedy replay's snapshots; cost changes
        # only, and only as many as there are blocks to replay).
        self._turn_costs: list[dict[str, float]] = []
        self._replayed: tuple[tuple[str, ...], float, bool] | None = None
        self._trigger: int | None = None
        self._armed_ban = False
        self._last_trigger = 0
        # defer_solves: a block's re-solve is left for :meth:`settle` (the live loop runs it
        # off the event loop while the next call is on the wire); its inputs are fixed now.
        self.defer_solves = defer_solves
        self._unsolved: tuple[Callable[[], list[str]], int, int] | None = None
        self._settling = threading.Lock()
        if block_count:
            self._trigger = trigger_step(0, len(self._scenarios[0].path), 0, block_count)

    # ------------------------------------------------------------------ state
    @property
    def blocks_applied(self) -> int:
        return len(self.events)

    @property
    def blocks_dropped(self) -> int:
        """Blocks that never fired (the episode ended before their turn)."""
        return self.block_count - len(self.events)

    @property
    def segment(self) -> int:
        return len(self.events)

    @property
    def pending_trigger(self) -> int | None:
        self.settle()
        return self._trigger

    @property
    def unsettled(self) -> bool:
        """Whether a block's re-solve waits for :meth:`settle`."""
        return self._unsolved is not None

    def settle(self) -> None:
        """Finish a deferred re-solve (``defer_solves``): the new segment's ground truth and
        the next block's trigger, as an immediate solve would have set them."""
        with self._settling:
            if self._unsolved is None:
                return
            solve, step, b = self._unsolved
            path = solve()
            self._scenarios[-1].path = path
            if b + 1 < self.block_count:
                self._trigger = trigger_step(step, len(path), b + 1, self.block_count)
            self._unsolved = None

    @property
    def segments(self) -> list[Segment]:
        """The segmented ground truth (module doc), one segment per scenario."""
        self.settle()
        out = []
        previous = 0
        steps = [e.step for e in self.events]
        for index, scenario in enumerate(self._scenarios):
            if index < len(steps):
                take = max(0, min(len(scenario.path), steps[index] - previous))
                path = scenario.path[:take]
                previous = steps[index]
            else:
                path = scenario.path
            cost = 0.0
            for name in path:
                cost += scenario.costs[name]
            greedy, greedy_cost, reached = self._greedy(index)
            out.append(
                Segment(
                    index=index,
                    start_step=1 if index == 0 else steps[index - 1] + 1,
                    event=scenario.event,
                    optimal_paths=(tuple(path),),
                    optimal_cost=cost,
                    greedy_path=greedy,
                    greedy_cost=greedy_cost,
                    greedy_reached=reached,
                )
            )
        return out

    def _greedy(self, index: int) -> tuple[tuple[str, ...], float, bool]:
        # Static: the greedy of the one segment.  Blocked: the whole replay sits in the first
        # segment (the greedy's own block steps differ from the agent's segments); every
        # segment carries whether it reached the goal.
        if self.mode == "static":
            return self._greedy_static
        path, cost, reached = self.replay_greedy()
        return (path, cost, reached) if index == 0 else ((), 0.0, reached)

    def replay_greedy(self) -> tuple[tuple[str, ...], float, bool]:
        """CostBench's greedy baseline replaying this episode's fired blocks (module doc):
        its path, its cost (raw float sum) and whether it reached the goal."""
        if self._replayed is not None:
            return self._replayed
        env = self.env
        tools = env.all_tool_specs
        initial_costs = self._scenarios[0].costs
        snapshots = [initial_costs, *self._turn_costs]
        seeds = [self.plan[e.index] for e in self.events if e.mode == "cost_change"]
        snapshots += [env.costs_for_seed(seed) for seed in seeds if isinstance(seed, int)]
        costs, snapshot = initial_costs, 0
        pending = list(self.events)
        removed: set[str] = set()
        state, previous = env.initial_state, None
        path: list[str] = []
        cost = 0.0
        while env.goal not in state and len(path) < GREEDY_MAX_STEPS:
            tool = greedy_pick([t for t in tools if t.name not in removed], costs, state, previous)
            if tool is None:
                break
            path.append(tool.name)
            cost += costs[tool.name]
            step = len(path)
            event = pending.pop(0) if pending and pending[0].step == step else None
            if event is not None and event.mode == "ban_tool":
                removed.add(tool.name)
                continue
            state, previous = state | {tool.output}, tool.output
            if event is None or env.goal in state:
                continue
            if event.mode == "cost_change":
                snapshot += 1
                costs = snapshots[min(snapshot, len(snapshots) - 1)]
            elif event.mode == "remove_tools":
                target = self.plan[event.index]
                assert isinstance(target, list)
                low, high = target
                removed |= {
                    t.name for t in tools if t.is_composite and not low <= len(t.components) <= high
                }
            else:  # preference_change
                state, previous = env.initial_state, None
        self._replayed = (tuple(path), cost, env.goal in state)
        return self._replayed

    def _solve(self, start: frozenset[str]) -> list[str]:
        return self._solver(start)()

    def _solver(self, start: frozenset[str]) -> Callable[[], list[str]]:
        """The ground truth from ``start`` with the tools, costs and bans in force now, to
        run now or later."""
        solve = self.env.solve_job(start, exclude=self.gt_banned, use_bans=False)

        def path() -> list[str]:
            solved = solve()
            return [] if solved is None else list(solved[0])

        return path

    # ------------------------------------------------------------------ loop hooks
    def before_call(self, step: int, tool_name: object) -> bool:
        """Before turn ``step``'s first call: a ban due now takes ``tool_name``."""
        self.settle()
        if self.mode != "ban_tool" or self._trigger != step:
            return False
        env = self.env
        listed = {t.name for t in env.tool_specs}
        if not isinstance(tool_name, str) or tool_name not in listed:
            self.notes.append(f"turn {step}: the ban found no listed tool to take ({tool_name!r})")
            return False
        cost = env.costs[tool_name]
        if tool_name in env.banned:
            self.notes.append(f"turn {step}: the ban landed on the already banned {tool_name}")
            self._reused = True
        message = random.Random(derive_seed(f"{self.seed}:{step}:ban_tool_message")).choice(
            BAN_MESSAGES
        )
        env.ban(tool_name, message)
        self._armed_ban = True
        self._ban_name = tool_name
        self._ban_cost = cost
        return True

    def after_call(self, step: int, ok: bool) -> BlockEvent | None:
        """After turn ``step``'s first call: fire the block due here, if any."""
        self.settle()
        event = self._after_call(step)
        if self.mode == "cost_change" and len(self._turn_costs) < self.block_count:
            self._turn_costs.append(dict(self.env.costs))
        return event

    def _after_call(self, step: int) -> BlockEvent | None:
        if self._trigger != step:
            return None
        if self.mode == "ban_tool":
            if not self._armed_ban:
                return None
            self._armed_ban = False
            later = random.Random(self.base_seed).choice(BAN_MESSAGES)
            self.env.ban(self._ban_name, later)
            return self._fire(step, f"banned {self._ban_name}")
        b = len(self.events)
        param = self.plan[b]
        env = self.env
        if self.mode == "cost_change":
            assert isinstance(param, int)
            env.reseed_costs(param)
            return self._fire(step, f"costs regenerated from cost seed {param}")
        if self.mode == "remove_tools":
            assert isinstance(param, list)
            length = param[0]
            env.remove_tools(
                t.name for t in self._original if t.is_composite and len(t.components) == length
            )
            return self._fire(step, f"removed composites of length {length} (range {param})")
        assert isinstance(param, Query)
        source = param
        self.query = dataclasses.replace(
            self.query,
            preferences=dict(source.preferences),
            location_preference=source.location_preference,
            user_requirements=source.user_requirements,
        )
        env.reset()
        message = preference_change_message(self.seed, step, source)
        return self._fire(step, f"preferences of {source.query_id}", message)

    def _fire(self, step: int, detail: str, message: str | None = None) -> BlockEvent:
        b = len(self.events)
        event = BlockEvent(b, self.mode, step, detail, self.query, message)
        self.events.append(event)
        self.notes.append(f"block {b + 1}/{self.block_count} at turn {step}: {detail}")
        current = self._scenarios[-1].path
        k = step - self._last_trigger
        if not current:
            self.gt_unblocked = True
        if self.mode == "ban_tool":
            done = current[: max(0, k - 1)]
            own = k - 1 if k > 0 else 0
            if own < len(current):
                self.gt_banned.add(current[own])
        else:
            done = current[:k]
        outputs = self.env.all_tool_specs_by_name
        self._snapshot = self._snapshot | {outputs[n].output for n in done}
        self._last_trigger = step
        start = self.env.initial_state if self.mode == "preference_change" else self._snapshot
        if self.mode == "preference_change":
            self._snapshot = self.env.initial_state
        self._scenarios.append(_Scenario([], dict(self.env.costs), self.mode))
        self._trigger = None
        if not self.gt_unblocked:
            self._unsolved = (self._solver(start), step, b)
        elif b + 1 < self.block_count:
            self._trigger = trigger_step(step, 0, b + 1, self.block_count)
        if not self.defer_solves:
            self.settle()
        return event

    @property
    def reused_banned_tool(self) -> bool:
        """CostBench's ``duplicate_banned_tool_reused``."""
        return getattr(self, "_reused", False)

    def finish(self, last_step: int) -> None:
        """The episode ended after ``last_step`` turns: note the blocks that never fired."""
        self.settle()
        for b in range(len(self.events), self.block_count):
            when = f"at turn {self._trigger}" if b == len(self.events) and self._trigger else ""
            self.notes.append(
                f"block {b + 1}/{self.block_count} never fired {when}; the episode ended at "
                f"turn {last_step}".replace("  ", " ")
            )
