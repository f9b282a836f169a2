"""End-to-end runs of the installed planning suite through pytester."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_budget.planning._queries import dump_queries, generate_queries
from tests import inprocess

SMALL = ["--budget-task=dining", "--budget-query-count=4", "--budget-scenario=static@1"]


def run(pytester: pytest.Pytester, *args: str, gate_fails: bool = False) -> pytest.RunResult:
    """A planning run: in-process (tests/inprocess.py), but a subprocess under ``-n`` (its
    workers are processes anyway, and xdist's controller is best kept out of this one) and
    where the snapshot gate fails a cell (``gate_fails``): its message comes from pytest's
    assertion rewriting, which in-process runs turn off."""
    args = ("--budget-suite=planning", "-p", "no:cacheprovider", "-p", "no:randomly", *args)
    if "-n" in args or gate_fails:
        return pytester.runpytest_subprocess(*args)
    return inprocess.run(pytester, *args)


def report_of(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return data


def table_block(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("task "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("task 'all' = "))
    return lines[start : end + 1]


def test_default_run_gates_against_shipped_baselines(pytester: pytest.Pytester) -> None:
    """6 tasks x (L2 static + 4 blocking modes at L5) x 4 reference agents, all gated;
    plain, then under ``-n 2``, and both print the same table (xdist gives the same table:
    checked here on the default grid, not on a run of its own)."""
    tables = []
    for name, xdist in (("plain", []), ("n2", ["-n", "2"])):
        result = run(pytester, f"--budget-report={name}.json", *xdist)
        result.assert_outcomes(passed=120)
        _check_default_cells(report_of(pytester, f"{name}.json")["cells"])
        assert not (pytester.path / "__budget_snapshots__").exists()
        tables.append(table_block(result.outlines))
    assert tables[0] == tables[1]


def _check_default_cells(cells: list[dict[str, Any]]) -> None:
    assert {c["agent"] for c in cells} == {"greedy", "random-valid", "atomic-only", "oracle"}
    assert {c["scenario"] for c in cells} == {
        "static-L2", "ban_tool1-L5", "preference_change1-L5", "cost_change1-L5",
        "remove_tools1-L5",
    }  # fmt: skip
    for cell in cells:
        s = cell["scores"]
        assert s["itur"] == 0.0  # reference agents never misuse tools
        if cell["mode"] == "static" or cell["agent"] == "oracle":
            assert s["uihr"] == 1.0  # (a greedy stuck after a ban answers nothing: a miss)
        if cell["agent"] == "oracle":
            assert s["emr"] == 1.0 and s["aned"] == 0.0
            assert s["cost_gap"] == pytest.approx(0.0, abs=1e-9)  # code reading: C, any mode
        if cell["mode"] == "static" and cell["agent"] != "oracle":
            assert s["cost_gap"] >= 0.0  # nobody beats the optimum


AGENT_CONFTEST = """
import json
import os
import pytest

class Scripted:
    name = "scripted"
    def act(self, observation):
        mode = os.environ.get("AGENT_MODE", "garbage")
        if mode == "raise":
            raise RuntimeError("model endpoint down")
        if mode == "unknown-tool":
            if observation.step >= 2:
                return "<answer>nothing</answer>"
            return {"content": None, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "Book_Everything", "arguments": "{}"}}]}
        return "I would like to help but I am not sure which tool to call."

@pytest.fixture
def budget_tool_agent():
    return Scripted()
