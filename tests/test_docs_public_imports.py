"""The docs import only from the public surface (issue 35).

Every ``python`` code block of ``docs/**/*.md`` and README.md, every ``docs/examples/*.py``
and every ``python -c "..."`` in a shell block is parsed; each ``from pytest_budget... import
X`` must name a public module (:data:`tests.test_public_surface.PUBLIC`) and an ``X`` in its
``__all__``; each ``import pytest_budget...`` a public module.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.test_public_surface import PUBLIC

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"""python3? -c (["'])(.*?)(?<!\\)\1""", re.S)


def code_blocks() -> list[tuple[str, str]]:
    """(where, source) of every piece of Python the docs show."""
    blocks: list[tuple[str, str]] = []
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            language, body = match.group(1), match.group(2)
            line = text.count("\n", 0, match.start()) + 1
            where = f"{page.relative_to(ROOT)}:{line}"
            if language in ("python", "py"):
                blocks.append((where, body))
            elif language in ("bash", "sh", "console", "shell", ""):
                blocks += [(where, m.group(2).replace("\\n", "\n")) for m in INLINE.finditer(body)]
    for example in sorted((ROOT / "docs" / "examples").glob("*.py")):
        blocks.append((str(example.relative_to(ROOT)), example.read_text(encoding="utf-8")))
    return blocks


def imports_of(source: str) -> list[tuple[str, str | None]]:
    """(module, name) for ``from module import name``; (module, None) for ``import module``.
    Blocks that are not whole Python (elided ``...`` lines) are read statement by statement."""
    try:
        trees = [ast.parse(source)]
    except SyntaxError:
        trees = []
        for statement in re.findall(r"^(?:from|import) [^\n(]+(?:\([^)]*\))?", source, re.M):
            try:
                trees.append(ast.parse(statement))
            except SyntaxError:
                continue
    found: list[tuple[str, str | None]] = []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found += [(node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(alias.name, None) for alias in node.names]
    return [(module, name) for module, name in found if module.split(".")[0] == "pytest_budget"]


def not_public(module: str, name: str | None) -> str | None:
    if module.startswith(("pytest_budget.suites", "pytest_budget.fixtures")) and name is None:
        return None  # the adapter's face, loaded as pytest plugins / --pyargs
    if name is not None and f"{module}.{name}" in PUBLIC:
        return None  # ``from pytest_budget import report``
    if module not in PUBLIC:
        return f"{module} is not a public module"
    if name is not None and name not in PUBLIC[module]:
        return f"{name} is not in {module}.__all__"
    return None


def test_the_docs_import_only_public_names() -> None:
    problems = [
        f"{where}: {problem}"
        for where, source in code_blocks()
        for module, name in imports_of(source)
        if (problem := not_public(module, name))
    ]
    assert problems == []


def test_the_check_reads_every_kind_of_block() -> None:
    blocks = code_blocks()
    wheres = " ".join(where for where, _ in blocks)
    assert "docs/examples/" in wheres and "README.md" in wheres
    sample = "from pytest_budget.roles import call_role\nimport pytest_budget.tables\n..."
    assert imports_of(sample) == [
        ("pytest_budget.roles", "call_role"),
        ("pytest_budget.tables", None),
    ]
    assert (
        not_public("pytest_budget.roles", "call_role")
        == "pytest_budget.roles is not a public module"
    )
    assert (
        not_public("pytest_budget", "nonexistent") == "nonexistent is not in pytest_budget.__all__"
    )
    assert not_public("pytest_budget.report", "load_report") is None


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_resolves(module: str) -> None:
    namespace = importlib.import_module(module)
    assert [name for name in PUBLIC[module] if not hasattr(namespace, name)] == []
