"""Every shell block of README.md and docs/ runs as its page shows (tests/doc_run.py).

One test per page: its blocks run in order in the folder the page implies, each must end
with the exit status the page implies, and the output the page shows must be printed.
A block that cannot run here says why in its marker (``<!-- docs-test: skip: ... -->``).
Some pages carry further checks of what their own runs printed and wrote (``INSPECT``): the
tutorials' reports and baselines, checked here instead of by a second run of the same
commands in another test.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tests.doc_run import ROOT, Outcome, pages, rel, run_page, shell_blocks
from tests.schemas import validate_report

#: The pages whose every shell block this suite runs and holds to its shown output.  The
#: other pages' commands are still parsed and configured by tests/test_docs_complete.py;
#: each page joins this list once its blocks carry the markers they need (issue 31).
RUN_PAGES = [
    ROOT / name
    for name in (
        "README.md",
        "docs/tutorial/first-run.md",
        "docs/tutorial/first-agent.md",
        "docs/tutorial/first-awareness-run.md",
        "docs/tutorial/first-planning-run.md",
        "docs/tutorial/online-awareness-run.md",
        "docs/how-to/bring-your-own-estimator.md",
        "docs/how-to/bring-your-own-model-endpoint.md",
        "docs/how-to/bring-your-own-pool.md",
        "docs/how-to/bring-your-own-retrieval-server.md",
        "docs/how-to/bring-your-own-queries.md",
        "docs/how-to/bring-your-own-solver.md",
        "docs/how-to/bring-your-own-tool-agent.md",
        "docs/how-to/compare-agents-by-cost.md",
        "docs/how-to/forecast-and-cap-the-cost.md",
        "docs/how-to/gate-ci.md",
        "docs/how-to/read-the-html-report.md",
        "docs/how-to/run-on-many-machines.md",
        "docs/how-to/write-your-own-tests.md",
        "docs/reference/agents.md",
        "docs/reference/environments.md",
        "docs/reference/retrieval-api.md",
        "docs/how-to/replay-logged-rollouts.md",
        "docs/how-to/reproduce-triage-results.md",
        "docs/index.md",
    )
]


def test_every_listed_page_has_blocks_to_run() -> None:
    for page in RUN_PAGES:
        assert any(b.skip_reason is None for b in shell_blocks(page)), rel(page)


AWARENESS_ENVS = ("search", "sokoban-", "swe-synthetic", "warehouse")


def shown_lines(page: str, *starts: str) -> list[str]:
    """Lines of the page's ```text blocks that start with ``starts``."""
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", text, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith(starts)]


def awareness_tour_report(folder: Path, outcomes: list[Outcome]) -> None:
    """first-awareness-run.md, steps 1-4, beyond the shown output: step 4's run writes a
    report that matches the schema, prints every default row the page shows (its 30 cells
    and 2 summary lines per environment), and its snippet prints what the report holds."""
    page = "docs/tutorial/first-awareness-run.md"
    (step4,) = [o for o in outcomes if "--budget-report=report.json" in o.block.script]
    assert re.search(r"\b30 passed in\b", step4.output), step4.output[-2000:]
    expected = {line for line in shown_lines(page, *AWARENESS_ENVS) if "doubling" not in line}
    assert len(expected) == 40  # 30 cells and 2 summary lines per environment
    assert expected <= set(step4.output.splitlines())
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    validate_report(report)
    cell = next(
        c for c in report["cells"] if c["cell"] == "sokoban-8x8" and c["agent"] == "linear-knows-T"
    )
    printed = [
        str(report["summary"]),
        f"{cell['actor']} {cell['budget']} {cell['rollouts']}",
        str({k: round(v, 3) for k, v in cell["scores"].items() if isinstance(v, float)}),
    ]  # what the snippet of step 4 prints, made here from the report
    tutorial = (ROOT / page).read_text(encoding="utf-8").splitlines()
    assert all(line in tutorial for line in printed)
    assert step4.block.shown is not None and step4.block.shown.body.splitlines() == printed
    output = step4.output.splitlines()
    at = output.index(printed[0])  # the snippet itself, run by the page, printed the same
    assert output[at : at + 3] == printed


