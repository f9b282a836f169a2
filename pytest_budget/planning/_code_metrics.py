"""CostBench's evaluation as coded (``env/utils/eval.py``; fact sheet §3): the default reading.

Per episode (``evaluate_single_query``):

* **Steps**: the first tool call of every turn with tool calls (the loop runs only that one).
  A step is *invalid* when its result is an ``[ERROR]`` other than a ban sentence, so a call
  blocked by a ban (or a later call of a banned tool) is valid and its cost counts; the
  unexecuted call of an answer message is a valid step of cost 0.
* ``agent_path`` = the names of the valid steps, ``agent_cost`` their summed cost; the ground
  truth is the segmented path (the concatenation of each segment's single ground-truth path,
  CostBench's heap order) and its cost.
* ED = Levenshtein distance over tool names, NED = ED / max(lengths) (0 when both are empty),
  EM = equal sequences.  A run whose final state lacks the goal scores the worst case: NED 1,
  ED = max(lengths), EM 0.
* The answer is correct when its 5 digits equal the digits of the final ground-truth id.
* A blocking event counts (is *effective*) when it fired at turn ``t`` with ``t + 1 <
  turns`` (a ban: whenever it fired); the run is block-valid when all ``N`` are effective,
  and its ground truth is *incomplete* when some block never fired.

Sets and aggregates (``eval``):

* M = valid (block-valid, or static) and ground truth complete;
* A = M with at least one tool call: **UIHR** = correct answers / |A| (runs that missed the
  goal stay in A, as misses);
* P = ground truth complete, block-valid, at least one tool call: **AED**, **ANED**,
  **EMR** are means over P (fractions here; the paper prints ANED and EMR in %);
* C = M with the goal reached, block-valid, at least one tool call: **cost gap** = mean
  over C of (agent cost - ground-truth cost), in raw cost units (Table 4's number);
* **ITUR** = invalid steps / steps, pooled over M.

Every aggregate is a ratio of sums over episodes, so pooling cells (the paper's rows pool
all tasks) is adding their :data:`POOL_FIELDS` sums: :func:`pooled_scores`.

The **greedy row** (``stimulation_metrics``) covers every episode (blocked runs: the greedy
replays the blocks that fired in the agent's run, ``Blocker.replay_greedy``, and is scored
against the same segmented ground truth): AED is the mean of the
greedy's raw ED (not forced to the maximum when it misses the goal), ANED forces NED to 1 when
it does, EMR is the share of exact matches, cost gap = mean greedy cost - mean ground-truth
cost, where the ground-truth cost is 0 for an episode outside M (CostBench reads it from the
agent's evaluation, which is then invalid).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_budget.planning._episode_records import EpisodeRecord
from pytest_budget.planning._levenshtein import edit_distance

__all__ = [
    "GREEDY_POOL_FIELDS",
    "POOL_FIELDS",
    "CodeEval",
    "evaluate_episode",
    "greedy_pooled_scores",
    "greedy_sums",
    "pooled_scores",
    "score_sums",
]

#: Sums that pool across cells (every aggregate is a ratio of two of them).
POOL_FIELDS: tuple[str, ...] = (
    "n_m",
    "n_a",
    "n_p",
    "n_c",
    "correct_a",
    "ed_p",
    "ned_p",
    "em_p",
    "cost_diff_c",
    "agent_cost_c",
    "gt_cost_c",
    "steps_m",
    "invalid_steps_m",
)
GREEDY_POOL_FIELDS: tuple[str, ...] = (
    "g_n",
    "g_ed",
    "g_ned",
    "g_em",
    "g_cost",
    "g_gt_cost",
)


def _float_sum(values: Iterable[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


@dataclass(frozen=True, slots=True)
class CodeEval:
    """One episode under CostBench's evaluation (see the module docstring)."""

    agent_path: tuple[str, ...]
    agent_cost: float
    gt_path: tuple[str, ...]
    gt_cost: float
    ed: int
    ned: float
    em: bool
    reached_goal: bool
    correct: bool
    steps: int
    invalid_steps: int
    effective_blocks: int
    block_valid: bool
    gt_incomplete: bool
    has_calls: bool

    @property
    def in_m(self) -> bool:
        return self.block_valid and not self.gt_incomplete

    @property
    def in_a(self) -> bool:
        return self.in_m and self.has_calls

    @property
    def in_p(self) -> bool:
        return not self.gt_incomplete and self.block_valid and self.has_calls

    @property
    def in_c(self) -> bool:
        return self.in_m and self.reached_goal and self.has_calls


def _digits(answer: str | None) -> str | None:
    if answer is None:
        return None
    found = "".join(ch for ch in answer if ch.isdigit())
    return found or None


def gt_path(episode: EpisodeRecord) -> tuple[str, ...]:
    """The segmented ground-truth path: each segment's (single) ground-truth path."""
    return tuple(
        name
        for seg in episode.segments
        for name in (seg.optimal_paths[0] if seg.optimal_paths else ())
    )


def _path_scores(agent: tuple[str, ...], truth: tuple[str, ...]) -> tuple[int, float, bool]:
    ed = edit_distance(agent, truth)
    longer = max(len(agent), len(truth))
    return ed, (ed / longer if longer else 0.0), agent == truth


def evaluate_episode(episode: EpisodeRecord) -> CodeEval:
    """CostBench's ``evaluate_single_query`` for one episode."""
    # Called several times per episode by a cell; frozen record, immutable result: kept.
    memo = episode.__dict__
    result = memo.get("_code_eval")
    if result is None:
        result = memo["_code_eval"] = _evaluate_episode(episode)
    return result


