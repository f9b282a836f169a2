"""The suite registry: what a suite is, and the list the plugin, report, page and merge read.

A suite is a vertical slice: its own package holds its domain code, its options, its
prompts and adapters, its summary table, its figures and its cell modules, and describes
itself with one :class:`Suite` value.  Everything that serves every suite (the plugin, the
JSON report, the terminal tables, the HTML page, ``budget-report merge``) iterates
:func:`registered_suites` and :func:`cell_kinds` and never names a suite.

The built-in suites are listed in :data:`BUILTIN_SUITES` (import paths, loaded on first
use); your own suite registers itself with :func:`register_suite`, for example from a
``conftest.py`` (see docs/how-to/add-a-suite.md).  Plain Python: nothing here imports pytest.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from pytest_budget._core.metric_spec import MetricSpec
    from pytest_budget._core.page_parts import Chart, Column
    from pytest_budget._core.records import CellRecord

__all__ = [
    "BUILTIN_SUITES",
    "CellKind",
    "ReplyRule",
    "Role",
    "Suite",
    "SuiteError",
    "SuiteOptions",
    "cell_kind",
    "cell_kinds",
    "lazy",
    "reference_agent",
    "register_suite",
    "registered_roles",
    "registered_suites",
    "role",
    "suite_names",
    "suite_of_test_file",
]

Cell: TypeAlias = "CellRecord"
#: The registry list: the only place the built-in suites are named outside their packages.
BUILTIN_SUITES: tuple[str, ...] = (
    "pytest_budget.triage._suite",
    "pytest_budget.awareness._suite",
    "pytest_budget.planning._suite",
)


def lazy(target: str) -> Callable[..., Any]:
    """The function ``"package.module:name"``, imported on its first call: a declaration
    names its tables, columns and figures without importing them (they pull in numpy and
    matplotlib)."""
    module, _, name = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = name
    call.__qualname__ = target
    return call


def reference_agent(target: str, *, seeded: bool = False) -> Callable[[int], object]:
    """The factory ``factory(seed)`` of the reference agent class ``"package.module:Class"``,
    imported on first use; ``seeded``: the class takes the run's seed (``Class(seed=seed)``)."""
    module, _, name = target.partition(":")

    def make(seed: int) -> object:
        # By full name: a package attribute can hold a module pytester's in-process runs
        # have dropped from sys.modules.
        cls = getattr(importlib.import_module(module), name)
        return cls(seed=seed) if seeded else cls()

    make.__name__ = name
    make.__qualname__ = target
    return make


class SuiteError(ValueError):
    """A suite that cannot be registered (a name or cell kind already taken); one line."""


@dataclass(frozen=True)
class CellKind:
    """One kind of cell record (its ``suite`` field) and how every shared layer shows it.

    A suite has one kind per cell module: triage has ``triage`` and ``triage-resolve``.
    The callables are read lazily (the page's parts need matplotlib, tables numpy), so a
    run that records no cell of a kind never imports them.
    """

    name: str
    #: File name of the module whose tests record this kind (``test_triage.py``).
    test_file: str
    #: Gated scores: direction and default tolerance (others are stored, never gate).
    metrics: tuple[MetricSpec, ...] = ()
    #: Reference agents run when ``--budget-agent`` is not given.
    reference_agents: tuple[str, ...] = ()
    #: Terminal score table: title and renderer (lines).
    table_title: str = ""
    table: Callable[[Sequence[Cell]], list[str]] | None = None
    #: HTML page: section title, score columns, footer lines and charts.
    page_title: str = ""
    columns: Callable[[], tuple[Column, ...]] | None = None
    footer: Callable[[Sequence[Cell]], list[str]] | None = None
    charts: Callable[[Sequence[Cell], Mapping[str, str], str], list[Chart]] | None = None
    #: Whether every page has a section for it (a note when the run has no such cells).
    always_on_page: bool = False
    #: JavaScript that draws this kind's samples on the page (see html/drill_js.py).
    sample_script: Path | None = None
    #: Its typed cell record: a :class:`~pytest_budget._core.records.CellRecord` subclass, or
    #: its ``"package.module:Class"`` (imported on first use); None: read as a
    #: :class:`~pytest_budget._core.records.UserCell` (fields kept as given).
    record_type: type[CellRecord] | str | None = None
    #: Fields of a nested cell parameter stored under another name in its records.
    param_renames: Mapping[str, str] = field(default_factory=dict)
    #: The unit of shared work of a test, from its bracketed parameter id and the run's
    #: options (tests of one unit go to one xdist worker); None: the test alone.
    work_group: Callable[[str, Any], str | None] | None = None

    def record_class(self) -> type[CellRecord] | None:
        """Its record type, imported on first use when given by name."""
        if not isinstance(self.record_type, str):
            return self.record_type
        module, _, name = self.record_type.partition(":")
        found: type[CellRecord] = getattr(importlib.import_module(module), name)
        return found


