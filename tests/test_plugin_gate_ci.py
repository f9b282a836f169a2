"""Intervals in real runs: every cell's ``ci``, ``--budget-gate=ci``, ``--budget-repeat``.

The gate scenario uses a planner defined in the test project's conftest whose behaviour is
switched by a file: ``base`` (the built-in cheapest-first planner, recorded as the
baseline), ``noisy`` (the same plan with its cheapest item moved to the end: a small change
that a 0.05 tolerance flags but that is well inside the cell's noise) and ``bad`` (the most
expensive items first: clearly worse).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.schemas import validate_report

FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
# The runs name hypothesis's plugin off on their command line, and the re-run commands they
# check repeat it: conftest.py must not also put it in PYTEST_ADDOPTS.
pytestmark = pytest.mark.hypothesis_plugin
SMALL = (
    "--budget-suite=all", "--budget-gate=off",
    # triage: one alpha, no injection, one planner (2 cells: arith and sokoban)
    "--budget-alpha=0.5", "--budget-unsolvable=0.5", "--budget-pool-size=12",
    # awareness: one environment, few rollouts; planning: one task and scenario
    "--budget-env=sokoban-8x8", "--budget-rollout-count=12",
    "--budget-task=dining", "--budget-scenario=static@2,ban_tool:1@5", "--budget-query-count=6",
    "--budget-agent=cheapest-first,random,linear-knows-T,greedy,random-valid",
)  # fmt: skip

PLANNER = """
from pathlib import Path
from pytest_budget.triage import Plan, PlanEntry
from pytest_budget.triage._domains import estimate_any
from pytest_budget.triage._planners import CheapestFirstPlanner


