"""Online awareness mode (issue 24): hand-worked episodes of the turn loop, the token split,
stops and their measured continuation, the metrics on online estimates, and the replay pass
checked against the replay suite's own rollout generator."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget._environments.sokoban import parse_level
from pytest_budget.awareness._cell_records import OnlineCellRecord
from pytest_budget.awareness._replay.answers import Impossible, Interval, Invalid
from pytest_budget.awareness._scoring.metrics import ProbeRecord, fail_f1, macro_f1
from pytest_budget.awareness.online import (
    ReferenceOnlineAgent,
    read_online_reply,
    reference_online_agent,
    run_episode,
    run_online_cell,
)
from pytest_budget.awareness.online._envs import make_session
from pytest_budget.awareness.online._protocol import budget_block, split_tokens
from pytest_budget.awareness.online._scoring import (
    early_stop_outcome,
    online_probe_results,
    score_online_runs,
)

# Player at (1, 1), box at (1, 3), target at (1, 4): "Right || Right" solves it; "Left" bumps
# the wall (a move that changes nothing and never solves).
LEVEL = "######\n#P_XO#\n######"
SOLVE = "<answer>Right || Right</answer>"


def _session() -> Any:
    session = make_session("sokoban-6x6", 42, 0, {})
    session.level = session.state = parse_level(LEVEL)
    return session


class Scripted:
    """An online actor whose reply is ``fn(observation)``; it remembers what it was shown."""

    run_inline = True
    name = "scripted"

    def __init__(self, fn: Any, estimate: Any = None) -> None:
        self.fn = fn
        self.seen: list[Any] = []
        self.probes: list[Any] = []
        self._estimate = estimate
        if estimate is not None:
            self.estimate = self._call_estimate

    def _call_estimate(self, probe: Any) -> Any:
        self.probes.append(probe)
        return self._estimate(probe)

    def act(self, observation: Any, used: Any, cap: Any) -> Any:
        self.seen.append((observation, dict(used), cap))
        return self.fn(observation)


def _run(actor: Any, cap: float = 2500.0, **kwargs: Any) -> Any:
    return anyio.run(lambda: run_episode(_session(), actor, cap={"tokens": cap}, **kwargs))


def _usage(inp: int, out: int, est: int) -> dict[str, Any]:
    return {
        "usage": {"input_tokens": inp, "output_tokens": out},
        "estimation_usage": {"tokens": est},
    }


# --------------------------------------------------------------------------- token accounting


def test_an_actor_that_never_stops_is_stopped_by_the_cap_with_tokens_kept_apart() -> None:
    # Every turn reports 300 + 20 tokens of which 12 are the estimate: 308 acting, 12
    # estimation.  Charging acting tokens, turns 1-8 fit (8 x 308 = 2464); turn 9 would
    # reach 2772 > 2500, so it is not played and the run fails at the cap.
    actor = Scripted(
        lambda o: {
            "action": "<answer>Left</answer>",
            "estimate": "[100, 200]",
            **_usage(300, 20, 12),
        }
    )
    run = _run(actor)
    assert run.end_reason == "cap" and not run.success
    assert [t.executed for t in run.turns] == [True] * 8 + [False]
    assert run.acting_tokens() == 9 * 308  # the unplayed reply was still written
    assert run.estimation_tokens() == 9 * 12
    # what the actor was told: used is the charge so far, cap the cell's cap
    assert [used["tokens"] for _, used, _ in actor.seen] == [308 * i for i in range(9)]
    assert all(cap == {"tokens": 2500.0} for _, _, cap in actor.seen)
    scores, reasons, _ = score_online_runs([run])
    assert scores["acting_tokens"] == 2772 and scores["estimation_tokens"] == 108
    assert scores["estimation_share"] == pytest.approx(108 / 2772)
    # one probe per estimate at k = 0..7 (the estimate sent with the unplayed turn is about
    # k = 8 = T, where nothing remains): all truly impossible, all answered with intervals
    assert scores["n_probes"] == 8 and reasons == {}
    assert scores["fail_f1"] == 0.0 and scores["macro_f1_all"] == 0.0
    assert scores["success_rate"] == 0.0 and scores["stop_rate"] == 0.0


def test_charging_both_counts_estimation_tokens_against_the_cap() -> None:
    actor = Scripted(
        lambda o: {
            "action": "<answer>Left</answer>",
            "estimate": "[100, 200]",
            **_usage(300, 20, 12),
        }
    )
    run = _run(actor, charge="both")
    # 320 per turn: 7 x 320 = 2240 fit, the 8th would make 2560
    assert [t.executed for t in run.turns] == [True] * 7 + [False]
    assert run.acting_tokens() == 8 * 308 and run.estimation_tokens() == 8 * 12
    assert [used["tokens"] for _, used, _ in actor.seen] == [320 * i for i in range(8)]


def test_without_reported_counts_the_budget_block_and_tags_are_estimation_tokens() -> None:
    actor = Scripted(lambda o: f"{SOLVE}<estimate>[10, 20]</estimate>")
    run = _run(actor)
    observation = actor.seen[0][0]
    (turn,) = run.turns
    assert run.success and run.end_reason == "done"
    # acting: what the environment counts in replay mode (its prompt and the action)
    assert turn.acting_tokens == count_tokens(observation.env_text) + count_tokens(SOLVE)
    # estimation: the budget block shown, and the estimate written
    expected = count_tokens(observation.budget_text) + count_tokens("<estimate>[10, 20]</estimate>")
    assert turn.estimation_tokens == expected
    assert observation.text == f"{observation.env_text}\n\n{observation.budget_text}"
    assert observation.budget_text == budget_block(
        ("tokens",), {"tokens": 0.0}, {"tokens": 2500.0}, protocol="single", may_stop=True
    )


def test_reported_counts_are_split_by_the_counted_estimation_share() -> None:
    read = read_online_reply(
        {
            "text": "<answer>Up</answer><estimate>[1, 2]</estimate><stop/>",
            "usage": {"input_tokens": 500, "output_tokens": 40},
        },
        ("tokens",),
        "bagen",
    )
    assert read.stop and read.estimate == Interval(1, 2)
    assert read.acting_text == "<answer>Up</answer>"
    block = "Budget so far -- tokens: used 0 of 100 (100 left)."
    est_out = count_tokens("<estimate>[1, 2]</estimate><stop/>")
    acting_in, acting_out, estimation = split_tokens(read, block)
    assert acting_in == 500 - count_tokens(block)
    assert acting_out == 40 - est_out
    assert estimation == count_tokens(block) + est_out
    assert acting_in + acting_out + estimation == 540


# --------------------------------------------------------------------------- stops, measured


def test_a_stop_on_a_run_that_would_have_succeeded_is_a_success_lost() -> None:
    def fn(o: Any) -> Any:
        if o.may_stop and o.turn == 1:
            return {"estimate": "impossible", "stop": True, **_usage(100, 10, 10)}
        return {"action": SOLVE, **_usage(100, 10, 0)}

    actor = Scripted(fn)
    run = _run(actor)
    assert run.stopped_at == 1 and not run.success and run.end_reason == "stopped"
    # the continuation re-asks turn 1 in replay mode (no budget shown), and solves
    assert [(o.turn, o.may_stop, cap) for o, _, cap in actor.seen] == [
        (1, True, {"tokens": 2500.0}),
        (1, False, None),
    ]
    assert actor.seen[1][0].budget_text == "" and actor.seen[1][0].mode == "replay"
    assert run.continuation_success is True and run.would_succeed
    scores, _, _ = score_online_runs([run], success_value=1.0)
    assert scores["stop_rate"] == 1.0 and scores["successes_lost"] == 1.0
    assert scores["saved_token_share"] is None  # no run would have failed
    # saved 110 of 110 tokens, minus one success worth one average run: 1 - 1 = 0
    assert scores["tokens_saved"] == 110 and scores["net_value"] == 0.0
    assert scores["acting_tokens"] == 100 and scores["estimation_tokens"] == 10
    # the k = 0 estimate said impossible; the measured continuation says it was feasible
    (result,) = online_probe_results([run])
    assert result.truth.feasible and isinstance(result.estimate, Impossible)
    assert scores["fail_f1"] == 0.0


def test_a_stop_on_a_run_that_would_have_failed_saves_its_tokens() -> None:
    def fn(o: Any) -> Any:
        if o.may_stop:
            return {"estimate": "impossible", "stop": True, **_usage(100, 10, 10)}
        return {"action": "<answer>Left</answer>", **_usage(100, 10, 0)}

    run = _run(Scripted(fn), cap=500.0)
    # continuation: 110 per turn, turns 1-4 played (440), the 5th would make 550 > 500
    cont = run.phase_turns("continuation")
    assert [t.executed for t in cont] == [True] * 4 + [False]
    assert run.continuation_success is False and run.continuation_end == "cap"
    scores, _, _ = score_online_runs([run], success_value=1.0)
    assert scores["saved_token_share"] == 1.0  # 550 of the 550 tokens it would have spent
    assert scores["successes_lost"] == 0.0 and scores["net_value"] == 1.0
    assert scores["fail_f1"] == 1.0 and scores["macro_f1_all"] == 0.5
    # the same numbers from the metrics module on a hand-built probe (C_T = 4 x 110)
    record = ProbeRecord(run.rollout_id, 0, 4, 0.0, 440.0, 500.0, False, False, Impossible())
    assert fail_f1([record]).f1 == 1.0 and macro_f1([record]) == 0.5


def test_early_stop_outcome_over_several_runs() -> None:
    def lost_fn(o: Any) -> Any:
        if o.may_stop and o.turn == 1:
            return {"estimate": "impossible", "stop": True, **_usage(100, 10, 10)}
        return {"action": SOLVE, **_usage(100, 10, 0)}

    def kept_fn(o: Any) -> Any:
        return {"action": SOLVE, **_usage(100, 10, 0)}

    lost, kept = _run(Scripted(lost_fn)), _run(Scripted(kept_fn))
    out = early_stop_outcome([lost, kept], success_value=0.5)
    assert out["stop_rate"] == 0.5 and out["successes_lost"] == 0.5
    # 110 saved of 220 tokens the two runs would have spent, minus 0.5 x 0.5 lost
    assert out["net_value"] == pytest.approx(110 / 220 - 0.25)
    assert out["success_without_stops"] == 1.0


# --------------------------------------------------------------------------- two-call protocol


def test_two_call_protocol_asks_after_each_action_and_stops_on_the_next_turn() -> None:
    def fn(o: Any) -> Any:
        if o.may_stop and isinstance(o.last_estimate, Impossible):
            return {"stop": True, **_usage(100, 10, 10)}
        if o.may_stop:
            return {"action": "<answer>Left</answer>", **_usage(100, 10, 0)}
        return {"action": SOLVE, **_usage(100, 10, 0)}

    def estimate(probe: Any) -> Any:
        return {
            "text": "<answer>impossible</answer>",
            "usage": {"input_tokens": 40, "output_tokens": 5},
        }

    actor = Scripted(fn, estimate)
    run = _run(actor, protocol="two")
    (probe,) = actor.probes  # one separate call: after turn 1 (turn 2 stopped)
    assert probe.k == 1 and probe.used == {"tokens": 110.0} and probe.budget == {"tokens": 2500.0}
    assert run.stopped_at == 2 and run.continuation_success
    first = run.turns[0]
    assert first.estimation_tokens == 0 + 45 and first.estimate_k == 1  # act call's share + call
    assert run.estimation_tokens() == 45 + 10
    (result,) = online_probe_results([run])
    # probe after turn 1 of a trajectory of 2 played turns (Left, then the solve)
    assert result.probe.k == 1 and result.truth.T == 2
    assert result.truth.remaining == {"tokens": 110.0}


# --------------------------------------------------------------------------- bad input


def test_an_unparseable_estimate_is_invalid_with_a_reason_and_the_run_goes_on() -> None:
    run = _run(Scripted(lambda o: f"{SOLVE}<estimate>about 300</estimate>"))
    assert run.success
    scores, reasons, _ = score_online_runs([run])
    assert scores["invalid_rate"] == 1.0
    ((reason, count),) = reasons.items()
    assert reason.startswith("estimate:") and count == 1


def test_an_invalid_action_is_a_wasted_turn_that_costs_its_tokens() -> None:
    actor = Scripted(lambda o: "<answer>Jump</answer>" if o.turn == 1 else SOLVE)
    run = _run(actor)
    first, second = run.turns
    assert first.executed and "unknown action" in first.info["error"]
    assert first.acting_tokens == count_tokens(actor.seen[0][0].env_text) + count_tokens(
        "<answer>Jump</answer>"
    )
    assert "was not played" in actor.seen[1][0].env_text  # the environment's own feedback
    assert second.executed and run.success


@pytest.mark.parametrize(
    "reply",
    [None, 42, {"action": object()}, {"estimate": 3.5}, "<estimate>[1, 2"],
)
def test_odd_replies_never_crash_a_run(reply: Any) -> None:
    run = _run(Scripted(lambda o: reply), cap=300.0)
    assert run.end_reason in ("cap", "done", "max_turns") and not run.success


# --------------------------------------------------------------------------- cells


def _reference_rollouts(env: str, n: int) -> list[Any]:
    from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts

    return anyio.run(lambda: generate_env_rollouts(env, n, seed=42, actor=ReferenceActor(42)))


@pytest.mark.parametrize("env", ["sokoban-8x8", "search"])
def test_the_replay_pass_is_the_replay_suite_s_rollout(env: str) -> None:
    # A second method: the replay suite's own generator, same actor, same seed, same cap.
    result = anyio.run(
        lambda: run_online_cell(env, reference_online_agent("always-feasible", 42), n=6, seed=42)
    )
    expected = _reference_rollouts(env, 6)
    for mine, theirs in zip(result.replay_runs, expected, strict=True):
        assert mine.rollout_id == theirs.id and mine.success == theirs.success
        played = [t.usage["tokens"] for t in mine.turns if t.executed]
        assert played == [t.usage["tokens"] for t in theirs.turns]
    # an agent that never stops acts exactly as in replay mode
    assert result.scores["acting_tokens"] == result.scores["replay_acting_tokens"]
    assert result.scores["success_rate"] == result.scores["replay_success_rate"]


def test_warehouse_online_runs_follow_the_external_caps() -> None:
    from pytest_budget.awareness.online._cell import cell_caps

    result = anyio.run(
        lambda: run_online_cell(
            "warehouse",
            reference_online_agent("always-feasible", 42),
            n=4,
            seed=42,
            multiplier=0.5,
            replay=False,
        )
    )
    caps = cell_caps("warehouse", 0.5)
    assert caps["time_weeks"] == 11.0
    for run in result.runs:
        # The run ends at the first step after which some budget is over its cap, not before
        # (2 weeks per step: time alone would end it after step 6).
        used = dict.fromkeys(caps, 0.0)
        over = []
        for turn in run.turns:
            for dim in caps:
                used[dim] += turn.usage[dim]
            over.append(any(used[d] > caps[d] for d in caps))
        assert run.end_reason == "cap" and not run.success
        assert over[-1] and not any(over[:-1]) and len(run.turns) <= 6


def test_cap_levels_move_success_and_same_seed_same_scores() -> None:
    def cell(multiplier: float) -> dict[str, Any]:
        agent = reference_online_agent("linear-visible", 42)
        return anyio.run(
            lambda: run_online_cell("sokoban-6x6", agent, n=8, seed=42, multiplier=multiplier)
        ).scores

    tight, wide = cell(0.5), cell(2.0)
    assert tight["replay_success_rate"] <= wide["replay_success_rate"]
    assert cell(0.5) == tight  # deterministic


def test_reference_agent_stops_when_its_estimate_says_impossible() -> None:
    agent = reference_online_agent("always-impossible", 42)
    assert isinstance(agent, ReferenceOnlineAgent)
    result = anyio.run(lambda: run_online_cell("sokoban-6x6", agent, n=4, seed=42, replay=False))
    # no estimate on turn 1 (nothing to extrapolate from), impossible and a stop on turn 2
    # for every run still going then
    for run in result.runs:
        finished_first = run.stopped_at is None and len(run.turns) == 1
        assert run.stopped_at == 2 or finished_first
        assert run.success == finished_first
    assert any(run.stopped_at == 2 for run in result.runs)


def test_hostile_estimate_objects_are_invalid_not_errors() -> None:
    read = read_online_reply({"action": SOLVE, "estimate": Interval(5, 1)}, ("tokens",), "strict")
    assert isinstance(read.estimate, Invalid) and "reversed" in read.estimate.reason


def test_the_cap_curve_is_drawn_from_online_cells() -> None:
    pytest.importorskip("matplotlib")
    from pytest_budget.awareness.online._figures import online_charts

    cells = [
        OnlineCellRecord(
            suite="awareness-online",
            cell=f"sokoban-8x8-{cap}x-single-{agent}",
            env="sokoban-8x8",
            protocol="single-call",
            agent=agent,
            seed=42,
            outcome="ok",
            cap_multiplier=cap,
            scores={"success_rate": s, "replay_success_rate": s, "mre_p50": 0.4},
        )
        for agent in ("a", "b")
        for cap, s in ((0.5, 0.1), (1.0, 0.4), (2.0, 0.7))
    ]
    (chart,) = online_charts(cells, {"a": "#0072B2", "b": "#E69F00"}, "")
    assert chart.key == "awareness-online-caps" and chart.png
    (empty,) = online_charts([], {}, "")
    assert not empty.png and "no scored online cells" in empty.note


@pytest.mark.parametrize("env", ["sokoban-8x8", "search", "warehouse"])
def test_measured_stops_add_up_with_the_replay_pass(env: str) -> None:
    # The reference policy acts the same whether or not it watches its budget, so every
    # replay-mode success is either an online success or a success lost to a stop.
    agent = reference_online_agent("linear-visible", 42)
    scores = anyio.run(lambda: run_online_cell(env, agent, n=12, seed=42)).scores
    assert scores["stop_rate"] > 0
    assert scores["success_rate"] + scores["successes_lost"] == pytest.approx(
        scores["replay_success_rate"]
    )
    assert scores["success_without_stops"] == pytest.approx(scores["replay_success_rate"])


def test_two_call_without_an_estimate_method_is_invalid_and_costs_nothing() -> None:
    run = _run(Scripted(lambda o: "<answer>Left</answer>" if o.turn == 1 else SOLVE),
               protocol="two")  # fmt: skip
    first = run.turns[0]
    assert isinstance(first.estimate, Invalid) and "no estimate(probe)" in first.estimate.reason
    # the act call's budget block only: the estimate call never happened
    block = budget_block(
        ("tokens",), {"tokens": 0.0}, {"tokens": 2500.0}, protocol="two", may_stop=True
    )
    assert run.success and first.estimation_tokens == count_tokens(block)  # fmt: skip


def test_an_actor_that_raises_ends_its_run_and_a_cell_of_failures_is_an_error() -> None:
    def boom(observation: Any, used: Any, cap: Any) -> Any:
        raise RuntimeError("endpoint down")

    run = _run(boom)
    assert run.end_reason == "agent_error" and "endpoint down" in (run.agent_error or "")
    result = anyio.run(lambda: run_online_cell("sokoban-6x6", boom, n=2, seed=42, replay=False))
    assert result.outcome == "error" and "endpoint down" in result.reason
