"""A planning cell's samples: one record per episode (see :mod:`pytest_budget._core.samples`).

An episode record lists every tool call in order (name, arguments as sent, cost charged,
the error class of a failed call, the blocking segment it belongs to), the segments with
their blocking event and ground-truth paths, the ground-truth path beside the agent's
path (CostBench's evaluation: valid calls, banned ones included), the final answer and
the expected one.  ``score`` = 1 - normalised edit distance to the ground truth (1 for an
exact match; ``null`` for an episode the cell's path metrics leave out).  Which episodes
are left out follows the cell's reading (``--budget-planning-reading``): ``code`` (the
default) CostBench's eval.py, whose path set P needs every block *effective* (a
non-ban block fired at turn ``t`` counts only when ``t + 1 <`` the episode's turns), a
complete ground truth and at least one tool call, and scores an unreached goal at the
worst case (NED 1, score 0); ``prose`` the paper's rule (errored, underblocked - fewer
blocks fired than asked - or unreached episodes are left out).  Plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_budget._core.samples import Scrubber
from pytest_budget.planning._code_metrics import CodeEval, evaluate_episode
from pytest_budget.planning._episode_records import EpisodeRecord, Query
from pytest_budget.planning._metrics import score_episode

__all__ = ["episode_samples"]


def _tags(episode: EpisodeRecord, correct: bool, over: bool, invalid: int) -> list[str]:
    tags = []
    if episode.error is not None:
        tags.append("error")
    if not episode.reached_goal:
        tags.append("unreached")
    if not correct:
        tags.append("wrong answer")
    if invalid:
        tags.append("invalid")
    if over:
        tags.append("over budget")
    if episode.blocks_applied:
        tags.append("blocked")
    return tags or ["exact"]


def _code_exclusion(episode: EpisodeRecord, code: CodeEval) -> str | None:
    """Why CostBench's path set P leaves the episode out (None: it is in P)."""
    if code.gt_incomplete:
        return "no_ground_truth"
    if not code.block_valid:
        return "underblocked"  # fewer blocks *effective* than asked (code_metrics)
    if not code.has_calls:
        return "no_tool_call"
    return None


def episode_samples(
    episodes: Sequence[EpisodeRecord],
    queries: Sequence[Query],
    scrub: Scrubber,
    reading: str = "code",
) -> list[dict[str, Any]]:
    """One record per episode, in query order; exclusions follow ``reading``."""
    texts: Mapping[str, str] = {q.query_id: q.text for q in queries}
    out = []
    for episode in episodes:
        code = evaluate_episode(episode)
        mine = score_episode(episode)
        exclusion = _code_exclusion(episode, code) if reading == "code" else mine.exclusion
        counted = exclusion is None
        # The code reading scores what it counts with its own NED (worst case if unreached).
        ned = code.ned
        # over budget: the agent's valid calls cost more than the ground-truth path
        over = counted and code.agent_cost > code.gt_cost + 1e-9
        calls = [
            {
                "step": c.step,
                "name": c.name,
                "arguments": scrub(c.arguments),
                "ok": c.ok,
                "cost": c.cost,
                "segment": c.segment,
                "error": c.error_kind,
                "output": c.output_type,
                "repeated": c.repeated,
                "after_goal": c.after_goal,
                "executed": c.executed,
            }
            for c in episode.calls
        ]
        segments = [
            {
                "index": s.index,
                "start_step": s.start_step,
                "event": s.event,
                "optimal_paths": [list(p) for p in s.optimal_paths],
                "optimal_cost": s.optimal_cost,
                "greedy_path": list(s.greedy_path),
            }
            for s in episode.segments
        ]
        out.append(
            {
                "id": episode.query_id,
                "query": scrub(texts.get(episode.query_id, "")),
                "calls": calls,
                "segments": segments,
                "gt_path": list(code.gt_path),
                "agent_path": list(code.agent_path),
                "gt_cost": round(code.gt_cost, 2),
                "agent_cost": round(code.agent_cost, 2),
                "ned": None if not counted else round(ned, 6),
                "exact": code.em,
                "answer": None if episode.answer is None else scrub(episode.answer),
                "expected": episode.expected_answer,
                "correct": code.correct,
                "reached_goal": episode.reached_goal,
                "steps_exhausted": episode.steps_exhausted,
                "blocks_applied": episode.blocks_applied,
                "blocks_dropped": episode.blocks_dropped,
                "block_steps": list(episode.block_steps),
                "turns": episode.turns,
                "excluded": exclusion,
                "error": None if episode.error is None else scrub(episode.error),
                "notes": [scrub(n) for n in episode.notes],
                "score": None if not counted else round(1.0 - ned, 6),
                "tags": _tags(episode, code.correct, over, code.invalid_steps),
            }
        )
    return out