"""


def test_a_misbehaving_agent_is_scored_not_crashed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(AGENT_CONFTEST)
    monkeypatch.setenv("AGENT_MODE", "unknown-tool")
    result = run(pytester, *SMALL, "--budget-gate=off", "--budget-report=r.json")
    result.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    s = cell["scores"]
    assert cell["agent"] == "scripted" and s["n_episodes"] == 4
    # Two unknown-tool calls per episode, then a malformed answer without a call: CostBench's
    # loop ends the episode there (no feedback).  Every step is invalid.
    assert s["itur"] == 1.0 and s["unknown_tool_calls"] == 8 and s["uihr_all"] == 0.0
    assert s["bad_id_calls"] == 0 and s["total_calls"] == 4 * 2
    # Code reading: runs that miss the goal stay in UIHR (as misses) and score the worst case.
    assert s["uihr"] == 0.0 and s["emr"] == 0.0 and s["aned"] == 1.0
    assert s["excluded"] == 4  # the prose reading would leave all four out
    monkeypatch.setenv("AGENT_MODE", "raise")
    dead = run(pytester, *SMALL, "--budget-gate=off")
    dead.assert_outcomes(failed=1)
    dead.stdout.fnmatch_lines(
        ["*tool agent 'scripted' failed on all 4 queries*RuntimeError: model endpoint down*"]
    )


def test_snapshot_gate_catches_a_worse_agent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(
        "import os, pytest\n"
        "from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent\n"
        "@pytest.fixture\n"
        "def budget_tool_agent():\n"
        "    return OracleToolAgent() if os.environ.get('GOOD') else GreedyToolAgent()\n"
    )
    monkeypatch.setenv("GOOD", "1")
    run(pytester, *SMALL, "--snapshot-update").assert_outcomes(passed=1)
    stored = pytester.path / "__budget_snapshots__" / "planning" / "dining-static-L1-user.json"
    assert json.loads(stored.read_text())["scores"]["emr"] == 1.0
    monkeypatch.delenv("GOOD")
    worse = run(pytester, *SMALL, gate_fails=True)
    worse.assert_outcomes(failed=1)
    # The planning default gate pairs queries, but 3 changed queries can never reach its
    # level (p >= 1/8), so it compares intervals (the stored oracle's is [1, 1]), said so.
    worse.stdout.fnmatch_lines(
        ["*emr regressed: new * with 95% interval * entirely below the stored 1 with interval "
         "[[]1, 1[]]*; only 3 of 4 queries changed, too few for the paired test, so compared "
         "by the interval overlap rule*"]
    )  # fmt: skip
    tolerance = run(pytester, *SMALL, "--budget-gate=tolerance", gate_fails=True)
    tolerance.assert_outcomes(failed=1)
    tolerance.stdout.fnmatch_lines(["*emr regressed: stored 1, new *, tolerance 0.05*"])


ORACLE_OR_GREEDY = (
    "import os, pytest\n"
    "from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent\n"
    "@pytest.fixture\n"
    "def budget_tool_agent():\n"
    "    return OracleToolAgent() if os.environ.get('GOOD') else GreedyToolAgent()\n"
)
PAIRED = ["--budget-task=dining", "--budget-query-count=16", "--budget-scenario=static@1",
          "--budget-report=r.json"]  # fmt: skip


def test_paired_gate_catches_a_worse_agent_on_the_same_queries(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(ORACLE_OR_GREEDY)
    monkeypatch.setenv("GOOD", "1")
    run(pytester, *PAIRED, "--snapshot-update").assert_outcomes(passed=1)
    stored = json.loads(
        (pytester.path / "__budget_snapshots__/planning/dining-static-L1-user.json").read_text()
    )
    assert stored["per_query"]["n"] == 16
    assert stored["per_query"]["emr"] == {"num": "1*16", "den": "1*16"}
    same = run(pytester, *PAIRED)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(["budget gate: planning paired"])
    assert report_of(pytester, "r.json")["options"]["gates"] == {"planning": "paired"}
    monkeypatch.delenv("GOOD")
    worse = run(pytester, *PAIRED, gate_fails=True)
    worse.assert_outcomes(failed=1)
    # The greedy misses the optimum on 14 of the 16 queries: only the observed one of the
    # 2**14 sign patterns is as bad, p = 2**-14; one cell of five gated metrics: the level
    # is 0.01 / 2 / 5 = 0.001.
    worse.stdout.fnmatch_lines(
        ["*emr regressed: stored 1, new 0.125 on the same 16 queries, paired sign-flip test "
         "p=6.1e-05 < 0.001 and past the tolerance 0.05 (higher is better); level 0.001 = "
         "half the run's 0.01 split over its 5 gated cell x metric pairs (Bonferroni)*"]
    )  # fmt: skip


def test_a_baseline_without_per_query_values_falls_back_to_overlap(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline recorded by an older pytest-budget (no ``per_query``): the default gate
    warns, compares intervals, and still catches a clear regression."""
    pytester.makeconftest(ORACLE_OR_GREEDY)
    monkeypatch.setenv("GOOD", "1")
    run(pytester, *PAIRED, "--snapshot-update").assert_outcomes(passed=1)
    path = pytester.path / "__budget_snapshots__/planning/dining-static-L1-user.json"
    old = json.loads(path.read_text())
    del old["per_query"]
    path.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
    same = run(pytester, *PAIRED)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(
        ["*BudgetBaselineWarning: baseline *dining-static-L1-user.json stores no per-query "
         "values (recorded by an older pytest-budget?); --budget-gate=paired compares it by "
         "interval overlap instead; re-record with: *--snapshot-update*"]
    )  # fmt: skip
    monkeypatch.delenv("GOOD")
    worse = run(pytester, *PAIRED, gate_fails=True)
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines(
        ["*emr regressed: new 0.125 with 95% interval * entirely below the stored 1 with "
         "interval [[]1, 1[]] (higher is better) [[]--budget-gate=paired fell back to interval "
         "overlap: no per-query values[]]*"]
    )  # fmt: skip


