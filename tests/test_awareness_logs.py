"""Real logs in (issue 32): BAGEN's dialogue logs and estimation outputs, SWE-bench harness
reports and inspect_ai logs, read by the real loaders from files in the published layouts
(tests/data/logs/README.md names the fact-sheet section each follows)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_budget.awareness._logs.trajectories import (
    bundled_swe_rollouts,
    detect_format,
    load_trajectories,
)
from pytest_budget.awareness._logs.verdicts import read_harness_reports
from pytest_budget.awareness._replay.fair_split import bagen_probes, fair_split_random
from pytest_budget.awareness._replay.logged import LoggedEstimator, read_logged_answers
from pytest_budget.awareness._replay.probes import make_probes
from pytest_budget.awareness._replay.rollouts import RolloutFileError
from pytest_budget.awareness._replay.subsample import (
    DEFAULT_MAX_PROBES,
    LOGGED_ENVS,
    cell_probes,
    subsample_probes,
)
from tests import inprocess

DATA = Path(__file__).parent / "data" / "logs"
SOKOBAN = DATA / "sokoban_api_eval_estimation_dialogues.json"
SWE = DATA / "swebench_gpt52_eval_estimation_dialogues.json"
ESTIMATES = DATA / "sokoban_api_eval_estimation.json"
REPORT = DATA / "openai__gpt-5.2.gpt52_instant.json"
EXAMPLE_TRAJ = Path(__file__).parents[1] / "docs" / "examples" / "mini_swe_agent_example.traj.json"

pytest_plugins = ["pytester"]

# ----------------------------------------------------------------------- BAGEN dialogues


def test_bagen_worked_example_of_the_fact_sheet() -> None:
    # logs.md §1.5: t5 is cut (explicit), t3 dropped (empty reply); kept t1, t2, t4;
    # fresh 300, 80, 60; c 360, 130, 130; probes k=1 (C 360, R 260), k=2 (C 490, R 130).
    assert detect_format(SOKOBAN) == "bagen"
    rollouts = load_trajectories([SOKOBAN])
    by_id = {r.id: r for r in rollouts}
    # rollout 2 yields nothing (every reply empty) but keeps its index: ids skip it
    assert [r.id for r in rollouts] == ["rollout-0", "rollout-1", "rollout-3"]
    first = by_id["rollout-0"]
    assert [t.usage["tokens"] for t in first.turns] == [360.0, 130.0, 130.0]
    assert [t.info["new_input_tokens"] for t in first.turns] == [300.0, 80.0, 60.0]
    assert [t.info["turn_idx"] for t in first.turns] == [1, 2, 4]  # sorted by turn_idx
    assert first.budget == {"tokens": 2500.0} and first.env == "sokoban-gpt-5.2"
    assert first.success and first.feasible and first.meta["truncated"] == "explicit"
    assert first.meta["actor_system_prompt"].startswith("You're a helpful assistant")
    assert first.turns[0].action == "<think>push right</think><answer>Right</answer>"
    probes = [(p.k, p.used["tokens"], t.remaining["tokens"]) for p, t in make_probes(first)]
    assert probes == [(1, 360.0, 260.0), (2, 490.0, 130.0)]
    # implicit truncation: request total 2,700 > 2,500, no success, text, no action ran
    third = by_id["rollout-3"]
    assert third.meta["truncated"] == "implicit" and third.T == 2 and not third.success
    assert [t.usage["tokens"] for t in third.turns] == [600.0, 180.0]
    assert by_id["rollout-1"].T == 1  # one kept turn: a rollout without probes


def test_bagen_swe_family_budget_is_median_low_and_verdicts_decide(tmp_path: Path) -> None:
    rollouts = load_trajectories([SWE])
    # C_T 1,600, 2,130, 2,161, 3,000: median 2,145.5 is not whole -> median_low 2,130
    assert [r.total()["tokens"] for r in rollouts] == [1600.0, 2130.0, 2161.0, 3000.0]
    assert {r.budget["tokens"] for r in rollouts} == {2130.0}
    assert [r.success for r in rollouts] == [True, False, True, False]  # rollout_success
    verdicts = read_harness_reports([REPORT])
    judged = load_trajectories([SWE], verdicts=verdicts)
    assert [r.success for r in judged] == [False, False, True, False]
    assert judged[2].meta["success_rule"] == "harness report resolved_ids"
    assert not verdicts.unlisted


def test_a_single_rollout_object_and_two_files(tmp_path: Path) -> None:
    data = json.loads(SOKOBAN.read_text(encoding="utf-8"))
    one = tmp_path / "one.json"
    one.write_text(json.dumps(data[0]), encoding="utf-8")
    assert detect_format(one) == "bagen"
    two = load_trajectories([one, SOKOBAN])
    assert two[0].id == "one:rollout-0" and two[1].id.startswith("sokoban_api_eval")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ('[{"tag": "CoordSokoban", "turns": [', "not JSON"),
        ("[]", "the rollout list is empty"),
        ('[{"tag": "CoordSokoban"}]', "rollout 0: 'turns' is missing"),
        ('[{"tag": "CoordSokoban", "turns": [{"turn_idx": "1"}]}]', "'turn_idx' must be"),
        ('[{"tag": "Warehouse", "turns": []}]', "Warehouse dialogue logs"),
        ('[{"tag": "Mystery", "turns": []}]', "names no BAGEN token environment"),
        (
            '[{"tag": "CoordSokoban", "turns": [{"turn_idx": 1, "parsed_response": "x"}]}]',
            "turn_idx 1: no token counts",
        ),
        (
            '[{"tag": "CoordSokoban", "turns": [{"turn_idx": 1, "parsed_response": "x", '
            '"api_input_tokens": "many"}]}]',
            "'api_input_tokens' must be a number",
        ),
    ],
)
def test_bad_bagen_files_name_file_record_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad_dialogues.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RolloutFileError, match=message) as info:
        load_trajectories([path], fmt="bagen")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


# ----------------------------------------------------------------------- harness reports


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ('{"resolved_ids": ["a"', "not JSON"),
        ('{"total_instances": 1}', "not a SWE-bench harness report"),
        ('{"resolved_ids": "a"}', "'resolved_ids' must be a list"),
    ],
)
def test_bad_harness_reports(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RolloutFileError, match=message):
        read_harness_reports([path])


# ----------------------------------------------------------------------- logged estimates


def test_logged_estimates_replay_bagen_outputs_and_count_missing_probes() -> None:
    answers = read_logged_answers([ESTIMATES])
    rollouts = load_trajectories([SOKOBAN])
    estimator = LoggedEstimator(answers=answers).with_rollouts({r.id: r.meta for r in rollouts})
    asked = [p for r in rollouts for p, _ in make_probes(r)]
    assert [(p.rollout_id, p.k) for p in asked] == [
        ("rollout-0", 1), ("rollout-0", 2), ("rollout-3", 1)
    ]  # fmt: skip
    assert estimator.estimate(asked[0]) == "<think>short</think><answer>[300, 200]</answer>"
    assert estimator.estimate(asked[2]) == "<think>stuck</think><answer>impossible</answer>"
    with pytest.raises(LookupError, match="not in the logged estimates: rollout rollout-0 turn 2"):
        estimator.estimate(asked[1])


def test_bad_logged_estimates(tmp_path: Path) -> None:
    path = tmp_path / "est.json"
    path.write_text('{"results": [{"rollout_index": 0, "turn_idx": 1}]}', encoding="utf-8")
    with pytest.raises(RolloutFileError, match=r"results\[0\]: 'prediction.raw_response'"):
        read_logged_answers([path])
    path.write_text('{"something": 1}', encoding="utf-8")
    with pytest.raises(RolloutFileError, match="neither BAGEN's estimation output"):
        read_logged_answers([path])


# ----------------------------------------------------------------------- command line


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run in this process (tests/inprocess.py)."""
    return inprocess.run(
        pytester, "--budget-suite=awareness", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--budget-gate=off", *args,
    )  # fmt: skip