def _evaluate_episode(episode: EpisodeRecord) -> CodeEval:
    valid = [c for c in episode.calls if c.ok or c.error_kind == "banned"]
    agent = tuple(c.name for c in valid)
    truth = gt_path(episode)
    ed, ned, em = _path_scores(agent, truth)
    reused = _reused_banned(episode)
    if not episode.reached_goal or reused:
        ed, ned, em = max(len(agent), len(truth)), 1.0, False
    if episode.mode == "ban_tool":
        effective = len(episode.block_steps)
    else:
        effective = sum(1 for t in episode.block_steps if t + 1 < episode.turns)
    expected = _digits(episode.expected_answer)
    return CodeEval(
        agent_path=agent,
        agent_cost=_float_sum(c.cost for c in valid),
        gt_path=truth,
        gt_cost=_float_sum(seg.optimal_cost for seg in episode.segments),
        ed=ed,
        ned=ned,
        em=em,
        reached_goal=episode.reached_goal,
        correct=episode.answer is not None and _digits(episode.answer) == expected,
        steps=len(episode.calls),
        invalid_steps=len(episode.calls) - len(valid),
        effective_blocks=effective,
        block_valid=effective == episode.block_count,
        gt_incomplete=len(episode.block_steps) < episode.block_count or not truth,
        has_calls=episode.tool_turns > 0 or bool(episode.calls),
    )


def _reused_banned(episode: EpisodeRecord) -> bool:
    """CostBench's ``duplicate_banned_tool_reused``: with N > 1, a later ban landed on a tool
    that was already banned."""
    if episode.mode != "ban_tool" or episode.block_count < 2:
        return False
    seen: set[str] = set()
    for call in episode.calls:
        if call.error_kind == "banned" and call.step in episode.block_steps:
            if call.name in seen:
                return True
            seen.add(call.name)
    return False


def score_sums(episodes: Iterable[EpisodeRecord]) -> dict[str, float]:
    """The :data:`POOL_FIELDS` sums of ``episodes``."""
    sums = dict.fromkeys(POOL_FIELDS, 0.0)
    for episode in episodes:
        add_eval(sums, evaluate_episode(episode))
    return sums


def add_eval(sums: dict[str, float], ev: CodeEval, weight: float = 1.0) -> None:
    """Add one episode's contribution (``weight`` times) to ``sums``."""
    if ev.in_m:
        sums["n_m"] += weight
        sums["steps_m"] += weight * ev.steps
        sums["invalid_steps_m"] += weight * ev.invalid_steps
    if ev.in_a:
        sums["n_a"] += weight
        sums["correct_a"] += weight * ev.correct
    if ev.in_p:
        sums["n_p"] += weight
        sums["ed_p"] += weight * ev.ed
        sums["ned_p"] += weight * ev.ned
        sums["em_p"] += weight * ev.em
    if ev.in_c:
        sums["n_c"] += weight
        sums["cost_diff_c"] += weight * (ev.agent_cost - ev.gt_cost)
        sums["agent_cost_c"] += weight * ev.agent_cost
        sums["gt_cost_c"] += weight * ev.gt_cost


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def pooled_scores(sums: Mapping[str, float]) -> dict[str, float | int | None]:
    """The aggregates from (pooled) :data:`POOL_FIELDS` sums; ``None`` over an empty set."""
    return {
        "emr": _ratio(sums["em_p"], sums["n_p"]),
        "aed": _ratio(sums["ed_p"], sums["n_p"]),
        "aned": _ratio(sums["ned_p"], sums["n_p"]),
        "cost_gap": _ratio(sums["cost_diff_c"], sums["n_c"]),
        "uihr": _ratio(sums["correct_a"], sums["n_a"]),
        "itur": _ratio(sums["invalid_steps_m"], sums["steps_m"]),
        "n_m": int(sums["n_m"]),
        "n_a": int(sums["n_a"]),
        "n_path": int(sums["n_p"]),
        "n_cost": int(sums["n_c"]),
    }


def greedy_sums(episodes: Iterable[EpisodeRecord]) -> dict[str, float]:
    """The :data:`GREEDY_POOL_FIELDS` sums of the greedy baseline stored in the segments."""
    sums = dict.fromkeys(GREEDY_POOL_FIELDS, 0.0)
    for episode in episodes:
        # Blocked runs: the greedy replays the agent's blocks (Blocker.replay_greedy); the
        # whole replay is stored in the first segment.
        if not episode.segments:
            continue
        path = tuple(name for seg in episode.segments for name in seg.greedy_path)
        truth = gt_path(episode)
        ed, ned, em = _path_scores(path, truth)
        if not all(seg.greedy_reached for seg in episode.segments[-1:]):
            ned, em = 1.0, False  # ED stays raw, as in stimulation_metrics
        ev = evaluate_episode(episode)
        sums["g_n"] += 1
        sums["g_ed"] += ed
        sums["g_ned"] += ned
        sums["g_em"] += em
        sums["g_cost"] += _float_sum(seg.greedy_cost for seg in episode.segments)
        sums["g_gt_cost"] += ev.gt_cost if ev.in_m else 0.0
    return sums


def greedy_pooled_scores(sums: Mapping[str, float]) -> dict[str, float | int | None]:
    """The greedy row from (pooled) :data:`GREEDY_POOL_FIELDS` sums."""
    n = sums["g_n"]
    gap = None if not n else sums["g_cost"] / n - sums["g_gt_cost"] / n
    return {
        "emr": _ratio(sums["g_em"], n),
        "aed": _ratio(sums["g_ed"], n),
        "aned": _ratio(sums["g_ned"], n),
        "cost_gap": gap,
        "uihr": None,
        "itur": None,
        "n_episodes": int(n),
    }
