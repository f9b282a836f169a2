"""The files under docs/examples run as documented, and docs/reference/hooks.md is current.

Each example is copied into a pytester directory (conftest examples as ``conftest.py``) and
run in a subprocess on a small grid.  ``python tests/test_docs_examples.py`` rewrites the
generated part of docs/reference/hooks.md from pytest_budget/hookspecs.py.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_budget.hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXAMPLES = DOCS / "examples"
HOOKS_MD = DOCS / "reference" / "hooks.md"

SUITE = (
    "--budget-suite=triage", "-p", "no:cacheprovider", "--budget-pool-size=6",
    "--budget-alpha=0.5", "--budget-unsolvable=0",
)  # fmt: skip
#: Not needed by the examples; skipping the hypothesis plugin halves each run's start-up.
FAST = ("-p", "no:hypothesispytest")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*FAST, *args)


def use_example(pytester: pytest.Pytester, name: str, as_name: str = "conftest.py") -> str:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    (pytester.path / as_name).write_text(text, encoding="utf-8")
    return text


def cells(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    return {cell["cell"] + "/" + cell["agent"]: cell for cell in report["cells"]}


def test_fixture_planner_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_planner_example.py")
    result = run(pytester, *SUITE, "--budget-gate=off", "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*arith *0.500  A    shortest-first*"])
    found = cells(pytester)
    assert set(found) == {"arith-u0-a0.5-A/shortest-first", "sokoban-u0-a0.5-A/shortest-first"}
    assert all(cell["plan_status"] == "ok" for cell in found.values())


def test_tutorial_regression_fails_the_gate(pytester: pytest.Pytester) -> None:
    """first-agent.md: record baselines, make the planner worse, see the cells fail."""
    text = use_example(pytester, "conftest_planner_example.py")
    run(pytester, *SUITE, "--snapshot-update").assert_outcomes(passed=2)
    stored = sorted(p.name for p in (pytester.path / "__budget_snapshots__/triage").iterdir())
    assert stored == ["arith-u0-a0.5-A-user.json", "sokoban-u0-a0.5-A-user.json"]
    assert "reverse=False" in text
    pytester.makeconftest(text.replace("reverse=False", "reverse=True"))
    worse = run(pytester, *SUITE)
    worse.assert_outcomes(failed=1, passed=1)  # on 6 puzzles it was already at the floor
    worse.stdout.fnmatch_lines(["FAILED *test_triage[[]arith-u0-a0.5-A-user[]]*"])
    worse.stdout.fnmatch_lines(
        ["*eta_u regressed: stored *, new *, tolerance 0.05 (higher is better)"]
    )


def test_hook_planner_example_returns_raw_text(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_hook_planner_example.py")
    result = run(pytester, *SUITE, "--budget-gate=off", "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    cell = cells(pytester)["arith-u0-a0.5-A/llm-planner"]
    assert cell["plan_status"] == "repaired"
    assert cell["repairs"][:2] == ["removed <think> reasoning", "removed markdown code fence"]
    assert cell["planned_ids"] == ["arith-000", "arith-002", "arith-004"]


def test_solver_example_and_phase0_cache(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_solver_example.py")
    pytester.makeini("[pytest]\nbudget_cache_dir = .budget-cache\n")
    result = run(
        pytester,
        *SUITE,
        "--budget-gate=off",
        "--budget-agent=oracle",
        "--budget-report=report.json",
    )
    result.assert_outcomes(passed=2)
    found = cells(pytester)
    assert {cell["solver"] for cell in found.values()} == {"my-solver-v1"}
    assert found["arith-u0-a0.5-A/oracle"]["phase0"] == {"items": 6, "gradeable": 6, "errors": {}}
    cached = list((pytester.path / ".budget-cache" / "phase0").glob("*/*.json"))
    assert len(cached) == 12  # 6 arith + 6 sokoban items
    assert json.loads(cached[0].read_text(encoding="utf-8"))["solver"] == "my-solver-v1"


def test_pool_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "pool_example.jsonl", as_name="pool_example.jsonl")
    result = run(
        pytester, *SUITE, "--budget-gate=off", "--budget-pool=pool_example.jsonl",
        "--budget-report=report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=4)  # the four reference planners on one pool
    found = cells(pytester)
    oracle = found["pool_example-u0-a0.5-A/oracle"]
    assert oracle["pool"] == "pool_example"
    assert oracle["budget"] == 742  # floor(0.5 * (1320 from the file + 164 measured in Phase 0))
    assert oracle["phase0"] == {"items": 8, "gradeable": 8, "errors": {}}
    assert oracle["scores"]["detection"] == 1.0
    assert oracle["scores"]["eta_u"] == 1.0
    assert oracle["scores"]["v_oracle"] == 7.0  # calc-2 is worth 2 points


def test_own_tests_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "test_own_scores_example.py", as_name="test_own_scores_example.py")
    first = run(pytester, "-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=4)
    stored = json.loads(
        (pytester.path / "__budget_snapshots__/triage/tiny-pool.json").read_text(encoding="utf-8")
    )
    assert stored == {
        "context": {"seed": 42},
        "scores": {
            "v_u": 2.0, "v_e": 2.0, "v_oracle": 2.0, "v_random": 1.0, "eta_u": 1.0,
            "eta_e": 1.0, "regret_u": 0.0, "regret_e": 0.0, "detection": 1.0, "waste": 0.0,
        },
    }  # fmt: skip
    again = run(pytester, "-p", "no:cacheprovider", "--budget-report=report.json")
    again.assert_outcomes(passed=4)
    again.stdout.fnmatch_lines(["*my-planner  825  1.000  1.000*repaired"])
    assert cells(pytester)["tiny-pool/my-planner"]["scores"]["eta_u"] == 1.0


# --------------------------------------------------------------------------- awareness

AWARENESS = ("--budget-suite=awareness", "-p", "no:cacheprovider", "--budget-gate=off")
ROLLOUTS = "--budget-rollouts=rollouts_example.jsonl"


def awareness_cells(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, Any]:
    report = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return {cell["env"] + "/" + cell["agent"]: cell for cell in report["cells"]}


def test_rollouts_example_with_the_reference_estimators(pytester: pytest.Pytester) -> None:
    """replay-logged-rollouts.md: the example file, every reference estimator, the schemas."""
    jsonschema = pytest.importorskip("jsonschema")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(pytester, *AWARENESS, ROLLOUTS, "--budget-report=report.json")
    result.assert_outcomes(passed=10)  # 2 env labels x 5 reference estimators
    result.stdout.fnmatch_lines(
        [
            "support-bot: 4 rollouts by logged, 3 succeeded, 2 feasible within budget, "
            "3.0 turns on average"
        ]
    )
    shown = documented_lines("how-to/replay-logged-rollouts.md", "support-bot  ", "ops-bot  ")
    assert len(shown) == 10 and set(shown) <= set(result.outlines)
    found = awareness_cells(pytester)
    assert len(found) == 10
    support = found["support-bot/always-feasible"]
    assert support["rollouts"] == {"rollouts": 4, "succeeded": 3, "feasible": 2, "mean_turns": 3.0}
    assert support["budget"] == {"tokens": 1000}
    assert support["actor"] == "logged"
    # 8 probes, 3 of them truly feasible: F1_feasible = 6/11, F1_impossible = 0
    assert support["scores"]["n_probes"] == 8
    assert support["scores"]["macro_f1_all"] == pytest.approx(3 / 11)
    assert support["scores"]["hit_rate"] == 1.0 and support["scores"]["interval_score"] == 0.0
    assert found["support-bot/always-impossible"]["scores"]["fail_f1"] == pytest.approx(10 / 13)
    oracle = found["ops-bot/oracle"]["scores"]
    assert oracle["macro_f1_all"] == 1.0
    assert oracle["interval_score_tokens"] == oracle["interval_score_tool_calls"] == 1.0
    assert oracle["reward"] == pytest.approx(0.84)  # (2 x 1.8 + 3 x 0.2) / 5
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    schema = json.loads((DOCS / "reference" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, schema)
    rollout_schema = json.loads(
        (DOCS / "reference" / "rollout.schema.json").read_text(encoding="utf-8")
    )
    for line in (EXAMPLES / "rollouts_example.jsonl").read_text(encoding="utf-8").splitlines():
        jsonschema.validate(json.loads(line), rollout_schema)


def test_estimator_example_on_logged_rollouts(pytester: pytest.Pytester) -> None:
    """The numbers worked by hand in replay-logged-rollouts.md."""
    use_example(pytester, "conftest_estimator_example.py")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(pytester, *AWARENESS, ROLLOUTS, "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["support-bot  doubling        8   0.750     0.333    0.750*"])
    found = awareness_cells(pytester)
    assert set(found) == {"support-bot/doubling", "ops-bot/doubling"}
    scores = found["support-bot/doubling"]["scores"]
    assert scores["macro_f1_all"] == pytest.approx(0.75)
    assert scores["macro_f1_first"] == pytest.approx(1 / 3)
    assert scores["fail_f1"] == pytest.approx(0.75)
    assert scores["interval_score"] == pytest.approx(1 / 9)
    assert scores["hit_rate"] == pytest.approx(2 / 3)
    assert scores["mre_p50"] == pytest.approx(350 / 550)
    assert scores["first_impossible_budget_share"] == pytest.approx(0.7)
    assert scores["false_abort_rate"] == 0.0
    assert scores["saved_token_share"] == pytest.approx(900 / 2300)
    assert scores["linear_error_reduction"] == pytest.approx(-150)
    assert scores["reward"] == pytest.approx(0.15)
    assert scores["invalid_rate"] == 0.0 and scores["n_errors"] == 0
    ops = found["ops-bot/doubling"]["scores"]
    assert ops["macro_f1_all"] == pytest.approx(0.4)
    assert ops["false_abort_rate"] == 0.5
    assert ops["mre_p50_tokens"] == 0.5 and ops["mre_p50_tool_calls"] == 0.6
    assert ops["mre_p50"] == pytest.approx(0.55)  # the mean over the two dimensions


def documented_lines(doc: str, *starts: str) -> list[str]:
    """Output lines shown in the ```text blocks of a doc page that start with ``starts``."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", text, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith(starts)]


def test_awareness_tutorial_reference_table(pytester: pytest.Pytester) -> None:
    """first-awareness-run.md, steps 1-3: every row of the table as printed there."""
    # gated: the reference estimators' baselines ship with the package
    result = run(pytester, "--budget-suite=awareness", "-p", "no:cacheprovider",
                 "--budget-env=sokoban-8x8,sokoban-6x6")  # fmt: skip
    result.assert_outcomes(passed=10)
    shown = documented_lines("tutorial/first-awareness-run.md", "sokoban-")
    expected = {line for line in shown if "doubling" not in line}
    assert len(expected) == 12  # 10 cells and 2 summary lines
    assert expected <= set(result.outlines)


def test_estimator_example_on_generated_sokoban_rollouts(pytester: pytest.Pytester) -> None:
    """first-awareness-run.md, step 5: the estimator example on the 8x8 puzzles."""
    use_example(pytester, "conftest_estimator_example.py")
    result = run(pytester, *AWARENESS, "--budget-env=sokoban-8x8", "--budget-report=report.json")
    result.assert_outcomes(passed=1)
    shown = documented_lines("tutorial/first-awareness-run.md", "sokoban-8x8  doubling")
    assert len(shown) == 1 and shown[0] in result.outlines
    cell = awareness_cells(pytester)["sokoban-8x8/doubling"]
    assert cell["actor"] == "reference-actor" and cell["budget"] == {"tokens": 2500}
    assert cell["rollouts"] == {
        "rollouts": 128,
        "succeeded": 108,
        "feasible": 66,
        "mean_turns": 6.422,
    }
    assert cell["scores"]["invalid_rate"] == 0.0
    assert cell["nodeid"].endswith("test_awareness[sokoban-8x8-user]")


def test_hook_estimator_example_next_to_linear(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_hook_estimator_example.py")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(
        pytester, *AWARENESS, ROLLOUTS, "--budget-agent=user,linear",
        "--budget-report=report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    shown = documented_lines("how-to/bring-your-own-estimator.md", "support-bot  ", "ops-bot  ")
    table = [line for line in shown if "flaky" not in line]
    assert len(table) == 4 and set(table) <= set(result.outlines)
    found = awareness_cells(pytester)
    assert set(found) == {
        "support-bot/pace", "support-bot/linear", "ops-bot/pace", "ops-bot/linear",
    }  # fmt: skip
    pace = found["support-bot/pace"]["scores"]
    assert pace["macro_f1_all"] == pytest.approx(0.75)
    assert pace["macro_f1_first"] == pytest.approx(11 / 15)
    assert pace["interval_score"] == pytest.approx(0.2)
    assert found["support-bot/linear"]["scores"]["macro_f1_all"] == 1.0


def test_awareness_snapshots_gate_the_estimator(pytester: pytest.Pytester) -> None:
    """gate-ci.md: record, a parse-policy change, then a regression."""
    text = use_example(pytester, "conftest_estimator_example.py")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    gated = ("--budget-suite=awareness", "-p", "no:cacheprovider", ROLLOUTS)
    run(pytester, *gated, "--snapshot-update").assert_outcomes(passed=2)
    folder = pytester.path / "__budget_snapshots__" / "awareness"
    assert sorted(p.name for p in folder.iterdir()) == [
        "ops-bot-user.json",
        "support-bot-user.json",
    ]
    stored = json.loads((folder / "support-bot-user.json").read_text(encoding="utf-8"))
    assert stored["context"] == {
        "actor": "logged", "parse": "bagen", "rollout_set": stored["context"]["rollout_set"],
        "rollouts": 4, "seed": 42,
    }  # fmt: skip
    run(pytester, *gated).assert_outcomes(passed=2)
    changed = run(pytester, *gated, "--budget-parse=strict")
    changed.assert_outcomes(failed=2)
    changed.stdout.fnmatch_lines(["*was recorded with parse='bagen' (now 'strict')*"])
    assert '</answer>"' in text
    pytester.makeconftest(text.replace('</answer>"', '</answer> Hope this helps!"'))
    worse = run(pytester, *gated)
    worse.assert_outcomes(failed=2)
    worse.stdout.fnmatch_lines(
        ["*invalid_rate regressed: stored 0, new 1, tolerance 0.05 (lower is better)"]
    )


# --------------------------------------------------------------------------- planning

#: The small planning grid of the examples: three dining queries.
PLANNING = (
    "--budget-suite=planning", "-p", "no:cacheprovider", "--budget-task=dining",
    "--budget-query-count=3",
)  # fmt: skip
UNGATED = ("--budget-gate=off", "--budget-report=report.json")


def report_of(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    return data


def validate_report(pytester: pytest.Pytester) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DOCS / "reference" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(report_of(pytester), schema)


def python_blocks(doc: str) -> list[str]:
    """The ```python blocks of a doc page, in order."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_planning_tutorial_reference_table(pytester: pytest.Pytester) -> None:
    """first-planning-run.md, steps 2-4: the dining table, the report, the schema."""
    # gated: the reference tool agents' baselines ship with the package
    result = run(pytester, "--budget-suite=planning", "-p", "no:cacheprovider",
                 "--budget-task=dining", "--budget-report=report.json")  # fmt: skip
    result.assert_outcomes(passed=20)  # every cell passes its shipped baseline
    shown = documented_lines("tutorial/first-planning-run.md", "dining  ")
    expected = {line for line in shown if "pipeline" not in line}
    assert len(expected) == 20
    assert expected <= set(result.outlines)
    validate_report(pytester)
    tutorial = (DOCS / "tutorial" / "first-planning-run.md").read_text(encoding="utf-8")
    summary = report_of(pytester)["summary"]
    assert summary == {"cells": 20, "outcomes": {"ok": 20}, "tests": {"passed": 20}}
    assert str(summary) in tutorial
    found = cells(pytester)
    cell = found["dining-ban_tool1-L5/greedy"]
    assert (cell["mode"], cell["block_count"], cell["refinement_level"]) == ("ban_tool", 1, 5)
    printed = {k: round(v, 3) if isinstance(v, float) else v for k, v in cell["scores"].items()}
    assert str(printed) in tutorial
    # greedy is scored twice: as an agent and as every cell's baseline
    for key in ("emr", "aed", "aned", "cost_gap"):
        assert cell["scores"][key] == cell["greedy"][key]
    oracle = found["dining-cost_change1-L5/oracle"]["scores"]
    assert oracle["emr"] == 1.0 and oracle["cost_gap"] is None