@dataclass(frozen=True)
class ReplyRule:
    """What an agent of a role may answer, checked before any parser reads it
    (:func:`pytest_budget._core.replies.reply_problem`): text always; a mapping with one of
    ``mapping_keys``; an object ``accepts`` takes.  A role without a rule takes anything
    (only its size is checked)."""

    #: The answers, in words, for the reason an answer is refused.
    expected: str
    mapping_keys: tuple[str, ...] = ()
    accepts: Callable[[object], bool] | None = None
    #: Whether an accepted object's ``text`` is checked against the raw-output size limit.
    sized_text: bool = False


@dataclass(frozen=True)
class Role:
    """An agent role a suite's cells ask for, as the shared layers see it.

    The role's Protocol lives in the suite (``protocol`` names it); the call code
    (:func:`pytest_budget._core.roles.call_role`), the option checks, the forecast and the
    fixtures read the rest from here, so a new suite's role needs no shared change.
    """

    #: Its name: ``--budget-role-model`` key, report field, ``budget_role_agent(name)``.
    name: str
    #: The method called on an agent object that fills it (``plan``); a plain callable
    #: is called itself.
    method: str
    #: Its Protocol, ``"package.module:Class"`` (for readers and isinstance checks).
    protocol: str = ""
    #: What its agents may answer (None: anything, only the size is checked).
    reply: ReplyRule | None = None
    #: Whether it is the role a cell evaluates (its agent axis), not a supporting one.
    evaluated: bool = False
    #: The built-in agent it falls back to when the named agent does not fill it
    #: (triage's reference solver, awareness's reference actor): factory(seed).
    fallback: Callable[[int], object] | None = None
    #: Forecast: the expected reply length in tokens (None: the call's output cap).
    output_tokens: int | None = None
    #: Forecast: the expected turns of one multi-turn episode (None: its turn limit).
    turns: int | None = None


