"""The shared layers never name a suite, nor a suite's agent role: what they know of one
comes from the registry.

Counted in the code itself (string constants and imports; docstrings, comments and
imports under ``if TYPE_CHECKING:`` do not run), in every module outside the suites'
own slices (``pytest_budget/<suite>/``, ``fixtures/<suite>*.py``, ``suites/test_<suite>*``).
The one place allowed to name them is the registry list, ``BUILTIN_SUITES``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pytest_budget._core.old_paths import MOVED
from pytest_budget._core.registry import BUILTIN_SUITES, registered_roles

ROOT = Path(__file__).resolve().parents[1]
SUITES = tuple(path.split(".")[1] for path in BUILTIN_SUITES)  # ("triage", ...)


def _own_slice(relative: str) -> bool:
    return any(
        relative.startswith((f"pytest_budget/{s}/", f"fixtures/{s}", f"suites/test_{s}"))
        for s in SUITES
    )


def _names_a_suite(text: str) -> bool:
    """A suite's name as code uses it: the name or a kind (``triage-resolve``), a module
    path (``pytest_budget.triage``), a file (``test_triage.py``)."""
    names = "|".join(SUITES)
    return bool(
        re.fullmatch(rf"({names})([-:].*)?", text)
        or re.search(rf"pytest_budget[./]({names})\b|test_({names})\w*\.py", text)
    )


def _skipped(tree: ast.AST) -> set[int]:
    """Docstrings and everything under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and body:
            skipped.update(id(n) for child in body for n in ast.walk(child))
    return skipped


def mentions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _skipped(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts = [node.value]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            texts = [node.module]
        elif isinstance(node, ast.Import):
            texts = [alias.name for alias in node.names]
        else:
            continue
        found += [f"{node.lineno}: {text!r}" for text in texts if _names_a_suite(text)]
    return found


def shared_modules() -> list[Path]:
    paths = [
        path
        for folder in ("pytest_budget", "fixtures", "suites")
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    return [p for p in paths if not _own_slice(p.relative_to(ROOT).as_posix())]


def test_no_shared_module_names_a_suite() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): hits
        for path in shared_modules()
        if (hits := mentions(path))
    }
    registry = found.pop("pytest_budget/_core/registry.py", [])
    # The table of paths from before the layer folders names the suites' old modules; it
    # is data for the old-path finder, nothing else reads it.
    old_paths = found.pop("pytest_budget/_core/old_paths.py", [])
    assert found == {}
    table = set(MOVED) | set(MOVED.values())
    assert [hit for hit in old_paths if ast.literal_eval(hit.split(": ", 1)[1]) not in table] == []
    # The registry list names each built-in suite's declaration once, and nothing else.
    assert [hit.split(": ", 1)[1] for hit in registry] == [repr(p) for p in BUILTIN_SUITES]


def test_the_count_sees_what_it_must() -> None:
    """The checker finds a suite named in a string, an import, a kind and a file name, and
    leaves docstrings, TYPE_CHECKING imports and words like 'budget-awareness' alone."""
    probe = ROOT / "tests" / "data" / "suite_mentions_probe.py"
    assert sorted(hit.split(": ", 1)[1] for hit in mentions(probe)) == [
        "'planning'",
        "'pytest_budget.triage._types'",
        "'pytest_budget/suites/test_awareness.py'",
        "'triage-resolve'",
    ]
    assert not _own_slice("pytest_budget/plugin.py") and _own_slice("fixtures/triage_forecast.py")


def role_mentions(source: str, roles: tuple[str, ...]) -> list[str]:
    """A registered role's name as a string in code (``"planner"``).

    Allowed: the user-facing role fixtures, by name (``"budget_planner"``, and the
    functions ``budget_<role>`` / ``_own_<role>`` that define them); the hooks
    ``pytest_budget_<role>`` are function names, not strings.
    """
    tree = ast.parse(source)
    skipped = _skipped(tree)
    alternatives = "|".join(re.escape(role) for role in roles)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and re.fullmatch(
            rf"(budget|_own)_({alternatives})", node.name
        ):
            skipped.update(id(n) for n in ast.walk(node))
    return [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if id(node) not in skipped
        and isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(alternatives, node.value)
    ]


def test_no_shared_module_names_a_role() -> None:
    """A role is the suite's: the call code, options, forecast and fixtures read it from
    the registry (issue 35), so a suite registered from a conftest adds a role alone."""
    roles = tuple(registered_roles())
    found = {
        path.relative_to(ROOT).as_posix(): hits
        for path in shared_modules()
        if (hits := role_mentions(path.read_text(encoding="utf-8"), roles))
    }
    assert found == {}


def test_the_role_count_sees_what_it_must() -> None:
    source = (
        "import pytest\n"
        "FIXTURES = ('budget_planner', '_budget_own_solver')\n"
        "def pick():\n"
        "    return 'planner'\n"
        "@pytest.fixture(name=own('solver'))\n"
        "def _own_solver():\n"
        "    pass\n"
        "def budget_tool_agent(request):\n"
        "    return agent(request, 'tool_agent')\n"
        "def later():\n"
        '    """The estimator, in words."""\n'
        "    return {'actor': 1}\n"
    )
    roles = ("planner", "solver", "tool_agent", "estimator", "actor")
    assert role_mentions(source, roles) == ["4: 'planner'", "12: 'actor'"]
