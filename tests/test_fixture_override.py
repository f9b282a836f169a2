"""Overriding a ``budget_<role>`` fixture is seen through pytest's public API only.

The plugin's own ``budget_<role>`` requests a marker fixture (``_budget_own_<role>``); a
conftest's override that does not request the plugin's fixture leaves the marker out of the
test's fixture closure (``metafunc.fixturenames`` / ``item.fixturenames`` /
``request.fixturenames``).  No ``_fixtureinfo`` or fixture manager internals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_budget.fixtures.core import overridden, own_fixture_mark

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = re.compile(r"_fixtureinfo|_fixturemanager|name2fixturedefs|_fixture_defs")


def test_no_private_fixture_api_in_the_plugin() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("pytest_budget", "fixtures", "suites")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if PRIVATE.search(line)
    ]
    assert hits == []


def test_every_role_fixture_of_the_plugin_requests_its_marker() -> None:
    """Each plugin fixture ``budget_<role>`` (a registered role) takes
    ``_budget_own_<role>``, else its own use would read as an override."""
    import ast

    from pytest_budget._core.registry import registered_roles

    found = {}
    for path in sorted((ROOT / "fixtures").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("budget_"):
                role = node.name.removeprefix("budget_")
                if role in registered_roles():
                    found[role] = [a.arg for a in node.args.args]
    assert set(found) >= {"planner", "solver", "estimator", "actor", "tool_agent"}
    missing = sorted(r for r, args in found.items() if own_fixture_mark(r) not in args)
    assert missing == []


def test_overridden_reads_the_closure() -> None:
    own = ["request", "budget_planner", own_fixture_mark("planner"), "budget_options"]
    assert not overridden(own, "planner")
    assert overridden(["request", "budget_planner", "budget_options"], "planner")
    # a test that does not use the role at all has nothing overridden
    assert not overridden(["request", "budget_options"], "planner")
    # another role's marker does not count for this role
    assert overridden(["budget_planner", own_fixture_mark("solver")], "planner")


PLANNER = """
import itertools
import pytest

CALLS = []
NUMBERS = itertools.count()

class FirstThree:
    name = "first-three"
    def __init__(self):
        self.number = next(NUMBERS)
    def plan(self, request):
        CALLS.append(self.number)
        ids = [p.id for p in request.items][:3]
        return {"plan": [{"id": i, "tokens": request.budget // 3} for i in ids]}

@pytest.fixture
def budget_planner():
    return FirstThree()

def pytest_sessionfinish(session):
    import json, pathlib
    pathlib.Path("calls.json").write_text(json.dumps(CALLS))
"""


def test_an_override_gets_the_user_axis_and_is_reused_by_every_repeat(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(PLANNER)
    result = pytester.runpytest_subprocess(
        "--budget-suite=triage", "-p", "no:cacheprovider", "--budget-report=report.json",
        "--budget-pool-size=6", "--budget-alpha=0.5", "--budget-unsolvable=0",
        "--budget-gate=off", "--budget-repeat=2",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert [c["agent"] for c in report["cells"]] == ["first-three", "first-three"]
    calls = json.loads((pytester.path / "calls.json").read_text(encoding="utf-8"))
    # One object per test (the fixture is function-scoped), used by both repeats.
    assert len(calls) >= 4
    assert sorted(set(calls)) == [0, 1]