def online_tour_report(folder: Path, outcomes: list[Outcome]) -> None:
    """online-awareness-run.md: the conftest it saves is the example file's code
    ("conftest_online_actor_example.py" without its docstring); step 2 runs its three cells
    and prints the three rows the page shows; step 4's report holds the run the page shows."""
    page = (ROOT / "docs/tutorial/online-awareness-run.md").read_text(encoding="utf-8")
    example = (ROOT / "docs/examples/conftest_online_actor_example.py").read_text(encoding="utf-8")
    docstring = ast.parse(example).body[0]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    code = "".join(example.splitlines(keepends=True)[docstring.end_lineno or 0 :]).lstrip("\n")
    assert (folder / "conftest.py").read_text(encoding="utf-8") == code
    (step2,) = [o for o in outcomes if "--budget-online-caps" not in o.block.script and o.output]
    assert re.search(r"\b3 passed in\b", step2.output), step2.output[-2000:]
    rows = [line for line in step2.output.splitlines() if line.startswith("sokoban-8x8  ")]
    assert len(rows) == 3
    for row in rows:  # the table in online-awareness-run.md is this run's
        assert row.rstrip() in page, row
    cells = json.loads((folder / "report.json").read_text(encoding="utf-8"))["cells"]
    one = next(c for c in cells if c["cap_multiplier"] == 1.0)
    assert one["agent"] == "stop-when-impossible" and one["protocol"] == "single-call"
    assert one["budget"] == {"tokens": 2500.0} and one["charge"] == "acting"
    shown = next(r for r in one["runs"] if r["id"] == "sokoban-8x8-s42-0002")
    assert json.dumps(shown, indent=1) in page


def first_agent_baselines(folder: Path, outcomes: list[Outcome]) -> None:
    """first-agent.md, steps 4-5: record 16 baselines (one file per cell, as the page names
    one), pass against them, then fail on the worse planner with the 5 regressions shown."""
    text = (ROOT / "docs/tutorial/first-agent.md").read_text(encoding="utf-8")
    example = (ROOT / "docs/examples/conftest_planner_example.py").read_text(encoding="utf-8")
    record, again, worse = outcomes[-3:]
    assert "--snapshot-update" in record.block.script and "reverse=True" in worse.block.script
    assert "16 snapshots generated." in record.output.splitlines()
    assert re.search(r"\b16 passed in\b", record.output), record.output[-2000:]
    stored = folder / "__budget_snapshots__" / "triage" / "arith-u0-a0.5-A-user.json"
    assert stored.is_file() and "`arith-u0-a0.5-A-user.json`" in text
    assert "16 snapshots passed." in again.output.splitlines()
    assert re.search(r"\b16 passed in\b", again.output), again.output[-2000:]
    assert "reverse=False" in example  # what the page's sed turns into reverse=True
    changed = example.replace("reverse=False", "reverse=True")
    assert (folder / "conftest.py").read_text(encoding="utf-8") == changed
    # One cell fails its own test; the run's pooled gate fails the run, as the page shows.
    assert re.search(r"\b1 failed, 15 passed in\b", worse.output), worse.output[-2000:]
    assert worse.block.shown is not None
    regressions = [line.strip() for line in worse.block.shown.body.splitlines()
                   if "over the suite" in line]  # fmt: skip
    assert len(regressions) == 5
    found = [line.strip() for line in worse.output.splitlines()]
    assert all(line in found for line in regressions)


