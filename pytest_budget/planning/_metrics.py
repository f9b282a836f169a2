"""CostBench's planning metrics over
:class:`~pytest_budget.planning._episode_records.EpisodeRecord`.

Definitions follow CostBench §4.1 and App. B.3; where the paper leaves room, the choice made
here (paper section in brackets):

Which episodes count
* **Excluded from cost and path metrics** (``excluded``, broken down as ``errored``,
  ``underblocked``, ``unreached``, ``no_ground_truth``, each episode under its first
  reason in that order): episodes whose ``error`` is set (the agent raised or returned
  garbage, so its trajectory is not a genuine plan); episodes that did not reach the goal
  (``reached_goal`` false, which covers the 20-step limit) [B.3.2 "fails to reach the goal
  state within the maximum of 20 turns"]; under blocking, episodes that did not experience
  the designated number of events (``blocks_applied < block_count``) [B.3.2 "we exclude all
  samples that do not experience the designated number of blocking events"]; and episodes
  without any :class:`~pytest_budget.planning._episode_records.Segment` (no ground truth).
* Under-blocked episodes are left out of *every* metric, UIHR and ITUR and the failure counts
  included (the paper reports all metrics on the valid set); ``require_all_blocks=False``
  keeps them.  ``n_episodes``, ``blocks_applied`` and ``blocks_dropped`` count all input
  episodes.  Intersecting valid sets *across agents* [B.3.2] is the caller's job.

Path metrics (EMR, AED, ANED) [§4.1, B.3.1, B.3.2]
* The agent's compared sequence is the names of its *successful* calls (``ok``), in order:
  failed calls are excluded [B.3.2 "we also exclude failed tool calls"], and that includes
  banned calls (the call at a ban-tool event fails).  Successful redundant calls (repeated,
  after the goal) stay in: they are real deviations from the plan.
* The ground truth is the concatenation of the segments' optimal paths [B.2, "Scenarios with
  Blocking"]; ``Segment.optimal_paths`` is taken as that segment's ground-truth calls.  A
  segment may hold several exactly tied optimal paths; the agent is compared with the
  *nearest* concatenation: one tied path per segment, chosen jointly so that the edit
  distance to the whole agent sequence is minimal.  This is computed exactly by a row-wise
  Levenshtein DP that takes the element-wise minimum over a segment's alternatives (edit
  distance is min-plus linear in the starting row, so per-segment minima compose), without
  enumerating combinations.  A segment with no listed path counts as an empty path.
* ED is Levenshtein distance over tool names (insertion, deletion, substitution cost 1).
  NED = ED / max(len(agent), len(ground truth)) [B.3.1, after Li and Liu], 0 when both are
  empty; tied paths have the same length by construction (ties on cost *and* call count),
  and the shortest tie is used if they do not, which keeps NED <= 1.  EM = 1 iff ED = 0,
  i.e. the agent's sequence equals some tied concatenation.  AED, ANED, EMR are means over
  the path-eligible episodes, reported as fractions (the paper prints ANED and EMR in %).

Cost metrics [B.3.1, B.3.2]
* Cost gap = (agent cost - ground-truth cost) / ground-truth cost per episode, averaged.
  ``cost_gap_abs`` (and ``cost_gap_abs_clean``) is the plain difference in price units, the
  form CostBench's Table 4 prints; the relative form is the one gated (it does not depend on
  the scale of the prices).
  Agent cost sums the charges of successful calls only [B.3.2 "we also disregard invalid
  search attempts"]; sums are taken in integer cents, so a perfect run has gap exactly 0.
* ``cost_gap_clean`` additionally drops redundant calls: the calls flagged ``repeated`` (the
  same tool already succeeded in this segment) or ``after_goal`` (made after the goal was
  reached) [B.3.1, Table 4 parenthesised values].  The flags are the episode loop's.
* Only unblocked episodes (one segment, no applied event) get a cost gap: "we do not compare
  the aggregated cost optimality over the entire trajectory under blocking scenarios"
  [B.3.1].  So ``cost_gap`` is ``None`` for a blocking run.  Ground truth cost <= 0 (not
  produced by the environment) also gives no cost gap for that episode.

User intent and tool use [§4.1, B.3.1, B.3.2]
* UIHR: share of episodes whose ``answer`` (stripped of surrounding whitespace) equals
  ``expected_answer`` exactly, over the episodes that reached the goal [B.3.2: unreached
  answers "amount to mere guesses"], plus the errored ones, which always count as misses.
  ``uihr_all`` (our addition) divides the same hits by every counted episode, so never
  reaching the goal cannot raise it.
* ITUR: invalid calls / all calls, pooled over every counted episode whatever its outcome
  [B.3.2].  A call is invalid when not ``ok``, except the call a ban-tool event blocks (the
  environment's doing, not the agent's); calling an already banned tool again is invalid.
  The loop also records an unreadable reply and a rejected ``<answer>`` (not a goal id a tool
  returned) as invalid calls, ``bad_arguments`` and ``bad_id`` respectively.

Failure classes [App. D.2, Table 6]: ``repeated_calls`` and ``extra_calls`` count the
``repeated`` and ``after_goal`` flags (any call); ``wrong_parameter_calls`` counts
``wrong_parameters`` and ``bad_arguments`` (malformed parameters); ``inaccessible_calls``
counts ``inaccessible``; ``unknown_tool_calls`` and ``bad_id_calls`` are reported apart
(the paper folds unknown tool names into "wrong parameters"; its Table 6 column is the sum
of the three); ``banned_calls`` counts blocked calls, ``banned_retry_calls`` the invalid
repeats among them.

Every aggregate is ``None`` when no episode is eligible for it (never NaN, and empty input is
fine).  :func:`greedy_scores` scores each segment's greedy baseline path and cost as if it
were the agent, for the paper's greedy row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_budget.planning._code_metrics import (
    greedy_pooled_scores,
    greedy_sums,
    pooled_scores,
    score_sums,
)
from pytest_budget.planning._episode_records import EpisodeRecord, Segment, ToolCallRecord
from pytest_budget.planning._levenshtein import edit_distance, segmented_edit_distance

__all__ = [
    "EpisodeScore",
    "edit_distance",
    "greedy_scores",
    "score_episode",
    "score_episodes",
    "segmented_edit_distance",
]

_WRONG_PARAMETER_KINDS = frozenset({"wrong_parameters", "bad_arguments"})


def _ground_truth(segments: Sequence[Segment]) -> tuple[list[tuple[tuple[str, ...], ...]], int]:
    alternatives = [seg.optimal_paths for seg in segments]
    length = sum(min((len(p) for p in alts), default=0) for alts in alternatives)
    return alternatives, length


def _cents(cost: float) -> int:
    return round(cost * 100)


def _digits(text: str) -> str:
    # Answers are checked on their digits only, as CostBench does.
    return "".join(ch for ch in text if ch.isdigit())


@dataclass(frozen=True, slots=True)
class EpisodeScore:
    """One episode's metrics; ``None`` where the episode does not count for a metric."""

    query_id: str
    task: str
    mode: str
    counted: bool  # False: under-blocked and left out of every metric
    exclusion: str | None  # why it is out of cost/path metrics, None when it is in
    agent_path: tuple[str, ...]  # names of the successful calls, in order
    edit_distance: int | None
    normalized_edit_distance: float | None
    exact_match: bool | None
    agent_cost: float | None
    agent_cost_clean: float | None
    ground_truth_cost: float | None
    cost_gap: float | None
    cost_gap_clean: float | None
    intent_hit: bool | None  # None when not counted for UIHR (unreached, no error)
    answer_correct: bool  # answer equals expected_answer (and no error), whatever the outcome
    total_calls: int
    invalid_calls: int
    repeated_calls: int
    extra_calls: int
    wrong_parameter_calls: int
    inaccessible_calls: int
    unknown_tool_calls: int
    bad_id_calls: int
    banned_calls: int
    banned_retry_calls: int


