"""The package's import graph: no circles, and nothing below the option layer imports it.

The graph is read from the source with :mod:`ast`, not by importing: every ``import`` and
``from ... import`` in a module counts, at module level *and* inside functions.  A
function-level import only delays the circle to the first call; the two modules still
depend on each other, which is what this test is about.  Imports under
``if TYPE_CHECKING:`` do not count: they never run, and type checkers handle circles.
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``;
a parent package imported implicitly (``pkg/__init__`` when importing ``pkg.mod``) is not
an edge of its own (each ``__init__``'s own imports are).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# pyproject.toml maps pytest_budget.fixtures and pytest_budget.suites to these folders.
PACKAGES = {
    "pytest_budget": ROOT / "pytest_budget",
    "pytest_budget.fixtures": ROOT / "fixtures",
    "pytest_budget.suites": ROOT / "suites",
}

# No import circle is tolerated (the last ones were cut in issue 22; the plugin layer's
# modules share the run's state through plugin_state, not the plugin module).  Kept as a
# set so that a circle left for later can be listed here, shrinking only.
KNOWN_CIRCLES: set[frozenset[str]] = set()

# The option / plugin layer: reads pytest's config, owns the run.  Nothing else imports it.
PLUGIN_LAYER_PREFIXES = (
    "pytest_budget.plugin",
    "pytest_budget.plugin_models",
    "pytest_budget.plugin_options",
    "pytest_budget.plugin_state",
    "pytest_budget.plugin_markdown",
    "pytest_budget.plugin_role_agents",
    "pytest_budget.run_reporter",
    "pytest_budget.hookspecs",
    "pytest_budget.suite_hooks",
    "pytest_budget.options",
    "pytest_budget.session",
    "pytest_budget._snapshot",
    "pytest_budget.interrupt",
    "pytest_budget.forecast_suites",
    "pytest_budget.fixtures",
    "pytest_budget.suites",
)


def _in_plugin_layer(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PLUGIN_LAYER_PREFIXES)


def module_files() -> dict[str, Path]:
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def imports_of(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package modules ``module`` imports (see the module docstring for what counts)."""
    names = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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
    assert "pytest_budget.html.page" not in graph["pytest_budget.html.compare_page"]
    assert "pytest_budget.triage.domains" not in graph["pytest_budget.triage.arithmetic"]
    assert "pytest_budget.triage.domains" not in graph["pytest_budget.triage.puzzles"]
    assert "pytest_budget.awareness.probes" not in graph["pytest_budget.awareness.dialogue"]


SUITE_PACKAGES = ("pytest_budget.triage", "pytest_budget.awareness", "pytest_budget.planning")


def test_the_model_layer_imports_no_suite() -> None:
    """No ``pytest_budget.models.*`` module imports a suite package: each suite's LLM
    adapters live in the suite (``triage/llm.py``, ``awareness/llm.py``,
    ``awareness/online/llm.py``, ``planning/llm.py``), declared in its registry entry, and
    ``pytest_budget.llm_agents``, above both, joins them to roles through the registry.
    (The role layer below, ``roles`` -> ``replies``, still checks replies against the
    suites' types.)"""
    graph = import_graph()
    models = [
        m for m in graph if m == "pytest_budget.models" or m.startswith("pytest_budget.models.")
    ]
    assert {"pytest_budget.models.agents", "pytest_budget.models.messages"} <= set(models)
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
        for target in graph["pytest_budget.llm_agents"]
        if any(target == p or target.startswith(p + ".") for p in SUITE_PACKAGES)
    ]


def test_nothing_below_the_plugin_layer_imports_it() -> None:
    """Core, domain packages, the model layer and the report layer never import the option or
    plugin layer (``models/run.py`` once imported ``options``; ``bootstrap`` too)."""
    graph = import_graph()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if not _in_plugin_layer(module)
        for target in targets
        if _in_plugin_layer(target)
    )
    assert upward == []


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The checker itself: module-level, function-level, relative and ``from pkg import
    module`` count; TYPE_CHECKING does not; and a circle through them is found."""
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
        "pkg.c": {"pkg.a"},
        "pkg.d": {"pkg.c"},
    }
    assert circles(graph) == {frozenset({"pkg.a", "pkg.b", "pkg.c"})}


def _file(package: Path, name: str) -> Path:
    parts = name.split(".")[1:]
    return package / "__init__.py" if not parts else package.joinpath(*parts).with_suffix(".py")
