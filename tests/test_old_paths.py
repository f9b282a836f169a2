"""Module paths from before the layer folders keep working for one release, with a warning."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pickle
import re
import subprocess
import sys

import pytest

from pytest_budget._core.old_paths import MOVED, REMOVED_IN

#: A few rows checked in this process (the subprocess test below imports every row).
SAMPLE = [
    "pytest_budget.roles",
    "pytest_budget.budget",
    "pytest_budget.report_schema",
    "pytest_budget.html",
    "pytest_budget.html.page",
    "pytest_budget.triage.scoring",
    "pytest_budget.awareness.search_env",
    "pytest_budget.models.client",
]


@pytest.mark.parametrize("old", SAMPLE)
def test_an_old_path_warns_and_gives_the_module_at_its_new_path(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        if name in MOVED:
            del sys.modules[name]  # only the alias entries: the module itself stays
    with pytest.warns(DeprecationWarning, match=rf"^{old} moved to {MOVED[old]} .*{REMOVED_IN}"):
        aliased = importlib.import_module(old)
    assert aliased is new
    assert aliased.__name__ == MOVED[old] and aliased.__spec__.name == MOVED[old]


def test_every_old_path_imports_in_a_fresh_process_with_one_line_advice() -> None:
    script = (
        "import importlib, json, sys, warnings\n"
        "from pytest_budget._core.old_paths import MOVED\n"
        "out = {}\n"
        "for old, new in MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    mine = [str(w.message) for w in caught if str(w.message).startswith(old + ' moved')]\n"
        "    out[old] = [module is importlib.import_module(new), mine[:1]]\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(done.stdout)
    assert sorted(result) == sorted(MOVED)
    assert [old for old, (same, _) in result.items() if not same] == []
    # A parent package imported first (``pytest_budget.html`` for ``pytest_budget.html.page``)
    # already warned for itself; every other row warns once, in one line, naming the way out.
    for old, (_, messages) in result.items():
        parent_alias = any(old.startswith(o + ".") for o in MOVED)
        if messages or not parent_alias:
            (message,) = messages
            assert "\n" not in message and "import" in message and REMOVED_IN in message


def test_a_row_per_moved_module_and_no_row_for_a_kept_face() -> None:
    assert "pytest_budget.report" not in MOVED  # still a module: the report API's face
    assert "pytest_budget.awareness.warehouse" not in MOVED
    assert MOVED["pytest_budget.report_schema"] == "pytest_budget.report._schema"
    # Every target exists and is private by name.
    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new
        assert any(part.startswith("_") for part in new.split(".")[1:]), new


def test_objects_made_through_an_old_path_pickle_under_the_new_one() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pytest_budget.budget import Budget as OldBudget  # type: ignore[import-not-found]

    from pytest_budget import Budget

    assert OldBudget is Budget
    budget = Budget(tokens=10)
    assert isinstance(budget, OldBudget)
    data = pickle.dumps(budget)
    assert b"pytest_budget._core.budget" in data and b"pytest_budget.budget\n" not in data
    assert pickle.loads(data).caps == {"tokens": 10.0}


def test_the_reference_page_lists_every_old_path() -> None:
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "module-paths.md"
    rows = re.findall(r"^\| `([\w.]+)` \| `([\w.]+)` \|", page.read_text(encoding="utf-8"), re.M)
    assert dict(rows) == MOVED