def first_run_report(folder: Path, outcomes: list[Outcome]) -> None:
    """first-run.md, steps 2-4: the 64 cells of step 2 pass; step 4's run is step 3's
    command with a report, passes its 16 cells and prints step 3's table; the worked
    numbers of the cheapest-first row are the ones the prose explains."""
    text = (ROOT / "docs/tutorial/first-run.md").read_text(encoding="utf-8")
    cells = int(re.search(r"pytest collects (\d+) tests", text).group(1))  # type: ignore[union-attr]
    assert cells == 64
    (step2,) = [o for o in outcomes if "mkdir budget-tour" in o.block.script]
    (step3,) = [o for o in outcomes if o.block.script == "pytest --budget-suite=triage "
                "--budget-alpha=0.5\n"]  # fmt: skip
    (step4,) = [o for o in outcomes if "--budget-report=report.json" in o.block.script]
    assert re.search(rf"\b{cells} passed in\b", step2.output), step2.output[-2000:]
    table = step3.block.script.split()
    assert step4.block.script.split()[: len(table)] == table  # the same run, with a report
    assert re.search(r"\b16 passed in\b", step4.output), step4.output[-2000:]
    assert step3.block.shown is not None
    shown = [line for line in step3.block.shown.body.splitlines()
             if line.strip() and not line.startswith(("...", "="))]  # fmt: skip
    assert len(shown) == 9 and set(shown) <= set(step4.output.splitlines())
    row = next(line for line in shown if "cheapest-first" in line and "0.000  0.500" in line)
    assert row.split()[5:10] == ["3884", "0.874", "0.116", "0.050", "0.350"]
    assert "**B = 3884**" in text and "**eta_u = 0.874**" in text and "**eta_e = 0.116**" in text
    assert step4.block.shown is not None and (folder / "report.json").is_file()
    printed = step4.output.splitlines()
    snippet = step4.block.shown.body.splitlines()
    at = printed.index(snippet[0])  # the snippet's lines, all of them, as the page shows
    assert printed[at : at + len(snippet)] == snippet


#: Further checks of what a page's session leaves in its folder (tests/doc_run.py, inspect).
INSPECT = {
    ROOT / "docs/tutorial/first-run.md": first_run_report,
    ROOT / "docs/tutorial/first-agent.md": first_agent_baselines,
    ROOT / "docs/tutorial/first-awareness-run.md": awareness_tour_report,
    ROOT / "docs/tutorial/online-awareness-run.md": online_tour_report,
}


@pytest.mark.parametrize("page", RUN_PAGES, ids=[rel(page) for page in RUN_PAGES])
def test_the_page_runs_as_shown(page: Path) -> None:
    outcomes: list[Outcome] = run_page(page, inspect=INSPECT.get(page))
    problems = [f"{o.block.where}: {problem}" for o in outcomes for problem in o.problems]
    assert not problems, "\n\n".join(problems)


def test_every_shell_block_runs_or_says_why_not() -> None:
    """A skipped block gives its reason; a block run by another test names one that exists."""
    tests = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").glob("*.py"))
    for page in pages():
        for block in shell_blocks(page):
            reason = block.skip_reason
            if reason is None:
                continue
            assert reason != "no reason given", f"{block.where}: skip needs a reason"
            for name in re.findall(r"run by (test_\w+)", reason):
                assert f"def {name}(" in tests, f"{block.where}: no test {name}"


def test_the_gated_metric_lists_of_gate_ci_are_the_real_ones() -> None:
    """gate-ci.md's unknown-tolerance error is the message the code gives, and its list of
    gated metrics names every one the code gates (issue 31: two had gone missing)."""
    from pytest_budget._stats.gated_metrics import gated_metric_names
    from pytest_budget._stats.gating import parse_tolerances

    text = (ROOT / "docs/how-to/gate-ci.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        parse_tolerances(["eta = 0.1"], gated_metric_names())
    assert f"ERROR: {refused.value}\n" in text
    listed = " ".join(text.split("Gated metrics and their directions:")[1].split("\n\n")[0].split())
    missing = [name for name in sorted(gated_metric_names()) if f"`{name}`" not in listed]
    assert not missing, missing
