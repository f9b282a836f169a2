"""Usage arithmetic, budgets, nested meters, thread safety and the current-meter context."""

from __future__ import annotations

import json
import pickle
import threading

import anyio
import pytest

from pytest_budget._core.budget import (
    KNOWN_DIMENSIONS,
    SCOPES,
    Budget,
    BudgetExceeded,
    Meter,
    Usage,
    charge,
    current_meter,
)

# -- Usage ----------------------------------------------------------------------------------


def test_usage_reads_zero_for_missing_dimensions() -> None:
    usage = Usage(tokens=10, usd=0.5)
    assert usage["tokens"] == 10.0
    assert usage["usd"] == 0.5
    assert usage["time_weeks"] == 0.0
    assert "tokens" in usage and "time_weeks" not in usage
    assert usage.get("time_weeks") is None
    assert sorted(usage) == ["tokens", "usd"]
    assert len(usage) == 2


def test_usage_arithmetic() -> None:
    a = Usage(tokens=10, tool_calls=1)
    b = Usage.from_mapping({"tokens": 5, "time_weeks": 2})
    assert a + b == Usage(tokens=15, tool_calls=1, time_weeks=2)
    assert (a + b) - b == a
    assert sum([a, b, a]) == Usage(tokens=25, tool_calls=2, time_weeks=2)
    assert Usage.zero() + a == a
    assert a - a == Usage.zero()


def test_usage_equality_ignores_explicit_zeros_and_compares_with_dicts() -> None:
    assert Usage(tokens=0) == Usage.zero()
    assert hash(Usage(tokens=0)) == hash(Usage.zero())
    assert Usage(tokens=3) == {"tokens": 3.0}
    assert Usage(tokens=3) != Usage(tokens=4)
    assert Usage(tokens=3) != "tokens=3"


def test_usage_as_dict_is_sorted_and_json_serializable() -> None:
    usage = Usage(usd=0.25, tokens=7, seconds=1.5)
    assert list(usage.as_dict()) == ["seconds", "tokens", "usd"]
    assert json.loads(json.dumps(usage.as_dict())) == {"seconds": 1.5, "tokens": 7.0, "usd": 0.25}
    assert repr(usage) == "Usage(seconds=1.5, tokens=7, usd=0.25)"


def test_usage_is_immutable() -> None:
    usage = Usage(tokens=1)
    with pytest.raises(AttributeError):
        usage.tokens = 2  # type: ignore[attr-defined]
    usage.as_dict()["tokens"] = 5
    assert usage["tokens"] == 1.0