def test_pipeline_agent_example(pytester: pytest.Pytester) -> None:
    """first-planning-run.md, steps 5 and 6: the dozen-line agent, static and blocked."""
    text = use_example(pytester, "conftest_pipeline_agent_example.py")
    tutorial = (DOCS / "tutorial" / "first-planning-run.md").read_text(encoding="utf-8")
    (code,) = [b for b in python_blocks("tutorial/first-planning-run.md") if "PipelineAgent" in b]
    assert code in text  # the tutorial shows the example file as it is
    assert "PipelineAgent" in tutorial
    result = run(pytester, *PLANNING, "--budget-scenario=static@1", *UNGATED)
    result.assert_outcomes(passed=1)
    shown = documented_lines("tutorial/first-planning-run.md", "dining  static-L1  pipeline")
    assert len(shown) == 1 and shown[0] in result.outlines
    validate_report(pytester)
    cell = cells(pytester)["dining-static-L1/pipeline"]
    assert cell["nodeid"].endswith("test_planning[dining-static-L1-user]")
    scores = cell["scores"]
    assert scores["emr"] == 0.0 and scores["aned"] == 1.0 and scores["aed"] == pytest.approx(8 / 3)
    assert scores["uihr"] == 0.0 and scores["itur"] == 0.0 and scores["total_calls"] == 3
    # one call each: 86.09 / 86.08, 89.44 / 89.35 and 77.82 / 77.73 of the optimum
    gaps = (0.01 / 86.08, 0.09 / 89.35, 0.09 / 77.73)
    assert scores["cost_gap"] == pytest.approx(sum(gaps) / 3)
    assert cell["greedy"]["cost_gap"] == pytest.approx(0.0026015, abs=1e-6)

    blocked = run(pytester, *PLANNING, "--budget-scenario=ban_tool:1@5,cost_change:1@5", *UNGATED)
    blocked.assert_outcomes(passed=2)
    shown = documented_lines("tutorial/first-planning-run.md", "dining  ban_tool1-L5     pipeline",
                             "dining  cost_change1-L5  pipeline")  # fmt: skip
    assert len(shown) == 2 and set(shown) <= set(blocked.outlines)
    found = cells(pytester)
    ban = found["dining-ban_tool1-L5/pipeline"]["scores"]
    assert ban["blocks_applied"] == 3 and ban["banned_calls"] == 3 and ban["unreached"] == 3
    assert ban["itur"] == 0.0 and ban["emr"] is None and ban["uihr"] is None
    cost = found["dining-cost_change1-L5/pipeline"]["scores"]
    assert cost["blocks_dropped"] == 3 and cost["underblocked"] == 3 and cost["n_counted"] == 0
    assert cost["itur"] is None and cost["emr"] is None


