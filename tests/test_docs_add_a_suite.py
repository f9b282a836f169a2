"""A fourth suite registered from a conftest runs, tables, reports, gates and renders with
no change to the plugin (issue 22): the shared layers only read the suite registry.

The project is the one docs/how-to/add-a-suite.md builds: its files are the page's code
blocks and its commands the page's bash block, taken literally.  Each run is a
subprocess: a registration must not leak into other tests' registry.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from pytest_budget._core.registry import registered_suites, role

ROOT = Path(__file__).resolve().parents[1]
HOW_TO = ROOT / "docs" / "how-to" / "add-a-suite.md"


def how_to_commands() -> list[list[str]]:
    """The ``pytest`` commands of the how-to's bash block, as argument lists."""
    text = HOW_TO.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    return [shlex.split(line, comments=True)[1:] for line in block[1].splitlines() if line]


def how_to_blocks() -> dict[str, str]:
    """The how-to's code blocks that name a file (``# file: NAME`` as first line)."""
    text = HOW_TO.read_text(encoding="utf-8")
    blocks: dict[str, str] = {}
    for match in re.finditer(r"```python\n# file: (\S+)\n(.*?)```", text, re.S):
        blocks[match[1]] = match[2]
    return blocks


@pytest.fixture
def toy_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The how-to's files, written literally into a fresh project."""
    for name, body in how_to_blocks().items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return pytester


def test_the_how_to_names_every_file_the_suite_needs() -> None:
    assert set(how_to_blocks()) == {"conftest.py", "coin_suite.py", "coin_cells/test_coins.py"}


def test_a_fourth_suite_runs_tables_reports_gates_and_renders(
    toy_project: pytest.Pytester,
) -> None:
    """add-a-suite.md's three commands, as written, in the project its code blocks build:
    store baselines; run with the report and the page; run a worse agent, see the gate fail."""
    project = toy_project
    store, report_run, worse_run = how_to_commands()
    assert store == ["--budget-suite=coins", "--snapshot-update"]
    # 1. It runs and records; --snapshot-update stores its baselines.
    first = project.runpytest_subprocess(*store, "-p", "no:cacheprovider")
    first.assert_outcomes(passed=4)
    # 2. The gate passes on an unchanged run; the table, the report and the page show it.
    second = project.runpytest_subprocess(*report_run, "-p", "no:cacheprovider")
    second.assert_outcomes(passed=4)
    text = second.stdout.str()
    table = text[text.index("coins: share of heads called right") :]
    # (agent, flips, accuracy): every ten flips hold five heads at the default bias.
    for agent, flips, accuracy in (
        ("always-heads", 10, "0.500"),
        ("always-heads", 40, "0.500"),
        ("follows-the-coin", 10, "1.000"),
        ("follows-the-coin", 40, "1.000"),
    ):
        assert re.search(rf"{agent}\s+{flips}\s+{accuracy}", table), table
    report = json.loads((project.path / "r.json").read_text(encoding="utf-8"))
    cells = [cell for cell in report["cells"] if cell["suite"] == "coins"]
    assert sorted((c["agent"], c["flips"], c["scores"]["accuracy"]) for c in cells) == [
        ("always-heads", 10, 0.5),
        ("always-heads", 40, 0.5),
        ("follows-the-coin", 10, 1.0),
        ("follows-the-coin", 40, 1.0),
    ]
    assert report["options"]["coin_flips"] == [10, 40]
    assert report["options"]["coin_bias"] == 0.5
    assert report["options"]["gates"] == {"coins": "tolerance"}
    assert report["coins_best_agent"] == "follows-the-coin"
    page = (project.path / "r.html").read_text(encoding="utf-8")
    assert "coins: calling fair coin flips" in page
    assert ">flips<" in page and "how often the agent called the flip right" in page
    assert "4 cells" in page  # the suite's footer
    # 3. A worse agent: always-heads now calls 3 in 10 right; its two cells fail the gate
    # on accuracy, the other agent's pass.
    worse = project.runpytest_subprocess(*worse_run, "-p", "no:cacheprovider")
    worse.assert_outcomes(passed=2, failed=2)
    failed = [line for line in worse.stdout.lines if line.startswith("FAILED")]
    assert len(failed) == 2 and all("always-heads" in line for line in failed), failed
    assert "accuracy" in worse.stdout.str()


def test_a_bad_option_of_the_fourth_suite_is_a_one_line_usage_error(
    toy_project: pytest.Pytester,
) -> None:
    result = toy_project.runpytest_subprocess(
        "--budget-suite=coins", "--coin-flips=ten", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert errors == ["ERROR: --coin-flips: 'ten' is not a whole number"]


def test_an_unknown_suite_lists_the_registered_ones(toy_project: pytest.Pytester) -> None:
    result = toy_project.runpytest_subprocess("--budget-suite=dice", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown suite 'dice'; valid: triage, awareness, planning, coins, all*"]
    )


def test_the_registry_of_this_process_holds_the_three_built_in_suites() -> None:
    # The subprocess runs above registered "coins" in their own interpreters only.
    assert list(registered_suites()) == ["triage", "awareness", "planning"]


def test_a_field_the_record_type_lacks_fails_the_cell_naming_it(
    toy_project: pytest.Pytester,
) -> None:
    """A renamed field fails where the cell is recorded, not as an empty column later."""
    cells = toy_project.path / "coin_cells" / "test_coins.py"
    cells.write_text(
        cells.read_text(encoding="utf-8").replace('"flips": flips,', '"flip_count": flips,'),
        encoding="utf-8",
    )
    result = toy_project.runpytest_subprocess(
        "--budget-suite=coins", "--snapshot-update", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*RecordError: cell coin_cells/test_coins.py::test_coins[[]n10-always-heads[]]: "
            "unknown field 'flip_count' for a cell of kind 'coins' (report schema version 2)*"
        ]
    )