def _exclusion(episode: EpisodeRecord, require_all_blocks: bool) -> str | None:
    if episode.error is not None:
        return "errored"
    if require_all_blocks and _underblocked(episode):
        return "underblocked"
    if not episode.reached_goal:
        return "unreached"
    if not episode.segments:
        return "no_ground_truth"
    return None


def _underblocked(episode: EpisodeRecord) -> bool:
    return episode.blocks_applied < episode.block_count


def _unblocked(episode: EpisodeRecord) -> bool:
    return episode.blocks_applied == 0 and len(episode.segments) == 1


def _path_scores(path: Sequence[str], segments: Sequence[Segment]) -> tuple[int, float, bool]:
    alternatives, gt_length = _ground_truth(segments)
    distance = segmented_edit_distance(path, alternatives)
    longer = max(len(path), gt_length)
    return distance, (distance / longer if longer else 0.0), distance == 0


def _gap(agent_cents: int, gt_cents: int) -> float:
    return (agent_cents - gt_cents) / gt_cents


def score_episode(episode: EpisodeRecord, *, require_all_blocks: bool = True) -> EpisodeScore:
    """Per-episode metrics (see the module docstring for every rule)."""
    # A cell scores each episode several times (scores, bootstrap columns, samples); the
    # record is frozen and the score immutable, so the first score is kept on the record.
    key = "_score_all_blocks" if require_all_blocks else "_score_any_blocks"
    memo = episode.__dict__
    score = memo.get(key)
    if score is None:
        score = memo[key] = _score_episode(episode, require_all_blocks)
    return score


