"""Repeats of a model agent are repeats, live and replayed (issue 30, must-have 7).

Real pytest runs (in-process; a subprocess under xdist) against
:class:`tests.model_server.ModelServer`, whose estimator answer changes with every call (a
model sampling at temperature > 0): each
``--budget-repeat`` calls the model, is recorded apart, and replays offline as the answers
it got; a cache recorded before repeats were keyed still replays the first repeat.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests import inprocess
from tests.model_server import ESTIMATOR_MARK, ModelServer, role_answer

# The estimator is the model; the actor is the reference one (its rollouts cost nothing).
INI = "[pytest]\nbudget_role_agents =\n    actor = reference\n"


class Sampler:
    """A new estimator answer on every call (a different interval each time)."""

    def __init__(self) -> None:
        self.calls = itertools.count()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        if ESTIMATOR_MARK not in json.dumps(body.get("messages", [])):
            return role_answer(body)
        with self.lock:
            n = next(self.calls)
        return f"<think>sampled</think><answer>[{n * 20 % 1000}, {200 + n * 37 % 900}]</answer>"


def _run(pytester: pytest.Pytester, url: str, repeat: int, *extra: str) -> Any:
    """A run in-process (tests/inprocess.py), but a subprocess under ``-n`` (xdist's
    controller is best kept out of this process)."""
    args = (
        "--budget-suite=awareness", "--budget-env=sokoban-6x6", "--budget-rollout-count=4",
        "--budget-agent=openai:m", f"--budget-base-url={url}", f"--budget-repeat={repeat}",
        "--budget-gate=off", "-p", "no:cacheprovider", *extra,
    )  # fmt: skip
    if "-n" in args:
        return pytester.runpytest_subprocess(*args)
    return inprocess.run(pytester, *args)


@pytest.fixture(autouse=True)
def _reference_actor(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)


def _live(pytester: pytest.Pytester, url: str, repeat: int, cache: str) -> Any:
    """A live run recorded into ``cache``: its output and its one cell's report."""
    result = _run(pytester, url, repeat, f"--budget-cache-dir={cache}", "--budget-report=r.json")
    result.assert_outcomes(passed=1)
    return result, _cell(pytester.path / "r.json")


def _cell(path: Path) -> dict[str, Any]:
    (cell,) = json.loads(path.read_text())["cells"]
    return dict(cell)


def _records(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for journal in sorted(folder.glob("calls-*.jsonl"))
        for line in journal.read_text().splitlines()
    ]


def _estimator_bodies(server: ModelServer) -> Counter[str]:
    return Counter(
        json.dumps(body, sort_keys=True)
        for body in server.requests
        if ESTIMATOR_MARK in json.dumps(body.get("messages", []))
    )