def _string_constants(path: Path) -> list[str]:
    """The strings a module's code uses (docstrings left out, as tests/test_suite_mentions.py)."""
    from tests.test_suite_mentions import _skipped

    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _skipped(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if id(node) not in skipped
        and isinstance(node, ast.Constant)
        and isinstance(node.value, str)
    ]


def test_the_fourth_suites_role_needs_no_shared_change(toy_project: pytest.Pytester) -> None:
    """The how-to's role ``caller`` is declared in coin_suite.py alone: no module of the
    package names it, this process knows no such role, and an answer its rule refuses is
    scored invalid (with the rule's reason) without crashing the run."""
    role_names = {
        match[1] for match in re.finditer(r'Role\(\s*"(\w+)"', how_to_blocks()["coin_suite.py"])
    }
    assert role_names == {"caller"}
    naming = [
        f"{path.relative_to(ROOT)}: {text!r}"
        for folder in ("pytest_budget", "fixtures", "suites")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for text in _string_constants(path)
        if any(re.fullmatch(rf"(pytest_)?(budget_)?{name}", text) for name in role_names)
    ]
    assert naming == []
    assert role("caller") is None
    # A third reference agent answers a number: each call is refused by the rule, the cell
    # is recorded with invalid_rate 1.0 and the run goes on.
    suite = toy_project.path / "coin_suite.py"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(
        text.replace(
            "    reference_agents={\n",
            "    reference_agents={\n"
            '        "says-three": {"caller": lambda seed: lambda i, c: 3},\n',
        ),
        encoding="utf-8",
    )
    result = toy_project.runpytest_subprocess(
        "--budget-suite=coins",
        "--budget-agent=says-three",
        "--snapshot-update",
        "--budget-report=r.json",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    report = json.loads((toy_project.path / "r.json").read_text(encoding="utf-8"))
    cells = [cell for cell in report["cells"] if cell["suite"] == "coins"]
    assert sorted((c["agent"], c["flips"], c["scores"]["invalid_rate"]) for c in cells) == [
        ("says-three", 10, 1.0),
        ("says-three", 40, 1.0),
    ]
    assert all(c["scores"]["accuracy"] == 0.0 for c in cells)
    # The refused answer's one-line reason is the rule's.
    script = (
        "import anyio\n"
        "from coin_suite import COINS\n"
        "from pytest_budget._core.roles import InvalidOutput, call_role\n"
        "from pytest_budget._core.registry import register_suite\n"
        "register_suite(COINS)\n"
        "try:\n"
        "    anyio.run(lambda: call_role(lambda i, c: 3, 'caller', 0, 'H'))\n"
        "except InvalidOutput as exc:\n"
        "    print('REASON', exc.reason)\n"
    )
    reason = toy_project.run(sys.executable, "-c", script)
    assert reason.ret == 0, reason.stderr.str()
    assert "REASON returned int; expected 'H' or 'T'" in reason.stdout.lines


def test_the_generic_hook_supplies_the_fourth_suites_agent(toy_project: pytest.Pytester) -> None:
    """``--budget-agent=user`` takes the ``caller`` from ``pytest_budget_agent(config,
    role)`` (the suite has no hook of its own); without an answer the cell fails naming
    that hook."""
    conftest = toy_project.path / "conftest.py"
    base = conftest.read_text(encoding="utf-8")
    conftest.write_text(
        base + "\n\nclass Mine:\n"
        "    def call(self, index, coin):\n"
        "        return coin\n\n\n"
        "def pytest_budget_agent(config, role):\n"
        "    return Mine() if role == 'caller' else None\n",
        encoding="utf-8",
    )
    args = ("--budget-suite=coins", "--budget-agent=user", "--snapshot-update")
    result = toy_project.runpytest_subprocess(*args, "--budget-report=r.json")
    result.assert_outcomes(passed=2)
    report = json.loads((toy_project.path / "r.json").read_text(encoding="utf-8"))
    scored = sorted((c["agent"], c["flips"], c["scores"]["accuracy"]) for c in report["cells"])
    assert scored == [("user", 10, 1.0), ("user", 40, 1.0)]
    conftest.write_text(base, encoding="utf-8")
    missing = toy_project.runpytest_subprocess(*args)
    missing.assert_outcomes(failed=2)
    missing.stdout.fnmatch_lines(
        ["*--budget-agent=user but no pytest_budget_agent hook returned an agent for caller*"]
    )