def _tally(calls: Sequence[ToolCallRecord]) -> tuple[list[str], int, int, dict[str, int]]:
    """The successful calls' path, their cost in cents (all, and without repeated or
    after-goal calls), and the counts of each kind of failed or wasted call."""
    path: list[str] = []
    cents = clean_cents = 0
    invalid = repeated = extra = wrong = inaccessible = unknown = bad_id = 0
    banned = banned_retry = 0
    banned_names: set[str] = set()
    for call in calls:
        if call.repeated:
            repeated += 1
        if call.after_goal:
            extra += 1
        if call.ok:
            path.append(call.name)
            c = _cents(call.cost)
            cents += c
            if not (call.repeated or call.after_goal):
                clean_cents += c
            continue
        kind = call.error_kind
        if kind == "banned":
            banned += 1
            if call.name in banned_names:
                banned_retry += 1
                invalid += 1
            banned_names.add(call.name)
            continue
        invalid += 1
        if kind in _WRONG_PARAMETER_KINDS:
            wrong += 1
        elif kind == "inaccessible":
            inaccessible += 1
        elif kind == "unknown_tool":
            unknown += 1
        elif kind == "bad_id":
            bad_id += 1
    return (
        path,
        cents,
        clean_cents,
        {
            "invalid_calls": invalid,
            "repeated_calls": repeated,
            "extra_calls": extra,
            "wrong_parameter_calls": wrong,
            "inaccessible_calls": inaccessible,
            "unknown_tool_calls": unknown,
            "bad_id_calls": bad_id,
            "banned_calls": banned,
            "banned_retry_calls": banned_retry,
        },
    )


def _score_episode(episode: EpisodeRecord, require_all_blocks: bool) -> EpisodeScore:
    path, cents, clean_cents, calls = _tally(episode.calls)
    counted = not (require_all_blocks and _underblocked(episode))
    exclusion = _exclusion(episode, require_all_blocks)
    answer_correct = (
        episode.error is None
        and episode.answer is not None
        and _digits(episode.answer) == _digits(episode.expected_answer)
    )
    intent_hit: bool | None = None
    if counted and (episode.reached_goal or episode.error is not None):
        intent_hit = answer_correct

    distance: int | None = None
    ned: float | None = None
    exact: bool | None = None
    agent_cost = agent_cost_clean = gt_cost = gap = gap_clean = None
    if exclusion is None:
        distance, ned, exact = _path_scores(path, episode.segments)
        gt_cents = _cents(episode.segments[0].optimal_cost)
        if _unblocked(episode) and gt_cents > 0:
            agent_cost, agent_cost_clean = cents / 100, clean_cents / 100
            gt_cost = gt_cents / 100
            gap, gap_clean = _gap(cents, gt_cents), _gap(clean_cents, gt_cents)

    return EpisodeScore(
        query_id=episode.query_id,
        task=episode.task,
        mode=episode.mode,
        counted=counted,
        exclusion=exclusion,
        agent_path=tuple(path),
        edit_distance=distance,
        normalized_edit_distance=ned,
        exact_match=exact,
        agent_cost=agent_cost,
        agent_cost_clean=agent_cost_clean,
        ground_truth_cost=gt_cost,
        cost_gap=gap,
        cost_gap_clean=gap_clean,
        intent_hit=intent_hit,
        answer_correct=answer_correct,
        total_calls=len(episode.calls),
        **calls,
    )