@pytest.mark.parametrize(
    ("amounts", "message"),
    [
        ({"tokens": -3}, "usage 'tokens' must be a non-negative finite number, got -3"),
        ({"usd": float("nan")}, "usage 'usd' must be a non-negative finite number, got nan"),
        ({"tokens": float("inf")}, "usage 'tokens' must be a non-negative finite number, got inf"),
        ({"tokens": "12"}, "usage 'tokens' must be a number, got '12'"),
        ({"tool_calls": True}, "usage 'tool_calls' must be a number, got True"),
        ({"": 1}, "usage dimension names must be non-empty strings, got ''"),
    ],
)
def test_usage_rejects_bad_amounts(amounts: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        Usage.from_mapping(amounts)
    assert str(info.value) == message


def test_usage_subtraction_below_zero_names_the_dimension() -> None:
    with pytest.raises(ValueError, match="usage 'tokens' must be a non-negative finite number"):
        Usage(tokens=1) - Usage(tokens=2)


# -- Budget ---------------------------------------------------------------------------------


def test_budget_caps_and_dimensions() -> None:
    budget = Budget(tokens=2500, tool_calls=4, time_weeks=10)
    assert budget.caps == {"time_weeks": 10.0, "tokens": 2500.0, "tool_calls": 4.0}
    assert budget.dimensions == ("time_weeks", "tokens", "tool_calls")
    assert budget == Budget.from_mapping({"tokens": 2500, "tool_calls": 4, "time_weeks": 10})
    assert repr(Budget(tokens=2500, usd=0.5)) == "Budget(tokens=2500, usd=0.5)"
    assert set(KNOWN_DIMENSIONS) == {"tokens", "tool_calls", "usd", "seconds"}


def test_budget_remaining_exceeded_and_fits() -> None:
    budget = Budget(tokens=100, tool_calls=2)
    usage = Usage(tokens=120, tool_calls=1, usd=9)
    assert budget.remaining(usage) == Usage(tokens=0, tool_calls=1)
    assert set(budget.remaining(usage)) == {"tokens", "tool_calls"}  # cap dimensions only
    assert budget.exceeded_by(usage) == ("tokens",)
    assert not budget.fits(usage)
    assert budget.fits(Usage(tokens=100, tool_calls=2))  # at the cap is within it
    assert budget.exceeded_by(Usage(tokens=101, tool_calls=3)) == ("tokens", "tool_calls")


def test_budget_tolerates_float_rounding_in_summed_costs() -> None:
    assert Budget(usd=0.3).fits(Usage(usd=0.1) + Usage(usd=0.2))
    assert not Budget(usd=0.3).fits(Usage(usd=0.3001))


def test_zero_cap_forbids_the_dimension_and_none_means_uncapped() -> None:
    budget = Budget.from_mapping({"tool_calls": 0, "tokens": None})
    assert budget.caps == {"tool_calls": 0.0}
    assert budget.fits(Usage(tokens=10**9))
    assert budget.exceeded_by(Usage(tool_calls=1)) == ("tool_calls",)


@pytest.mark.parametrize(
    ("caps", "message"),
    [
        ({"tokens": -1}, "budget cap 'tokens' must be a non-negative finite number, got -1"),
        ({"usd": float("inf")}, "budget cap 'usd' must be a non-negative finite number, got inf"),
        ({"tokens": "2500"}, "budget cap 'tokens' must be a number, got '2500'"),
    ],
)
def test_budget_rejects_bad_caps(caps: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        Budget.from_mapping(caps)
    assert str(info.value) == message


# -- Meter ----------------------------------------------------------------------------------


def test_meter_charges_itself_and_its_ancestors() -> None:
    session = Meter("session", Budget(tokens=10_000))
    rollout = session.child("rollout")
    turn = rollout.child("turn", Budget(tokens=500))
    turn.charge(Usage(tokens=200, tool_calls=1))
    rollout.charge(tokens=50)
    assert turn.used == Usage(tokens=200, tool_calls=1)
    assert rollout.used == Usage(tokens=250, tool_calls=1)
    assert session.used == Usage(tokens=250, tool_calls=1)
    assert turn.parent is rollout and rollout.parent is session


def test_turn_cap_raises_with_scope_turn_and_records_the_overrun() -> None:
    session = Meter("session", Budget(tokens=10_000))
    turn = session.child("turn", Budget(tokens=2500))
    turn.charge(Usage(tokens=2000))
    with pytest.raises(BudgetExceeded) as info:
        turn.charge(Usage(tokens=612))
    error = info.value
    assert (error.scope, error.dimension, error.cap, error.used) == ("turn", "tokens", 2500, 2612)
    assert str(error) == "budget exceeded in scope 'turn': tokens 2612 > cap 2500"
    assert turn.used["tokens"] == 2612  # recorded so the report shows the overrun
    assert session.used["tokens"] == 2612


def test_session_cap_across_rollouts_raises_with_scope_session() -> None:
    session = Meter("session", Budget(usd=1.0))
    for _ in range(3):
        rollout = session.child("rollout", Budget(usd=0.5))
        rollout.charge(usd=0.3)
    rollout = session.child("rollout", Budget(usd=0.5))
    with pytest.raises(BudgetExceeded) as info:
        rollout.charge(usd=0.15)
    assert (info.value.scope, info.value.dimension) == ("session", "usd")
    assert str(info.value) == "budget exceeded in scope 'session': usd 1.05 > cap 1"
    assert rollout.used == Usage(usd=0.15)


def test_innermost_broken_scope_is_reported() -> None:
    session = Meter("session", Budget(tokens=100))
    turn = session.child("turn", Budget(tokens=50))
    with pytest.raises(BudgetExceeded) as info:
        turn.charge(tokens=200)
    assert info.value.scope == "turn"


def test_a_meter_past_its_cap_keeps_raising() -> None:
    meter = Meter("problem", Budget(tool_calls=1))
    with pytest.raises(BudgetExceeded):
        meter.charge(tool_calls=2)
    with pytest.raises(BudgetExceeded):
        meter.charge(tokens=1)


def test_check_does_not_record() -> None:
    session = Meter("session", Budget(tokens=100))
    turn = session.child("turn", Budget(tokens=80))
    assert turn.check(Usage(tokens=80))
    assert not turn.check(tokens=81)
    session.charge(tokens=30)
    assert not turn.check(tokens=80)  # the session has only 70 left
    assert turn.used == Usage.zero()


def test_remaining_is_the_tightest_over_the_chain() -> None:
    session = Meter("session", Budget(tokens=1000, usd=2))
    rollout = session.child("rollout", Budget(tokens=300, tool_calls=5))
    turn = rollout.child("turn")
    session.charge(tokens=800)
    turn.charge(tokens=50, tool_calls=1)
    assert turn.remaining == Usage(tokens=150, usd=2, tool_calls=4)
    assert turn.max_tokens_for_next_call() == 150


def test_max_tokens_is_floored_and_none_when_uncapped() -> None:
    assert Meter("session").max_tokens_for_next_call() is None
    assert Meter("turn", Budget(usd=1)).max_tokens_for_next_call() is None
    meter = Meter("turn", Budget(tokens=10.7))
    assert meter.max_tokens_for_next_call() == 10
    with pytest.raises(BudgetExceeded):
        meter.charge(tokens=20)
    assert meter.max_tokens_for_next_call() == 0


def test_unknown_scope_is_rejected() -> None:
    with pytest.raises(ValueError) as info:
        Meter("episode")  # type: ignore[arg-type]
    assert str(info.value) == (
        "unknown budget scope 'episode'; use one of: turn, rollout, problem, session"
    )
    assert SCOPES == ("turn", "rollout", "problem", "session")


def test_budget_exceeded_pickles() -> None:
    error = BudgetExceeded("turn", "tokens", 2500.0, 2612.0)
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.scope, clone.dimension, clone.cap, clone.used) == ("turn", "tokens", 2500, 2612)
    assert str(clone) == str(error)


def test_many_threads_charging_sum_exactly() -> None:
    session = Meter("session", Budget(tokens=10**9))
    rollouts = [session.child("rollout") for _ in range(4)]
    threads_per_rollout, charges = 8, 500
    barrier = threading.Barrier(len(rollouts) * threads_per_rollout)

    def work(meter: Meter) -> None:
        turn = meter.child("turn")
        barrier.wait()
        for _ in range(charges):
            turn.charge(tokens=1, usd=0.5)

    threads = [
        threading.Thread(target=work, args=(rollout,))
        for rollout in rollouts
        for _ in range(threads_per_rollout)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    per_rollout = threads_per_rollout * charges
    assert all(r.used == Usage(tokens=per_rollout, usd=per_rollout / 2) for r in rollouts)
    assert session.used == Usage(tokens=4 * per_rollout, usd=2 * per_rollout)


def test_threads_racing_a_cap_raise_exactly_once_per_overrun_charge() -> None:
    meter = Meter("session", Budget(tokens=100))
    raised = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(20):
            try:
                meter.charge(tokens=1)
            except BudgetExceeded:
                with lock:
                    raised.append(1)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.used["tokens"] == 200
    assert len(raised) == 100  # every charge past the 100th, and only those


# -- the current meter ----------------------------------------------------------------------


def test_scope_makes_the_child_current_and_restores() -> None:
    session = Meter("session", Budget(tokens=1000))
    assert current_meter() is None
    charge(tokens=5)  # no meter: a no-op
    with session.activate():
        assert current_meter() is session
        with session.scope("turn", Budget(tokens=100)) as turn:
            assert current_meter() is turn and turn.parent is session
            charge(Usage(tokens=40))
            charge(tool_calls=1)
        assert current_meter() is session
    assert current_meter() is None
    assert session.used == Usage(tokens=40, tool_calls=1)


def test_scope_restores_the_current_meter_after_an_overrun() -> None:
    session = Meter("session")
    with pytest.raises(BudgetExceeded):
        with session.scope("turn", Budget(tokens=10)):
            charge(tokens=11)
    assert current_meter() is None
    assert session.used == Usage(tokens=11)


def test_current_meter_is_isolated_between_anyio_tasks() -> None:
    session = Meter("session", Budget(tokens=10_000))
    seen: dict[int, Meter | None] = {}
    rollouts: dict[int, Meter] = {}

    async def rollout(index: int) -> None:
        with session.scope("rollout", Budget(tokens=1000)) as meter:
            rollouts[index] = meter
            for _ in range(5):
                charge(tokens=index + 1)
                await anyio.sleep(0)  # let the other tasks interleave
            # Code run in a worker thread sees the task's meter too.
            await anyio.to_thread.run_sync(lambda: charge(tool_calls=1))
            seen[index] = current_meter()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for index in range(3):
                group.start_soon(rollout, index)
        assert current_meter() is None

    anyio.run(main)
    for index in range(3):
        assert seen[index] is rollouts[index]
        assert rollouts[index].used == Usage(tokens=5 * (index + 1), tool_calls=1)
    assert session.used == Usage(tokens=5 * (1 + 2 + 3), tool_calls=3)