def test_repeats_call_the_model_and_replay_as_the_same_different_answers(
    pytester: pytest.Pytester,
) -> None:
    with ModelServer(Sampler()) as server:
        live, cell = _live(pytester, server.url, 3, "cache")
        probes = int(cell["scores"]["n_probes"])
        assert probes > 0
        # Every probe asked once per repeat: 3x the calls, each request exactly 3 times.
        bodies = _estimator_bodies(server)
        assert len(bodies) == probes and set(bodies.values()) == {3}
        assert len(server.requests) == 3 * probes
        live.stdout.fnmatch_lines([f"forecast: {3 * probes}..{3 * probes} calls*"])
        # The recording holds three answer sets, one per repeat, all different.
        records = _records(pytester.path / "cache" / "models" / "openai" / "m")
        answers: dict[int, set[str]] = {}
        for record in records:
            answers.setdefault(record.get("repeat", 0), set()).add(record["response"]["text"])
        assert sorted(answers) == [0, 1, 2]
        assert all(len(texts) == probes for texts in answers.values())
        assert len({frozenset(texts) for texts in answers.values()}) == 3
        spread = cell["repeat"]["scores"]
        varied = [name for name, entry in spread.items() if len(set(entry["values"])) == 3]
        assert "interval_score" in varied, spread["interval_score"]
        assert spread["interval_score"]["std"] > 0

        # Offline, replay only, under xdist: no call, and the same three repeats.
        server.requests.clear()
        replay = _run(
            pytester, server.url, 3, "--budget-cache-dir=cache", "--budget-report=r2.json",
            "--budget-record-mode=none", "-n", "2",
        )  # fmt: skip
        replay.assert_outcomes(passed=1)
        assert server.requests == []
        again = _cell(pytester.path / "r2.json")
        assert again["repeat"]["scores"] == spread
        assert again["scores"] == cell["scores"]
        replay.stdout.fnmatch_lines(["model calls: 0 live, * replayed*"])

        # A rerun in the default mode pays for nothing it has (resume, per repeat)...
        new = _run(pytester, server.url, 3, "--budget-cache-dir=cache")
        new.assert_outcomes(passed=1)
        assert server.requests == []
        # ...and a fourth repeat is the only thing it calls the model for.
        more = _run(pytester, server.url, 4, "--budget-cache-dir=cache", "--budget-report=r4.json")
        more.assert_outcomes(passed=1)
        assert len(server.requests) == probes
        more.stdout.fnmatch_lines([f"forecast: {probes}..{probes} calls*"])
        assert set(_estimator_bodies(server)) == set(bodies)
        four = _cell(pytester.path / "r4.json")["repeat"]["scores"]["interval_score"]["values"]
        assert four[:3] == spread["interval_score"]["values"]


def _old_key(record: dict[str, Any]) -> str:
    """The key as pytest-budget computed it before repeats were keyed (the provider and the
    request, as JSON with sorted keys)."""
    text = json.dumps(
        {"provider": record["provider"], "request": record["request"]},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )  # fmt: skip
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_cache_recorded_before_repeats_were_keyed_still_replays(
    pytester: pytest.Pytester,
) -> None:
    with ModelServer(Sampler()) as server:
        scores = _live(pytester, server.url, 1, "new")[1]["scores"]
        probes = len(server.requests)
        # The old cache: the same answers in the old record layout, written here (one JSON
        # object per line, sorted keys, keyed by the old formula).
        records = _records(pytester.path / "new" / "models" / "openai" / "m")
        assert len(records) == probes
        old = pytester.path / "old" / "models" / "openai" / "m"
        old.mkdir(parents=True)
        lines = []
        for record in records:
            fields = {k: record[k] for k in ("format", "model", "provider", "request", "response")}
            line = {**fields, "key": _old_key(record)}
            lines.append(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
        (old / "calls-00000000000000000001-1-0000abcd.jsonl").write_text("".join(lines))
        server.requests.clear()

        # Repeat 1 (index 0) finds the old entries: no call, the same scores.
        one = _run(
            pytester, server.url, 1, "--budget-cache-dir=old", "--budget-report=r1.json",
            "--budget-record-mode=none",
        )  # fmt: skip
        one.assert_outcomes(passed=1)
        assert server.requests == []
        assert _cell(pytester.path / "r1.json")["scores"] == scores

        # Replay-only with more repeats than recorded: the cell fails, saying why.
        three = _run(pytester, server.url, 3, "--budget-cache-dir=old", "--budget-record-mode=none")
        three.assert_outcomes(failed=1)
        assert server.requests == []
        three.stdout.fnmatch_lines(
            [
                "*no recorded answer for repeat 1 (counting from 0) of this request: the cache "
                "holds its first repeat only*--budget-record-mode=new*"
            ]
        )

        # The default mode calls the model for the repeats the old cache lacks, only.
        new = _run(pytester, server.url, 3, "--budget-cache-dir=old", "--budget-report=r3.json")
        new.assert_outcomes(passed=1)
        assert len(server.requests) == 2 * probes
        values = _cell(pytester.path / "r3.json")["repeat"]["scores"]["interval_score"]["values"]
        assert values[0] == scores["interval_score"]
        assert len(set(values)) == 3
