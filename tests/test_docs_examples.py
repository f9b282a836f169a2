"""The files under docs/examples run as documented, and docs/reference/hooks.md is current.

Each example is copied into a pytester directory (conftest examples as ``conftest.py``) and
run in a subprocess on a small grid.  ``python tests/test_docs_examples.py`` rewrites the
generated part of docs/reference/hooks.md from pytest_budget/_plugin/hookspecs.py.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import pytest_budget._plugin.hookspecs
from tests import inprocess
from tests.schemas import validate, validate_report

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXAMPLES = DOCS / "examples"
HOOKS_MD = DOCS / "reference" / "hooks.md"

SUITE = (
    "--budget-suite=triage", "-p", "no:cacheprovider", "--budget-pool-size=6",
    "--budget-alpha=0.5", "--budget-unsolvable=0",
)  # fmt: skip
#: Not needed by the examples; skipping the hypothesis plugin halves each run's start-up.
FAST = ("-p", "no:hypothesispytest")
# The runs name hypothesis's plugin off on their command line, and the re-run commands they
# check repeat it: conftest.py must not also put it in PYTEST_ADDOPTS.
pytestmark = pytest.mark.hypothesis_plugin


def run(pytester: pytest.Pytester, *args: str, rewrite_asserts: bool = False) -> pytest.RunResult:
    """A run of the documented command, in-process with plain asserts (tests/inprocess.py;
    hypothesis's plugin is already off in FAST).  ``rewrite_asserts``: in a subprocess, as a
    user runs it: a failed snapshot's explanation of what regressed is pytest's assertion
    rewriting's, which an in-process run leaves out."""
    if rewrite_asserts:
        return pytester.runpytest_subprocess(*FAST, *args)
    inprocess.import_the_plugin()
    return pytester.runpytest_inprocess(*FAST, *args, "--assert=plain")


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
    """first-agent.md's planner made worse, on pools of 6 items and the tolerance rule:
    the paired default cannot decide on 6 items (a sign-flip p is at least 2**-6), so a
    project this small gates by tolerance (the tutorial's own 30-item run is held to its
    page by tests/test_docs_run.py)."""
    text = use_example(pytester, "conftest_planner_example.py")
    run(pytester, *SUITE, "--snapshot-update").assert_outcomes(passed=2)
    stored = sorted(p.name for p in (pytester.path / "__budget_snapshots__/triage").iterdir())
    assert stored == ["arith-u0-a0.5-A-user.json", "sokoban-u0-a0.5-A-user.json"]
    assert "reverse=False" in text
    pytester.makeconftest(text.replace("reverse=False", "reverse=True"))
    worse = run(pytester, *SUITE, "--budget-gate=tolerance")
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
    phase0 = found["arith-u0-a0.5-A/oracle"]["phase0"]
    assert phase0 == {
        "items": 6, "gradeable": 6, "solved": 5, "errors": {},
        "from_cache": 0, "measured": 6, "from_file": 0,
    }  # fmt: skip
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
    # 5 solved by their baselines (open-1 is not), arith-1 and arith-2 by the reference solver
    assert oracle["phase0"] == {
        "items": 8, "gradeable": 8, "solved": 7, "errors": {},
        "from_cache": 0, "measured": 2, "from_file": 6,
    }  # fmt: skip
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
            "eta_u_as_empty": 1.0, "eta_e_as_empty": 1.0,
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
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(pytester, *AWARENESS, ROLLOUTS, "--budget-report=report.json")
    result.assert_outcomes(passed=12)  # 2 env labels x 6 reference estimators
    result.stdout.fnmatch_lines(
        [
            "support-bot: 4 rollouts by logged, 3 succeeded, 2 feasible within budget, "
            "3.0 turns on average"
        ]
    )
    shown = documented_lines("how-to/replay-logged-rollouts.md", "support-bot  ", "ops-bot  ")
    assert len(shown) == 12 and set(shown) <= set(result.outlines)
    found = awareness_cells(pytester)
    assert len(found) == 12
    support = found["support-bot/always-feasible"]
    assert support["rollouts"] == {"rollouts": 4, "succeeded": 3, "feasible": 2, "mean_turns": 3.0}
    assert support["budget"] == {"tokens": 1000}
    assert support["actor"] == "logged"
    # 8 probes, 3 of them truly feasible: F1_feasible = 6/11, F1_impossible = 0
    assert support["scores"]["n_probes"] == 8
    assert support["scores"]["macro_f1_all"] == pytest.approx(3 / 11)
    # over the 5 probes of successful rollouts, [0, cap - used] contains R_k on 3 (sb-002
    # went over budget: its remaining 700 and 300 exceed the room left under the cap)
    assert support["scores"]["hit_rate"] == pytest.approx(3 / 5)
    assert support["scores"]["interval_score"] == 0.0
    assert found["support-bot/always-impossible"]["scores"]["fail_f1"] == pytest.approx(10 / 13)
    oracle = found["ops-bot/oracle"]["scores"]
    assert oracle["macro_f1_all"] == 1.0
    assert oracle["interval_score_tokens"] == oracle["interval_score_tool_calls"] == 1.0
    assert oracle["reward"] == pytest.approx(0.84)  # (2 x 1.8 + 3 x 0.2) / 5
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    validate_report(report)
    for line in (EXAMPLES / "rollouts_example.jsonl").read_text(encoding="utf-8").splitlines():
        validate(json.loads(line), "rollout.schema.json")


def test_estimator_example_on_logged_rollouts(pytester: pytest.Pytester) -> None:
    """The numbers worked by hand in replay-logged-rollouts.md."""
    use_example(pytester, "conftest_estimator_example.py")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(pytester, *AWARENESS, ROLLOUTS, "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["support-bot  doubling        8   0.750  0.855!     0.333    0.750*"]
    )
    found = awareness_cells(pytester)
    assert set(found) == {"support-bot/doubling", "ops-bot/doubling"}
    scores = found["support-bot/doubling"]["scores"]
    assert scores["macro_f1_all"] == pytest.approx(0.75)
    assert scores["macro_f1_first"] == pytest.approx(1 / 3)
    assert scores["fail_f1"] == pytest.approx(0.75)
    assert scores["interval_score"] == pytest.approx(4 / 15)
    assert scores["hit_rate"] == pytest.approx(2 / 5)
    assert scores["mre_p50"] == pytest.approx(350 / 550)
    assert scores["first_impossible_budget_share"] == pytest.approx(0.7)
    assert scores["false_abort_rate"] == 0.0
    assert scores["saved_token_share"] == pytest.approx(600 / 1200)
    assert scores["failed_rollouts"] == 1 and scores["failed_stopped_share"] == 1.0
    assert scores["linear_error_reduction"] == pytest.approx(-150)
    assert scores["reward"] == pytest.approx(0.15)
    assert scores["invalid_rate"] == 0.0 and scores["n_errors"] == 0
    ops = found["ops-bot/doubling"]["scores"]
    assert ops["macro_f1_all"] == pytest.approx(0.4)
    assert ops["false_abort_rate"] == pytest.approx(1 / 5)  # over all 5 probes
    assert ops["mre_p50_tokens"] == 0.5 and ops["mre_p50_tool_calls"] == 0.6
    assert ops["mre_p50"] == pytest.approx(0.55)  # the mean over the two dimensions


def documented_lines(doc: str, *starts: str) -> list[str]:
    """Output lines shown in the ```text blocks of a doc page that start with ``starts``."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", text, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith(starts)]


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
        "rollouts": 64,
        "succeeded": 27,
        "feasible": 27,
        "mean_turns": 5.656,
    }
    assert cell["scores"]["invalid_rate"] == 0.0
    assert cell["nodeid"].endswith("test_awareness[sokoban-8x8-user]")


def test_hook_estimator_example_next_to_linear(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_hook_estimator_example.py")
    use_example(pytester, "rollouts_example.jsonl", as_name="rollouts_example.jsonl")
    result = run(
        pytester, *AWARENESS, ROLLOUTS, "--budget-agent=user,linear-knows-T",
        "--budget-report=report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    shown = documented_lines("how-to/bring-your-own-estimator.md", "support-bot  ", "ops-bot  ")
    table = [line for line in shown if "flaky" not in line]
    assert len(table) == 4 and set(table) <= set(result.outlines)
    found = awareness_cells(pytester)
    assert set(found) == {
        "support-bot/pace", "support-bot/linear-knows-T", "ops-bot/pace", "ops-bot/linear-knows-T",
    }  # fmt: skip
    pace = found["support-bot/pace"]["scores"]
    assert pace["macro_f1_all"] == pytest.approx(0.75)
    assert pace["macro_f1_first"] == pytest.approx(11 / 15)
    # over the 5 probes of successful rollouts: sb-001 [320, 480] misses 550, [200, 300]
    # holds 250 (1 - 100/250); sb-002 (over budget) impossible twice (1 each); sb-004 misses
    assert pace["interval_score"] == pytest.approx((0.6 + 1 + 1) / 5)
    assert found["support-bot/linear-knows-T"]["scores"]["macro_f1_all"] == 1.0


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
    # BAGEN's parser ignores text after the answer tag; an unclosed tag is invalid
    pytester.makeconftest(text.replace('</answer>"', '"'))
    worse = run(pytester, *gated, rewrite_asserts=True)
    worse.assert_outcomes(failed=2)
    worse.stdout.fnmatch_lines(
        [
            "*invalid_rate regressed: new 1 * entirely above the stored 0 *(lower is better); "
            "only * probes changed, too few for the paired test, so compared by the interval "
            "overlap rule"
        ]
    )


def test_environment_facts_stated_in_the_reference() -> None:
    """environments.md: the Search world, its rollouts by hops, the swe-synthetic logs."""
    from collections import Counter

    import anyio
    import numpy as np

    from pytest_budget.awareness._environments import ReferenceActor, generate_env_rollouts
    from pytest_budget.awareness._logs.trajectories import bundled_swe_rollouts
    from pytest_budget.awareness._replay.subsample import subsample_probes
    from pytest_budget.awareness.search._corpus import RELATIONS, build_corpus

    text = (DOCS / "reference" / "environments.md").read_text(encoding="utf-8")
    corpus = build_corpus(0)
    assert len(corpus.documents) == 4830 and len(corpus.questions) == 1000
    assert sum(1 for d in corpus.documents if d.title.endswith(")")) == 1666
    assert sum(not q.answerable for q in corpus.questions) == 120
    assert Counter(q.hops for q in corpus.questions) == {2: 334, 3: 333, 4: 333}
    assert Counter(q.difficulty for q in corpus.questions) == {
        "easy": 331, "medium": 513, "hard": 156,
    }  # fmt: skip
    assert sum(RELATIONS[q.plan.relations[-1]].literal for q in corpus.questions if q.plan) == 116
    first = corpus.questions[0]
    assert first.answer == "Troukeith" and first.gold_docs == ("university-0046-1", "person-0709")
    assert f'*"{first.question}"*' in " ".join(text.split())

    rollouts = anyio.run(
        lambda: generate_env_rollouts("search", 128, seed=42, actor=ReferenceActor(42))
    )  # in process: the same BM25 ranking as the suite's server
    for hops in (2, 3, 4):
        group = [r for r in rollouts if r.meta["hops"] == hops]
        median = float(np.median([r.total()["tokens"] for r in group]))
        row = (
            f"| {hops} | {len(group)} | {sum(r.success for r in group)} | "
            f"{sum(r.feasible for r in group)} | {median:,.1f} |"
        )
        assert row in text
    assert Counter(r.meta["end_reason"] for r in rollouts) == {"answered": 71, "token_cap": 57}
    seventh = next(r for r in rollouts if r.id == "search-s42-0007")
    assert seventh.turns[1].observation in text
    info = seventh.turns[0].info
    assert (info["input_tokens"], info["output_tokens"]) == (145, 950)

    swe = bundled_swe_rollouts()
    assert len(swe) == 32 and swe[0].budget == {"tokens": 22497.0}
    assert (sum(r.success for r in swe), sum(r.feasible for r in swe)) == (22, 12)
    assert sum(r.T - 1 for r in swe) == 1493 and len(subsample_probes(swe)) == 512
    assert "22,497" in text and "1,493" in text


def test_chat_transcripts_example_imported_with_history_excluded(
    pytester: pytest.Pytester,
) -> None:
    """replay-logged-rollouts.md and rollout-format.md: the transcripts, worked by hand."""
    from pytest_budget.awareness._logs.trajectories import load_trajectories

    loaded = load_trajectories([EXAMPLES / "chat_transcripts_example.jsonl"])
    assert [r.id for r in loaded] == ["chat-001", "chat-002", "chat-003", "chat-004"]
    assert [[t.usage["tokens"] for t in r.turns] for r in loaded] == [
        [480, 100, 70], [480, 180, 160, 90], [420, 80], [480, 170, 180],
    ]  # fmt: skip
    assert {r.env for r in loaded} == {"swe-support-7b"}
    assert {r.budget["tokens"] for r in loaded} == {740.0}  # median of 650, 910, 500, 830
    assert loaded[1].turns[3].info["clamped"] and loaded[1].meta["clamped_turns"] == 1
    assert loaded[2].meta["success_rule"] == "success"
    assert loaded[0].turns[0].action.endswith('[tool call] lookup_order({"order_id": "5521"})')

    use_example(pytester, "chat_transcripts_example.jsonl", as_name="chats.jsonl")
    median = run(pytester, *AWARENESS, "--budget-rollouts=chats.jsonl",
                 "--budget-report=median.json")  # fmt: skip
    median.assert_outcomes(passed=6)
    capped = run(pytester, *AWARENESS, "--budget-rollouts=chats.jsonl",
                 "--budget-rollout-cap=1000", "--budget-report=report.json")  # fmt: skip
    capped.assert_outcomes(passed=6)
    shown = documented_lines("how-to/replay-logged-rollouts.md", "swe-support-7b")
    assert len(shown) == 11  # 6 rows and 2 summary lines at the median; 2 rows, 1 line at 1000
    assert set(shown[:8]) <= set(median.outlines)
    assert set(shown[8:]) <= set(capped.outlines)
    validate_report_of(pytester)

    found = awareness_cells(pytester, "median.json")
    oracle = found["swe-support-7b/oracle"]
    assert oracle["actor"] == "logged" and oracle["budget"] == {"tokens": 740.0}
    assert oracle["rollouts"] == {"rollouts": 4, "succeeded": 3, "feasible": 2, "mean_turns": 3.0}
    assert oracle["scores"]["n_probes"] == 8
    assert oracle["scores"]["reward"] == pytest.approx((3 * 1.8 + 5 * 0.2) / 8)
    # failed = unsuccessful (BAGEN's early-stop table): chat-002 only; chat-004 succeeded
    # over budget, so it is infeasible but not a failed run
    assert oracle["scores"]["saved_token_share"] == pytest.approx(430 / 910)
    impossible = found["swe-support-7b/always-impossible"]["scores"]
    assert impossible["fail_f1"] == pytest.approx(10 / 13)
    found = awareness_cells(pytester)
    oracle = found["swe-support-7b/oracle"]
    assert oracle["budget"] == {"tokens": 1000.0} and oracle["rollouts"]["feasible"] == 3
    assert oracle["scores"]["reward"] == pytest.approx((5 * 1.8 + 3 * 0.2) / 8)
    assert oracle["scores"]["saved_token_share"] == pytest.approx(430 / 910)
    assert found["swe-support-7b/always-impossible"]["scores"]["fail_f1"] == pytest.approx(6 / 11)


def test_mini_swe_agent_example_and_the_verdicts_snippet(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replay-logged-rollouts.md: import mini-swe-agent trajectories, with verdicts."""
    from pytest_budget.awareness._logs.trajectories import load_trajectories
    from pytest_budget.awareness._replay.rollouts import read_rollouts

    (rollout,) = load_trajectories([EXAMPLES / "mini_swe_agent_example.traj.json"])
    assert (rollout.id, rollout.env) == ("acme__textkit-142", "swe-coder-large")
    assert [t.usage["tokens"] for t in rollout.turns] == [2250, 180, 440, 90]
    assert rollout.success and rollout.meta["success_rule"] == "exit_status == 'Submitted'"

    name = "mini_swe_agent_example.traj.json"
    use_example(pytester, name, as_name=name)
    result = run(pytester, *AWARENESS, f"--budget-rollouts={name}", "--budget-rollout-cap=2500")
    result.assert_outcomes(passed=6)
    shown = documented_lines("how-to/replay-logged-rollouts.md", "swe-coder-large")
    assert len(shown) == 1 and shown[0] in result.outlines

    folder = pytester.path / "runs" / "acme__textkit-142"
    folder.mkdir(parents=True)
    use_example(pytester, name, as_name=f"runs/acme__textkit-142/{name}")
    (pytester.path / "evaluation.json").write_text('{"resolved_ids": []}', encoding="utf-8")
    (code,) = [b for b in python_blocks("how-to/replay-logged-rollouts.md") if "resolved_ids" in b]
    monkeypatch.chdir(pytester.path)
    exec(compile(code, "replay-logged-rollouts.md", "exec"), {})
    (replayed,) = read_rollouts(pytester.path / "runs.jsonl")
    assert not replayed.success  # the evaluation did not resolve it
    assert replayed.meta["success_rule"] == "resolved (given by the caller)"


@contextmanager
def example_server(*command: str) -> Iterator[str]:
    """Run an example server in a subprocess; yields the URL it prints on its first line."""
    process = subprocess.Popen(
        [sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"no URL from {command[0]}: {url!r}"
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=10)  # reaps the process and closes its pipe


def _json_blocks(doc: str) -> list[Any]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)]