def test_tool_agent_example_in_every_mode(pytester: pytest.Pytester) -> None:
    """bring-your-own-tool-agent.md: the route planner, static and under every blocking mode."""
    use_example(pytester, "conftest_tool_agent_example.py")
    scenarios = "static@1,ban_tool:2@5,preference_change:1@5,cost_change:2@3,remove_tools:2@4"
    result = run(pytester, *PLANNING, f"--budget-scenario={scenarios}", *UNGATED)
    result.assert_outcomes(passed=5)
    shown = documented_lines("how-to/bring-your-own-tool-agent.md", "dining  ", "task    ")
    assert len(shown) == 6 and set(shown) <= set(result.outlines)
    validate_report(pytester)
    found = cells(pytester)
    assert len(found) == 5
    for cell in found.values():
        assert cell["agent"] == "route-planner" and cell["outcome"] == "ok"
        scores = cell["scores"]
        assert scores["emr"] == 1.0 and scores["aned"] == 0.0 and scores["excluded"] == 0
        assert scores["itur"] == 0.0 and scores["uihr"] == 0.0  # first allowed values: misses
        assert scores["blocks_applied"] == cell["block_count"] * 3
    assert found["dining-static-L1/route-planner"]["scores"]["cost_gap"] == 0.0
    assert found["dining-ban_tool2-L5/route-planner"]["scores"]["banned_calls"] == 6


