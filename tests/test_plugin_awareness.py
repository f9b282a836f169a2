"""End-to-end runs of the installed awareness suite through pytester, on logged rollouts.

The rollout files are written by the tests (real files, the user's format); the generated
environments are covered by their own tests and by the default-run test below.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests import inprocess


def write_rollouts(path: Path, n: int = 24, seed: int = 3, env: str = "my-agent") -> Path:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            turns = [{"usage": {"tokens": rng.randint(50, 300)}} for _ in range(rng.randint(2, 8))]
            record = {"id": f"{env}-{i}", "env": env, "budget": {"tokens": 1000},
                      "success": rng.random() < 0.7, "turns": turns}  # fmt: skip
            handle.write(json.dumps(record) + "\n")
    return path


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An awareness run: in-process (tests/inprocess.py), but a subprocess under ``-n``
    (its workers are processes anyway, and xdist's controller is best kept out of this one)."""
    args = ("--budget-suite=awareness", "-p", "no:cacheprovider", "-p", "no:randomly", *args)
    if "-n" in args:
        return pytester.runpytest_subprocess(*args)
    return inprocess.run(pytester, *args)


def report_of(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return data


def table_block(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("env "))
    end = next(i for i in range(start, len(lines)) if "rollouts by" in lines[i])
    return lines[start : end + 1]


def test_logged_rollouts_score_every_reference_estimator(pytester: pytest.Pytester) -> None:
    write_rollouts(pytester.path / "a.jsonl")
    write_rollouts(pytester.path / "b.jsonl", n=10, seed=9, env="other")
    result = run(
        pytester,
        "--budget-rollouts=a.jsonl",
        "--budget-rollouts=b.jsonl",
        "--budget-gate=off",
        "--budget-report=report.json",
    )
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*awareness: feasibility*", "env *estimator*f1_all*"])
    cells = report_of(pytester)["cells"]
    assert {(c["env"], c["agent"]) for c in cells} == {
        (env, agent)
        for env in ("my-agent", "other")
        for agent in (
            "linear-knows-T", "linear-visible", "always-feasible", "always-impossible", "random",
            "oracle",
        )
    }  # fmt: skip
    oracle = next(c for c in cells if c["agent"] == "oracle" and c["env"] == "my-agent")
    assert oracle["scores"]["macro_f1_all"] == 1.0 and oracle["scores"]["interval_score"] == 1.0
    assert oracle["actor"] == "logged" and oracle["rollouts"]["rollouts"] == 24
    impossible = next(c for c in cells if c["agent"] == "always-impossible")
    # BAGEN's false-abort rate divides by every probe: here the share of feasible probes
    floor = impossible["trivial_floor"]
    feasible_share = floor["feasible_probes"] / impossible["scores"]["n_probes"]
    assert impossible["scores"]["false_abort_rate"] == pytest.approx(feasible_share)
    # a 0 that comes from an empty class says so in the cell, next to the score
    assert oracle["notes"] == {}
    assert impossible["notes"]["macro_f1_all"].startswith(
        "F1_feasible = 0: no probe is predicted feasible"
    )


def test_xdist_gives_the_same_table(pytester: pytest.Pytester) -> None:
    write_rollouts(pytester.path / "a.jsonl")
    plain = run(pytester, "--budget-rollouts=a.jsonl", "--budget-gate=off")
    spread = run(pytester, "--budget-rollouts=a.jsonl", "--budget-gate=off", "-n", "2")
    assert table_block(plain.outlines) == table_block(spread.outlines)


ESTIMATOR_CONFTEST = """
import os
import pytest

class Mine:
    name = "mine"
    def estimate(self, probe):
        mode = os.environ.get("ESTIMATOR_MODE", "good")
        if mode == "garbage":
            return "about three hundred tokens"
        if mode == "reversed":
            return "<answer>[400, 100]</answer>"
        if mode == "flaky" and probe.k == 2:
            raise RuntimeError("timeout talking to the model")
        if mode == "broken":
            raise RuntimeError("down")
        left = max(0, probe.budget["tokens"] - probe.used["tokens"])
        return f"<answer>[0, {left}]</answer>"

@pytest.fixture
def budget_estimator():
    return Mine()
"""


def test_snapshot_gate_fails_when_the_estimator_regresses(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_rollouts(pytester.path / "a.jsonl")
    pytester.makeconftest(ESTIMATOR_CONFTEST)
    first = run(pytester, "--budget-rollouts=a.jsonl", "--snapshot-update")
    first.assert_outcomes(passed=1)
    stored = pytester.path / "__budget_snapshots__" / "awareness" / "my-agent-user.json"
    data = json.loads(stored.read_text())
    assert data["scores"]["invalid_rate"] == 0.0 and data["context"]["actor"] == "logged"
    assert run(pytester, "--budget-rollouts=a.jsonl").ret == 0
    monkeypatch.setenv("ESTIMATOR_MODE", "garbage")
    worse = run(pytester, "--budget-rollouts=a.jsonl")
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines(["*invalid_rate*"])


def test_parse_policy_option_decides_reversed_intervals(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_rollouts(pytester.path / "a.jsonl")
    pytester.makeconftest(ESTIMATOR_CONFTEST)
    monkeypatch.setenv("ESTIMATOR_MODE", "reversed")
    for policy, expected in (("bagen", 0.0), ("strict", 1.0)):
        result = run(
            pytester, "--budget-rollouts=a.jsonl", "--budget-gate=off",
            f"--budget-parse={policy}", f"--budget-report={policy}.json",
        )  # fmt: skip
        result.assert_outcomes(passed=1)
        (cell,) = report_of(pytester, f"{policy}.json")["cells"]
        assert cell["parse"] == policy and cell["scores"]["invalid_rate"] == expected
    (strict,) = report_of(pytester, "strict.json")["cells"]
    assert strict["invalid_reasons"] == {
        "reversed interval (lo > hi)": strict["scores"]["n_probes"]
    }


def test_estimator_errors_are_counted_and_a_dead_estimator_fails_the_cell(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_rollouts(pytester.path / "a.jsonl")
    pytester.makeconftest(ESTIMATOR_CONFTEST)
    monkeypatch.setenv("ESTIMATOR_MODE", "flaky")
    result = run(
        pytester, "--budget-rollouts=a.jsonl", "--budget-gate=off", "--budget-report=r.json"
    )
    result.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    with_k2 = 0
    for line in (pytester.path / "a.jsonl").read_text().splitlines():
        with_k2 += len(json.loads(line)["turns"]) >= 3
    assert cell["scores"]["n_errors"] == with_k2 > 0
    assert "RuntimeError: timeout talking to the model" in cell["first_error"]
    monkeypatch.setenv("ESTIMATOR_MODE", "broken")
    dead = run(pytester, "--budget-rollouts=a.jsonl", "--budget-gate=off")
    dead.assert_outcomes(failed=1)
    dead.stdout.fnmatch_lines(["*estimator 'mine' failed on all * probes*RuntimeError: down*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget-parse=lenient"], "--budget-parse: unknown policy 'lenient'; choose from *"),
        (["--budget-env=chess"], "--budget-env: unknown environment 'chess'*"),
        (["--budget-rollouts=absent.jsonl"], "--budget-rollouts: no such file *absent.jsonl*"),
        (["--budget-rollouts=bad.jsonl"], "*bad.jsonl:2: turns*usage*must not be negative, got -1"),
        (["--budget-rollout-count=1"], "--budget-rollout-count: must be at least 2, got 1"),
    ],
)  # fmt: skip
def test_bad_options_and_files_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    good = {"id": "a", "env": "e", "budget": {"tokens": 9}, "success": True,
            "turns": [{"usage": {"tokens": 1}}, {"usage": {"tokens": 1}}]}  # fmt: skip
    bad = dict(good, id="b", turns=[{"usage": {"tokens": -1}}])
    (pytester.path / "bad.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_default_run_gates_against_shipped_baselines(pytester: pytest.Pytester) -> None:
    """The out-of-the-box run: 5 environments x 6 reference estimators, all gated; plain,
    then under ``-n 2``.  Both share one cache folder, as a user's second run does: the
    plain run generates the rollouts (most of its ~14 s), the ``-n 2`` run reads them back.
    (A cold ``-n 2`` run of every default suite against the shipped baselines is
    tests/test_newcomer_runs.py's first run.)"""
    for name, xdist in (("plain", []), ("n2", ["-n", "2"])):
        report = f"{name}.json"
        result = run(pytester, f"--budget-report={report}", "--budget-cache-dir=cache", *xdist)
        result.assert_outcomes(passed=30)
        _check_default_cells(report_of(pytester, report)["cells"])
        assert not (pytester.path / "__budget_snapshots__").exists()
    assert (pytester.path / "cache" / "rollouts").is_dir()


def _check_default_cells(cells: list[dict[str, Any]]) -> None:
    assert {c["env"] for c in cells} == {
        "sokoban-8x8", "sokoban-6x6", "warehouse", "search", "swe-synthetic"
    }  # fmt: skip
    for cell in cells:
        if cell["env"] == "swe-synthetic":
            assert cell["actor"] == "logged" and cell["scores"]["n_probes"] == 512
        else:
            assert cell["actor"] == "reference-actor" and cell["rollouts"]["rollouts"] == 64
        if cell["agent"] == "oracle":
            scores = cell["scores"]
            assert scores["macro_f1_all"] == scores["fail_f1"] == scores["interval_score"] == 1.0
    warehouse = next(c for c in cells if c["env"] == "warehouse")
    assert "budget" not in warehouse  # caps differ per rollout (challenge-conditioned)
    assert set(warehouse["budget_range"]) == {
        "time_weeks", "warehouse_item_weeks", "cumulative_cost_usd"
    }  # fmt: skip
    sokoban = next(c for c in cells if c["env"] == "sokoban-8x8")
    assert sokoban["budget"] == {"tokens": 2500.0}
    # the leak-free "outcome" challenge: feasibility is the realized outcome (near half)
    assert warehouse["rollouts"]["feasible"] == 30  # of 64 rollouts
    # every built-in probe set keeps its trivial floor at or below 0.75
    assert all(not c["trivial_floor"]["warn"] for c in cells)


def test_generated_rollouts_are_cached_and_reused(pytester: pytest.Pytester) -> None:
    args = ("--budget-env=sokoban-6x6", "--budget-rollout-count=8", "--budget-gate=off",
            "--budget-agent=oracle", "-p", "cacheprovider")  # fmt: skip
    # In this process (pytest's cache plugin on: it holds the rollouts).
    first = inprocess.run(pytester, "--budget-suite=awareness", *args, "--budget-report=a.json")
    first.assert_outcomes(passed=1)
    (cached,) = (pytester.path / ".pytest_cache").rglob("sokoban-6x6-n8-s42-*.jsonl")
    lines = cached.read_text().splitlines()
    assert len(lines) == 8 and json.loads(lines[0])["env"] == "sokoban"
    # A second run reads the cache: spoil one rollout's outcome and see it in the report.
    first_rollout = json.loads(lines[0])
    first_rollout["success"] = not first_rollout["success"]
    cached.write_text("\n".join([json.dumps(first_rollout), *lines[1:]]) + "\n")
    second = inprocess.run(pytester, "--budget-suite=awareness", *args, "--budget-report=b.json")
    second.assert_outcomes(passed=1)
    before = report_of(pytester, "a.json")["cells"][0]["rollouts"]["succeeded"]
    after = report_of(pytester, "b.json")["cells"][0]["rollouts"]["succeeded"]
    assert abs(after - before) == 1


def test_other_rollout_count_is_not_compared_with_the_shipped_baseline(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, "--budget-env=sokoban-6x6", "--budget-rollout-count=8",
                 "--budget-agent=linear-knows-T")  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rollouts*"])


def test_own_warehouse_demand_panel(pytester: pytest.Pytester) -> None:
    from importlib.resources import files

    bundled = files("pytest_budget.awareness").joinpath("data/warehouse_demand.csv").read_text()
    header, *rows = bundled.strip().splitlines()
    # Half the demand: the same simulation ends with less cash.
    halved = [header]
    for row in rows:
        week, retailer, sku, units, price = row.split(",")
        halved.append(",".join([week, retailer, sku, str(int(units) // 2), price]))
    (pytester.path / "half.csv").write_text("\n".join(halved) + "\n")
    args = ("--budget-env=warehouse", "--budget-rollout-count=4", "--budget-agent=oracle",
            "--budget-gate=off")  # fmt: skip
    run(pytester, *args, "--budget-report=bundled.json").assert_outcomes(passed=1)
    mine = run(pytester, *args, "--budget-warehouse-demand=half.csv", "--budget-report=half.json")
    mine.assert_outcomes(passed=1)
    assert report_of(pytester, "bundled.json")["cells"][0]["rollouts"]["rollouts"] == 4
    both = [report_of(pytester, f"{name}.json")["cells"][0] for name in ("bundled", "half")]
    assert both[0]["budget_range"] != both[1]["budget_range"]
    (pytester.path / "bad.csv").write_text(header + "\n" + rows[0] + "\n1,Nowhere,x,1,1\n")
    bad = run(pytester, *args, "--budget-warehouse-demand=bad.csv")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --budget-warehouse-demand: *bad.csv:3: *"])


def _chat_transcripts(path: Path) -> Path:
    """Two OpenAI-style transcripts with per-call usage (the second one unresolved)."""

    def transcript(tid: str, prompts: list[int], completions: list[int], ok: bool) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug"}]
        for p, c in zip(prompts, completions, strict=True):
            messages.append({"role": "assistant", "content": "step",
                             "usage": {"prompt_tokens": p, "completion_tokens": c}})  # fmt: skip
            messages.append({"role": "tool", "content": "ok"})
        return json.dumps({"id": tid, "messages": messages, "resolved": ok})

    # Turn tokens = new input (prompt - previous prompt - previous completion) + completion:
    # t1: 100 + 20 = 120, t2: (150 - 100 - 20) + 30 = 60, t3: (220 - 150 - 30) + 10 = 50.
    lines = [
        transcript("t1", [100, 150, 220], [20, 30, 10], True),
        transcript("t2", [100, 160], [40, 40], False),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_chat_transcripts_are_imported_with_history_excluded(pytester: pytest.Pytester) -> None:
    _chat_transcripts(pytester.path / "chats.jsonl")
    result = run(
        pytester, "--budget-rollouts=chats.jsonl", "--budget-rollout-cap=1000",
        "--budget-agent=oracle", "--budget-gate=off", "--budget-report=r.json",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    assert cell["env"] == "swe" and cell["budget"] == {"tokens": 1000.0}
    assert cell["rollouts"] == {"rollouts": 2, "succeeded": 1, "feasible": 1, "mean_turns": 2.5}
    assert cell["scores"]["n_probes"] == 2 + 1 and cell["scores"]["macro_f1_all"] == 1.0
    forced = run(
        pytester, "--budget-rollouts=chats.jsonl", "--budget-rollout-format=mini-swe-agent"
    )
    assert forced.ret != 0


def test_bundled_coding_logs_are_subsampled_to_512_probes(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--budget-env=swe-synthetic", "--budget-agent=oracle",
                 "--budget-report=r.json")  # fmt: skip
    result.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    assert cell["actor"] == "logged" and cell["scores"]["n_probes"] == 512
    assert cell["rollouts"]["rollouts"] == 32


def test_search_environment_uses_the_given_retrieval_server(pytester: pytest.Pytester) -> None:
    from pytest_budget.awareness.retrieval._client import BM25Index, Document, RetrievalServer

    args = ("--budget-env=search", "--budget-rollout-count=8", "--budget-agent=oracle",
            "--budget-gate=off")  # fmt: skip
    run(pytester, *args, "--budget-report=bundled.json").assert_outcomes(passed=1)
    # A server that knows nothing about the bundled world: no question can be answered.
    unrelated = BM25Index([Document(f"d{i}", f"Note {i}", f"weather report {i}") for i in range(5)])
    with RetrievalServer(unrelated) as server:
        mine = run(pytester, *args, f"--budget-search-url={server.url}", "--budget-report=m.json")
    mine.assert_outcomes(passed=1)
    bundled = report_of(pytester, "bundled.json")["cells"][0]["rollouts"]
    theirs = report_of(pytester, "m.json")["cells"][0]["rollouts"]
    assert bundled["succeeded"] > 0
    assert theirs["succeeded"] < bundled["succeeded"]


def test_search_url_whose_retrieve_fails_fails_the_cell_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    """A healthy server whose /retrieve errors: the cell fails naming the cause, no traceback."""
    from pytest_budget.awareness.retrieval._client import BM25Index, Document, RetrievalServer

    class Broken(BM25Index):
        def search(self, query: str, k: int = 3) -> list[Any]:
            raise RuntimeError("index exploded")

    with RetrievalServer(Broken([Document("d", "T", "x")])) as server:
        result = run(pytester, "--budget-env=search", "--budget-rollout-count=2",
                     "--budget-agent=oracle", "--budget-gate=off",
                     f"--budget-search-url={server.url}/retrieve")  # fmt: skip
        url = server.url
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert (
        f"retrieval service {url}/retrieve: HTTP 500: internal error: RuntimeError: index exploded"
    ) in text
    assert "Traceback" not in text and "search_env.py" not in text


def test_search_url_that_does_not_answer_fails_with_one_line(pytester: pytest.Pytester) -> None:
    import socket

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run(pytester, "--budget-env=search", "--budget-agent=oracle", "--budget-gate=off",
                 f"--budget-search-url=http://127.0.0.1:{port}")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --budget-search-url: *127.0.0.1:{port}/health: not healthy within 5 s*"]
    )


def test_imported_logs_label_and_missing_usage_policy(pytester: pytest.Pytester) -> None:
    path = _chat_transcripts(pytester.path / "chats.jsonl")
    lines = path.read_text().splitlines()
    broken = json.loads(lines[0])
    del broken["messages"][3]["usage"]  # the second assistant call of t1
    path.write_text(json.dumps(broken) + "\n" + lines[1] + "\n")
    strict = run(pytester, "--budget-rollouts=chats.jsonl", "--budget-gate=off")
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    strict.stderr.fnmatch_lines(["ERROR: *chats.jsonl*usage*"])
    lenient = run(
        pytester, "--budget-rollouts=chats.jsonl", "--budget-rollout-missing-usage=skip",
        "--budget-rollout-env=support-bot", "--budget-agent=oracle", "--budget-gate=off",
        "--budget-report=r.json",
    )  # fmt: skip
    lenient.assert_outcomes(passed=1)
    (cell,) = report_of(pytester, "r.json")["cells"]
    assert cell["env"] == "support-bot" and cell["rollouts"]["rollouts"] == 2