def test_retrieval_server_example_answers_as_documented() -> None:
    """retrieval-api.md: the example server, the documented answers, errors and scoring."""
    import math

    import anyio
    import httpx

    from pytest_budget.awareness.retrieval._client import wait_until_healthy

    api = (DOCS / "reference" / "retrieval-api.md").read_text(encoding="utf-8")
    retrieve_doc, health_doc, search_doc = _json_blocks("reference/retrieval-api.md")
    with example_server(str(EXAMPLES / "retrieval_server_example.py")) as url:
        assert anyio.run(lambda: wait_until_healthy(url, 10.0)) == health_doc
        with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
            bagen = {"query": "Which river flows through Durnholm?", "top_k": 1}
            assert json.dumps(bagen) in api  # the documented curl body of /retrieve
            assert client.post("/retrieve", json=bagen).json() == retrieve_doc
            request = {"query": "Which river flows through Durnholm?", "k": 2}
            assert json.dumps(request) in api  # the documented curl body
            assert client.post("/search", json=request).json() == search_doc
            bad = client.post("/search", json={"query": "Durnholm", "k": 0})
            assert bad.status_code == 400
            assert f"\n\n{bad.text}\n" in api and bad.headers["content-length"] == "44"
            errors = [  # (request, status, message in the table)
                (client.post("/search", json=[1]), 400, "body must be a JSON object, got list"),
                (client.post("/search", json={"q": "x"}), 400, "unknown key(s) ['q']"),
                (client.post("/search", json={"k": 2}), 400, "missing 'query'"),
                (client.post("/search", json={"query": "x", "k": 2.0}), 400,
                 "'k' must be an integer, got float"),
                (client.post("/search", json={"query": "x" * 2001}), 400,
                 "'query' is too long: 2001 characters > 2000"),
                (client.get("/nope"), 404,
                 "unknown path '/nope'; endpoints: GET /health, POST /retrieve, POST /search"),
                (client.get("/search"), 405, "GET not allowed on /search; use POST"),
                (client.post("/search", content=b"x" * 71680), 413,
                 "body too large: 71680 bytes > 65536"),
            ]  # fmt: skip
            for response, status, message in errors:
                assert response.status_code == status and message in response.json()["error"]
                assert message in api
            assert client.get("/search").headers["allow"] == "POST"

    # The scoring formula of the page reproduces the served scores.
    sys.path.insert(0, str(EXAMPLES))
    try:
        from retrieval_server_example import DOCUMENTS  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(EXAMPLES))
    from pytest_budget.awareness.retrieval._client import tokenize

    docs = [tokenize(f"{d.title}\n{d.text}") for d in DOCUMENTS]
    avgdl = sum(map(len, docs)) / len(docs)

    def score(query: str, doc: list[str]) -> float:
        total = 0.0
        for term in set(tokenize(query)):
            df = sum(term in other for other in docs)
            if df and term in doc:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                tf = doc.count(term)
                total += idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * len(doc) / avgdl))
        return total

    for hit in search_doc["results"]:
        doc = docs[[d.id for d in DOCUMENTS].index(hit["id"])]
        assert score(search_doc["query"], doc) == pytest.approx(hit["score"], rel=1e-12)


