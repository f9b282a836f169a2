"""The package's import graph: no circles, and no import up the layer table.

The graph is read from the source with :mod:`ast`, not by importing: every ``import`` and
``from ... import`` in a module counts, at module level, inside functions *and* under
``if TYPE_CHECKING:``.  A function-level import only delays the circle to the first call,
and a type-only import still ties the two modules' code together; either way the two
modules depend on each other, which is what this test is about.  The layers and the
edges and circles still left to cut are in ``tests/test_layers.py``.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``;
a parent package imported implicitly (``pkg/__init__`` when importing ``pkg.mod``) is not
an edge of its own (each ``__init__``'s own imports are).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.test_layers import KNOWN_CIRCLES, KNOWN_UPWARD, layer_of, may_import

ROOT = Path(__file__).resolve().parents[1]
# pyproject.toml maps pytest_budget.fixtures and pytest_budget.suites to these folders.
PACKAGES = {
    "pytest_budget": ROOT / "pytest_budget",
    "pytest_budget.fixtures": ROOT / "fixtures",
    "pytest_budget.suites": ROOT / "suites",
}


def module_files() -> dict[str, Path]:
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def imports_of(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package modules ``module`` imports (see the module docstring for what counts)."""
    names = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            candidates = [
                f"{source}.{a.name}" if f"{source}.{a.name}" in names else source
                for a in node.names
            ]
        else:
            continue
        targets.update(c for c in candidates if c in names and c != module)
    return targets


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {module: imports_of(module, path, files) for module, path in files.items()}


def circles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def test_no_new_import_circles() -> None:
    found = circles(import_graph())
    new = sorted(sorted(c) for c in found - KNOWN_CIRCLES)
    gone = sorted(sorted(c) for c in KNOWN_CIRCLES - found)
    assert new == [], f"import circles: {new}"
    assert gone == [], f"fixed circles still listed in KNOWN_CIRCLES: {gone}"


def test_the_circles_fixed_in_issue_22_stay_fixed() -> None:
    graph = import_graph()
    assert "pytest_budget.report._html.page" not in graph["pytest_budget.report._html.compare_page"]
    assert "pytest_budget.triage._domains" not in graph["pytest_budget.triage._arithmetic"]
    assert "pytest_budget.triage._domains" not in graph["pytest_budget.triage._puzzles"]
    # issue 35: the Probe-taking functions live in probes (TYPE_CHECKING imports count)
    assert (
        "pytest_budget.awareness._replay.probes"
        not in graph["pytest_budget.awareness._replay.dialogue"]
    )


SUITE_PACKAGES = ("pytest_budget.triage", "pytest_budget.awareness", "pytest_budget.planning")


def test_the_model_layer_imports_no_suite() -> None:
    """No ``pytest_budget.models.*`` module imports a suite package: each suite's LLM
    adapters live in the suite (``triage/llm.py``, ``awareness/llm.py``,
    ``awareness/online/llm.py``, ``planning/llm.py``), declared in its registry entry, and
    ``pytest_budget._run.model_agents``, above both, joins them to roles through the registry.
    (The role layer below, ``roles`` -> ``replies``, still checks replies against the
    suites' types.)"""
    graph = import_graph()
    models = [
        m for m in graph if m == "pytest_budget.models" or m.startswith("pytest_budget.models.")
    ]
    assert {"pytest_budget.models._llm_agent", "pytest_budget.models._messages"} <= set(models)
    into_suites = sorted(
        f"{module} -> {target}"
        for module in models
        for target in graph[module]
        if any(target == p or target.startswith(p + ".") for p in SUITE_PACKAGES)
    )
    assert into_suites == []
    # The join reads the registry: it names no suite either.
    assert not [
        target
        for target in graph["pytest_budget._run.model_agents"]
        if any(target == p or target.startswith(p + ".") for p in SUITE_PACKAGES)
    ]


def upward_edges(graph: Mapping[str, set[str]]) -> set[str]:
    """Every edge to a peer of the same rank or a higher rank (``tests/test_layers.py``)."""
    return {
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if not may_import(module, target)
    }


def test_no_new_import_up_the_layer_table() -> None:
    """Every module imports only its own layer and lower ranks.  (Once ``models/run.py``
    imported ``options`` and ``bootstrap`` the plugin layer; ``KNOWN_UPWARD`` lists what
    issue 35 still has to cut.)"""
    found = upward_edges(import_graph())
    assert sorted(found - KNOWN_UPWARD) == [], "imports up the layer table"
    assert sorted(KNOWN_UPWARD - found) == [], "cut edges still listed in KNOWN_UPWARD"


def test_the_rank_check_can_fail() -> None:
    """A made-up import from the core into the plugin layer is caught, with its name."""
    graph = {
        "pytest_budget._core.tokens": {"pytest_budget._plugin.state", "pytest_budget._core.files"}
    }
    assert upward_edges(graph) == {"pytest_budget._core.tokens -> pytest_budget._plugin.state"}
    assert layer_of("pytest_budget._plugin.state") is not None


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The checker itself: module-level, function-level, relative, ``from pkg import
    module`` and TYPE_CHECKING imports count; and a circle through them is found."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from .c import x\n    return x\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\nimport pkg.a\n"
    )
    (package / "d.py").write_text("import pkg.c\n")
    names = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    graph = {name: imports_of(name, _file(package, name), names) for name in names}
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.c"},
        "pkg.c": {"pkg.a", "pkg.d"},
        "pkg.d": {"pkg.c"},
    }
    assert circles(graph) == {frozenset({"pkg.a", "pkg.b", "pkg.c", "pkg.d"})}


def _file(package: Path, name: str) -> Path:
    parts = name.split(".")[1:]
    return package / "__init__.py" if not parts else package.joinpath(*parts).with_suffix(".py")
