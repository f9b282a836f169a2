"""mypy strict checks everything that ships: the package, fixtures/ and suites/.

fixtures/ and suites/ install as ``pytest_budget.fixtures`` and ``pytest_budget.suites``
through ``package-dir``, a mapping mypy cannot follow (checked as plain folders they would be
the modules ``fixtures.core`` ..., and the package's imports of ``pytest_budget.fixtures.*``
would find nothing).  typecheck/pytest_budget/ holds one relative symlink per mapped folder,
and pyproject's ``[tool.mypy]`` lists those links with ``typecheck`` as a package base.  These
tests keep the view, mypy's ``files`` and ``package-dir`` in step, and ask mypy's own source
finder which module names it gives.  Moving modules inside pytest_budget/ needs no change
here; a new mapped folder needs its link (the failure message prints the command).
"""

from __future__ import annotations

import io
import os
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VIEW = ROOT / "typecheck"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
PACKAGE_DIR: dict[str, str] = SETUPTOOLS["package-dir"]


def _mapped() -> dict[str, str]:
    """Packages installed from a folder other than their dotted path: {package: folder}."""
    return {
        package: folder
        for package, folder in PACKAGE_DIR.items()
        if Path(folder) != Path(*package.split("."))
    }


def _links() -> dict[str, str]:
    """Every non-folder entry of the view (links and stray files): {path: link target}."""
    found = {}
    for folder, dirs, files in os.walk(VIEW):  # does not descend into linked folders
        for name in [*dirs, *files]:
            path = Path(folder, name)
            if path.is_symlink() or not path.is_dir():
                key = path.relative_to(ROOT).as_posix()
                found[key] = os.readlink(path) if path.is_symlink() else "(not a link)"
    return found


def _source_folder(package: str) -> Path:
    """Where setuptools takes ``package`` from: its longest ``package-dir`` prefix."""
    parts = package.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in PACKAGE_DIR:
            return ROOT / PACKAGE_DIR[prefix] / Path(*parts[end:])
    return ROOT / Path(*parts)


def test_the_view_links_each_mapped_folder_and_nothing_else() -> None:
    expected = {}
    for package, folder in _mapped().items():
        link = VIEW / Path(*package.split("."))
        expected[link.relative_to(ROOT).as_posix()] = os.path.relpath(ROOT / folder, link.parent)
    assert {"typecheck/pytest_budget/fixtures", "typecheck/pytest_budget/suites"} <= set(expected)
    commands = "; ".join(
        f"mkdir -p {Path(link).parent} && ln -sfn {target} {link}"
        for link, target in expected.items()
    )
    assert _links() == expected, f"regenerate the view from the repository root: {commands}"


def test_mypy_files_reach_every_shipped_package() -> None:
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["mypy_path"] == ["typecheck"] and mypy["explicit_package_bases"] is True
    roots = [(ROOT / entry).resolve() for entry in mypy["files"]]
    unchecked = [
        package
        for package in SETUPTOOLS["packages"]
        if not any(
            root == folder or root in folder.parents
            for folder in [_source_folder(package).resolve()]
            for root in roots
        )
    ]
    assert unchecked == []
    # A mapped folder listed as itself would be checked under the wrong module names.
    direct = {(ROOT / folder).resolve() for folder in _mapped().values()}
    assert [entry for entry in mypy["files"] if (ROOT / entry).absolute() in direct] == []


def _installed_modules() -> dict[str, Path]:
    """Every module a wheel ships, by its installed name, walked from package-dir by hand."""
    modules = {}
    for package, folder in PACKAGE_DIR.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path.resolve()
    return modules


def test_mypy_names_every_shipped_module_as_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from mypy.config_parser import parse_config_file
    from mypy.find_sources import create_source_list
    from mypy.options import Options

    monkeypatch.chdir(ROOT)  # mypy runs from the root: its package bases are relative to it
    options = Options()
    out = io.StringIO()
    parse_config_file(options, lambda: None, "pyproject.toml", stdout=out, stderr=out)
    assert out.getvalue() == ""
    named = {s.module: Path(s.path).resolve() for s in create_source_list(options.files, options)}
    expected = _installed_modules()
    assert {"pytest_budget.fixtures.core", "pytest_budget.suites.test_triage"} <= set(expected)
    assert named == expected
