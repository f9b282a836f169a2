"""A user's own tests and agents: fixtures outside the suites, async tests, agent errors.

Every test runs pytest on a pytester directory, as a user's project would: the documented
example files (docs/examples/test_own_agents*.py) with and without a suite, under
pytest-asyncio (strict and auto mode) and anyio's plugin; agents that raise (their
traceback in the failure report), return what their role cannot read, or raise
``BaseException``.  The runs are in-process (tests/inprocess.py: no interpreter start-up a
run), except those of agents raising ``BaseException`` or ``KeyboardInterrupt``, which run
in a subprocess as a user's would: what they check is that the run survives or stops
cleanly, which an in-process run shares with the test's own process.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from tests import inprocess

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
SMALL = (
    "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--budget-pool-size=6",
    "--budget-rollout-count=8", "--budget-query-count=2",
)  # fmt: skip
TRIAGE = ("--budget-suite=triage", "--budget-alpha=0.5", "--budget-unsolvable=0")
ASYNC_INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def example(pytester: pytest.Pytester, name: str, text: str | None = None) -> str:
    source = (EXAMPLES / name).read_text(encoding="utf-8") if text is None else text
    (pytester.path / name).write_text(source, encoding="utf-8")
    return source


def cells(pytester: pytest.Pytester, name: str = "report.json") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads((pytester.path / name).read_text())["cells"]
    return found


# ------------------------------------------------------------------ public fixtures (16.2)

AGENT_NAMES = """
def agent_name(agent):
    return type(agent).__name__

def test_names(budget_agent, budget_planner, budget_estimator, budget_tool_agent,
               budget_solver, budget_actor):
    print("ROLES", budget_agent, agent_name(budget_planner), agent_name(budget_estimator),
          agent_name(budget_tool_agent), agent_name(budget_solver), agent_name(budget_actor))

def test_estimator_alone(budget_agent, budget_estimator):
    print("ESTIMATOR", budget_agent, agent_name(budget_estimator))
"""


@pytest.mark.parametrize(
    ("args", "roles", "estimator"),
    [
        (
            (),
            "cheapest-first CheapestFirstPlanner LinearEstimator GreedyToolAgent",
            "linear-knows-T",
        ),
        (
            ("--budget-agent=oracle",),
            "oracle OraclePlanner OracleEstimator OracleToolAgent",
            "oracle",
        ),
        (
            ("--budget-agent=random,linear-knows-T,greedy",),
            "random RandomPlanner RandomEstimator GreedyToolAgent",
            "random",
        ),
    ],
    ids=["defaults", "oracle", "first-fitting-name"],
)
def test_every_role_fixture_gives_its_own_roles_agent(
    pytester: pytest.Pytester, args: tuple[str, ...], roles: str, estimator: str
) -> None:
    pytester.makepyfile(test_mine=AGENT_NAMES)
    result = inprocess.run(pytester, "-s", *SMALL, *args)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [f"*ROLES {roles} ReferenceSolver ReferenceActor*", f"*ESTIMATOR {estimator} *"]
    )


def test_hook_agents_fill_their_roles_in_user_tests(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
class Mine:
    name = "mine"
    def estimate(self, probe):
        return "<answer>[0, 10]</answer>"

def pytest_budget_estimator(config):
    return Mine()
""")
    pytester.makepyfile(test_mine=AGENT_NAMES)
    result = inprocess.run(pytester, "-s", *SMALL)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*ROLES cheapest-first CheapestFirstPlanner Mine GreedyToolAgent*", "*ESTIMATOR user *"]
    )


@pytest.mark.parametrize(
    ("args", "outcomes"),
    [((), {"passed": 3}), (TRIAGE, {"passed": 3 + 2 * 4})],
    ids=["alone", "with-budget-suite"],
)
def test_own_agents_example(
    pytester: pytest.Pytester, args: tuple[str, ...], outcomes: dict[str, int]
) -> None:
    """docs/examples/test_own_agents_example.py, as documented (with a suite: 8 more cells)."""
    example(pytester, "test_own_agents_example.py")
    result = inprocess.run(
        pytester, "test_own_agents_example.py", *SMALL, *args, "--budget-gate=off"
    )
    result.assert_outcomes(**outcomes)


def test_own_agents_example_with_your_agent_fails_as_a_user_test_should(
    pytester: pytest.Pytester,
) -> None:
    """The same file checks the agent from your hook: a planner that plans nothing fails."""
    example(pytester, "test_own_agents_example.py")
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def lazy(request):
        return {"plan": []}
    return lazy