def _mean(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return float(np.fromiter(values, dtype=np.float64, count=len(values)).mean())


#: Per-episode call counters, summed into a cell's scores (also by the bootstrap).
COUNT_FIELDS: tuple[str, ...] = (
    "total_calls",
    "invalid_calls",
    "repeated_calls",
    "extra_calls",
    "wrong_parameter_calls",
    "inaccessible_calls",
    "unknown_tool_calls",
    "bad_id_calls",
    "banned_calls",
    "banned_retry_calls",
)
#: Why an episode is left out of the cost and path metrics.
EXCLUSIONS: tuple[str, ...] = ("errored", "underblocked", "unreached", "no_ground_truth")


#: How the metrics read CostBench: ``code`` (default) is its eval.py, which produced the
#: paper's tables (:mod:`pytest_budget.planning._code_metrics`); ``prose`` is the paper's
#: App. B.3 text (this module's docstring).
READINGS: tuple[str, ...] = ("code", "prose")
#: The keys the two readings define differently.
READING_KEYS: tuple[str, ...] = (
    "emr",
    "aed",
    "aned",
    "cost_gap",
    "uihr",
    "itur",
    "n_path",
    "n_cost",
    "n_uihr",
)


def score_episodes(
    episodes: Iterable[EpisodeRecord],
    *,
    require_all_blocks: bool = True,
    reading: str = "code",
) -> dict[str, float | int | None]:
    """Aggregate CostBench metrics over ``episodes``.

    ``reading="code"`` (the default) computes ``emr``, ``aed``, ``aned``, ``cost_gap`` (raw
    cost units, Table 4's number), ``uihr``, ``itur`` as CostBench's eval.py does
    (:mod:`pytest_budget.planning._code_metrics`), with ``n_path`` = |P|, ``n_cost`` = |C|,
    ``n_uihr`` = |A| and ``n_m`` = |M|; ``reading="prose"`` the paper's text (see
    :func:`prose_scores`).  Every other key is the same in both.
    """
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; expected one of {', '.join(READINGS)}")
    episodes = list(episodes)
    result = prose_scores(episodes, require_all_blocks=require_all_blocks)
    if reading == "code":
        code = pooled_scores(score_sums(episodes))
        result.update({k: code[k] for k in ("emr", "aed", "aned", "cost_gap", "uihr", "itur")})
        result.update(n_path=code["n_path"], n_cost=code["n_cost"], n_uihr=code["n_a"])
        result["n_m"] = code["n_m"]
    return result


def prose_scores(
    episodes: Iterable[EpisodeRecord], *, require_all_blocks: bool = True
) -> dict[str, float | int | None]:
    """Aggregate CostBench metrics over ``episodes`` as the paper's prose reads them (see the
    module docstring).

    Keys: ``emr``, ``aed``, ``aned``, ``cost_gap``, ``cost_gap_clean``, ``uihr``,
    ``uihr_all``, ``itur`` (fractions or ``None``); counts ``n_episodes``, ``n_counted``,
    ``n_path`` (path-eligible), ``n_cost`` (cost-eligible), ``n_uihr``, ``excluded`` and its
    breakdown ``errored``, ``underblocked``, ``unreached``, ``no_ground_truth``,
    ``blocks_applied``, ``blocks_dropped`` and the call counts ``total_calls``,
    ``invalid_calls``, ``repeated_calls``, ``extra_calls``, ``wrong_parameter_calls``,
    ``inaccessible_calls``, ``unknown_tool_calls``, ``bad_id_calls``, ``banned_calls``,
    ``banned_retry_calls``.
    """
    eds: list[float] = []
    neds: list[float] = []
    ems: list[float] = []
    gaps: list[float] = []
    gaps_clean: list[float] = []
    abs_gaps: list[float] = []
    abs_gaps_clean: list[float] = []
    hits: list[float] = []
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    reasons = dict.fromkeys(EXCLUSIONS, 0)
    n_episodes = n_counted = applied = dropped = answered = 0
    for episode in episodes:
        n_episodes += 1
        applied += episode.blocks_applied
        dropped += episode.blocks_dropped
        score = score_episode(episode, require_all_blocks=require_all_blocks)
        if score.exclusion is not None:
            reasons[score.exclusion] += 1
        if not score.counted:
            continue
        n_counted += 1
        for name in COUNT_FIELDS:
            counts[name] += getattr(score, name)
        answered += score.answer_correct
        if score.intent_hit is not None:
            hits.append(float(score.intent_hit))
        if score.edit_distance is not None:
            eds.append(score.edit_distance)
            neds.append(score.normalized_edit_distance or 0.0)
            ems.append(float(bool(score.exact_match)))
        if score.cost_gap is not None and score.cost_gap_clean is not None:
            gaps.append(score.cost_gap)
            gaps_clean.append(score.cost_gap_clean)
            assert score.agent_cost is not None and score.agent_cost_clean is not None
            assert score.ground_truth_cost is not None
            abs_gaps.append(round(score.agent_cost - score.ground_truth_cost, 2))
            abs_gaps_clean.append(round(score.agent_cost_clean - score.ground_truth_cost, 2))

    total_calls = counts["total_calls"]
    result: dict[str, float | int | None] = {
        "emr": _mean(ems),
        "aed": _mean(eds),
        "aned": _mean(neds),
        "cost_gap": _mean(gaps),
        "cost_gap_clean": _mean(gaps_clean),
        "cost_gap_abs": _mean(abs_gaps),
        "cost_gap_abs_clean": _mean(abs_gaps_clean),
        "uihr": _mean(hits),
        "uihr_all": answered / n_counted if n_counted else None,
        "itur": counts["invalid_calls"] / total_calls if total_calls else None,
        "n_episodes": n_episodes,
        "n_counted": n_counted,
        "n_path": len(eds),
        "n_cost": len(gaps),
        "n_uihr": len(hits),
        "excluded": sum(reasons.values()),
        **reasons,
        "blocks_applied": applied,
        "blocks_dropped": dropped,
    }
    result.update(counts)
    return result


def greedy_scores(
    episodes: Iterable[EpisodeRecord],
    *,
    require_all_blocks: bool = True,
    agent_eligible_only: bool = False,
    reading: str = "code",
) -> dict[str, float | int | None]:
    """The greedy row.  ``reading="code"`` (default): CostBench's ``stimulation_metrics``
    (:func:`~pytest_budget.planning._code_metrics.greedy_pooled_scores`: every episode, raw
    AED, NED forced to 1 when greedy misses the goal, cost gap = mean greedy cost - mean
    ground-truth cost); ``reading="prose"``: :func:`prose_greedy_scores`."""
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; expected one of {', '.join(READINGS)}")
    if reading == "prose":
        return prose_greedy_scores(
            episodes,
            require_all_blocks=require_all_blocks,
            agent_eligible_only=agent_eligible_only,
        )
    return greedy_pooled_scores(greedy_sums(episodes))


def prose_greedy_scores(
    episodes: Iterable[EpisodeRecord],
    *,
    require_all_blocks: bool = True,
    agent_eligible_only: bool = False,
) -> dict[str, float | int | None]:
    """Path and cost metrics of the greedy baseline stored in each episode's segments.

    The greedy sequence is the concatenation of ``Segment.greedy_path`` and its cost the sum
    of ``greedy_cost``; it is scored against the same ground truth, with the same rules as the
    agent (cost gap only for unblocked episodes; ``cost_gap_clean`` equals ``cost_gap`` since
    greedy makes no redundant calls).  Greedy always reaches the goal, so by default every
    episode with segments counts (except under-blocked ones); ``agent_eligible_only=True``
    restricts to the episodes where the agent's own path metrics count, for a like-for-like
    comparison.  ``uihr`` and ``itur`` are ``None`` (not applicable, as in the paper's
    greedy row).
    """
    eds: list[float] = []
    neds: list[float] = []
    ems: list[float] = []
    gaps: list[float] = []
    abs_gaps: list[float] = []
    n_episodes = 0
    for episode in episodes:
        n_episodes += 1
        if agent_eligible_only:
            if _exclusion(episode, require_all_blocks) is not None:
                continue
        elif not episode.segments or (require_all_blocks and _underblocked(episode)):
            continue
        path = [name for seg in episode.segments for name in seg.greedy_path]
        distance, ned, exact = _path_scores(path, episode.segments)
        eds.append(distance)
        neds.append(ned)
        ems.append(float(exact))
        gt_cents = _cents(episode.segments[0].optimal_cost)
        if _unblocked(episode) and gt_cents > 0:
            greedy_cents = _cents(episode.segments[0].greedy_cost)
            gaps.append(_gap(greedy_cents, gt_cents))
            abs_gaps.append((greedy_cents - gt_cents) / 100)
    gap = _mean(gaps)
    abs_gap = _mean(abs_gaps)
    return {
        "emr": _mean(ems),
        "aed": _mean(eds),
        "aned": _mean(neds),
        "cost_gap": gap,
        "cost_gap_clean": gap,
        "cost_gap_abs": abs_gap,
        "cost_gap_abs_clean": abs_gap,
        "uihr": None,
        "itur": None,
        "n_episodes": n_episodes,
        "n_path": len(eds),
        "n_cost": len(gaps),
        "excluded": n_episodes - len(eds),
    }
