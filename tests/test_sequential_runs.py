"""The sequential gate in real runs (issue 30, must-have 4): a noisy tool agent's baseline is
recorded at the full size; an unchanged rerun stops early, passes, and calls the agent less
than the full run did; a regressed agent fails, the failure naming the look that decided; a
deterministic agent that slips on a few queries of two cells fails the pooled e-process
only, which names where it crossed.

The tool agent answers like an LLM at temperature > 0: at each step it takes the optimal
plan's next call with its query's own probability (1.0 for most queries, 0.85 for a fifth
of them), else greedy's pick, drawn with true randomness (``random.SystemRandom``).  It
counts its own calls in a file, so the calls compared are the ones it really made.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests import inprocess

CONFTEST = """
import os
import random
import zlib

from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent

_RNG = random.SystemRandom()
_GREEDY = GreedyToolAgent()


class NoisyToolAgent(OracleToolAgent):
    # An LLM-like tool agent: at each step it takes the optimal plan's next call with its
    # query's own probability (fixed per query), else greedy's pick; true randomness.

    name = "noisy-tool-agent"

    def act(self, observation):
        path = os.environ.get("CALLS_FILE")
        if path:
            with open(path, "a") as handle:
                handle.write("x")
        return super().act(observation)

    def choose(self, observation, view):
        u = (zlib.crc32(observation.query_id.encode()) % 1000) / 1000
        p = 1.0 if u < 0.8 else 0.85
        if os.environ.get("REGRESSED"):
            p = 0.3  # far below the stated effect, so a miss is vanishingly rare
        if _RNG.random() < p:
            return super().choose(observation, view)
        return _GREEDY.choose(observation, view)


def pytest_budget_tool_agent(config):
    return NoisyToolAgent()
"""

ARGS = ("--budget-suite=planning", "--budget-agent=user", "--budget-task=accommodation",
        "--budget-scenario=static@2", "--budget-query-count=60", "--budget-ci-resamples=0",
        "-p", "no:cacheprovider", "-p", "no:randomly")  # fmt: skip
SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "reference" / "report.schema.json"


def _calls(path: Path) -> int:
    calls = len(path.read_text()) if path.exists() else 0
    path.unlink(missing_ok=True)
    return calls


def test_unchanged_agent_stops_early_and_a_regressed_one_fails_naming_the_look(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    counter = pytester.path / "calls"
    monkeypatch.setenv("CALLS_FILE", str(counter))
    # Recording runs every query (the baseline is the full size).
    inprocess.run(pytester, *ARGS, "--snapshot-update").assert_outcomes(passed=1)
    full = _calls(counter)
    stored = json.loads(
        (
            pytester.path / "__budget_snapshots__/planning/accommodation-static-L2-user.json"
        ).read_text()
    )
    assert stored["per_query"]["n"] == 60 and "sequential" not in stored
    # The in-process agent is not metered: auto leaves it whole, on runs it in batches.
    whole = inprocess.run(pytester, *ARGS, "--budget-report=w.json")
    whole.assert_outcomes(passed=1)
    assert "sequential" not in json.loads((pytester.path / "w.json").read_text())["cells"][0]
    assert _calls(counter) > 0.8 * full
    for _ in range(3):
        result = inprocess.run(pytester, *ARGS, "--budget-sequential=on", "--budget-report=r.json")
        result.assert_outcomes(passed=1)
        calls = _calls(counter)
        report = json.loads((pytester.path / "r.json").read_text())
        jsonschema.validate(report, json.loads(SCHEMA.read_text(encoding="utf-8")))
        (cell,) = report["cells"]
        seq = cell["sequential"]
        assert seq["decision"] == "no regression" and seq["look"] < seq["looks"] == 4
        assert seq["units"] == [15, 30, 45][seq["look"] - 1] and seq["max_units"] == 60
        assert cell["queries"] == seq["units"]
        # Fewer calls than the full run, in proportion to the queries run (+-30%: episodes
        # differ in length).
        assert calls < full
        assert calls == pytest.approx(full * seq["units"] / 60, rel=0.3)
        result.stdout.fnmatch_lines(
            ["budget sequential: planning accommodation-static-L2 noisy-tool-agent: no "
             f"regression of the stated size at look {seq['look']} of 4 "
             f"({seq['units']} of 60 units)",
             f"budget sequential: {seq['units']} of 60 units run*"]
        )  # fmt: skip
        # No false alarm is possible here, whatever the draws: 11 of the 60 queries are
        # noisy (crc32 rule above), and with m changed units log e <= S**2 / (2 V) <= m / 2
        # = 5.5 < ln(1 / 0.001) (Cauchy-Schwarz), a cell's p >= exp(-m / 2) > 0.001 too.
        pooled = {t["metric"]: t for t in report["pooled_gate"]}
        assert pooled["emr"]["test"] == "e-process" and not pooled["emr"]["regressed"]
        assert "crossed" not in pooled["emr"]
        assert pooled["emr"]["units"] == seq["units"]
    monkeypatch.setenv("REGRESSED", "1")
    worse = inprocess.run(pytester, *ARGS, "--budget-sequential=on", "--budget-report=x.json")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    seq = json.loads((pytester.path / "x.json").read_text())["cells"][0]["sequential"]
    assert seq["decision"] == "regressed"
    worse.stdout.fnmatch_lines(
        [f"E * emr regressed: stored *, new * on the same {seq['units']} of 60 queries, "
         f"sequential paired sign-flip test at look {seq['look']} of 4: p=* < * (this look's "
         "share of the cell's level 0.001, spent as alpha*t^2 over 4 looks) and past the "
         "tolerance 0.05 (higher is better); level 0.001 = half the run's 0.01 split over "
         "its 5 gated cell x metric pairs (Bonferroni)"]
    )  # fmt: skip


SLIPPING = """
import os
import zlib