""")
    result = inprocess.run(pytester, "test_own_agents_example.py", *SMALL)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *::test_planner_scores_on_a_bundled_pool*"])


# ------------------------------------------------------------------------- async (16.3)

ASYNC_EXAMPLE = "test_own_agents_async_example.py"
MARKER = "pytestmark = pytest.mark.asyncio  # with anyio: pytestmark = pytest.mark.anyio"


@pytest.mark.parametrize("mode", ["asyncio-strict", "asyncio-auto", "anyio"])
def test_async_example_under_each_async_plugin(pytester: pytest.Pytester, mode: str) -> None:
    pytest.importorskip("pytest_asyncio")
    text = (EXAMPLES / ASYNC_EXAMPLE).read_text(encoding="utf-8")
    assert MARKER in text
    ini = ASYNC_INI
    if mode == "asyncio-auto":
        text = text.replace(MARKER, "")
        ini += "asyncio_mode = auto\n"
    elif mode == "anyio":
        text = text.replace(MARKER, "pytestmark = pytest.mark.anyio")
    pytester.makeini(ini)
    example(pytester, ASYNC_EXAMPLE, text)
    first = inprocess.run(pytester, ASYNC_EXAMPLE, *SMALL, "--snapshot-update")
    first.assert_outcomes(passed=4)
    # One snapshot, named after its test (under anyio too: not "asyncio").
    stored = sorted(p.name for p in (pytester.path / "__budget_snapshots__/triage").iterdir())
    assert stored == ["test_async_planner_on_a_bundled_pool.json"]
    again = inprocess.run(pytester, ASYNC_EXAMPLE, *SMALL, "--budget-report=report.json")
    again.assert_outcomes(passed=4)
    (cell,) = cells(pytester)
    assert cell["agent"] == "shortest-first" and cell["outcome"] == "ok"


def test_anyio_snapshot_ids_of_two_tests_do_not_collide(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_two="""
import pytest

pytestmark = pytest.mark.anyio

async def test_first(budget_snapshot):
    assert budget_snapshot("mine") == {"scores": {"x": 1.0}, "context": {}}

async def test_second(budget_snapshot):
    assert budget_snapshot("mine") == {"scores": {"x": 2.0}, "context": {}}

@pytest.mark.parametrize("size", [3, 4])
async def test_sized(budget_snapshot, size):
    assert budget_snapshot("mine") == {"scores": {"x": float(size)}, "context": {}}
"""
    )
    inprocess.run(pytester, *SMALL, "--snapshot-update").assert_outcomes(passed=4)
    folder = pytester.path / "__budget_snapshots__" / "mine"
    assert sorted(p.name for p in folder.iterdir()) == [
        "3.json", "4.json", "test_first.json", "test_second.json",
    ]  # fmt: skip
    inprocess.run(pytester, *SMALL).assert_outcomes(passed=4)


# ----------------------------------------------------------- agent errors (16.4, 20.8)

RAISING_PLANNER = """
def helper(request):
    ratio = len(request.items) / 0
    return ratio

def pytest_budget_planner(config):
    def plan(request):
        if request.pool == "arith":
            return helper(request)
        return {"plan": []}
    return plan
"""


def test_agent_exception_shows_the_users_traceback(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RAISING_PLANNER)
    result = inprocess.run(
        pytester, *SMALL, *TRIAGE, "--budget-gate=off", "--budget-report=report.json"
    )
    result.assert_outcomes(passed=1, failed=1)  # the sokoban cell still ran
    conftest = str(pytester.path / "conftest.py")
    result.stdout.fnmatch_lines(
        [
            "*- agent error traceback -*",
            "planner 'plan' raised ZeroDivisionError: division by zero",
            "Traceback (most recent call last):",
            f'  File "{conftest}", line 8, in plan',
            "    return helper(request)",
            f'  File "{conftest}", line 2, in helper',
            "    ratio = len(request.items) / 0",
            "*ZeroDivisionError: division by zero",
        ]
    )
    assert "pytest_budget/_core/roles.py" not in result.stdout.str()  # only the user's frames
    by_pool = {cell["pool"]: cell for cell in cells(pytester)}
    assert by_pool["arith"]["outcome"] == "error"
    assert by_pool["sokoban"]["outcome"] == "ok"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return None", "planner returned NoneType; expected a Plan, *"),
        ("return 42", "planner returned int; expected a Plan, *"),
        ("return {'steps': [1]}", "planner returned a dict without 'plan' (keys: 'steps'); *"),
        (
            "return 'x' * 10_485_760",
            "planner returned str of 10,485,760 characters, over the 1,000,000-character "
            "limit for raw outputs (--budget-max-output-chars); not parsed",
        ),
    ],
    ids=["none", "int", "wrong-dict", "10MB"],
)
def test_planner_returning_what_no_plan_is_made_of_is_invalid(
    pytester: pytest.Pytester, body: str, reason: str
) -> None:
    pytester.makeconftest(f"""
