"""``--budget-shard=i/N``: the assignment of tests to shards and the plugin's selection.

The assignment is checked against a second computation written here from the documented
rule (rendezvous hashing over sha256), for stability when cells come and go, for covering
every cell exactly once, and for balance on the bundled default cells.  The plugin side
runs real collections through pytester.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_budget._run.shard import (
    SUITES_PREFIX,
    Shard,
    ShardSpecError,
    parse_shard,
    partition,
    shard_of,
    shard_sizes,
    suite_identity,
)


def documented_shard(identity: str, count: int) -> int:
    """The rule as docs/how-to/run-on-many-machines.md states it, written independently."""
    weights = [
        int(hashlib.sha256(f"{k}\0{identity}".encode()).hexdigest()[:16], 16)
        for k in range(1, count + 1)
    ]
    return weights.index(max(weights)) + 1


_ID_PLUGIN = """
from pathlib import Path

import pytest_budget.suites as suites_package
from pytest_budget.plugin import _shard_identity


def pytest_collection_finish(session):
    folder = Path(suites_package.__file__).resolve().parent
    ids = [_shard_identity(item, folder) for item in session.items]
    Path("identities.txt").write_text("\\n".join(ids), encoding="utf-8")
"""


@pytest.fixture(scope="module")
def default_identities(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The identities of the bundled default cells (``--budget-suite=all``), as the plugin
    computes them during a real collection (in a subprocess: one per module)."""
    folder = tmp_path_factory.mktemp("default-cells")
    (folder / "record_ids.py").write_text(_ID_PLUGIN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(folder)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--budget-suite=all", "--collect-only", "-q",
         "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "record_ids"],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return (folder / "identities.txt").read_text(encoding="utf-8").splitlines()


# -- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"), [("2/3", Shard(2, 3)), (" 1/1 ", Shard(1, 1)), ("10/12", Shard(10, 12))]
)
def test_parse_shard(text: str, expected: Shard) -> None:
    assert parse_shard(text) == expected
    assert str(expected) == text.strip()
    assert expected.as_dict() == {"index": expected.index, "count": expected.count}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("0/3", "shards are numbered from 1, so I is 1..3"),
        ("4/3", "shard 4 is past the shard count 3"),
        ("a/b", "'a/b' is not I/N with whole numbers"),
        ("3", "'3' is not I/N with whole numbers"),
        ("1/0", "the shard count N must be at least 1"),
        ("-1/3", "is not I/N"),
        ("1.5/3", "is not I/N"),
        ("1/3/5", "is not I/N"),
    ],
)
def test_bad_shard_values_are_one_line_errors(text: str, fragment: str) -> None:
    with pytest.raises(ShardSpecError) as info:
        parse_shard(text)
    message = str(info.value)
    assert message.startswith("--budget-shard: ")
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["0/3", "4/3", "a/b", "3"])
def test_bad_shard_option_stops_the_run(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest(f"--budget-shard={value}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "--budget-shard" in line]
    assert len(errors) == 1, result.errlines
    assert errors[0].startswith("ERROR: --budget-shard: ")


# -- the assignment ---------------------------------------------------------------------


def test_assignment_follows_the_documented_rule(default_identities: list[str]) -> None:
    for count in (1, 2, 3, 5, 8):
        for identity in default_identities:
            assert shard_of(identity, count) == documented_shard(identity, count)


def test_every_cell_is_in_exactly_one_shard(default_identities: list[str]) -> None:
    for count in (1, 2, 3, 4, 7):
        owners: dict[int, int] = {}
        for index in range(1, count + 1):
            kept, dropped = partition(default_identities, Shard(index, count))
            assert sorted(kept + dropped) == list(range(len(default_identities)))
            for position in kept:
                assert position not in owners
                owners[position] = index
        assert len(owners) == len(default_identities)


def test_adding_or_removing_cells_moves_no_other_cell(default_identities: list[str]) -> None:
    """Shards depend on a cell's own id, not on its position or on the other cells."""
    rng = random.Random(7)
    before = list(default_identities)
    removed = set(rng.sample(before, 40))
    added = [f"tests/test_mine.py::test_extra[{n}]" for n in range(60)]
    after = [identity for identity in before if identity not in removed] + added
    rng.shuffle(after)  # also a different collection order
    for count in (2, 3, 5):
        shard_before = {
            before[p]: index
            for index in range(1, count + 1)
            for p in partition(before, Shard(index, count))[0]
        }
        shard_after = {
            after[p]: index
            for index in range(1, count + 1)
            for p in partition(after, Shard(index, count))[0]
        }
        common = set(before) - removed
        assert {i: shard_before[i] for i in common} == {i: shard_after[i] for i in common}
        assert set(shard_after) == common | set(added)


def test_one_more_shard_only_moves_cells_into_the_new_shard(
    default_identities: list[str],
) -> None:
    for count in (2, 3, 4):
        moved = 0
        for identity in default_identities:
            old, new = shard_of(identity, count), shard_of(identity, count + 1)
            assert new in (old, count + 1)
            moved += new != old
        # Roughly 1/(N+1) of the cells move; none stay behind in a wrong place.
        expected = len(default_identities) / (count + 1)
        assert abs(moved - expected) < 4 * math.sqrt(expected)


def test_default_cells_are_balanced(default_identities: list[str]) -> None:
    """Each shard holds C/N cells within three binomial standard deviations (the bound in
    docs/how-to/run-on-many-machines.md), for the bundled default cells."""
    total = len(default_identities)
    assert total >= 200  # triage 64, awareness 30, planning 120 at the time of writing
    for count in range(2, 7):
        sizes = shard_sizes(default_identities, count)
        assert sum(sizes) == total
        mean = total / count
        sd = math.sqrt(total * (1 / count) * (1 - 1 / count))
        assert all(abs(size - mean) <= 3 * sd for size in sizes), (count, sizes)


def test_the_documented_balance_table_is_the_real_one(default_identities: list[str]) -> None:
    """docs/how-to/run-on-many-machines.md's table is this run's shard sizes, C/N and sd
    (issue 31: it had drifted to 209 cells); regenerate it from the message on failure."""
    page = Path(__file__).resolve().parent.parent / "docs/how-to/run-on-many-machines.md"
    text = page.read_text(encoding="utf-8")
    total = len(default_identities)
    rows = []
    for count in range(2, 7):
        sizes = ", ".join(map(str, shard_sizes(default_identities, count)))
        sd = math.sqrt(total * (1 / count) * (1 - 1 / count))
        rows.append(f"| {count} | {sizes} | {total / count:.1f} | {sd:.1f} |")
    documented = re.findall(r"^\| [2-6] \|.*$", text, flags=re.MULTILINE)
    assert documented == rows, "\n".join(rows)
    assert f"For the {total} default cells" in " ".join(text.split()), total


def test_large_sets_are_uniform() -> None:
    """No index is favoured: 30,000 ids over 7 shards stay within 4 sd of the mean."""
    identities = [f"tests/test_x.py::test_cell[{n}-agent{n % 5}]" for n in range(30_000)]
    sizes = shard_sizes(identities, 7)
    sd = math.sqrt(30_000 * (1 / 7) * (6 / 7))
    assert all(abs(size - 30_000 / 7) <= 4 * sd for size in sizes), sizes


def test_suite_identity_ignores_the_install_location() -> None:
    outside = suite_identity("::test_triage[arith-u0-a0.5-A-oracle]", "test_triage.py")
    inside = suite_identity(
        ".venv/lib/python3.11/site-packages/pytest_budget/suites/test_triage.py"
        "::test_triage[arith-u0-a0.5-A-oracle]",
        "test_triage.py",
    )
    assert (
        outside == inside == f"{SUITES_PREFIX}/test_triage.py::test_triage[arith-u0-a0.5-A-oracle]"
    )
    assert suite_identity("tests/test_mine.py::test_a[1]", None) == "tests/test_mine.py::test_a[1]"


# -- the plugin -------------------------------------------------------------------------

SMALL = [
    "--budget-pool-size=6",
    "--budget-alpha=0.5",
    "--budget-unsolvable=0",
    "-p",
    "no:cacheprovider",
]


def _collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_shards_of_a_suite_run_partition_its_cells(pytester: pytest.Pytester) -> None:
    full = pytester.runpytest("--budget-suite=triage", *SMALL, "--collect-only", "-q")
    every = _collected(full)
    assert len(every) == 8  # 2 pools x 4 agents
    seen: list[str] = []
    for index in (1, 2, 3):
        result = pytester.runpytest(
            "--budget-suite=triage", *SMALL, f"--budget-shard={index}/3", "--collect-only", "-q"
        )
        mine = _collected(result)
        expected = [
            nodeid
            for nodeid in every
            if documented_shard(suite_identity(nodeid, "test_triage.py"), 3) == index
        ]
        assert mine == expected
        deselected = len(every) - len(mine)
        if deselected:
            result.stdout.fnmatch_lines(
                [f"{len(mine)}/8 tests collected ({deselected} deselected)*"]
            )
        seen += mine
    assert sorted(seen) == sorted(every)


def test_plain_tests_are_sharded_too(pytester: pytest.Pytester) -> None:
    """Every collected test runs in exactly one shard, whether it records a cell or not."""
    pytester.makepyfile(
        test_mine="""
        import pytest

        @pytest.mark.parametrize("n", range(30))
        def test_plain(n):
            pass

        def test_cell(budget_record):
            budget_record({"suite": "mine", "cell": "c", "agent": "a", "scores": {"s": 1.0}})
        """
    )
    every = [f"test_mine.py::test_plain[{n}]" for n in range(30)] + ["test_mine.py::test_cell"]
    passed = re.compile(r"^(\S+::\S+) PASSED")
    ran: list[str] = []
    for index in (1, 2):
        result = pytester.runpytest("--budget-shard", f"{index}/2", "-v", "-p", "no:cacheprovider")
        result.stdout.fnmatch_lines([f"budget shard: {index}/2 *"])
        mine = [m.group(1) for m in map(passed.match, result.outlines) if m]
        assert mine == [nodeid for nodeid in every if documented_shard(nodeid, 2) == index]
        assert 0 < len(mine) < len(every)
        ran += mine
    assert sorted(ran) == sorted(every)


def test_report_records_the_shard(pytester: pytest.Pytester) -> None:
    import json

    pytester.runpytest(
        "--budget-suite=triage", *SMALL, "--budget-gate=off", "--budget-shard=2/3",
        "--budget-report=r.json",
    )  # fmt: skip
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    assert report["shard"] == {"index": 2, "count": 3}
    assert report["options"]["shard"] == {"index": 2, "count": 3}
    pytester.runpytest(
        "--budget-suite=triage", *SMALL, "--budget-gate=off", "--budget-report=u.json"
    )
    unsharded = json.loads((pytester.path / "u.json").read_text(encoding="utf-8"))
    assert unsharded["shard"] is None
