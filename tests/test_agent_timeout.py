"""Every agent call has a deadline (--budget-agent-timeout): a hung agent never hangs a run."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from pytest_budget._core.agent_log import agent_timeout, set_agent_timeout
from pytest_budget._core.roles import AgentError, call_role
from pytest_budget._run.options import OptionError, parse_options
from pytest_budget.models._loop import run_on_worker_loop


@pytest.fixture
def short_deadline() -> object:
    before = agent_timeout()
    set_agent_timeout(0.3)
    yield
    set_agent_timeout(before)


class SleepsForever:
    name = "sleeper"

    def estimate(self, probe: object) -> str:
        time.sleep(3600)
        return "never"


class AsyncHangs:
    name = "async-hang"

    async def estimate(self, probe: object) -> str:
        await anyio.sleep(3600)
        return "never"


@pytest.mark.parametrize("agent", [SleepsForever(), AsyncHangs()], ids=["sync", "async"])
def test_a_hung_agent_call_ends_as_that_items_error(agent: object, short_deadline: None) -> None:
    async def call() -> tuple[str, float]:
        started = time.monotonic()
        with pytest.raises(AgentError) as info:
            await call_role(agent, "estimator", object(), limiter=anyio.CapacityLimiter(1))
        return info.value.reason, time.monotonic() - started

    reason, took = run_on_worker_loop(call)
    assert reason == (
        "timed out after 0.3 s (--budget-agent-timeout); the call was abandoned and the run goes on"
    )
    assert 0.25 < took < 2.0


def test_the_limiter_token_comes_back_after_a_timeout(short_deadline: None) -> None:
    limiter = anyio.CapacityLimiter(1)

    class Quick:
        name = "quick"

        def estimate(self, probe: object) -> str:
            return "[1, 2]"

    async def both() -> str:
        with pytest.raises(AgentError):
            await call_role(SleepsForever(), "estimator", object(), limiter=limiter)
        return str(await call_role(Quick(), "estimator", object(), limiter=limiter))

    assert run_on_worker_loop(both) == "[1, 2]"


def _options(option: object = None, ini: object = "") -> float:
    def get_ini(name: str) -> object:
        return ini if name == "budget_agent_timeout" else ([] if name in LISTS else "")

    options = parse_options(
        {"budget_agent_timeout": option}.get, get_ini, rootdir=".", invocation_dir="."
    )
    return options.agent_timeout


LISTS = {"budget_tolerances", "budget_prices", "budget_role_agents"}


def test_the_option_and_ini_parse() -> None:
    assert _options() == 900.0
    assert _options("12.5") == 12.5
    assert _options(None, "30") == 30.0
    assert _options("0") == 0.0
    for bad in ("soon", "-1", "inf"):
        with pytest.raises(OptionError, match="--budget-agent-timeout"):
            _options(bad)


def test_a_sleeping_sync_agent_fails_its_items_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    # A user estimator that sleeps forever on one probe in three: those probes are the
    # agent's errors after the deadline, the other cells and probes are scored.
    pytester.makeconftest(
        """
        import time

        class Sometimes:
            name = "sometimes"
            calls = 0

            def estimate(self, probe):
                Sometimes.calls += 1
                if Sometimes.calls % 3 == 0:
                    time.sleep(3600)
                return "<answer>[0, 100000]</answer>"

        def pytest_budget_estimator(config):
            return Sometimes()
        """
    )
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--budget-suite=awareness", "--budget-env=swe-synthetic", "--budget-gate=off",
        "--budget-agent-timeout=0.5", "--budget-report=r.json", "-p", "no:cacheprovider",
        "--budget-allow-partial", "--budget-concurrency=64", "-p", "no:hypothesispytest",
    )  # fmt: skip
    # 64 calls at once: the ~170 hung calls wait out their 0.5 s deadlines together (at the
    # default 8 the cell took ~11 s); hypothesis's plugin adds ~4 s at exit and is not tested.
    took = time.monotonic() - started
    report = json.loads((pytester.path / "r.json").read_text())
    (cell,) = report["cells"]
    assert "timed out after 0.5 s (--budget-agent-timeout)" in str(cell)
    assert cell["scores"]["n_probes"] > 0
    assert took < 120
    assert result.ret in (0, 1)


def test_an_unparseable_timeout_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--budget-agent-timeout=soon", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--budget-agent-timeout: 'soon' is not seconds*"])