def test_llm_tool_agent_example_against_a_scripted_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bring-your-own-tool-agent.md: the Chat Completions wrapper, over real HTTP."""
    from scripted_server import Reply, ScriptedServer  # tests/ is on sys.path

    from pytest_budget.planning import expected_answer, generate_queries

    text = use_example(pytester, "conftest_llm_tool_agent_example.py")
    (code,) = [b for b in python_blocks("how-to/bring-your-own-tool-agent.md") if "httpx" in b]
    assert code in text  # the how-to shows the example file as it is
    query = generate_queries("dining", 1)[0]
    prefs = query.preferences
    arguments = {
        "DiningCategory": prefs["category"], "DiningTier": prefs["tier"],
        "DiningStyle": prefs["style"], "DiningFeaturePackage": prefs["feature_package"],
        "LocationPreference": query.location_preference, "TimeInfo": query.time_info,
    }  # fmt: skip
    call = {"id": "call_a1", "type": "function", "function": {
        "name": "Dining_Complete_4Steps_Pipeline", "arguments": json.dumps(arguments)}}  # fmt: skip
    answer = expected_answer("dining", prefs, query.time_info, query.location_preference)
    replies = [
        {"role": "assistant", "content": "One call does it all.", "tool_calls": [call]},
        {"role": "assistant", "content": f"Done. <answer>{answer}</answer>"},
    ]
    key = "sk-canary-planning-7d1c"
    script = [Reply(json={"choices": [{"index": 0, "message": m}]}) for m in replies]
    with ScriptedServer(script) as server:
        monkeypatch.setenv("MY_MODEL_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("MY_MODEL", "scripted-model")
        monkeypatch.setenv("MY_MODEL_API_KEY", key)
        result = run(pytester, *PLANNING, "--budget-query-count=1", "--budget-scenario=static@1",
                     "--budget-agent=user,greedy", *UNGATED)  # fmt: skip
        requests = server.requests
    result.assert_outcomes(passed=2)
    assert [r.path for r in requests] == ["/v1/chat/completions"] * 2
    first, second = requests[0].json, requests[1].json
    assert first["model"] == "scripted-model" and first["temperature"] == 0
    assert len(first["tools"]) == 10 and first["tools"][0]["type"] == "function"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["tool_call_id"] == "call_a1"
    assert requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in (pytester.path / "report.json").read_text(encoding="utf-8")
    found = cells(pytester)
    assert set(found) == {"dining-static-L1/scripted-model", "dining-static-L1/greedy"}
    mine = found["dining-static-L1/scripted-model"]
    assert mine["nodeid"].endswith("test_planning[dining-static-L1-user]")
    scores = mine["scores"]
    assert scores["uihr"] == 1.0 and scores["itur"] == 0.0 and scores["total_calls"] == 1
    assert scores["emr"] == 0.0  # the optimum takes three calls here


def test_queries_example_with_the_reference_agents(pytester: pytest.Pytester) -> None:
    """bring-your-own-queries.md: the example file, its table, the oracle's UIHR, the schema."""
    from pytest_budget.planning import load_queries

    loaded = load_queries(EXAMPLES / "queries_example.json")
    assert [q.task for q in loaded] == ["dining", "dining", "dining", "location"]
    assert loaded[3].location_preference is None
    use_example(pytester, "queries_example.json", as_name="queries_example.json")
    result = run(pytester, *PLANNING, "--budget-queries=queries_example.json",
                 "--budget-scenario=static@1", *UNGATED)  # fmt: skip
    result.assert_outcomes(passed=4)  # one dining cell x the four reference agents
    shown = documented_lines("how-to/bring-your-own-queries.md", "dining  static-L1")
    assert len(shown) == 4 and set(shown) <= set(result.outlines)
    validate_report(pytester)
    found = cells(pytester)
    oracle = found["dining-static-L1/oracle"]
    assert oracle["queries"] == 3  # --budget-query-count does not apply to files
    assert oracle["scores"]["uihr"] == 1.0 and oracle["scores"]["emr"] == 1.0
    assert found["dining-static-L1/greedy"]["scores"]["emr"] == pytest.approx(1 / 3)

    text = (EXAMPLES / "queries_example.json").read_text(encoding="utf-8")
    (pytester.path / "queries.json").write_text(
        text.replace('"street food"', '"diner"', 1), encoding="utf-8"
    )
    broken = run(pytester, *PLANNING, "--budget-queries=queries.json")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    message = (
        "entry 0 (query_id '<Query90001>'): preferences['category'] = 'diner' is not a dining "
        "category value; allowed: fine dining, casual dining, street food, cafe"
    )
    path = pytester.path / "queries.json"
    assert f"ERROR: {path}: {message}" in broken.errlines
    assert message in (DOCS / "how-to" / "bring-your-own-queries.md").read_text(encoding="utf-8")


