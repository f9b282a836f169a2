"""Rollout files, probes, reference estimators and whole cells, on hand-worked rollouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from pytest_budget.awareness._estimators import (
    AlwaysFeasibleEstimator,
    AlwaysImpossibleEstimator,
    LinearEstimator,
    LinearVisibleEstimator,
    OracleEstimator,
    RandomEstimator,
    format_answer,
)
from pytest_budget.awareness._evaluate import parse_answer, run_awareness_cell
from pytest_budget.awareness._replay.answers import Impossible, Interval, IntervalMap, Invalid
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import (
    Rollout,
    RolloutFileError,
    Turn,
    actor_reply,
    read_rollouts,
    rollout_from_dict,
    write_rollouts,
)
from tests.schemas import validate


def _rollout(rid: str, usages: list[float], success: bool, cap: float = 700) -> Rollout:
    turns = tuple(
        Turn({"tokens": u}, observation=f"{rid} obs {i}", action=f"{rid} act {i}")
        for i, u in enumerate(usages, start=1)
    )
    return Rollout(rid, "sokoban", {"tokens": cap}, success, turns)


# A: succeeds within budget (C = 100, 300, 600 <= 700); B: fails; C: succeeds over budget.
A = _rollout("A", [100, 200, 300], True)
B = _rollout("B", [400, 400], False)
C = _rollout("C", [300, 300, 300], True)


def _run(rollouts: list[Rollout], estimator: Any, **kwargs: Any) -> Any:
    return anyio.run(lambda: run_awareness_cell(rollouts, estimator, **kwargs))


# ----------------------------------------------------------------------------- rollouts


def test_cumulative_total_and_feasibility() -> None:
    assert A.cumulative() == [{"tokens": 100}, {"tokens": 300}, {"tokens": 600}]
    assert A.total() == {"tokens": 600} and A.feasible
    assert not B.feasible  # failed
    assert C.total() == {"tokens": 900} and C.success and not C.feasible  # over the cap


def test_file_round_trip(tmp_path: Path) -> None:
    path = write_rollouts(tmp_path / "r.jsonl", [A, B])
    assert read_rollouts(path) == [A, B]
    first = json.loads(path.read_text().splitlines()[0])
    assert first["schema_version"] == 1 and first["turns"][0]["usage"] == {"tokens": 100}


def test_minimal_user_format_is_enough(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    record = {"id": "x", "env": "my-env", "budget": {"tokens": 10}, "success": True,
              "turns": [{"usage": {"tokens": 3}}, {"usage": {"tokens": 4}}]}  # fmt: skip
    path.write_text(json.dumps(record) + "\n\n")
    (rollout,) = read_rollouts(path)
    assert rollout.env == "my-env" and rollout.T == 2 and rollout.feasible


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("success"), "missing field 'success'"),
        (lambda d: d.update(turns=[]), "'turns' is empty"),
        (lambda d: d["turns"][1]["usage"].update(tokens=-1), "must not be negative"),
        (lambda d: d["turns"][0].pop("usage"), "turns[0] has no 'usage' object"),
        (lambda d: d["turns"][0]["usage"].pop("tokens"), "lacks budget dimension 'tokens'"),
        (lambda d: d.update(schema_version=7), "schema_version 7 is not supported"),
        (lambda d: d.update(budget={"tokens": 0}), "every budget cap must be positive"),
        (lambda d: d.update(success="yes"), "'success' must be true or false"),
    ],
)
def test_bad_records_name_file_line_and_problem(tmp_path: Path, mutate: Any, message: str) -> None:
    good = {"id": "a", "env": "e", "budget": {"tokens": 10}, "success": True,
            "turns": [{"usage": {"tokens": 1}}, {"usage": {"tokens": 2}}]}  # fmt: skip
    bad = json.loads(json.dumps(good))
    bad["id"] = "b"
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RolloutFileError) as info:
        read_rollouts(path)
    text = str(info.value)
    assert text.startswith(f"{path}:2: ") and message in text and "\n" not in text


def test_not_json_duplicate_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("{nope\n")
    with pytest.raises(RolloutFileError, match=r"x\.jsonl:1: not valid JSON"):
        read_rollouts(path)
    line = json.dumps(
        {"id": "a", "env": "e", "budget": {"t": 1}, "success": True, "turns": [{"usage": {"t": 1}}]}
    )
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(RolloutFileError, match="2: duplicate rollout id 'a' \\(first on line 1\\)"):
        read_rollouts(path)
    with pytest.raises(RolloutFileError, match="no such rollout file"):
        read_rollouts(tmp_path / "absent.jsonl")


def test_actor_reply_forms() -> None:
    assert actor_reply("Up").text == "Up" and actor_reply("Up").tokens is None
    assert actor_reply({"text": "Up", "usage": {"tokens": 7}}).tokens == 7
    usage = {"input_tokens": 3, "output_tokens": 4}
    assert actor_reply({"content": "x", "usage": usage}).tokens == 7
    assert actor_reply(12).text == "12"


def test_rollout_from_dict_rejects_non_object() -> None:
    with pytest.raises(RolloutFileError, match="must be a JSON object"):
        rollout_from_dict([1, 2])


# ----------------------------------------------------------------------------- probes


def test_probes_cover_non_terminal_turns_with_true_remaining() -> None:
    pairs = make_probes(A)
    assert [p.k for p, _ in pairs] == [1, 2]
    assert [p.used["tokens"] for p, _ in pairs] == [100, 300]
    assert [t.remaining["tokens"] for _, t in pairs] == [500, 300]
    assert all(t.feasible and t.T == 3 for _, t in pairs)
    assert make_probes(_rollout("one", [5], True)) == []


def test_probe_shows_only_the_prefix() -> None:
    (first, _), (second, _) = make_probes(A)
    assert "A obs 1" in first.text and "A act 1" in first.text
    assert "A obs 2" not in first.text and "A obs 3" not in second.text
    assert "tokens = 700" in first.text and "Used so far: tokens 100." in first.text
    assert "<answer>[low, high]</answer>" in first.text
    assert len(first.prefix) == 1 and len(second.prefix) == 2


# ----------------------------------------------------------------------------- estimators


def test_oracle_is_perfect_on_hand_worked_rollouts() -> None:
    outcome = _run([A, B, C], OracleEstimator())
    s = outcome.scores
    assert outcome.n_probes == 2 + 1 + 2 and outcome.n_errors == 0
    assert s["macro_f1_all"] == 1.0 and s["fail_f1"] == 1.0 and s["macro_f1_first"] == 1.0
    # S_k over the probes of successful rollouts A and C: exact intervals on A, impossible
    # on C (succeeded over budget) -> 1 everywhere.  The hit rate counts C's impossible as a
    # miss: 2 of 4.
    assert s["interval_score"] == 1.0 and s["hit_rate"] == 0.5 and s["invalid_rate"] == 0.0
    assert s["mre_p50"] == 0.0 and s["false_abort_rate"] == 0.0
    # Failed (unsuccessful) rollouts: B only, stopped at k=1 after 400 of 800 tokens.
    assert s["saved_token_share"] == pytest.approx(400 / 800)
    assert s["failed_rollouts"] == 1 and s["failed_stopped_share"] == 1.0
    assert s["reward"] == pytest.approx((1.8 * 2 + 0.2 * 3) / 5)


def test_linear_baseline_hand_worked() -> None:
    # A: k=1 R_lin = 100*3-100 = 200 -> [150, 250] (R=500, miss); k=2 R_lin = 150 ->
    # [112.5, 187.5], written [112, 188] so BAGEN's digit-run parser reads it (R=300, miss).
    # B: k=1 total 400*2 = 800 > 700 -> impossible (right).
    # C: k=1 300*3 = 900 > 700 -> impossible (right); k=2 likewise.
    estimator = LinearEstimator().with_ground_truth(
        {(p.rollout_id, p.k): t for r in (A, B, C) for p, t in make_probes(r)}
    )
    (a1, _), (a2, _) = make_probes(A)
    assert estimator.estimate(a1) == "<answer>[150, 250]</answer>"
    assert estimator.estimate(a2) == "<answer>[112, 188]</answer>"
    assert estimator.name == "linear-knows-T"
    s = _run([A, B, C], LinearEstimator()).scores
    # A's intervals miss (S_k 0); C succeeded over budget and is answered impossible (S_k 1,
    # but a miss for the hit rate): interval score 2/4, hit rate 0/4.
    assert s["hit_rate"] == 0.0 and s["interval_score"] == 0.5
    # Feasible class: 2 true, 2 predicted, 2 right -> F1 1; impossible class likewise.
    assert s["macro_f1_all"] == 1.0 and s["fail_f1"] == 1.0


def test_linear_visible_baseline_reads_only_the_probe() -> None:
    """T is guessed as 2k: R_hat = C_k.  A k=1: C=100 -> [75, 125]; k=2: C=300, 600 <= 700
    -> [225, 375].
    B k=1: 400 + 400 = 800 > 700 -> impossible.  C k=1: 300 + 300 = 600 <= 700 -> [225, 375];
    k=2: 600 + 600 > 700 -> impossible.  No side channel: it has no with_ground_truth."""
    estimator = LinearVisibleEstimator()
    assert not hasattr(estimator, "with_ground_truth")
    answers = [estimator.estimate(p) for r in (A, B, C) for p, _ in make_probes(r)]
    assert answers == [
        "<answer>[75, 125]</answer>",
        "<answer>[225, 375]</answer>",
        "<answer>impossible</answer>",
        "<answer>[225, 375]</answer>",
        "<answer>impossible</answer>",
    ]


def test_constant_estimators() -> None:
    feasible = _run([A, B, C], AlwaysFeasibleEstimator()).scores
    # Every probe predicted feasible: feasible F1 = 2*2/(2*2+3) = 4/7, impossible F1 = 0.
    assert feasible["macro_f1_all"] == pytest.approx((4 / 7 + 0) / 2)
    assert feasible["fail_f1"] == 0.0
    # A k=1: [0, 600] covers 500 -> 1 - 600/500 < 0 -> 0; k=2: [0, 400] covers 300 -> 0.
    # C (succeeded over budget): [0, 400] misses R 600, [0, 100] misses 300; S_k 0 (not
    # impossible).  Hit rate over the 4 probes of A and C: 2/4.
    assert feasible["hit_rate"] == 0.5 and feasible["interval_score"] == 0.0
    impossible = _run([A, B, C], AlwaysImpossibleEstimator()).scores
    # false aborts: A's 2 feasible probes, over all 5 probes
    assert impossible["false_abort_rate"] == 0.4 and impossible["fail_f1"] == pytest.approx(
        2 * 3 / (2 * 3 + 2)
    )


def test_random_estimator_is_order_free_and_seeded() -> None:
    probes = [p for r in (A, B, C) for p, _ in make_probes(r)]
    one = [RandomEstimator(seed=1).estimate(p) for p in probes]
    assert one == [RandomEstimator(seed=1).estimate(p) for p in reversed(probes)][::-1]
    assert one != [RandomEstimator(seed=2).estimate(p) for p in probes]
    for text, probe in zip(one, probes, strict=True):
        estimate = parse_answer(text, ("tokens",), "strict")
        assert isinstance(estimate, Interval | Impossible)
        if isinstance(estimate, Interval):
            assert 0 <= estimate.lo <= estimate.hi <= 700 - probe.used["tokens"]


def test_hindsight_baseline_without_truth_is_a_probe_error() -> None:
    (probe, _), _ = make_probes(A)
    with pytest.raises(LookupError, match="hindsight baseline"):
        OracleEstimator().estimate(probe)


def test_format_answer_multi_dimension() -> None:
    text = format_answer({"a": (1, 2), "b": (0.5, 3.25)})
    assert text == "<answer>a:[1, 2], b:[0.5, 3.25]</answer>"


# ----------------------------------------------------------------------------- the cell


def test_parse_policy_decides_reversed_intervals() -> None:
    reply = "<answer>[300, 100]</answer>"
    assert parse_answer(reply, ("tokens",), "bagen") == Interval(100, 300)
    assert isinstance(parse_answer(reply, ("tokens",), "strict"), Invalid)
    assert parse_answer(Impossible(), ("tokens",), "strict") == Impossible()
    bad = parse_answer({"lo": 1}, ("tokens",), "bagen")
    assert isinstance(bad, Invalid) and "expected text" in bad.reason


def test_garbage_is_invalid_and_raising_is_an_error_not_a_crash() -> None:
    def estimator(probe: Any) -> str:
        if probe.rollout_id == "B":
            raise RuntimeError("model fell over")
        if probe.rollout_id == "C":
            return "I think about 300 tokens"
        return "<answer>[250, 550]</answer>"

    outcome = _run([A, B, C], estimator)
    assert outcome.n_probes == 5 and outcome.n_errors == 1
    assert outcome.first_error is not None
    assert "RuntimeError: model fell over" in outcome.first_error
    assert outcome.invalid_reasons == {"missing <answer>...</answer> tag": 2}
    s = outcome.scores
    assert s["n_probes"] == 4 and s["n_errors"] == 1 and s["invalid_rate"] == 0.5
    # A: [250, 550] covers 500 (1 - 300/500 = 0.4) and 300 (1 - 1 = 0); C (succeeded over
    # budget) answered invalid: 0 and a miss.  Over the 4 probes of A and C.
    assert s["interval_score"] == pytest.approx(0.1) and s["hit_rate"] == 0.5


def test_all_errors_make_an_error_cell() -> None:
    def broken(probe: Any) -> str:
        raise ValueError("no")

    outcome = _run([A], broken)
    assert outcome.outcome == "error" and "failed on all 2 probes" in outcome.reason


def test_multi_dimension_cell_scores_each_dimension() -> None:
    def wh(rid: str, usages: list[tuple[float, float]], success: bool) -> Rollout:
        turns = tuple(Turn({"time_weeks": t, "cost": c}) for t, c in usages)
        return Rollout(rid, "warehouse", {"time_weeks": 6, "cost": 100}, success, turns)

    good = wh("g", [(2, 10), (2, 30), (2, 20)], True)  # totals 6, 60: feasible
    bad = wh("b", [(2, 80), (2, 80)], True)  # cost 160 > 100: infeasible

    def estimator(probe: Any) -> str:
        if probe.rollout_id == "b":
            return "<answer>impossible</answer>"
        # k=1: R = (4, 50); k=2: R = (2, 20).  Exact on time, [0, 100] on cost.
        return format_answer({"time_weeks": (6 - 2 * probe.k,) * 2, "cost": (0, 100)})

    outcome = _run([good, bad], estimator)
    s = outcome.scores
    # S_k over the probes of successful rollouts g (k=1, 2) and b (over budget, impossible
    # -> 1): time 1, 1, 1; cost 0, 0, 1.  The joint hit needs every dimension: g 2 of 2.
    assert s["interval_score_time_weeks"] == 1.0
    assert s["interval_score_cost"] == pytest.approx(1 / 3)
    assert s["interval_score"] == pytest.approx(2 / 3) and s["hit_rate"] == 1.0
    assert s["macro_f1_all"] == 1.0
    # Linear baseline per dimension. k=1: R_lin = (4, 20), R = (4, 50), midpoints (4, 50);
    # k=2: R_lin = (2, 20), R = (2, 20), midpoints (2, 50). Cost: reductions 30 and -30.
    assert s["linear_error_reduction_time_weeks"] == 0.0
    assert s["linear_error_reduction_cost"] == 0.0
    assert (s["linear_win_rate_time_weeks"], s["linear_win_rate_cost"]) == (0.0, 0.5)
    assert s["linear_win_rate"] == 0.25
    assert s["linear_error_reduction"] is None
    # cost [0, 100] covers at both k: no misses in BAGEN's 10 bins, bins 3 (k/T = 1/3)
    # and 6 (2/3); bin 1 is empty
    assert (s["optimistic_bin3_cost"], s["conservative_bin6_cost"]) == (0.0, 0.0)
    assert s["optimistic_bin1_cost"] is None and "optimistic_bin9_cost" in s
    assert list(outcome.notes) == ["linear_error_reduction"]
    single = _run([good], lambda p: "<answer>[1, 2]</answer>")
    assert single.scores["invalid_rate"] == 1.0
    assert single.notes["macro_f1_all"] == (
        "F1_feasible = 0: no probe is predicted feasible; F1_impossible = 0: no probe is "
        "truly impossible; no probe is predicted impossible"
    )


def test_single_dimension_cell_notes_only_empty_classes() -> None:
    # A and C: one feasible, one over budget; the oracle predicts both classes.
    assert _run([A, C], OracleEstimator()).notes == {}
    # Only A: nothing is truly impossible, and the oracle never says so.
    notes = _run([A], OracleEstimator()).notes
    assert set(notes) == {"macro_f1_all", "macro_f1_first", "fail_f1"}
    assert notes["fail_f1"] == (
        "F1_impossible = 0: no probe is truly impossible; no probe is predicted impossible"
    )


def test_interval_map_objects_are_accepted() -> None:
    answer = IntervalMap((("a", Interval(1, 2)), ("b", Interval(0, 0))))
    assert parse_answer(answer, ("a", "b"), "bagen") == answer


def test_written_rollouts_match_the_published_schema(tmp_path: Path) -> None:
    rich = Rollout(
        "r", "warehouse", {"time_weeks": 22, "cost": 5.5}, False,
        (Turn({"time_weeks": 2, "cost": 1.5}, "shown", "did", {"reward": -0.1}),),
        {"task": {"target_cash_usd": 600000}},
    )  # fmt: skip
    path = write_rollouts(tmp_path / "r.jsonl", [A, rich])
    for line in path.read_text().splitlines():
        validate(json.loads(line), "rollout.schema.json")
    bad = json.loads(path.read_text().splitlines()[0])
    bad["turns"][0]["usage"]["tokens"] = -1
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, "rollout.schema.json")


def test_task_meta_is_shown_to_the_estimator() -> None:
    rollout = Rollout(
        "w", "warehouse", {"time_weeks": 22}, True,
        (Turn({"time_weeks": 2}), Turn({"time_weeks": 2})),
        {"task": {"target_cash_usd": 600000}, "secret": "not shown"},
    )  # fmt: skip
    ((probe, _),) = make_probes(rollout)
    assert "Task: target_cash_usd = 600000." in probe.text and "secret" not in probe.text
    assert "warehouse business" in probe.text


@pytest.mark.parametrize(
    ("reply", "dims", "policy", "expected"),
    [
        (Interval(300, 100), ("tokens",), "bagen", Interval(100, 300)),
        (Interval(300, 100), ("tokens",), "strict", "reversed interval (lo > hi)"),
        (Interval(float("nan"), 1), ("tokens",), "bagen", "non-finite value (nan/inf)"),
        (Interval(-1, 1), ("tokens",), "bagen", "negative bound"),
        (IntervalMap((("tokens", Interval(1, 2)),)), ("tokens",), "bagen", Interval(1, 2)),
        (IntervalMap((("cost", Interval(1, 2)),)), ("tokens",), "bagen", "expected exactly"),
        (
            IntervalMap((("a", Interval(1, 2)), ("b", Interval(5, 3)))),
            ("a", "b"), "strict", "b: reversed interval (lo > hi)",
        ),
        (
            IntervalMap((("a", Interval(1, 2)), ("b", Interval(5, 3)))),
            ("a", "b"), "bagen", IntervalMap((("a", Interval(1, 2)), ("b", Interval(3, 5)))),
        ),
    ],
)  # fmt: skip
def test_estimate_objects_get_the_text_rules(
    reply: Any, dims: tuple[str, ...], policy: Any, expected: Any
) -> None:
    got = parse_answer(reply, dims, policy)
    if isinstance(expected, str):
        assert isinstance(got, Invalid) and expected in got.reason
    else:
        assert got == expected


def test_budget_order_may_differ_between_rollouts_of_one_cell() -> None:
    first = Rollout("x", "e", {"a": 10, "b": 10}, True, (Turn({"a": 1, "b": 1}),) * 3)
    second = Rollout("y", "e", {"b": 10, "a": 10}, True, (Turn({"a": 2, "b": 2}),) * 3)
    outcome = _run([first, second], OracleEstimator())
    assert outcome.n_probes == 4 and outcome.scores["interval_score"] == 1.0


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = write_rollouts(tmp_path / "r.jsonl", [A])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_rollouts(path) == [A]


# ----------------------------------------------------------------------------- RL reward


def test_cell_reward_reads_text_replies_with_bagens_rl_parser() -> None:
    # bagen.md §1c/§2.9: the RL reward's parser is case-sensitive, never swaps a reversed
    # interval, and wants [int, int] (or one integer); the scoring parser (§1a) accepts
    # all of these, so they earn interval scores but no reward.
    # One feasible rollout: usage 100, 200, 300 under cap 700 -> R_1 = 500, R_2 = 300.
    rollout = _rollout("r", [100, 200, 300], True)
    replies = {
        1: "<answer>[600, 400]</answer>",  # reversed: §1a swaps to [400, 600], covers 500
        2: "<ANSWER>[200, 400]</ANSWER>",  # capitalised tag: §1c finds no tag
    }

    def reversed_and_capitalised(probe: Any) -> str:
        return replies[probe.k]

    outcome = _run([rollout], reversed_and_capitalised)
    assert outcome.scores["hit_rate"] == 1.0  # the scoring parser reads both
    assert outcome.scores["reward"] == 0.0
    # The same answers written as BAGEN's RL parser wants them: 1.8 (1 - 200/500) and
    # 1.8 (1 - 200/300); mean 0.66.
    fixed = {1: "<answer>[400, 600]</answer>", 2: "<answer>[200, 400]</answer>"}
    good = _run([rollout], lambda probe: fixed[probe.k])
    assert good.scores["reward"] == pytest.approx((1.8 * 0.6 + 1.8 / 3) / 2)
    # Estimate objects (no text) keep the structured reward.
    objects = _run([rollout], lambda probe: Interval(*map(int, fixed[probe.k][9:-10].split(","))))
    assert objects.scores["reward"] == pytest.approx(good.scores["reward"])
    # Prose range and three numbers: 0 in the RL reward.
    prose = {1: "<answer>400-600 tokens</answer>", 2: "<answer>[200, 300, 400]</answer>"}
    assert _run([rollout], lambda probe: prose[probe.k]).scores["reward"] == 0.0