from pytest_budget.planning._reference_agents import GreedyToolAgent, OracleToolAgent

_GREEDY = GreedyToolAgent()


class SlippingToolAgent(OracleToolAgent):
    # Deterministic: with SLIP set, the queries whose crc32 falls below it take greedy's
    # pick at every step; the others follow the optimal plan.
    name = "slipping-tool-agent"

    def choose(self, observation, view):
        if (zlib.crc32(observation.query_id.encode()) % 1000) / 1000 < float(
            os.environ.get("SLIP", "0")
        ):
            return _GREEDY.choose(observation, view)
        return super().choose(observation, view)


def pytest_budget_tool_agent(config):
    return SlippingToolAgent()
"""


def test_a_pooled_regression_names_where_the_e_process_crossed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two 60-query cells; the rerun slips on the queries below crc 0.15 (no randomness):
    # too few changed queries for either cell's own test (each runs all 4 looks), enough
    # for the pooled e-process over both, which says where it crossed 1/alpha.
    pytester.makeconftest(SLIPPING)
    args = ("--budget-suite=planning", "--budget-agent=user",
            "--budget-task=accommodation,attraction", "--budget-scenario=static@2",
            "--budget-query-count=60", "--budget-ci-resamples=0", "-p", "no:cacheprovider",
            "-p", "no:randomly")  # fmt: skip
    inprocess.run(pytester, *args, "--snapshot-update").assert_outcomes(passed=2)
    monkeypatch.setenv("SLIP", "0.15")
    result = inprocess.run(pytester, *args, "--budget-sequential=on", "--budget-report=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2)  # every cell passed its own test
    report = json.loads((pytester.path / "r.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert [c["sequential"]["look"] for c in report["cells"]] == [4, 4]
    emr = {t["metric"]: t for t in report["pooled_gate"]}["emr"]
    assert emr["test"] == "e-process" and emr["regressed"] and emr["units"] == 120
    cell = "pytest_budget/suites/test_planning.py::test_planning[attraction-static-L2-user]"
    assert emr["crossed"] == (
        f"unit 104 of the 120 run in canonical order (cells by test id, then batch): {cell}, "
        "look 3 of 4 (45 of 60 units)"
    )
    result.stdout.fnmatch_lines(
        ["planning emr regressed over the suite: mean change -0.15 (higher is better) on the "
         "same 120 units of 2 cells, pooled anytime-valid e-process over the cells' batches "
         "(sequential gate) p=0.00045 < 0.001 (run level 0.01: half split over 5 pooled kind "
         f"x metric pairs, Bonferroni); it crossed 1/alpha at {emr['crossed']}"]
    )  # fmt: skip


def test_awareness_cells_ask_their_probes_in_batches(pytester: pytest.Pytester) -> None:
    # The reference estimators against their shipped baselines: the answers are the same
    # run to run, so no unit changes and every cell stops at the first look that may stop
    # for futility (look 2 of 4: 106 of sokoban-6x6's 212 probes), asking half its probes.
    args = ("--budget-suite=awareness", "--budget-env=sokoban-6x6", "--budget-agent=oracle,random",
            "-p", "no:cacheprovider", "-p", "no:randomly", "--budget-report=r.json")  # fmt: skip
    result = inprocess.run(pytester, *args, "--budget-sequential=on")
    result.assert_outcomes(passed=2)
    cells = json.loads((pytester.path / "r.json").read_text())["cells"]
    for cell in cells:
        seq = cell["sequential"]
        assert (seq["decision"], seq["look"], seq["units"], seq["max_units"]) == (
            "no regression", 2, 106, 212,
        )  # fmt: skip
        assert cell["scores"]["n_probes"] == 106  # scored on the probes asked
    result.stdout.fnmatch_lines(["budget sequential: 212 of 424 units run (50%)"])
    # auto (the default) leaves the free reference estimators whole: scores as shipped.
    whole = inprocess.run(pytester, *args)
    whole.assert_outcomes(passed=2)
    assert all(
        "sequential" not in c for c in json.loads((pytester.path / "r.json").read_text())["cells"]
    )


def test_auto_runs_a_metered_model_estimator_in_batches(pytester: pytest.Pytester) -> None:
    # A model estimator on a local OpenAI-compatible server (the actor the reference one):
    # auto turns the sequential gate on for it, so an unchanged rerun asks the server
    # fewer probes than the baseline's recording did.
    from tests.model_server import ESTIMATOR_MARK, ModelServer, role_answer

    def answer(body: dict[str, object]) -> str:
        text = json.dumps(body.get("messages", []))
        if ESTIMATOR_MARK not in text:
            return role_answer(body)  # type: ignore[arg-type]
        low = sum(map(ord, text)) % 500  # the same probe, the same answer
        return f"<answer>[{low}, {low + 300}]</answer>"

    pytester.makeini("[pytest]\nbudget_role_agents =\n    actor = reference\n")
    with ModelServer(answer) as server:
        args = ("--budget-suite=awareness", "--budget-env=sokoban-6x6",
                "--budget-rollout-count=4", "--budget-agent=openai:m",
                f"--budget-base-url={server.url}", "-p", "no:cacheprovider",
                "--budget-report=r.json")  # fmt: skip
        recorded = inprocess.run(pytester, *args, "--budget-cache-dir=c1", "--snapshot-update")
        recorded.assert_outcomes(passed=1)
        full = len(server.requests)
        rerun = inprocess.run(pytester, *args, "--budget-cache-dir=c2")
        rerun.assert_outcomes(passed=1)
        spent = len(server.requests) - full
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    seq = cell["sequential"]
    assert seq["decision"] == "no regression" and seq["look"] == 2
    assert seq["max_units"] == full and spent == seq["units"] < full
    rerun.stdout.fnmatch_lines(["sequential gate (auto): awareness estimator: at most *"])


def test_an_unknown_sequential_mode_is_a_one_line_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nbudget_sequential = sometimes\n")
    result = pytester.runpytest_subprocess("--budget-suite=triage", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*budget_sequential: unknown mode 'sometimes'; choose from auto, on, off*"]
    )
