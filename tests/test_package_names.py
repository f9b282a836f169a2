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
    assert "edit_distance" in planning.__all__ and "levenshtein" in _submodules(
        "pytest_budget.planning"
    )