class SwitchedPlanner:
    name = "my-planner"

    def plan(self, request):
        variant = (Path(__file__).parent / "variant.txt").read_text().strip()
        entries = list(CheapestFirstPlanner().plan(request).entries)
        if variant == "noisy":
            entries = entries[1:] + entries[:1]  # its cheapest item moved to the end
        elif variant == "bad":
            costly = sorted(request.items, key=lambda p: -estimate_any(p).tokens)[:10]
            entries = [PlanEntry(p.id, request.budget // 10) for p in costly]
        return Plan(entries=tuple(entries))


def pytest_budget_planner(config):
    return SwitchedPlanner()
"""
GATE = ("--budget-suite=triage", "--budget-alpha=0.5", "--budget-unsolvable=0", "-k", "arith")
SNAPSHOT = Path("__budget_snapshots__/triage/arith-u0-a0.5-A-user.json")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*FAST, *args)


def report(pytester: pytest.Pytester, *args: str, name: str = "r.json") -> dict[str, Any]:
    result = run(pytester, *args, f"--budget-report={name}")
    assert result.ret == 0, result.stdout.str()
    data: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return data


def by_node(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {cell["nodeid"]: cell for cell in data["cells"]}


def use(pytester: pytest.Pytester, variant: str) -> None:
    (pytester.path / "variant.txt").write_text(variant, encoding="utf-8")


# --------------------------------------------------------------------------- intervals


def test_every_cell_of_every_suite_has_an_interval_per_score(pytester: pytest.Pytester) -> None:
    data = report(pytester, *SMALL)
    validate_report(data)
    units = {"triage": ("item", 12), "awareness": ("rollout", 12), "planning": ("query", 6)}
    seen = set()
    for cell in data["cells"]:
        suite = cell["suite"]
        seen.add(suite)
        assert list(cell["ci"]) == list(cell["scores"]), cell["nodeid"]
        meta = cell["ci_meta"]
        assert (meta["level"], meta["resamples"], meta["method"]) == (0.95, 1000, "percentile")
        unit, n = units[suite]
        assert meta["unit"] == unit
        assert meta["n_units"] <= n  # awareness: rollouts with at least one probe
        for name, value in cell["scores"].items():
            interval = cell["ci"][name]
            if value is None:
                assert interval is None, (cell["nodeid"], name)
                continue
            assert interval is not None, (cell["nodeid"], name)
            lo, hi = interval
            assert math.isfinite(lo) and lo <= hi
        assert "repeat" not in cell
    assert seen == {"triage", "awareness", "planning"}
    # Noise is visible: the random estimator's macro-F1 is not known to the last digit.
    random_cell = next(c for c in data["cells"] if c["agent"] == "random" and
                       c["suite"] == "awareness")  # fmt: skip
    lo, hi = random_cell["ci"]["macro_f1_all"]
    assert lo < random_cell["scores"]["macro_f1_all"] < hi


def test_same_intervals_with_xdist(pytester: pytest.Pytester) -> None:
    plain = report(pytester, *SMALL, "--budget-repeat=2")
    result = pytester.runpytest_subprocess(*FAST, *SMALL, "--budget-repeat=2", "-n", "2",
                                           "--budget-report=x.json")  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    spread = json.loads((pytester.path / "x.json").read_text(encoding="utf-8"))
    a, b = by_node(plain), by_node(spread)
    assert a.keys() == b.keys()
    for node in a:
        for field in ("scores", "ci", "ci_meta", "repeat"):
            assert a[node][field] == b[node][field], (node, field)


def test_level_and_resamples_options(pytester: pytest.Pytester) -> None:
    args = ("--budget-suite=planning", "--budget-task=dining", "--budget-scenario=static@2",
            "--budget-agent=random-valid", "--budget-gate=off")  # fmt: skip
    wide = by_node(report(pytester, *args))
    pytester.makeini("[pytest]\nbudget_ci_level = 0.5\n")
    narrow = by_node(report(pytester, *args))
    node = next(iter(wide))
    assert narrow[node]["ci_meta"]["level"] == 0.5
    for name, interval in wide[node]["ci"].items():
        if interval is None:
            continue
        inner = narrow[node]["ci"][name]
        assert interval[0] <= inner[0] <= inner[1] <= interval[1], name
    # The command line wins over ini; 0 resamples: no intervals at all.
    flag = by_node(report(pytester, *args, "--budget-ci-level=0.9"))
    assert flag[node]["ci_meta"]["level"] == 0.9
    off = by_node(report(pytester, *args, "--budget-ci-resamples=0"))
    assert "ci" not in off[node] and "ci_meta" not in off[node]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget-ci-level=1",), "--budget-ci-level: '1' is not a confidence level strictly "
         "between 0 and 1 (e.g. 0.95)"),
        (("--budget-ci-level=0",), "--budget-ci-level: '0' is not a confidence level*"),
        (("--budget-ci-level=high",), "--budget-ci-level: 'high' is not a confidence level*"),
        (("--budget-ci-resamples=-5",), "--budget-ci-resamples: must be at least 0, got -5"),
        (("--budget-ci-resamples=many",), "--budget-ci-resamples: 'many' is not a whole number"),
        (("--budget-gate=ci", "--budget-ci-resamples=0"), "--budget-gate=ci needs confidence "
         "intervals: drop --budget-ci-resamples=0 (or give a positive number of resamples)"),
        (("--budget-repeat=0",), "--budget-repeat: must be at least 1, got 0"),
        (("--budget-gate=cis",), "--budget-gate: unknown mode 'cis'; choose from tolerance, "
         "ci, overlap, paired, off"),
        (("--budget-gate=overlap", "--budget-ci-resamples=0"), "--budget-gate=overlap needs "
         "confidence intervals: drop --budget-ci-resamples=0*"),
    ],
)  # fmt: skip
def test_bad_values_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    result = run(pytester, "--budget-suite=planning", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1


# --------------------------------------------------------------------------- the ci gate


def test_ci_gate_passes_noise_and_fails_a_real_regression(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PLANNER)
    use(pytester, "base")
    run(pytester, *GATE, "--snapshot-update").assert_outcomes(passed=1)
    stored = json.loads((pytester.path / SNAPSHOT).read_text(encoding="utf-8"))
    assert set(stored["ci"]) == set(stored["scores"])  # the baseline keeps its intervals
    lo, hi = stored["ci"]["eta_u"]
    assert lo < stored["scores"]["eta_u"] <= hi

    use(pytester, "noisy")
    tolerance = run(pytester, *GATE, "--budget-gate=tolerance")
    tolerance.assert_outcomes(failed=1)
    tolerance.stdout.fnmatch_lines(["*eta_u regressed: stored 0.873737, new 0.747475, "
                                    "tolerance 0.05 (higher is better)*"])  # fmt: skip
    run(pytester, *GATE, "--budget-gate=ci").assert_outcomes(passed=1)

    use(pytester, "bad")
    worse = run(pytester, *GATE, "--budget-gate=ci")
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines([
        "*eta_u regressed: stored 0.873737 [[]0.46*, 1[]], new -0.893939 with 95% interval "
        "[[]-1.39*, -0.70*[]] entirely below the stored value (higher is better)*",
        "*regret_u regressed: stored 0.05 [[]0, 0.2[]], new 0.75 with 95% interval "
        "[[]0.63*, 0.94*[]] entirely above the stored value (lower is better)*",
    ])  # fmt: skip

    # A baseline recorded without intervals still gates under ci, and says so.
    del stored["ci"]
    (pytester.path / SNAPSHOT).write_text(json.dumps(stored), encoding="utf-8")
    old = run(pytester, *GATE, "--budget-gate=ci")
    old.assert_outcomes(failed=1)
    old.stdout.fnmatch_lines([
        "*eta_u regressed: stored 0.873737, new -0.893939 with 95% interval*",
        "*BudgetBaselineWarning: baseline *arith-u0-a0.5-A-user.json stores no intervals*"
        "re-record with: pytest --budget-suite=triage --budget-gate=ci --budget-alpha=0.5 "
        "--budget-unsolvable=0 -p no:hypothesispytest -p no:cacheprovider --snapshot-update "
        "'pytest_budget/suites/test_triage.py::test_triage?arith-u0-a0.5-A-user?'*",
    ])  # fmt: skip
    use(pytester, "base")
    run(pytester, *GATE, "--budget-gate=ci").assert_outcomes(passed=1)
    # tolerance reads the old file too
    run(pytester, *GATE, "--budget-gate=tolerance").assert_outcomes(passed=1)


def test_ci_gate_on_own_cells_without_intervals_uses_the_tolerance(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_own="""
        from pathlib import Path

        def test_cell(budget_snapshot):
            value = float((Path(__file__).parent / "score.txt").read_text())
            data = {"scores": {"eta_u": value}, "context": {}}
            assert budget_snapshot("triage", "own-cell") == data
        """
    )
    (pytester.path / "score.txt").write_text("0.8", encoding="utf-8")
    run(pytester, "--snapshot-update").assert_outcomes(passed=1)
    (pytester.path / "score.txt").write_text("0.7", encoding="utf-8")
    result = run(pytester, "--budget-gate=ci")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*eta_u regressed: stored 0.8, new 0.7, tolerance 0.05 "
                                 "(higher is better); no interval for the new value, so "
                                 "compared with the tolerance*"])  # fmt: skip


# --------------------------------------------------------------------------- repeats

STOCHASTIC = """
import random


class Jittery:
    '''An estimator whose intervals wobble from call to call (its own RNG, never reset).'''

    name = "jittery"

    def __init__(self):
        self.rng = random.Random(1)

    def estimate(self, probe):
        used = sum(probe.used.values())
        guess = used * self.rng.uniform(0.2, 2.0)
        return f"<answer>[{int(guess * 0.5)}, {int(guess * 1.5) + 1}]</answer>"


AGENT = Jittery()


def pytest_budget_estimator(config):
    return AGENT
"""


def test_repeats_of_deterministic_agents_have_no_spread(pytester: pytest.Pytester) -> None:
    args = (*SMALL[:-1], "--budget-agent=cheapest-first,linear-knows-T,greedy")
    once = by_node(report(pytester, *args, name="once.json"))
    thrice = by_node(report(pytester, *args, "--budget-repeat=3", name="thrice.json"))
    assert once.keys() == thrice.keys()
    for node, cell in thrice.items():
        repeat = cell["repeat"]
        assert repeat["k"] == 3 and repeat["outcomes"] == ["ok"] * 3
        assert repeat["seeds"][0] == 42 and len(set(repeat["seeds"])) == 3
        for name, spread in repeat["scores"].items():
            if spread["mean"] is None:
                continue
            assert spread["std"] == 0 and spread["min"] == spread["max"], (node, name)
            assert cell["scores"][name] == pytest.approx(once[node]["scores"][name])
        # Identical repeats: the same intervals as one run, and pass^k flat in k.
        assert cell["ci"] == once[node]["ci"]
        assert cell["ci_meta"]["repeats"] == 3
        passes = repeat["consistency"]["pass_hat_k"]
        assert passes["1"] == passes["2"] == passes["3"]


def test_repeats_of_stochastic_agents_spread(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STOCHASTIC)
    args = ("--budget-suite=awareness,triage", "--budget-env=sokoban-8x8",
            "--budget-rollout-count=12", "--budget-alpha=0.5", "--budget-unsolvable=0",
            "--budget-gate=off", "--budget-repeat=3")  # fmt: skip
    data = report(pytester, *args)  # your estimator; triage: the reference planners
    validate_report(data)
    cells = data["cells"]
    mine = next(c for c in cells if c["suite"] == "awareness" and c["agent"] == "jittery")
    spread = mine["repeat"]["scores"]["interval_score"]
    assert spread["std"] > 0 and spread["min"] < spread["max"]
    assert mine["scores"]["interval_score"] == pytest.approx(sum(spread["values"]) / 3)
    passes = mine["repeat"]["consistency"]["pass_hat_k"]
    assert mine["repeat"]["consistency"]["unit"] == "probe"
    assert passes["1"] > passes["3"]  # some probes are right only sometimes
    # The reference random planner gets another seed per repeat.
    planner = next(c for c in cells if c["suite"] == "triage" and c["agent"] == "random")
    assert planner["repeat"]["scores"]["eta_u"]["std"] > 0
    assert planner["repeat"]["consistency"]["unit"] == "cell"
