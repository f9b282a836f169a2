"""Functions stay at most 80 lines, docstrings included (issue 35).

A longer one is split into named helpers, or says in a comment at its ``def`` why it is
kept whole, and is listed in ``KEPT`` with that reason.  ``WAITING`` lists the ones still
to split; a function that drops to the limit must leave either list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80

#: "path::qualified name" -> why the function is kept whole (also said at its ``def``).
KEPT: dict[str, str] = {
    "pytest_budget/awareness/warehouse/_policy.py::ReorderPointPolicy.decide": (
        "reads as the module docstring's heuristic, step by step"
    ),
}


#: Functions over the limit that still wait for their split (issue 35, must-have 6).
WAITING: set[str] = set()


def _long_functions() -> dict[str, int]:
    """Every function (methods and nested ones too) over the limit, with its length."""
    found: dict[str, int] = {}
    for folder in ("pytest_budget", "fixtures", "suites"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(ROOT).as_posix()
            found.update(_walk(tree, where, ""))
    return found


def _walk(node: ast.AST, where: str, prefix: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > LIMIT:
                    found[f"{where}::{name}"] = lines
            found.update(_walk(child, where, f"{name}."))
        else:
            found.update(_walk(child, where, prefix))
    return found


def test_the_walk_measures_a_function_from_def_to_last_line() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))  # def + 80 lines = 81
    source = f"class C:\n    def f(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    source += "def g():\n    return 1\n"
    assert _walk(ast.parse(source), "m.py", "") == {"m.py::C.f": LIMIT + 1}


def test_no_function_over_the_limit_unless_kept() -> None:
    allowed = KEPT.keys() | WAITING
    over = {name: n for name, n in _long_functions().items() if name not in allowed}
    assert over == {}, f"over {LIMIT} lines: split them, or keep one with a comment in KEPT"


def test_the_waiting_list_is_current() -> None:
    found = _long_functions()
    done = sorted(name for name in WAITING if name not in found)
    assert done == [], f"now at most {LIMIT} lines (or gone): remove from WAITING"


def test_kept_functions_are_still_long_and_say_why() -> None:
    found = _long_functions()
    short = sorted(name for name in KEPT if name not in found)
    assert short == [], f"now at most {LIMIT} lines (or gone): remove from KEPT"
    for name, why in KEPT.items():
        path, qualified = name.split("::")
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        node = next(
            n
            for n in ast.walk(ast.parse("\n".join(lines)))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name == qualified.rsplit(".", 1)[-1]
        )
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        comment = lines[start - 2].strip()  # the line above the def (or its decorators)
        assert comment.startswith("#") and why in comment, (name, comment)
