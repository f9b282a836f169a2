"""The suite registry's own rules, and the lazily resolved suite packages.

The end-to-end path (a fourth suite that runs, tables, reports, gates and renders) is
tests/test_docs_add_a_suite.py; these are the rules behind it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_budget._core.registry import (
    CellKind,
    Suite,
    SuiteError,
    cell_kind,
    cell_kinds,
    register_suite,
    registered_suites,
    suite_by_name_or_kind,
    unregister_suite,
)


def _suite(name: str, *kinds: str) -> Suite:
    return Suite(
        name=name,
        kinds=tuple(CellKind(name=kind, test_file=f"test_{kind}.py") for kind in kinds),
        test_files=lambda options: (),
        test_folder=Path("/nowhere"),
    )


@pytest.fixture
def dice() -> Iterator[Suite]:
    suite = register_suite(_suite("dice", "dice", "dice-rerolls"))
    yield suite
    unregister_suite("dice")


def test_the_built_in_suites_come_first_in_their_declared_order() -> None:
    assert list(registered_suites())[:3] == ["triage", "awareness", "planning"]
    assert list(cell_kinds())[:5] == [
        "triage",
        "triage-resolve",
        "awareness",
        "awareness-online",
        "planning",
    ]


def test_a_registered_suite_and_its_kinds_are_found_by_name(dice: Suite) -> None:
    assert registered_suites()["dice"] is dice
    assert cell_kind("dice-rerolls") is dice.kinds[1]
    # A kind's name finds its suite (gates are per suite, records name their kind).
    assert suite_by_name_or_kind("dice-rerolls") is dice
    assert suite_by_name_or_kind("triage-resolve") is registered_suites()["triage"]
    assert suite_by_name_or_kind("nothing") is None
    # Registering the same value again changes nothing.
    assert register_suite(dice) is dice
    assert list(registered_suites()).count("dice") == 1


def test_a_taken_name_or_cell_kind_is_a_one_line_error(dice: Suite) -> None:
    with pytest.raises(SuiteError, match=r"^a suite named 'dice' is registered already$"):
        register_suite(_suite("dice", "other"))
    with pytest.raises(
        SuiteError, match=r"^cell kind 'planning' belongs to suite 'planning' already$"
    ):
        register_suite(_suite("travel", "planning"))
    assert "travel" not in registered_suites()


def test_the_default_gate_of_a_suite_and_of_its_kinds() -> None:
    from pytest_budget._run.options import BudgetOptions

    options = BudgetOptions()
    assert [options.gate_for(name) for name in ("planning", "triage", "triage-resolve")] == [
        "paired",
        "paired",
        "paired",  # a kind follows its suite; triage-resolve stores no per-unit values
    ]


def test_suite_packages_resolve_their_names_on_first_use() -> None:
    """Importing a suite's declaration loads no numpy; its package's names all resolve, an
    unknown one is an AttributeError, and dir() lists them (a fresh interpreter)."""
    script = (
        "import sys\n"
        "import pytest_budget.triage._suite, pytest_budget.awareness._suite, "
        "pytest_budget.planning._suite\n"
        "assert 'numpy' not in sys.modules, 'declarations imported numpy'\n"
        "import pytest_budget.triage as t, pytest_budget.awareness as a, "
        "pytest_budget.planning as p, pytest_budget.awareness.online as o\n"
        "for package in (t, a, p, o):\n"
        "    assert set(package.__all__) <= set(dir(package)), package.__name__\n"
        "    for name in package.__all__:\n"
        "        assert getattr(package, name) is not None, name\n"
        "    try:\n"
        "        package.nothing_here\n"
        "    except AttributeError as exc:\n"
        "        assert 'nothing_here' in str(exc)\n"
        "    else:\n"
        "        raise AssertionError('no AttributeError')\n"
        "assert 'numpy' in sys.modules\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