def _cells(pytester: pytest.Pytester, name: str = "r.json") -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads((pytester.path / name).read_text())["cells"]
    return cells


def test_cli_bagen_logs_and_logged_estimates(pytester: pytest.Pytester) -> None:
    for path in (SOKOBAN, ESTIMATES):
        shutil.copy(path, pytester.path / path.name)
    result = _run(
        pytester, f"--budget-rollouts={SOKOBAN.name}", "--budget-rollout-format=bagen",
        "--budget-agent=logged", f"--budget-logged-estimates={ESTIMATES.name}",
        "--budget-report=r.json",
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    (cell,) = _cells(pytester)
    # two probes answered; rollout 0 k=2 is missing from the log: an error, not a guess
    assert cell["scores"]["n_probes"] == 2 and cell["scores"]["n_errors"] == 1
    assert "not in the logged estimates" in cell["first_error"]
    # the reversed interval earns S_k 1 - 100/260 but no RL reward; impossible earns 0.2
    assert cell["scores"]["interval_score"] == pytest.approx(1 - 100 / 260, abs=1e-6)
    assert cell["scores"]["reward"] == pytest.approx(0.1)
    # Our own report replays to the same scores (re-scoring without the estimator).
    again = _run(
        pytester, f"--budget-rollouts={SOKOBAN.name}", "--budget-agent=logged",
        "--budget-logged-estimates=r.json", "--budget-report=r2.json",
    )  # fmt: skip
    assert again.ret == 0
    (replayed,) = _cells(pytester, "r2.json")
    assert replayed["scores"] == cell["scores"]


def test_cli_harness_verdicts_and_the_submitted_warning(pytester: pytest.Pytester) -> None:
    shutil.copy(EXAMPLE_TRAJ, pytester.path / "run.traj.json")
    plain = _run(pytester, "--budget-rollouts=run.traj.json", "--budget-agent=oracle")
    assert plain.ret == 0
    plain.stdout.fnmatch_lines(["WARNING swe-*: 1 of 1 rollouts have only the agent's exit*"])
    (pytester.path / "report.json").write_text(
        json.dumps({"resolved_ids": [], "unresolved_ids": ["acme__textkit-142"]})
    )
    judged = _run(
        pytester, "--budget-rollouts=run.traj.json", "--budget-agent=oracle",
        "--budget-swe-report=report.json", "--budget-report=r.json",
    )  # fmt: skip
    assert judged.ret == 0
    assert "WARNING" not in judged.stdout.str()
    (cell,) = _cells(pytester)
    assert cell["rollouts"]["succeeded"] == 0 and "success_unverified" not in cell["rollouts"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget-swe-report=nope.json",), "--budget-swe-report: no such file"),
        (("--budget-rollouts=bad.json", "--budget-swe-report=bad.json"), "not JSON"),
        (("--budget-rollouts=bad.json",), "not JSON"),
        (("--budget-rollouts=empty.json",), "empty file"),
        (("--budget-agent=logged",), "--budget-agent=logged replays answers already made"),
        (
            ("--budget-rollouts=ok.json", "--budget-logged-estimates=bad.json"),
            "--budget-logged-estimates: ",
        ),
    ],
)
def test_cli_bad_log_input_is_a_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    (pytester.path / "bad.json").write_text('[{"tag": "CoordSokoban", "turns": [')
    (pytester.path / "empty.json").write_text("")
    shutil.copy(SOKOBAN, pytester.path / "ok.json")
    result = _run(pytester, *args)
    assert result.ret == 4
    assert message in result.stderr.str()