@dataclass(frozen=True)
class SuiteOptions:
    """A suite's own options: how they are registered and read.

    ``add(flag, **attrs)`` registers a flag in the ``budget`` option group and
    ``add_ini(name, help, default=...)`` an ini key (pytest's ``addoption``/``addini``);
    ``parse`` reads them with an :class:`~pytest_budget._core.option_checks.OptionReader` into
    the suite's frozen options value (read back with ``BudgetOptions.of(type)``), raising
    :class:`~pytest_budget._core.option_checks.OptionError` for a bad value.
    """

    add: Callable[[Callable[..., None], Callable[..., None]], None]
    parse: Callable[[Any], Any]
    #: The string-valued options (``dest``): none may be given empty; ``list_dests`` are
    #: comma lists (``,`` alone is empty too).
    dests: tuple[str, ...] = ()
    list_dests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Suite:
    """A suite as the shared layers see it (see the module docstring)."""

    name: str
    kinds: tuple[CellKind, ...]
    #: The cell modules a run of these options collects (file names in :meth:`folder`).
    test_files: Callable[[Any], tuple[str, ...]]
    #: Folder of its cell modules; None: the bundled ones (``pytest_budget.suites``).
    test_folder: Path | None = None
    #: Its own options (flags, ini keys, parsed value).
    options: SuiteOptions | None = None
    #: Modules registered as pytest plugins: the suite's fixtures.
    fixture_modules: tuple[str, ...] = ()
    #: Gate rule when ``--budget-gate`` is not given.
    default_gate: str = "tolerance"
    #: Agent roles its cells ask for (a role name belongs to one suite).
    roles: tuple[Role, ...] = ()
    #: Its reference agents: name -> role -> factory(seed).  A name several suites use
    #: (``oracle``) is one agent that fills each suite's role.
    reference_agents: Mapping[str, Mapping[str, Callable[[int], object]]] = field(
        default_factory=dict
    )
    #: Its LLM adapters, read on first use: role -> adapter class (``provider:model``
    #: agents fill these roles; see :mod:`pytest_budget._run.model_agents`).
    llm_roles: Callable[[], Mapping[str, type]] | None = None
    #: Checks and loads the suite's input files once, before collection (user pools,
    #: query files): raises ``ValueError`` with a one-line message.
    prepare: Callable[[Any], None] | None = None
    #: Run-level report blocks computed from this suite's cells (``planning_pooled``).
    report_blocks: Callable[[Sequence[Cell]], Mapping[str, Any]] | None = None
    #: The calls and tokens the run will spend on this suite (``--budget-dry-run``).
    forecast: Callable[..., Any] | None = None
    #: Per role run in batches under the sequential gate (``--budget-sequential``): the share
    #: of its calls an unchanged agent spends at the default size (measured by
    #: ``benchmarks/bench_gate_runs.py --designs wired --only none``), for the forecast.
    sequential_shares: Mapping[str, float] = field(default_factory=dict)
    #: Per role that always runs whole under the sequential gate: why (for the forecast).
    runs_whole: Mapping[str, str] = field(default_factory=dict)

    def kind(self, name: str) -> CellKind | None:
        return next((kind for kind in self.kinds if kind.name == name), None)

    def folder(self) -> Path:
        """Where its cell modules are (the bundled folder wherever the package is installed)."""
        return self.test_folder if self.test_folder is not None else bundled_cells_folder()


def bundled_cells_folder() -> Path:
    """``pytest_budget/suites`` as installed (found without importing any cell module)."""
    spec = importlib.util.find_spec("pytest_budget.suites")
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        raise SuiteError("the bundled suites (pytest_budget.suites) are not installed")
    return Path(next(iter(locations))).resolve()


_REGISTERED: dict[str, Suite] = {}
#: Every registered role: name -> (its suite, its declaration); read on every agent call.
_ROLES: dict[str, tuple[str, Role]] = {}
_LOADED = False


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for path in BUILTIN_SUITES:
        module = importlib.import_module(path)
        register_suite(module.SUITE)


def register_suite(suite: Suite, parser: Any = None) -> Suite:
    """Add ``suite`` to the registry (again with the same value: no change).

    From a ``conftest.py``, register in its ``pytest_addoption(parser)`` hook and pass the
    ``parser``: the suite's own flags are added to the ``budget`` option group then (the
    built-in suites' flags are added when the plugin loads).
    """
    _load_builtins()
    known = _REGISTERED.get(suite.name)
    if known is not None and known != suite:
        raise SuiteError(f"a suite named {suite.name!r} is registered already")
    taken = {kind.name: s.name for s in _REGISTERED.values() for kind in s.kinds}
    for kind in suite.kinds:
        owner = taken.get(kind.name)
        if owner is not None and owner != suite.name:
            raise SuiteError(f"cell kind {kind.name!r} belongs to suite {owner!r} already")
    for declared in suite.roles:
        known_role = _ROLES.get(declared.name)
        if known_role is not None and known_role[0] != suite.name:
            raise SuiteError(
                f"role {declared.name!r} belongs to suite {known_role[0]!r} already; "
                "give your suite's role another name"
            )
    if known is not None:
        _forget_roles(known.name)
    _REGISTERED[suite.name] = suite
    _ROLES.update({declared.name: (suite.name, declared) for declared in suite.roles})
    if parser is not None and suite.options is not None and known is None:
        suite.options.add(parser.getgroup("budget").addoption, parser.addini)
    return suite