def test_default_planning_gate_reads_the_noise_of_both_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sampling agent's rerun that moves within the noise passes the default (paired)
    gate, while the tolerance rule would fail it."""
    pytester.makeconftest(
        "import os, random, pytest\n"
        "from pytest_budget.planning._reference_agents import OracleToolAgent, GreedyToolAgent\n"
        "class Coin(OracleToolAgent):\n"
        "    name = 'coin'\n"
        "    def choose(self, observation, view):\n"
        "        seed = f\"{os.environ['SEED']}:{observation.query_id}:{observation.step}\"\n"
        "        if random.Random(seed).random() < 0.7:\n"
        "            return super().choose(observation, view)\n"
        "        tools = [t for t in view.tools if t.name not in view.banned]\n"
        "        from pytest_budget.planning._env import greedy_pick\n"
        "        return greedy_pick(tools, view.costs, view.held, view.previous_output)\n"
        "@pytest.fixture\n"
        "def budget_tool_agent():\n"
        "    return Coin()\n"
    )
    args = ["--budget-task=dining", "--budget-query-count=12", "--budget-scenario=static@2",
            "--budget-report=r.json"]  # fmt: skip
    monkeypatch.setenv("SEED", "0")
    run(pytester, *args, "--snapshot-update").assert_outcomes(passed=1)
    stored = json.loads(
        (pytester.path / "__budget_snapshots__" / "planning" / "dining-static-L2-user.json")
        .read_text()
    )  # fmt: skip
    moved = None
    for seed in range(1, 40):  # a rerun whose EMR moved past the tolerance
        monkeypatch.setenv("SEED", str(seed))
        result = run(pytester, *args)
        new = report_of(pytester, "r.json")["cells"][0]["scores"]["emr"]
        if new < stored["scores"]["emr"] - 0.05:
            moved = seed
            break
    assert moved is not None
    result.assert_outcomes(passed=1)
    run(pytester, *args, "--budget-gate=tolerance", gate_fails=True).assert_outcomes(failed=1)


def test_user_query_file_replaces_generated_queries(pytester: pytest.Pytester) -> None:
    queries = generate_queries("dining", 3, seed=7) + generate_queries("shopping", 2, seed=7)
    dump_queries(pytester.path / "mine.json", queries)
    result = run(
        pytester, "--budget-queries=mine.json", "--budget-scenario=static@2",
        "--budget-agent=oracle", "--budget-gate=off", "--budget-report=r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    cells = {c["task"]: c for c in report_of(pytester, "r.json")["cells"]}
    assert {task: c["queries"] for task, c in cells.items()} == {"dining": 3, "shopping": 2}
    assert all(c["scores"]["emr"] == 1.0 for c in cells.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget-scenario=static@9"], "--budget-scenario: 'static@9': refinement level must*"),
        (["--budget-scenario=ban_tool:4@5"], "--budget-scenario: 'ban_tool:4@5': block count*"),
        (["--budget-scenario=teleport@2"], "--budget-scenario: 'teleport@2' is not MODE*"),
        (["--budget-task=skiing"], "--budget-task: unknown task 'skiing'; choose from *"),
        (["--budget-queries=absent.json"], "--budget-queries: no such file *absent.json*"),
        (["--budget-queries=bad.json"], "*bad.json*entry 1*unknown task 'cooking'*"),
    ],
)  # fmt: skip
def test_bad_options_and_files_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    good = generate_queries("dining", 2)
    dump_queries(pytester.path / "bad.json", good)
    entries = json.loads((pytester.path / "bad.json").read_text())
    entries[1]["task"] = "cooking"
    (pytester.path / "bad.json").write_text(json.dumps(entries))
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1