def test_planning_snapshots_gate_the_tool_agent(pytester: pytest.Pytester) -> None:
    """gate-ci.md: record, a change of queries, then an agent that stops reading prices."""
    text = use_example(pytester, "conftest_tool_agent_example.py")
    gated = (*PLANNING, "--budget-scenario=static@1")
    run(pytester, *gated, "--snapshot-update").assert_outcomes(passed=1)
    folder = pytester.path / "__budget_snapshots__" / "planning"
    assert [p.name for p in folder.iterdir()] == ["dining-static-L1-user.json"]
    stored = json.loads((folder / "dining-static-L1-user.json").read_text(encoding="utf-8"))
    assert stored["context"] == {"queries": 3, "query_set": "26c7e1d9418e401c", "seed": 42}
    assert {k: stored["scores"][k] for k in ("aed", "aned", "cost_gap", "emr", "itur", "uihr")} == {
        "aed": 0.0, "aned": 0.0, "cost_gap": 0.0, "emr": 1.0, "itur": 0.0, "uihr": 0.0,
    }  # fmt: skip
    assert '"query_set": "26c7e1d9418e401c"' in (DOCS / "reference" / "report.md").read_text(
        encoding="utf-8"
    )
    run(pytester, *gated).assert_outcomes(passed=1)
    gate_doc = (DOCS / "how-to" / "gate-ci.md").read_text(encoding="utf-8")
    changed = run(pytester, *gated, "--budget-query-count=4")
    changed.assert_outcomes(failed=1)
    recorded = (
        "was recorded with queries=3 (now 4), query_set='26c7e1d9418e401c' "
        "(now '7103bc3ed7c3639e'); re-record with: pytest --budget-suite=planning "
        "--snapshot-update"
    )
    changed.stdout.fnmatch_lines([f"*{recorded}"])
    assert recorded in gate_doc
    assert "round(float(price) * 100)" in text
    pytester.makeconftest(text.replace("round(float(price) * 100)", "100"))  # price-blind
    worse = run(pytester, *gated)
    worse.assert_outcomes(failed=1)
    regressions = [
        "emr regressed: stored 1, new 0, tolerance 0.05 (higher is better)",
        "aned regressed: stored 0, new 1, tolerance 0.05 (lower is better)",
    ]
    worse.stdout.fnmatch_lines([f"*{line}" for line in regressions])
    assert "cost_gap regressed" not in worse.stdout.str()
    assert all(line in gate_doc for line in regressions)


