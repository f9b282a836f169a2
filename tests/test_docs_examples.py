"""The files under docs/examples run as documented, and docs/reference/hooks.md is current.

Each example is copied into a pytester directory (conftest examples as ``conftest.py``) and
run in a subprocess on a small grid.  ``python tests/test_docs_examples.py`` rewrites the
generated part of docs/reference/hooks.md from pytest_budget/hookspecs.py.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_budget.hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXAMPLES = DOCS / "examples"
HOOKS_MD = DOCS / "reference" / "hooks.md"

SUITE = (
    "--budget-suite=triage", "-p", "no:cacheprovider", "--budget-pool-size=6",
    "--budget-alpha=0.5", "--budget-unsolvable=0",
)  # fmt: skip
#: Not needed by the examples; skipping the hypothesis plugin halves each run's start-up.
FAST = ("-p", "no:hypothesispytest")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*FAST, *args)


def use_example(pytester: pytest.Pytester, name: str, as_name: str = "conftest.py") -> str:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    (pytester.path / as_name).write_text(text, encoding="utf-8")
    return text


def cells(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    return {cell["cell"] + "/" + cell["agent"]: cell for cell in report["cells"]}


def test_fixture_planner_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_planner_example.py")
    result = run(pytester, *SUITE, "--budget-gate=off", "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*arith *0.500  A    shortest-first*"])
    found = cells(pytester)
    assert set(found) == {"arith-u0-a0.5-A/shortest-first", "sokoban-u0-a0.5-A/shortest-first"}
    assert all(cell["plan_status"] == "ok" for cell in found.values())


def test_tutorial_regression_fails_the_gate(pytester: pytest.Pytester) -> None:
    """first-agent.md: record baselines, make the planner worse, see the cells fail."""
    text = use_example(pytester, "conftest_planner_example.py")
    run(pytester, *SUITE, "--snapshot-update").assert_outcomes(passed=2)
    stored = sorted(p.name for p in (pytester.path / "__budget_snapshots__/triage").iterdir())
    assert stored == ["arith-u0-a0.5-A-user.json", "sokoban-u0-a0.5-A-user.json"]
    assert "reverse=False" in text
    pytester.makeconftest(text.replace("reverse=False", "reverse=True"))
    worse = run(pytester, *SUITE)
    worse.assert_outcomes(failed=1, passed=1)  # on 6 puzzles it was already at the floor
    worse.stdout.fnmatch_lines(["FAILED *test_triage[[]arith-u0-a0.5-A-user[]]*"])
    worse.stdout.fnmatch_lines(
        ["*eta_u regressed: stored *, new *, tolerance 0.05 (higher is better)"]
    )


def test_hook_planner_example_returns_raw_text(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_hook_planner_example.py")
    result = run(pytester, *SUITE, "--budget-gate=off", "--budget-report=report.json")
    result.assert_outcomes(passed=2)
    cell = cells(pytester)["arith-u0-a0.5-A/llm-planner"]
    assert cell["plan_status"] == "repaired"
    assert cell["repairs"][:2] == ["removed <think> reasoning", "removed markdown code fence"]
    assert cell["planned_ids"] == ["arith-000", "arith-002", "arith-004"]


def test_solver_example_and_phase0_cache(pytester: pytest.Pytester) -> None:
    use_example(pytester, "conftest_solver_example.py")
    pytester.makeini("[pytest]\nbudget_cache_dir = .budget-cache\n")
    result = run(
        pytester,
        *SUITE,
        "--budget-gate=off",
        "--budget-agent=oracle",
        "--budget-report=report.json",
    )
    result.assert_outcomes(passed=2)
    found = cells(pytester)
    assert {cell["solver"] for cell in found.values()} == {"my-solver-v1"}
    assert found["arith-u0-a0.5-A/oracle"]["phase0"] == {"items": 6, "gradeable": 6, "errors": {}}
    cached = list((pytester.path / ".budget-cache" / "phase0").glob("*/*.json"))
    assert len(cached) == 12  # 6 arith + 6 sokoban items
    assert json.loads(cached[0].read_text(encoding="utf-8"))["solver"] == "my-solver-v1"


def test_pool_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "pool_example.jsonl", as_name="pool_example.jsonl")
    result = run(
        pytester, *SUITE, "--budget-gate=off", "--budget-pool=pool_example.jsonl",
        "--budget-report=report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=4)  # the four reference planners on one pool
    found = cells(pytester)
    oracle = found["pool_example-u0-a0.5-A/oracle"]
    assert oracle["pool"] == "pool_example"
    assert oracle["budget"] == 742  # floor(0.5 * (1320 from the file + 164 measured in Phase 0))
    assert oracle["phase0"] == {"items": 8, "gradeable": 8, "errors": {}}
    assert oracle["scores"]["detection"] == 1.0
    assert oracle["scores"]["eta_u"] == 1.0
    assert oracle["scores"]["v_oracle"] == 7.0  # calc-2 is worth 2 points


def test_own_tests_example(pytester: pytest.Pytester) -> None:
    use_example(pytester, "test_own_scores_example.py", as_name="test_own_scores_example.py")
    first = run(pytester, "-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=4)
    stored = json.loads(
        (pytester.path / "__budget_snapshots__/triage/tiny-pool.json").read_text(encoding="utf-8")
    )
    assert stored == {
        "context": {"seed": 42},
        "scores": {
            "v_u": 2.0, "v_e": 2.0, "v_oracle": 2.0, "v_random": 1.0, "eta_u": 1.0,
            "eta_e": 1.0, "regret_u": 0.0, "regret_e": 0.0, "detection": 1.0, "waste": 0.0,
        },
    }  # fmt: skip
    again = run(pytester, "-p", "no:cacheprovider", "--budget-report=report.json")
    again.assert_outcomes(passed=4)
    again.stdout.fnmatch_lines(["*my-planner  825  1.000  1.000*repaired"])
    assert cells(pytester)["tiny-pool/my-planner"]["scores"]["eta_u"] == 1.0


# --------------------------------------------------------------------------- hooks.md

BEGIN = "<!-- BEGIN GENERATED from pytest_budget/hookspecs.py -->"
END = "<!-- END GENERATED -->"


def _markdown(doc: str) -> str:
    """RST docstring -> Markdown: ``code`` -> `code`, code-block directives -> fences."""
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(".. code-block::"):
            language = line.split("::", 1)[1].strip()
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                block.append(lines[i][4:])
                i += 1
            while block and not block[0].strip():
                block.pop(0)
            while block and not block[-1].strip():
                block.pop()
            out.extend([f"```{language}", *block, "```"])
            continue
        out.append(re.sub(r"``(.+?)``", r"`\1`", line))
        i += 1
    return "\n".join(out)


def render_hooks() -> str:
    """The generated block of hooks.md, from the hookspecs module and its docstrings."""
    module = pytest_budget.hookspecs
    parts = [BEGIN, "", _markdown(inspect.getdoc(module) or "")]
    hooks = [
        (name, fn)
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("pytest_budget_")
    ]
    for name, fn in sorted(hooks, key=lambda hook: hook[1].__code__.co_firstlineno):
        notes = getattr(fn, "pytest_spec", {})
        params = ", ".join(f"{k}: {v}" for k, v in fn.__annotations__.items() if k != "return")
        signature = f"def {name}({params}) -> {fn.__annotations__.get('return', 'None')}"
        parts += [
            "",
            f"## `{name}`",
            "",
            f"```python\n{signature}\n```",
            "",
            "First non-`None` answer wins (`firstresult=True`)."
            if notes.get("firstresult")
            else "Every implementation is called.",
            "",
            _markdown(inspect.getdoc(fn) or ""),
        ]
    parts += ["", END]
    return "\n".join(parts)


def _current_block() -> str:
    text = HOOKS_MD.read_text(encoding="utf-8")
    return text[text.index(BEGIN) : text.index(END) + len(END)]


def test_hooks_reference_matches_hookspecs() -> None:
    assert _current_block() == render_hooks(), (
        "docs/reference/hooks.md is out of date; run: python tests/test_docs_examples.py"
    )


if __name__ == "__main__":
    text = HOOKS_MD.read_text(encoding="utf-8")
    HOOKS_MD.write_text(text.replace(_current_block(), render_hooks()), encoding="utf-8")
    sys.exit(0)
