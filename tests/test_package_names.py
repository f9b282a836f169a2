"""No module of a package is named like a name the package exports.

Importing ``pkg.name`` (a submodule) sets the attribute ``pkg.name`` to the module, so a
package that also exports a function ``name`` (eagerly or through a lazy ``__getattr__``)
hands out the module instead once anything imported the submodule:
``from pytest_budget.planning import edit_distance`` broke that way when edit distance got
its own module (now ``planning/levenshtein.py``).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "pytest_budget"
PACKAGES = sorted(
    ".".join(("pytest_budget", *init.parent.relative_to(ROOT).parts))
    for init in ROOT.rglob("__init__.py")
)


def _submodules(package: str) -> set[str]:
    folder = ROOT.joinpath(*package.split(".")[1:])
    names = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    return names | {path.parent.name for path in folder.glob("*/__init__.py")}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_submodule_shadows_an_exported_name(package: str) -> None:
    exported = set(getattr(importlib.import_module(package), "__all__", ()))
    assert sorted(exported & _submodules(package)) == []


def test_the_check_sees_the_packages_and_their_exports() -> None:
    assert {"pytest_budget.planning", "pytest_budget.triage", "pytest_budget.models"} <= set(
        PACKAGES
    )
    planning = importlib.import_module("pytest_budget.planning")
    assert "edit_distance" in planning.__all__ and "_levenshtein" in _submodules(
        "pytest_budget.planning"
    )


def _submodule_imports_via_package(path: Path) -> list[str]:
    """``from pytest_budget.triage import arithmetic``: a submodule read off its package."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in PACKAGES and not node.level:
            subs = _submodules(node.module)
            found += [
                f"{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name in subs
            ]
    return found


def test_suite_code_never_reads_a_submodule_off_its_package() -> None:
    """The suite packages stay imported between pytest's in-process runs (the registry
    loads their declarations), and the import system leaves each submodule as an attribute
    of its package; the next run imports the submodule again, so ``from pkg import sub``
    would hand out the previous run's module and its classes (a Solution that is not a
    Solution).  Suite code imports submodules by their full name
    (``import pytest_budget.triage._arithmetic as arithmetic``), which imports them again."""
    suites = ("triage", "awareness", "planning")
    offenders = {
        str(path.relative_to(ROOT)): found
        for name in suites
        for path in (ROOT / name).rglob("*.py")
        if (found := _submodule_imports_via_package(path))
    }
    assert offenders == {}
