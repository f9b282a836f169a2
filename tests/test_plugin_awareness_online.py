"""The online mode through the plugin (collection by mode, options, the report) and the HTTP
online actor against the loopback OpenAI-/Anthropic-compatible test server.  The pytest runs
are in-process (tests/inprocess.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget.awareness.online._cell import run_online_cell
from pytest_budget.awareness.online._protocol import budget_block
from tests import inprocess
from tests.model_server import ModelServer
from tests.schemas import validate_report

ESTIMATE = "<estimate>[100, 400]</estimate>"
ROOT = Path(__file__).resolve().parent.parent


def _play(body: dict[str, Any]) -> str:
    """A model that plays Sokoban with the solver and estimates [100, 400] every turn."""
    from pytest_budget._environments.sokoban import solve
    from pytest_budget.awareness.sokoban._env import grid_from_prompt

    messages = body.get("messages", [])
    user = str(messages[-1]["content"]) if messages else ""
    if "How much more will the agent use" in user:  # the separate estimate call
        return "<answer>[0, 900]</answer>"
    moves = solve(grid_from_prompt(user)).moves or ("Up",)
    return f"<answer>{moves[0]}</answer>{ESTIMATE}"  # one move per turn


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = inprocess.run(
        pytester,
        "--budget-suite=awareness",
        "--budget-env=sokoban-6x6",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        *args,
    )
    return [line for line in result.stdout.lines if "::" in line]


def test_the_mode_chooses_which_cells_are_collected(pytester: pytest.Pytester) -> None:
    replay = _collected(pytester)
    assert replay and all("test_awareness.py::" in line for line in replay)
    online = _collected(pytester, "--budget-awareness-mode=online", "--budget-online-caps=1")
    assert len(online) == 4  # 1 env x 1 cap x 1 protocol x 4 reference agents
    assert all("test_awareness_online.py::" in line for line in online)
    assert "test_awareness_online[sokoban-6x6-1x-single-linear-visible]" in online[0]
    both = _collected(
        pytester,
        "--budget-awareness-mode=both",
        "--budget-online-caps=0.5,2",
        "--budget-online-protocol=single,two",
    )
    assert len(both) == len(replay) + 1 * 2 * 2 * 4


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--budget-awareness-mode=live", "--budget-awareness-mode: unknown value 'live'"),
        ("--budget-online-caps=0,1", "--budget-online-caps: 0 must be in (0, 100]"),
        ("--budget-online-protocol=three", "--budget-online-protocol: unknown value 'three'"),
        ("--budget-online-charge=estimation", "--budget-online-charge: unknown value"),
        ("--budget-online-episodes=1", "--budget-online-episodes: must be 2..100000"),
    ],
)
def test_bad_online_options_are_one_line_usage_errors(
    pytester: pytest.Pytester, option: str, message: str
) -> None:
    result = inprocess.run(pytester, "--budget-suite=awareness", option)
    assert result.ret == 4
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_offline_online_run_records_budget_split_and_protocol(pytester: pytest.Pytester) -> None:
    result = inprocess.run(
        pytester,
        "--budget-suite=awareness",
        "--budget-awareness-mode=online",
        "--budget-env=sokoban-6x6",
        "--budget-online-caps=0.5,1",
        "--budget-online-episodes=8",
        "--budget-gate=off",
        "--budget-agent=linear-visible",
        "--budget-report=r.json",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    assert "awareness online: acting under a cap while estimating" in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    validate_report(report)  # the published schema covers the online cells
    cells = report["cells"]
    assert [c["budget"] for c in cells] == [{"tokens": 1250.0}, {"tokens": 2500.0}]
    for cell in cells:
        assert cell["suite"] == "awareness-online" and cell["protocol"] == "single-call"
        scores = cell["scores"]
        assert scores["acting_tokens"] > 0 and scores["estimation_tokens"] > 0
        assert scores["estimation_share"] == pytest.approx(
            scores["estimation_tokens"] / scores["acting_tokens"]
        )
        runs = cell["runs"]
        assert len(runs) == 8
        assert scores["acting_tokens"] == pytest.approx(sum(r["acting_tokens"] for r in runs) / 8)
        assert "replay_macro_f1_all" in scores and "cost_model" in cell


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_http_online_actor_keeps_acting_and_estimation_tokens_apart(provider: str) -> None:
    from pytest_budget._run.model_agents import provider_factory
    from pytest_budget.models._loop import run_on_worker_loop

    with ModelServer(_play, input_tokens=400, output_tokens=30) as server:
        agent = provider_factory(provider)("m", "online_actor", {"base_url": server.url})
        result = run_on_worker_loop(
            lambda: run_online_cell("sokoban-6x6", agent, n=2, seed=42, multiplier=1.0)
        )
        requests = list(server.requests)
    online = [r for r in requests if "keep an eye on your budget" in json.dumps(r)]
    assert online, "the online rules were sent in the system message"
    for run in result.runs:
        assert run.success  # the scripted model solves with the solver
        for turn in run.turns:
            # the provider reported 400 in + 30 out for every call: all of it is split
            assert turn.acting_tokens + turn.estimation_tokens == 430
    # the split, worked out independently for the first turn of the first run
    first = result.runs[0].turns[0]
    block = budget_block(
        ("tokens",), {"tokens": 0.0}, {"tokens": 2500.0}, protocol="single", may_stop=True
    )
    assert first.estimation_tokens == count_tokens(block) + count_tokens(ESTIMATE)
    assert result.scores["estimation_tokens"] > 0
    assert result.scores["invalid_rate"] == 0.0
    # the replay pass: no budget block, the model's replay probes answered over HTTP
    assert result.scores["replay_invalid_rate"] == 0.0


def test_http_online_actor_over_the_plugin_with_two_call_protocol(
    pytester: pytest.Pytester,
) -> None:
    with ModelServer(_play, input_tokens=400, output_tokens=30) as server:
        result = inprocess.run(
            pytester,
            "--budget-suite=awareness",
            "--budget-awareness-mode=online",
            "--budget-env=sokoban-6x6",
            "--budget-online-caps=1",
            "--budget-online-episodes=2",
            "--budget-online-protocol=two",
            "--budget-agent=openai:m",
            f"--budget-base-url={server.url}",
            "--budget-gate=off",
            "--budget-report=r.json",
            "-p",
            "no:cacheprovider",
        )
        calls = list(server.requests)
    result.assert_outcomes(passed=1)
    (cell,) = json.loads((pytester.path / "r.json").read_text())["cells"]
    assert cell["agent"] == "openai:m" and cell["protocol"] == "two-call"
    # separate estimate calls went out with the estimator's prompt
    assert any("How much more will the agent use" in json.dumps(c) for c in calls)
    assert cell["scores"]["estimation_tokens"] > 0 and cell["scores"]["acting_tokens"] > 0


def test_default_online_run_gates_against_shipped_baselines_without_warnings(
    pytester: pytest.Pytester,
) -> None:
    # Online cells carry no intervals (new or stored), so the default gate compares them
    # with the tolerance: no warning that asks to re-record (re-recording adds none).
    result = inprocess.run(
        pytester,
        "--budget-suite=awareness",
        "--budget-awareness-mode=online",
        "--budget-env=sokoban-6x6",
        "--budget-agent=random",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3)  # one cell per cap: 0.5, 1 and 2
    assert "warnings" not in result.parseoutcomes()
    assert "BudgetBaselineWarning" not in result.stdout.str() + result.stderr.str()