def pytest_budget_planner(config):
    def plan(request):
        {body}
    return plan
""")
    result = inprocess.run(
        pytester, *SMALL, *TRIAGE, "--budget-gate=off", "--budget-report=report.json"
    )
    result.assert_outcomes(passed=2)
    for cell in cells(pytester):
        assert cell["outcome"] == "invalid" and cell["plan_status"] == "unparseable"
        assert cell["repairs"] == [cell["reason"]]
        assert fnmatch.fnmatchcase(cell["reason"], reason), cell["reason"]


def test_output_limit_option_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def plan(request):
        notes = "thinking " * 300  # 2,700 characters of text before the plan
        return notes + '{"plan": [{"id": "%s", "tokens": 10}]}' % request.items[0].id
    return plan
""")
    args = (*SMALL, *TRIAGE, "--budget-gate=off", "--budget-report=report.json")
    inprocess.run(pytester, *args).assert_outcomes(passed=2)
    assert {cell["outcome"] for cell in cells(pytester)} == {"ok"}
    pytester.makeini("[pytest]\nbudget_max_output_chars = 2000\n")  # the solver's fit
    inprocess.run(pytester, *args).assert_outcomes(passed=2)
    for cell in cells(pytester):
        assert cell["outcome"] == "invalid"
        assert cell["reason"].startswith("planner returned str of 2,74")  # 2,741 or 2,742
        assert "over the 2,000-character limit for raw outputs" in cell["reason"]
    inprocess.run(pytester, *args, "--budget-max-output-chars=3000").assert_outcomes(
        passed=2
    )  # the option wins over the ini value
    assert {cell["outcome"] for cell in cells(pytester)} == {"ok"}
    bad = inprocess.run(pytester, *args, "--budget-max-output-chars=lots")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --budget-max-output-chars: 'lots' is not a whole number"])
    assert "Traceback" not in bad.stderr.str()


@pytest.mark.parametrize(
    ("statement", "name"),
    [
        ("raise SystemExit(3)", "SystemExit: 3"),
        ("raise GeneratorExit()", "GeneratorExit"),
        ("raise Custom('mine')", "Custom: mine"),
    ],
    ids=["SystemExit", "GeneratorExit", "custom"],
)
def test_base_exceptions_are_the_agents_error_for_that_item(
    pytester: pytest.Pytester, statement: str, name: str
) -> None:
    pytester.makeconftest(f"""
class Custom(BaseException):
    pass

def pytest_budget_planner(config):
    async def plan(request):
        if request.pool == "arith":
            {statement}
        return {{"plan": []}}
    return plan
""")
    result = pytester.runpytest_subprocess(
        *SMALL, *TRIAGE, "--budget-gate=off", "--budget-report=report.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    by_pool = {cell["pool"]: cell for cell in cells(pytester)}
    assert by_pool["arith"]["outcome"] == "error"
    assert by_pool["arith"]["reason"] == f"planner 'plan' raised {name}"
    assert by_pool["sokoban"]["outcome"] == "ok"
    result.stdout.fnmatch_lines(["*- agent error traceback -*", f"*{name}"])


def test_base_exception_in_some_probes_leaves_the_others_answered(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("""
class Custom(BaseException):
    pass

class Mine:
    name = "mine"
    def estimate(self, probe):
        if probe.k == 1:
            raise Custom("first turn")
        return "<answer>[0, 1000]</answer>"

def pytest_budget_estimator(config):
    return Mine()
""")
    result = pytester.runpytest_subprocess(
        *SMALL, "--budget-suite=awareness", "--budget-env=sokoban-6x6", "--budget-gate=off",
        "--budget-report=report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = cells(pytester)
    assert cell["outcome"] == "ok"
    assert 0 < cell["scores"]["n_errors"] < cell["scores"]["n_probes"] + cell["scores"]["n_errors"]
    assert cell["first_error"] == "raised Custom: first turn"


def test_keyboard_interrupt_in_an_agent_stops_the_run_cleanly(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
def pytest_budget_planner(config):
    def plan(request):
        raise KeyboardInterrupt
    return plan
""")
    result = pytester.runpytest_subprocess(*SMALL, *TRIAGE, "--budget-gate=off")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str() + result.stderr.str()
    assert "KeyboardInterrupt" in output
    assert "INTERNALERROR" not in output
    assert "passed" not in output and "1 failed" not in output  # it stopped at the first cell
