"""A noisy agent in real runs (issue 30): its baseline is recorded, 20 unchanged reruns pass
the default paired gate, and a regressed agent fails it, saying which test decided.

The planner answers like an LLM at temperature > 0: the same request gets another plan each
call, drawn with true randomness (``random.SystemRandom``) around a fixed policy (cheapest
stated cost first, each key perturbed by a log-normal factor).  Before issue 30 the
default gate compared such a run with the tolerance rule and failed most reruns.
"""

from __future__ import annotations

import importlib
import json
import pkgutil

import pytest

import pytest_budget
from tests.schemas import validate_report

CONFTEST = """
import math
import os
import random
import re

_RNG = random.SystemRandom()


class NoisyPlanner:
    name = "noisy-planner"

    def plan(self, request):
        found = {p.id: re.search(r"about (\\d+) tokens", p.text) for p in request.items}
        stated = {i: int(m.group(1)) for i, m in found.items()}
        order = sorted(stated, key=lambda i: stated[i] * math.exp(_RNG.gauss(0.0, 0.5)))
        # The regressed agent allocates half of what an item needs (regime E scores nothing).
        share = 0.5 if os.environ.get("REGRESSED") else 1.25
        plan, spent = [], 0
        for item in order:
            tokens = int(stated[item] * share)
            if spent + tokens > request.budget:
                continue
            plan.append({"id": item, "tokens": tokens})
            spent += tokens
        return {"plan": plan}


def pytest_budget_planner(config):
    return NoisyPlanner()
"""

ARGS = ("--budget-suite=triage", "--budget-pool=mine.jsonl", "--budget-alpha=0.5",
        "--budget-unsolvable=0",
        "--budget-agent=user", "--budget-ci-resamples=0", "-p", "no:cacheprovider",
        "-p", "no:randomly")  # fmt: skip
# The reruns run in this process: without assertion rewriting (the inner runs assert
# nothing) and without hypothesis's plugin, each re-imported per run otherwise (~10 s each).
# The pooled tests of this pool: no unsolvable item, so detection and waste are undefined
# (no pooled test), but the level still splits over the 6 metrics counted at collection.
METRICS = ("eta_u", "eta_e", "regret_u", "regret_e")
INPROCESS = ("--assert=plain", "-p", "no:hypothesispytest")


def _import_the_plugin() -> None:
    """Import every module of the plugin here once: pytester drops the modules an in-process
    run imported, so each rerun would import them again (~4 s a run); imported here, every
    rerun runs the same code in about a second."""
    for module in pkgutil.walk_packages(pytest_budget.__path__, "pytest_budget."):
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed: the run needs it not
            continue


def _pool(pytester: pytest.Pytester) -> None:
    lines = []
    for i in range(60):
        cost = 100 + (i * 37) % 400
        lines.append(
            {
                "id": f"q{i}",
                "text": f"Question {i} (about {cost} tokens)",
                "baseline": {"solved": i % 3 != 0, "tokens": cost},
            }
        )
    pytester.path.joinpath("mine.jsonl").write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8"
    )


def test_a_noisy_agent_passes_twenty_reruns_and_a_regressed_one_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pool(pytester)
    pytester.makeconftest(CONFTEST)
    # The pool of 60 items is split into two cells of 30 (mine#0, mine#1).
    pytester.runpytest_subprocess(*ARGS, "--snapshot-update").assert_outcomes(passed=2)
    stored = sorted((pytester.path / "__budget_snapshots__" / "triage").glob("*.json"))
    baselines = [json.loads(path.read_text()) for path in stored]
    assert [b["per_query"]["unit"] for b in baselines] == ["item", "item"]
    assert [b["per_query"]["n"] for b in baselines] == [30, 30]
    _import_the_plugin()
    moved = 0
    for _ in range(20):
        result = pytester.runpytest_inprocess(*ARGS, *INPROCESS, "--budget-report=r.json")
        result.assert_outcomes(passed=2)
        assert result.ret == 0
        report = json.loads((pytester.path / "r.json").read_text())
        cells = report["cells"]
        # The run's pooled tests are in the report, one per triage metric, none failed.
        pooled = report["pooled_gate"]
        assert sorted(t["metric"] for t in pooled) == sorted(METRICS)
        assert not any(t["regressed"] for t in pooled)
        assert all(t["alpha"] == pytest.approx(0.005 / 6) and t["units"] == 60 for t in pooled)
        moved += any(
            c["scores"]["eta_u"] != b["scores"]["eta_u"]
            for c, b in zip(sorted(cells, key=lambda c: c["cell"]), baselines, strict=True)
        )
    assert moved >= 10  # the agent is noisy: the plans (and eta_u) differ run to run
    monkeypatch.setenv("REGRESSED", "1")
    worse = pytester.runpytest_inprocess(*ARGS, *INPROCESS, "--budget-report=w.json")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    # Each cell loses what regime E earned; the run's pooled test over both cells decides
    # (a cell's own test may decide too, at 0.005 / 12 gated pairs).
    worse.stdout.fnmatch_lines(
        ["*budget: the run's pooled gate failed*",
         "triage eta_e regressed over the suite: mean change -* (higher is better) on the same "
         "60 units of 2 cells, pooled sign-flip test p=* < 0.00083 (run level 0.01: half split "
         "over 6 pooled kind x metric pairs, Bonferroni)"]
    )  # fmt: skip
    report = json.loads((pytester.path / "w.json").read_text())
    validate_report(report)
    pooled = {t["metric"]: t for t in report["pooled_gate"]}
    assert pooled["eta_e"]["regressed"] and pooled["eta_e"]["p_value"] < pooled["eta_e"]["alpha"]
    assert pooled["eta_e"]["mean_change_worse"] > 0