def test_own_retrieval_server_with_the_suite(pytester: pytest.Pytester) -> None:
    """bring-your-own-retrieval-server.md: the exported corpus behind both example servers."""
    howto = "how-to/bring-your-own-retrieval-server.md"
    text = (EXAMPLES / "minimal_search_server_example.py").read_text(encoding="utf-8")
    (code,) = [b for b in python_blocks(howto) if "ThreadingHTTPServer" in b]
    assert code == text  # the how-to shows the example file as it is
    # Step 1's command, run here (pytester's directory is the working directory).
    (export,) = re.findall(r'^python -c "(.*)"$', (DOCS / howto).read_text(encoding="utf-8"), re.M)
    exec(compile(export, howto, "exec"), {})
    corpus = pytester.path / "search_corpus.jsonl"
    first = corpus.read_text(encoding="utf-8").splitlines()[0]
    assert first in (DOCS / howto).read_text(encoding="utf-8")

    with example_server(
        str(EXAMPLES / "minimal_search_server_example.py"), str(corpus), "0"
    ) as url:
        result = run(pytester, *AWARENESS, "--budget-env=search", f"--budget-search-url={url}",
                     "--budget-report=report.json")  # fmt: skip
    result.assert_outcomes(passed=6)
    shown = documented_lines(howto, "search ", "search:")
    assert len(shown) == 10  # 6 rows, 2 summary lines each for this server and the built-in one
    assert set(shown[:8]) <= set(result.outlines)
    tutorial = documented_lines("tutorial/first-awareness-run.md", "search:")
    assert shown[8:] == tutorial[:2]  # checked against a real run with the tutorial
    validate_report_of(pytester)

    # The built-in ranking behind --budget-search-url: the same rollouts, so the shipped
    # baseline still passes.
    with example_server(
        str(EXAMPLES / "retrieval_server_example.py"), "--corpus", str(corpus)
    ) as url:
        same = run(pytester, "--budget-suite=awareness", "-p", "no:cacheprovider",
                   "--budget-env=search", "--budget-agent=oracle",
                   f"--budget-search-url={url}")  # fmt: skip
    same.assert_outcomes(passed=1)
    refused = run(pytester, *AWARENESS, "--budget-env=search", "--budget-search-url=localhost:8000")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    line = "ERROR: --budget-search-url: 'localhost:8000' is not an http(s) URL, e.g. http://127.0.0.1:8000"
    assert line in refused.errlines and line in (DOCS / howto).read_text(encoding="utf-8")


