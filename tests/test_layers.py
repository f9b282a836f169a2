"""The one layer table (issue 35): every module's layer, what it may import, whether pytest.

A module may import its own layer and any layer of a **lower** rank, never a peer of the
same rank nor a higher one.  ``TYPE_CHECKING`` imports count, and so do function-level
imports (``tests/test_import_graph.py`` holds the checks that read this table;
``tests/test_core_without_pytest.py`` reads its "pytest allowed" column).
``docs/explanation/architecture.md`` draws the same table; a test below compares them.

Each row is a folder under ``pytest_budget/`` (the folders are the layers), one module at
the root, or the front door; a module's layer is the longest folder prefix of its path, so
no module is listed by name and a new module is placed by where it is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"


#: The front door: the package's own modules at its root, besides the entry point.
FRONT_DOOR = ("pytest_budget", "pytest_budget.__main__", "pytest_budget.extend")


@dataclass(frozen=True)
class Layer:
    rank: int
    folder: str  # a folder under pytest_budget/ (``_core/``), one module, or the front door
    pytest_allowed: bool
    what: str

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The module paths of the layer: derived from its folder's name, nothing listed."""
        if self.folder == "front door":
            return FRONT_DOOR
        return ("pytest_budget." + self.folder.removesuffix("/").removesuffix(".py"),)


LAYERS: tuple[Layer, ...] = (
    Layer(0, "_core/", False, "plain core: budgets, tokens, records, the registry, agent calls"),
    Layer(0, "_version.py", False, "the version"),
    Layer(1, "_stats/", False, "the gate's statistics"),
    Layer(1, "_environments/", False, "environments shared by suites"),
    Layer(2, "models/", False, "model clients, runtime, loop, prices, ledger"),
    Layer(3, "report/", False, "JSON report, schema, merge, cli, terminal tables, HTML"),
    Layer(4, "triage/", False, "a suite slice"),
    Layer(4, "awareness/", False, "a suite slice"),
    Layer(4, "planning/", False, "a suite slice"),
    Layer(5, "_run/", False, "one run, plain Python: options, session, agent names, forecast"),
    Layer(6, "_plugin/", True, "pytest-facing plumbing"),
    Layer(7, "fixtures/", True, "fixtures (the adapter's face)"),
    Layer(8, "suites/", True, "cell modules (the adapter's face)"),
    Layer(9, "front door", False, "the public names, the suite authors' module, python -m"),
    Layer(9, "plugin.py", True, "the pytest11 entry point"),
)  # fmt: skip

# Imports that run up the table today, "importer -> imported".  Shrinking only: an edge
# cut is removed from here (the test fails until it is), a new one is never added.
KNOWN_UPWARD: frozenset[str] = frozenset()

# Import circles left to cut (TYPE_CHECKING imports count).  Shrinking only.
KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()


def layer_of(module: str) -> Layer | None:
    """The row of ``module``: the longest prefix that matches it (the package itself only
    as a whole name: its submodules are in their folders' layers)."""
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for prefix in layer.prefixes:
            if prefix == "pytest_budget":
                matches = module == prefix
            else:
                matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
    return best[1] if best else None


def may_import(importer: str, imported: str) -> bool:
    """Own layer, or a lower rank."""
    mine, theirs = layer_of(importer), layer_of(imported)
    assert mine is not None and theirs is not None, (importer, imported)
    return mine == theirs or theirs.rank < mine.rank


def pytest_allowed(module: str) -> bool:
    layer = layer_of(module)
    assert layer is not None, module
    return layer.pytest_allowed


def _may_import_text(rank: int) -> str:
    if rank == 0:
        return "nothing outside its layer"
    return "rank 0" if rank == 1 else f"ranks 0-{rank - 1}"


def markdown_rows() -> list[list[str]]:
    """The table as architecture.md draws it, one list of cells per row."""
    return [
        [
            str(layer.rank),
            f"`{layer.folder}`" if layer.folder != "front door" else layer.folder,
            _may_import_text(layer.rank),
            "yes" if layer.pytest_allowed else "no",
            layer.what,
        ]
        for layer in LAYERS
    ]


def doc_rows(text: str) -> list[list[str]]:
    """The rows of the table under the header ``| rank | layer |`` in ``text``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*rank\s*\|\s*layer", line))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_architecture_page_draws_the_layer_table() -> None:
    assert doc_rows(ARCHITECTURE.read_text(encoding="utf-8")) == markdown_rows()


def test_every_module_has_exactly_one_layer() -> None:
    from tests.test_import_graph import module_files

    modules = module_files()
    assert not [m for m in modules if layer_of(m) is None]
    # no row lists a module that is not there (a stale name would hide nothing)
    listed = {prefix for layer in LAYERS for prefix in layer.prefixes}
    assert not [
        p for p in sorted(listed) if not any(m == p or m.startswith(p + ".") for m in modules)
    ]
    assert len(listed) == sum(len(layer.prefixes) for layer in LAYERS)
    # the root holds the front door and the entry point only: every other module is in a
    # layer's folder
    root = [m for m in modules if m.count(".") == 1 and not layer_of(m).folder.endswith("/")]  # type: ignore[union-attr]
    assert sorted(root) == sorted(
        [*FRONT_DOOR[1:], "pytest_budget._version", "pytest_budget.plugin"]
    )


def test_the_table_reads_as_documented() -> None:
    """Longest prefix wins; own layer and lower ranks only; peers of one rank are apart."""
    assert layer_of("pytest_budget.report._sample_pool") == layer_of(
        "pytest_budget.report._document"
    )
    assert layer_of("pytest_budget.report._html.columns") == layer_of(
        "pytest_budget.report._document"
    )
    assert layer_of("pytest_budget._plugin.state") != layer_of("pytest_budget.plugin")
    assert layer_of("pytest_budget.triage._types") != layer_of("pytest_budget")
    assert may_import("pytest_budget._core.roles", "pytest_budget._core.tokens")  # own layer
    assert may_import("pytest_budget._stats.gating", "pytest_budget._core.records")  # lower rank
    assert not may_import("pytest_budget._core.records", "pytest_budget._stats.gating")  # higher
    assert not may_import("pytest_budget.triage._types", "pytest_budget.planning._env")  # peers
    assert not may_import(
        "pytest_budget._stats.bootstrap", "pytest_budget._environments.sokoban"
    )  # peers
    assert pytest_allowed("pytest_budget.plugin") and not pytest_allowed("pytest_budget")
    assert pytest_allowed("pytest_budget.fixtures.core")
    assert not pytest_allowed("pytest_budget._run.options")
    assert [layer.rank for layer in LAYERS] == sorted(layer.rank for layer in LAYERS)


def test_the_doc_comparison_can_fail() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    changed = page.replace("| 3 | `report/` |", "| 4 | `report/` |")
    assert changed != page
    assert doc_rows(changed) != markdown_rows()
