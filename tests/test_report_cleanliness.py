"""JUnit and JSON output a CI system can consume: real ``classname``s, no ``"None"``
property, and a JSON report that validates against the published schema."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.schemas import validator

SMALL = (
    "--budget-suite=all", "-p", "no:cacheprovider", "-p", "no:randomly",
    "--budget-alpha=0.5", "--budget-unsolvable=0,0.5", "--budget-pool-size=6",
    "--budget-env=sokoban-8x8,swe-synthetic", "--budget-rollout-count=8",
    "--budget-task=dining", "--budget-scenario=static@2", "--budget-query-count=3",
    "--budget-agent=cheapest-first,linear-knows-T,greedy",
)  # fmt: skip


def check_report(path: Path) -> dict[str, Any]:
    """The report at ``path``, validated against the schema (every error listed)."""
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    checked = validator("report.schema.json")  # built and checked once a process
    errors = [f"{e.json_path}: {e.message}" for e in checked.iter_errors(report)]
    assert not errors, "\n".join(errors[:20])
    return report


def check_junit(path: Path) -> list[ET.Element]:
    """Every testcase of a JUnit file: a real classname, no property valued ``None``."""
    cases = list(ET.parse(path).getroot().iter("testcase"))
    assert cases
    for case in cases:
        assert case.get("classname"), case.attrib
        for prop in case.iter("property"):
            assert prop.get("value") not in (None, "None", "null", "nan"), (case.attrib, prop)
    return cases


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_junit_and_json_of_every_suite(pytester: pytest.Pytester, xdist: list[str]) -> None:
    # The shipped baselines do not cover most of this grid: those cells fail, which is
    # what a CI system must be able to read too.
    result = pytester.runpytest_subprocess(
        *SMALL, "--junitxml=junit.xml", "--budget-report=report.json", *xdist
    )
    report = check_report(pytester.path / "report.json")
    assert {c["suite"] for c in report["cells"]} == {"triage", "awareness", "planning"}
    assert {c["test_outcome"] for c in report["cells"]} == {"failed", "passed"}
    cases = check_junit(pytester.path / "junit.xml")
    result.assert_outcomes(failed=6, passed=1)
    assert len(cases) == len(report["cells"]) == 7
    assert {c.get("classname") for c in cases} == {
        "pytest_budget.suites.test_triage",
        "pytest_budget.suites.test_awareness",
        "pytest_budget.suites.test_planning",
    }
    # A cell's undefined score has no property; its defined ones do.
    by_name = {c.get("name"): c for c in cases}
    cell = next(c for c in report["cells"] if c["suite"] == "triage" and c["unsolvable_ratio"] == 0)
    assert cell["scores"]["detection"] is None
    props = {
        p.get("name"): p.get("value")
        for p in by_name[cell["nodeid"].split("::")[-1]].iter("property")
    }
    assert "budget.detection" not in props
    assert float(props["budget.eta_u"]) == pytest.approx(cell["scores"]["eta_u"], abs=1e-8)
    assert props["budget.suite"] == "triage" and props["budget.agent"] == "cheapest-first"


def test_user_test_cells_keep_their_own_classname(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine="""
        class TestScores:
            def test_cell(self, budget_record):
                budget_record({"suite": "mine", "model": None,
                               "scores": {"accuracy": 0.5, "undefined": None}})
        """
    )
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--junitxml=junit.xml", "--budget-report=report.json"
    ).assert_outcomes(passed=1)
    (case,) = check_junit(pytester.path / "junit.xml")
    assert case.get("classname") == "test_mine.TestScores"
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props == {"budget.accuracy": "0.5", "budget.suite": "mine"}
    check_report(pytester.path / "report.json")