def unregister_suite(name: str) -> None:
    """Remove a suite registered with :func:`register_suite` (tests, notebooks)."""
    _REGISTERED.pop(name, None)
    _forget_roles(name)


def _forget_roles(suite: str) -> None:
    for name in [name for name, (owner, _) in _ROLES.items() if owner == suite]:
        del _ROLES[name]


def registered_suites() -> dict[str, Suite]:
    """Every suite, built-ins first, in registration order."""
    _load_builtins()
    return dict(_REGISTERED)


def suite_names() -> tuple[str, ...]:
    return tuple(registered_suites())


def get_suite(name: str) -> Suite:
    return registered_suites()[name]


def cell_kinds() -> dict[str, CellKind]:
    """Every cell kind by name, in suite then declaration order."""
    return {kind.name: kind for suite in registered_suites().values() for kind in suite.kinds}


def cell_kind(name: str) -> CellKind | None:
    return cell_kinds().get(name)


def suite_of_kind(name: str) -> Suite | None:
    return next((s for s in registered_suites().values() if s.kind(name) is not None), None)


def suite_by_name_or_kind(name: str) -> Suite | None:
    """The suite named ``name``, else the suite with a cell kind of that name."""
    return registered_suites().get(name) or suite_of_kind(name)


def suite_of_test_file(file_name: str, folder: Path | None = None) -> Suite | None:
    """The suite whose cell module is ``file_name`` (in ``folder`` when given)."""
    for suite in registered_suites().values():
        if folder is not None and folder.resolve() != suite.folder():
            continue
        if any(kind.test_file == file_name for kind in suite.kinds):
            return suite
    return None


def kind_of_test_file(file_name: str) -> CellKind | None:
    return next((k for k in cell_kinds().values() if k.test_file == file_name), None)


def role(name: str) -> Role | None:
    """The role called ``name``, from the suite that declares it (None: no suite does)."""
    _load_builtins()
    found = _ROLES.get(name)
    return found[1] if found is not None else None


def registered_roles() -> dict[str, Role]:
    """Every registered role by name, in suite then declaration order."""
    _load_builtins()
    return {name: declared for name, (_, declared) in _ROLES.items()}


def suite_of_role(name: str) -> Suite | None:
    _load_builtins()
    found = _ROLES.get(name)
    return _REGISTERED.get(found[0]) if found is not None else None


def cell_module_paths(suites: Iterable[str], options: Any) -> list[Path]:
    """The cell modules a run of ``options`` collects for ``suites``, in order."""
    known = registered_suites()
    return [
        known[name].folder() / file_name
        for name in suites
        for file_name in known[name].test_files(options)
    ]


def reference_agent_roles() -> dict[str, dict[str, Callable[[int], object]]]:
    """Every registered reference agent: name -> role -> factory(seed), over all suites."""
    merged: dict[str, dict[str, Callable[[int], object]]] = {}
    for suite in registered_suites().values():
        for name, roles in suite.reference_agents.items():
            merged.setdefault(name, {}).update(roles)
    return merged


def reply_rule(name: str) -> ReplyRule | None:
    """The rule of role ``name``'s answers, from the suite that declares it (None: no rule)."""
    declared = role(name)
    return declared.reply if declared is not None else None


def fallback_agent(name: str) -> Callable[[int], object] | None:
    """The factory of the built-in agent role ``name`` falls back to, if its suite has one."""
    declared = role(name)
    return declared.fallback if declared is not None else None


def suite_report_blocks(cells: Sequence[Cell]) -> dict[str, Any]:
    """The run-level report blocks of every suite that recorded cells (``planning_pooled``)."""
    blocks: dict[str, Any] = {}
    for suite in registered_suites().values():
        if suite.report_blocks is None:
            continue
        names = {kind.name for kind in suite.kinds}
        own = [cell for cell in cells if cell.suite in names]
        if own:
            blocks.update(suite.report_blocks(own))
    return blocks