def test_awareness_reference_snippets_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python snippets of the awareness reference pages run; their files replay."""
    examples = pytester.path / "docs" / "examples"
    examples.mkdir(parents=True)
    use_example(pytester, "chat_transcripts_example.jsonl",
                as_name="docs/examples/chat_transcripts_example.jsonl")  # fmt: skip
    monkeypatch.chdir(pytester.path)
    for doc in (
        "reference/environments.md",
        "reference/rollout-format.md",
        "reference/retrieval-api.md",
        "reference/metrics-awareness.md",
    ):
        for block in python_blocks(doc):
            exec(compile(block, str(DOCS / doc), "exec"), {})
    result = run(pytester, *AWARENESS, "--budget-rollouts=my_search_rollouts.jsonl",
                 "--budget-rollouts=support_bot.jsonl",
                 "--budget-rollouts=warehouse_rollouts.jsonl")  # fmt: skip
    result.assert_outcomes(passed=18)  # search, support-bot, warehouse x 6 estimators
    result.stdout.fnmatch_lines(["search: 8 rollouts by logged, 8 succeeded, 8 feasible*"])


def test_suite_all_collects_every_cell(pytester: pytest.Pytester) -> None:
    """index.md: --budget-suite=all is 214 cells at the default settings."""
    result = run(pytester, "--budget-suite=all", "-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["214 tests collected*"])
    index = " ".join((DOCS / "index.md").read_text(encoding="utf-8").split())
    assert "all three: 214 cells, 64 + 30 + 120)" in index


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


def validate_report_of(pytester: pytest.Pytester) -> None:
    validate_report(report_of(pytester))


def glob_escape(text: str) -> str:
    """``text`` as a literal fnmatch pattern (brackets are character classes there)."""
    return re.sub(r"([\[\]*?])", r"[\1]", text)


def report_snippet(pytester: pytest.Pytester, doc: str) -> tuple[list[str], list[str]]:
    """What the doc's ``python -c`` report snippet prints here, and what the doc shows."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    pattern = r'```bash\n(?:(?!```).)*?python -c "(.*?)"\n```\s*prints\s*```text\n(.*?)```'
    code, shown = re.search(pattern, text, flags=re.DOTALL).groups()  # type: ignore[union-attr]
    done = subprocess.run([sys.executable, "-c", code], cwd=pytester.path, check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.splitlines(), shown.splitlines()


def python_blocks(doc: str) -> list[str]:
    """The ```python blocks of a doc page, in order."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    found = re.findall(r"^( *)```python\n(.*?)^ *```", text, flags=re.DOTALL | re.MULTILINE)
    return [textwrap.dedent(block) if indent else block for indent, block in found]


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
    validate_report_of(pytester)
    tutorial = (DOCS / "tutorial" / "first-planning-run.md").read_text(encoding="utf-8")
    summary = report_of(pytester)["summary"]
    assert summary == {"cells": 20, "outcomes": {"ok": 20}, "tests": {"passed": 20}}
    assert str(summary) in tutorial
    found = cells(pytester)
    cell = found["dining-ban_tool1-L5/greedy"]
    assert (cell["mode"], cell["block_count"], cell["refinement_level"]) == ("ban_tool", 1, 5)
    printed = {k: round(v, 3) if isinstance(v, float) else v for k, v in cell["scores"].items()}
    assert str(printed) in tutorial
    ran, shown = report_snippet(pytester, "tutorial/first-planning-run.md")
    assert ran == shown and ran[2] == str(printed)  # the snippet itself, as shown
    # greedy is scored twice: as an agent and as every static cell's baseline
    static = found["dining-static-L2/greedy"]
    for key in ("emr", "aed", "aned", "cost_gap"):
        assert static["scores"][key] == pytest.approx(static["greedy"][key])
    # Under blocking the greedy replays the agent's events (CostBench's stimulation).
    assert cell["greedy"]["emr"] is not None and cell["greedy"]["n_episodes"] == 9
    oracle = found["dining-cost_change1-L5/oracle"]["scores"]
    assert oracle["emr"] == 1.0 and oracle["cost_gap"] == pytest.approx(0.0, abs=1e-9)


