"""Package namespaces that import their modules on first use (PEP 562).

A suite package's ``__init__`` names its public API under ``if TYPE_CHECKING:`` (what
type checkers and readers see) and hands its own file to :func:`lazy_exports`, which
reads those imports and resolves each name the first time it is used.  So importing a
suite's declaration (``pytest_budget.triage._suite``) or options costs no numpy, while
``from pytest_budget.triage import score_plan`` works as before.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports"]


def _type_checking_imports(init_file: str) -> dict[str, tuple[str, str]]:
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    exports: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                for alias in statement.names:
                    exports[alias.asname or alias.name] = (statement.module, alias.name)
    return exports


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` from the imports of ``init_file``'s
    ``if TYPE_CHECKING:`` block."""
    exports = _type_checking_imports(init_file)

    def __getattr__(name: str) -> Any:
        try:
            module, attribute = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        # Looked up in sys.modules on every use, never cached on the package: a module
        # imported again (pytest's in-process runs drop the modules they imported) must
        # hand out its new classes, or isinstance checks against them fail.
        return getattr(importlib.import_module(module), attribute)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
