"""The core never imports pytest (checked in a fresh interpreter)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.test_layers import pytest_allowed

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_budget"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_modules() -> set[str]:
    return {_module_name(path) for path in PACKAGE.rglob("*.py")}


# The plugin-facing modules: the only ones under pytest_budget/ that may import pytest
# (directly, or through syrupy, which is a pytest plugin): the layers whose "pytest allowed"
# column says yes in tests/test_layers.py.  Everything else is core.  (pytest_budget.fixtures
# and pytest_budget.suites live in fixtures/ and suites/: all plugin-facing, outside this walk.)
PLUGIN_FACING = {module for module in _all_modules() if pytest_allowed(module)}


def core_modules() -> list[str]:
    """Every module of the package (found by walking it), minus :data:`PLUGIN_FACING`."""
    return sorted(_all_modules() - PLUGIN_FACING)


def _imports_pytest(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n.split(".")[0] in ("pytest", "_pytest", "syrupy") for n in names):
            lines.append(node.lineno)
    return lines


def test_the_walk_finds_the_package() -> None:
    found = core_modules()
    assert len(found) > 90
    for module in ("pytest_budget", "pytest_budget._core.budget", "pytest_budget._core.textscan"):
        assert module in found
    # the table allows pytest in the plugin layer and the entry point, and nowhere else
    assert {
        "pytest_budget.plugin",
        "pytest_budget._plugin.state",
        "pytest_budget._plugin.snapshot",
    } <= (PLUGIN_FACING)
    assert "pytest_budget._run.options" not in PLUGIN_FACING
    assert "pytest_budget" not in PLUGIN_FACING


def test_no_core_module_mentions_a_pytest_import() -> None:
    """Static: no ``import pytest`` anywhere in a core module's source, also inside a
    function (where importing the module would not show it) or under TYPE_CHECKING."""
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if _module_name(path) in PLUGIN_FACING:
            continue
        lines = _imports_pytest(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            offenders[_module_name(path)] = lines
    assert offenders == {}


def test_importing_the_core_does_not_load_pytest() -> None:
    """Dynamic, in a fresh interpreter: import every core module in turn; the first one
    after which pytest is loaded (directly or through anything it imports) is named."""
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "    if any(m == 'pytest' or m.startswith('_pytest') for m in sys.modules):\n"
        "        print(name)\n"
        "        break\n"
    )
    modules = core_modules()
    result = subprocess.run(
        [sys.executable, "-c", code, *modules], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_the_dynamic_check_can_fail() -> None:
    """The check names a module that does pull pytest in (the plugin)."""
    code = (
        "import importlib, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(any(m == 'pytest' for m in sys.modules))\n"
    )
    for module, expected in (
        ("pytest_budget.plugin", "True"),
        ("pytest_budget._core.roles", "False"),
    ):
        result = subprocess.run(
            [sys.executable, "-c", code, module], capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == expected


def test_version_matches_pyproject() -> None:
    import tomllib
    from pathlib import Path

    import pytest_budget

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert data["project"]["version"] == pytest_budget.__version__