def test_pipeline_agent_example(pytester: pytest.Pytester) -> None:
    """first-planning-run.md, steps 5 and 6: the dozen-line agent, static and blocked."""
    text = use_example(pytester, "conftest_pipeline_agent_example.py")
    tutorial = (DOCS / "tutorial" / "first-planning-run.md").read_text(encoding="utf-8")
    (code,) = [b for b in python_blocks("tutorial/first-planning-run.md") if "PipelineAgent" in b]
    assert code in text  # the tutorial shows the example file as it is
    assert "PipelineAgent" in tutorial
    keep = "--budget-planning-keep-longest"
    result = run(pytester, *PLANNING, "--budget-scenario=static@1", keep, *UNGATED)
    result.assert_outcomes(passed=1)
    shown = documented_lines("tutorial/first-planning-run.md", "dining  static-L1  pipeline")
    assert len(shown) == 1 and shown[0] in result.outlines
    validate_report_of(pytester)
    cell = cells(pytester)["dining-static-L1/pipeline"]
    assert cell["nodeid"].endswith("test_planning[dining-static-L1-user]")
    scores = cell["scores"]
    assert scores["emr"] == 0.0 and scores["aned"] == 1.0 and scores["aed"] == pytest.approx(8 / 3)
    assert scores["uihr"] == 0.0 and scores["itur"] == 0.0 and scores["total_calls"] == 3
    # one call each: the pipeline's price minus the ground truth's, in cost units
    from pytest_budget.planning import TravelEnv, generate_queries

    gaps = []
    for query in generate_queries("dining", 3):
        env = TravelEnv("dining", 1, query.query_id, ban_longest=False)
        gaps.append(env.costs["Dining_Complete_4Steps_Pipeline"] - env.optimal_path()[1])
    assert scores["cost_gap"] == pytest.approx(sum(gaps) / 3)

    scenarios = "--budget-scenario=ban_tool:1@5,cost_change:1@5"
    blocked = run(pytester, *PLANNING, scenarios, keep, *UNGATED)
    blocked.assert_outcomes(passed=2)
    shown = documented_lines("tutorial/first-planning-run.md", "dining  ban_tool1-L5     pipeline",
                             "dining  cost_change1-L5  pipeline")  # fmt: skip
    assert len(shown) == 2 and set(shown) <= set(blocked.outlines)
    found = cells(pytester)
    ban = found["dining-ban_tool1-L5/pipeline"]["scores"]
    assert ban["blocks_applied"] == 3 and ban["banned_calls"] == 3 and ban["unreached"] == 3
    # Missed goals stay in, at the worst case; the blocked call is a valid step.
    assert ban["itur"] == 0.0 and ban["emr"] == 0.0 and ban["aned"] == 1.0 and ban["uihr"] == 0.0
    cost = found["dining-cost_change1-L5/pipeline"]["scores"]
    # The change fired after turn 1, the answer came at turn 2: not effective, run invalid.
    assert cost["blocks_applied"] == 3 and cost["n_m"] == 0
    assert cost["itur"] is None and cost["emr"] is None


