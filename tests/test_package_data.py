"""Bundled data files ship with the package and are read through the real loading code."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from pytest_budget.awareness.search import _facts as search_facts
from pytest_budget.awareness.search._corpus import RELATIONS, build_corpus, corpus_digest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {
    "pytest_budget": ROOT / "pytest_budget",
    "pytest_budget.fixtures": ROOT / "fixtures",
}


def _declared() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared: dict[str, list[str]] = data["tool"]["setuptools"]["package-data"]
    return declared


def _folder(package: str) -> Path:
    for prefix, folder in PACKAGE_DIRS.items():
        if package == prefix or package.startswith(prefix + "."):
            rest = package.removeprefix(prefix).strip(".")
            return folder.joinpath(*rest.split(".")) if rest else folder
    raise AssertionError(package)


def test_every_data_file_is_declared_package_data() -> None:
    """A fresh install has every file under a ``data/`` folder: each matches a glob of its
    package in ``[tool.setuptools.package-data]`` (else a wheel leaves it out)."""
    declared = _declared()
    missing = []
    for package, folder in (("pytest_budget.awareness", ROOT / "pytest_budget/awareness"),
                            ("pytest_budget.fixtures", ROOT / "fixtures")):  # fmt: skip
        if not (folder / "data").is_dir():
            continue
        for path in sorted((folder / "data").iterdir()):
            relative = path.relative_to(_folder(package)).as_posix()
            if not any(fnmatch.fnmatch(relative, glob) for glob in declared.get(package, [])):
                missing.append(f"{package}: {relative}")
    assert missing == []


def test_the_search_world_is_read_from_its_data_file() -> None:
    data = search_facts.world_data()
    assert data["schema_version"] == 1
    assert [r["name"] for r in data["relations"]] == list(RELATIONS)
    assert len(RELATIONS) == 21
    born = RELATIONS["born_in"]
    assert (born.subject, born.target) == ("person", "city")
    assert born.templates[0] == "{S} was born in {o}." and isinstance(born.templates, tuple)
    assert all("{o}" in t for r in RELATIONS.values() for t in r.templates)


def test_the_generated_world_is_the_one_the_code_tables_gave() -> None:
    """Digests computed before the tables moved to ``data/search_world.json`` (the same
    world from the Python literals): the data file changes nothing."""
    assert corpus_digest(build_corpus(0)) == (
        "2dbefd0ad1035c3631b4af21e0e1ffefff0c6d72d165da184a452febb9bcee21"
    )
    assert corpus_digest(build_corpus(7, n_questions=50)) == (
        "5965f65db9d5d3bb065ace96121ee1e3f004d22bdcf484dd6c77c694dec58448"
    )


def test_every_sample_script_of_a_cell_kind_is_declared_package_data() -> None:
    """The scripts that draw each kind's samples on the HTML page live in the suites'
    packages: each exists and matches a package-data glob (else a wheel leaves it out and
    the page loses its drill-down)."""
    from pytest_budget._core.registry import cell_kinds

    declared = _declared()["pytest_budget"]
    scripts = {name: kind.sample_script for name, kind in cell_kinds().items()}
    shipped = {name: path for name, path in scripts.items() if path is not None}
    assert set(shipped) == {"triage", "awareness", "planning"}
    for path in shipped.values():
        assert path.is_file(), path
        relative = path.relative_to(ROOT / "pytest_budget").as_posix()
        assert any(fnmatch.fnmatch(relative, glob) for glob in declared), relative


def test_every_package_folder_is_a_declared_package() -> None:
    """setuptools is given an explicit package list: a folder left out of it is missing from
    the wheel (and an editable install hides that), so the list must be every folder with
    an ``__init__.py``, and nothing else."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = sorted(data["tool"]["setuptools"]["packages"])
    folders = {"pytest_budget": ROOT / "pytest_budget", "pytest_budget.suites": ROOT / "suites",
               "pytest_budget.fixtures": ROOT / "fixtures"}  # fmt: skip
    found = sorted(
        ".".join([name, *init.parent.relative_to(folder).parts])
        for name, folder in folders.items()
        for init in folder.rglob("__init__.py")
        if "__pycache__" not in init.parts
    )
    assert declared == found