def test_planning_reference_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python snippets of the planning reference pages and the queries how-to run."""
    monkeypatch.chdir(tmp_path)
    for doc in (
        "reference/metrics-planning.md",
        "reference/travel-environment.md",
        "how-to/bring-your-own-queries.md",
    ):
        for block in python_blocks(doc):
            exec(compile(block, str(DOCS / doc), "exec"), {})
    from pytest_budget.planning import load_queries

    assert len(load_queries(tmp_path / "my_queries.jsonl")) == 20


# --------------------------------------------------------------------------- hooks.md

BEGIN = "<!-- BEGIN GENERATED from pytest_budget/hookspecs.py -->"
END = "<!-- END GENERATED -->"


def _markdown(doc: str) -> str:
    """RST docstring -> Markdown: ``code`` -> `code`, code-block directives -> fences."""
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(".. code-block::"):
            language = line.split("::", 1)[1].strip()
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[0].strip():
                block.pop(0)
            while block and not block[-1].strip():
                block.pop()
            out.extend([f"```{language}", *block, "```"])
            continue
        out.append(re.sub(r"``(.+?)``", r"`\1`", line))
        i += 1
    return "\n".join(out)


def render_hooks() -> str:
    """The generated block of hooks.md, from the hookspecs module and its docstrings."""
    module = pytest_budget.hookspecs
    parts = [BEGIN, "", _markdown(inspect.getdoc(module) or "")]
    hooks = [
        (name, fn)
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("pytest_budget_")
    ]
    for name, fn in sorted(hooks, key=lambda hook: hook[1].__code__.co_firstlineno):
        notes = getattr(fn, "pytest_spec", {})
        params = ", ".join(f"{k}: {v}" for k, v in fn.__annotations__.items() if k != "return")
        signature = f"def {name}({params}) -> {fn.__annotations__.get('return', 'None')}"
        parts += [
            "",
            f"## `{name}`",
            "",
            f"```python\n{signature}\n```",
            "",
            "First non-`None` answer wins (`firstresult=True`)."
            if notes.get("firstresult")
            else "Every implementation is called.",
            "",
            _markdown(inspect.getdoc(fn) or ""),
        ]
    parts += ["", END]
    return "\n".join(parts)


def _current_block() -> str:
    text = HOOKS_MD.read_text(encoding="utf-8")
    return text[text.index(BEGIN) : text.index(END) + len(END)]


def test_hooks_reference_matches_hookspecs() -> None:
    assert _current_block() == render_hooks(), (
        "docs/reference/hooks.md is out of date; run: python tests/test_docs_examples.py"
    )


if __name__ == "__main__":
    text = HOOKS_MD.read_text(encoding="utf-8")
    HOOKS_MD.write_text(text.replace(_current_block(), render_hooks()), encoding="utf-8")
    sys.exit(0)