# ----------------------------------------------------------------------- inspect_ai


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Logs a real inspect_ai run writes (its offline mockllm model, logs.md §4.7)."""
    out = tmp_path_factory.mktemp("inspect")
    script = Path(__file__).with_name("inspect_mock_run.py")
    env = {**os.environ, "INSPECT_LOG_LEVEL": "warning", "INSPECT_DISPLAY": "none"}
    subprocess.run(
        [sys.executable, str(script), str(out)], check=True, env=env, timeout=300,
        capture_output=True,
    )  # fmt: skip
    return {fmt: next((out / fmt).glob(f"*.{fmt}")) for fmt in ("eval", "json")}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_inspect_logs_a_real_run_writes(inspect_logs: dict[str, Path], fmt: str) -> None:
    path = inspect_logs[fmt]
    assert detect_format(path) == "inspect"
    rollouts = load_trajectories([path])
    assert "inspect_ai" not in sys.modules  # read without inspect_ai
    assert [r.id for r in rollouts] == ["1", "2", "3"]
    assert {r.env for r in rollouts} == {"inspect-model"}
    # match() scores C, C, I (sample 3 answers 11 for 10)
    assert [r.success for r in rollouts] == [True, True, False]
    for rollout in rollouts:
        # prompts 100, 100 + 40 + 80, 180 + 80 (cache reads counted back in); visible
        # output 12 - 5; fresh input 100, 220 - 100 - 7 = 113, 260 - 220 - 7 = 33 (§4.7)
        assert [t.info["new_input_tokens"] for t in rollout.turns] == [100.0, 113.0, 33.0]
        assert [t.usage["tokens"] for t in rollout.turns] == [112.0, 125.0, 45.0]
        assert rollout.turns[1].observation == "obs 1: go on"
        assert rollout.turns[0].action == "step 1"
        assert rollout.budget == {"tokens": 282.0}  # the family median of 282s


def test_inspect_eval_and_json_logs_agree(inspect_logs: dict[str, Path]) -> None:
    a, b = (load_trajectories([inspect_logs[f]]) for f in ("eval", "json"))
    assert [(r.id, r.success, r.turns) for r in a] == [(r.id, r.success, r.turns) for r in b]


def test_bad_inspect_logs(tmp_path: Path, inspect_logs: dict[str, Path]) -> None:
    empty = tmp_path / "empty.eval"
    empty.write_bytes(b"")
    with pytest.raises(RolloutFileError, match="empty file"):
        load_trajectories([empty], fmt="inspect")
    cut = tmp_path / "cut.eval"
    cut.write_bytes(inspect_logs["eval"].read_bytes()[:-200])
    with pytest.raises(RolloutFileError, match=str(cut)):
        load_trajectories([cut], fmt="inspect")
    header = json.loads(inspect_logs["json"].read_text())
    header["samples"] = []
    only = tmp_path / "header.json"
    only.write_text(json.dumps(header))
    with pytest.raises(RolloutFileError, match="holds no samples"):
        load_trajectories([only])


# ----------------------------------------------------------------------- BAGEN's 512


def test_fair_split_random_worked_example_of_the_fact_sheet() -> None:
    # logs.md §2.3: seed 42, 2 bins, cap 5, rollouts 0-3 with T = 3, 2, 5, 4
    picked = fair_split_random([(0, 3), (1, 2), (2, 5), (3, 4)], cap=5, seed=42, bins=2)
    assert picked == [(3, 2), (1, 1), (2, 4), (0, 2), (0, 1)]
    # a cap that covers every probe takes them all in order, without a draw
    assert fair_split_random([(0, 3), (1, 2)], cap=5) == [(0, 1), (0, 2), (1, 1)]


def test_fair_split_random_properties() -> None:
    turns = [(i, 2 + (i * 7) % 23) for i in range(40)]
    total = sum(t - 1 for _, t in turns)
    picked = fair_split_random(turns, cap=100)
    assert len(picked) == 100 == len(set(picked)) and total > 100
    assert all(1 <= k < dict(turns)[i] for i, k in picked)
    assert {i for i, _ in picked} == {i for i, _ in turns}  # every rollout gets probes
    assert fair_split_random(turns, cap=100) == picked  # deterministic


def test_bagen_swe_logs_are_probed_with_bagens_selection() -> None:
    rollouts = load_trajectories([SWE])
    probes = bagen_probes(rollouts, cap=4, bins=2)
    chosen = fair_split_random([(r.meta["rollout_index"], r.T) for r in rollouts], 4, 42, 2)
    assert sorted((p.rollout_id, p.k) for p, _ in probes) == sorted(
        (f"rollout-{i}", k) for i, k in chosen
    )


def test_a_cells_probes_follow_the_rollouts_kind() -> None:
    """cell_probes (shared by the awareness cell module and its forecast): BAGEN's SWE logs
    get BAGEN's own selection, other coding-agent logs the 512 cap, anything else (or a mix)
    every probe (None)."""
    bagen = load_trajectories([SWE])
    assert [(p.rollout_id, p.k) for p, _ in cell_probes(bagen) or []] == [
        (p.rollout_id, p.k) for p, _ in bagen_probes(bagen)
    ]
    coding = bundled_swe_rollouts()
    assert sum(r.T - 1 for r in coding) > DEFAULT_MAX_PROBES  # so the cap bites
    chosen = cell_probes(coding)
    assert chosen is not None and len(chosen) == DEFAULT_MAX_PROBES
    assert [(p.rollout_id, p.k) for p, _ in chosen] == [
        (p.rollout_id, p.k) for p, _ in subsample_probes(coding)
    ]
    assert cell_probes([*bagen, *coding]) is None
    assert cell_probes([]) is None
    assert "swe-synthetic" in LOGGED_ENVS
    # Asked again (every cell of the bundled logs does, several times): the same selection,
    # from the memo, in a list of its own (changing one answer cannot change the next).
    chosen.clear()
    again = cell_probes(coding)
    assert again is not None and [(p.rollout_id, p.k) for p, _ in again] == [
        (p.rollout_id, p.k) for p, _ in subsample_probes(coding)
    ]
    # Other rollout objects (another load of the same logs) are selected afresh, equally.
    fresh = bundled_swe_rollouts()
    assert [(p.rollout_id, p.k) for p, _ in cell_probes(fresh) or []] == [
        (p.rollout_id, p.k) for p, _ in again
    ]