def test_tool_agent_example_in_every_mode(pytester: pytest.Pytester) -> None:
    """bring-your-own-tool-agent.md: the route planner, static and under every blocking mode."""
    use_example(pytester, "conftest_tool_agent_example.py")
    scenarios = "static@1,ban_tool:2@5,preference_change:1@5,cost_change:2@3,remove_tools:2@4"
    result = run(pytester, *PLANNING, f"--budget-scenario={scenarios}", *UNGATED)
    result.assert_outcomes(passed=5)
    shown = documented_lines("how-to/bring-your-own-tool-agent.md", "dining  ", "task    ")
    assert len(shown) == 6 and set(shown) <= set(result.outlines)
    validate_report_of(pytester)
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
                     "--budget-agent=user,greedy", "--budget-planning-keep-longest",
                     *UNGATED)  # fmt: skip
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
    validate_report_of(pytester)
    found = cells(pytester)
    oracle = found["dining-static-L1/oracle"]
    assert oracle["queries"] == 3  # --budget-query-count does not apply to files
    assert oracle["scores"]["uihr"] == 1.0 and oracle["scores"]["emr"] == 1.0
    assert found["dining-static-L1/greedy"]["scores"]["emr"] == pytest.approx(1 / 3)

    text = (EXAMPLES / "queries_example.json").read_text(encoding="utf-8")
    (pytester.path / "queries.json").write_text(
        text.replace('"street_food_vendor"', '"diner"', 1), encoding="utf-8"
    )
    broken = run(pytester, *PLANNING, "--budget-queries=queries.json")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    message = (
        "entry 0 (query_id '<Query90001>'): field preferences.category = 'diner' is not a "
        "dining category value of CostBench's test enums; allowed: coffee_shop, restaurant, "
        "street_food_vendor, bakery"
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
    assert stored["context"] == {
        "ban_longest": True, "queries": 3, "query_set": "289d6b55bb17f645", "reading": "code",
        "seed": 42,
    }  # fmt: skip
    assert {k: stored["scores"][k] for k in ("aed", "aned", "cost_gap", "emr", "itur", "uihr")} == {
        "aed": 0.0, "aned": 0.0, "cost_gap": 0.0, "emr": 1.0, "itur": 0.0, "uihr": 0.0,
    }  # fmt: skip
    assert '"query_set": "289d6b55bb17f645"' in (DOCS / "reference" / "report.md").read_text(
        encoding="utf-8"
    )
    run(pytester, *gated).assert_outcomes(passed=1)
    gate_doc = (DOCS / "how-to" / "gate-ci.md").read_text(encoding="utf-8")
    changed = run(pytester, *gated, "--budget-query-count=4")
    changed.assert_outcomes(failed=1)
    recorded = (
        "was recorded with queries=3 (now 4), query_set='289d6b55bb17f645' "
        "(now 'bc559dbdb8a7a39a'); re-record with: pytest --budget-suite=planning "
        "--budget-scenario=static@1 --budget-task=dining --budget-query-count=4 "
    )
    cell = (
        "--snapshot-update "
        "'pytest_budget/suites/test_planning.py::test_planning[dining-static-L1-user]'"
    )
    assert any(line.endswith(recorded + "-p no:hypothesispytest -p no:cacheprovider " + cell)
               for line in changed.outlines)  # fmt: skip
    assert recorded + cell in gate_doc
    assert "round(float(price) * 100)" in text
    pytester.makeconftest(text.replace("round(float(price) * 100)", "100"))  # price-blind
    # -vv: the three long lines, not truncated
    worse = run(pytester, *gated, "-vv", rewrite_asserts=True)
    worse.assert_outcomes(failed=1)
    # Three changed queries can never reach the paired test's level: interval overlap decides.
    FEW = (
        "; only 3 of 3 queries changed, too few for the paired test, so compared by the "
        "interval overlap rule"
    )
    regressions = [
        "emr regressed: new 0 with 95% interval [0, 0] entirely below the stored 1 with "
        "interval [1, 1] (higher is better)" + FEW,
        "aned regressed: new 0.777778 with 95% interval [0.666667, 1] entirely above the "
        "stored 0 with interval [0, 0] (lower is better)" + FEW,
        "cost_gap regressed: new 0.336667 with 95% interval [0.13, 0.46] entirely above the "
        "stored 0 with interval [0, 0] (lower is better)" + FEW,
    ]
    worse.stdout.fnmatch_lines([f"*{glob_escape(line)}" for line in regressions])
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

BEGIN = "<!-- BEGIN GENERATED from pytest_budget/_plugin/hookspecs.py -->"
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
    module = pytest_budget._plugin.hookspecs
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
