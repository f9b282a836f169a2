"""Re-runnable node ids and the exact command that re-runs (or re-records) one cell.

The suite modules are installed inside the package, usually outside the user's rootdir,
where pytest would give them the node id ``::test_triage[...]`` (no path: copying it into
``pytest`` does nothing).  The plugin gives them the stable node id
``pytest_budget/suites/<module>.py::<test>[<cell>]`` instead, and maps that path back to the
installed module when it appears on a command line (:func:`map_suite_arg`), so a printed id
runs as shown.

A cell's id only exists under the options that produced it (``--budget-alpha``,
``--budget-pool``, ...), and its scores and snapshot depend on the same options, so the
command that re-runs or re-records a cell carries every option of the run that matters
(:func:`rerun_command`).

Core module: no pytest import; the plugin hands in plain option values.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "NOT_REPLAYED",
    "SUITE_NODE_PREFIX",
    "OptionValue",
    "map_suite_arg",
    "rerun_command",
    "suite_node_path",
    "suite_of_module",
]

#: The node-id path of every bundled suite module (``pytest_budget/suites/test_x.py``).
SUITE_NODE_PREFIX = "pytest_budget/suites/"

#: ``--budget-*`` options left out of a re-run command: where the run's own files go
#: (a one-cell re-run must not overwrite the full run's report), which shard ran, and the
#: suite list (the command names the cell's own suite).
NOT_REPLAYED = frozenset(
    {
        "--budget-report", "--budget-html", "--budget-shard", "--budget-suite",
        "--budget-markdown", "--budget-step-summary",
    }
)  # fmt: skip

#: (flag, value): ``value`` is a string, a list of strings (a repeatable option), or
#: ``True`` for a flag without a value.
OptionValue = tuple[str, "str | Sequence[str] | bool"]


def suite_node_path(module_name: str) -> str:
    """The node-id path of the bundled suite module ``module_name`` (``test_triage.py``)."""
    return SUITE_NODE_PREFIX + module_name


def suite_of_module(module_name: str, suites: Iterable[str]) -> str | None:
    """The suite a bundled module belongs to (``test_triage_resolve.py`` -> ``triage``)."""
    stem = module_name.removesuffix(".py").removeprefix("test_")
    for suite in sorted(suites, key=len, reverse=True):
        if stem == suite or stem.startswith(suite + "_"):
            return suite
    return None


def map_suite_arg(arg: str, suites_folder: Path, invocation_dir: Path) -> str:
    """``arg`` with a ``pytest_budget/suites/...`` path replaced by the installed location.

    An argument whose path exists relative to ``invocation_dir`` is the user's own file
    and is left alone; so is anything that does not start with the suites' node-id path.
    """
    path_part, sep, rest = arg.partition("::")
    normalized = path_part.replace("\\", "/").removeprefix("./")
    prefix = SUITE_NODE_PREFIX.rstrip("/")
    if normalized != prefix and not normalized.startswith(SUITE_NODE_PREFIX):
        return arg
    if (invocation_dir / path_part).exists():
        return arg
    inside = normalized[len(prefix) :].lstrip("/")
    target = suites_folder / inside if inside else suites_folder
    return f"{target}{sep}{rest}"


def _flag_words(flag: str, value: str | Sequence[str] | bool) -> list[str]:
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, str):
        return [f"{flag}={value}"]
    return [f"{flag}={item}" for item in value]


def rerun_command(
    nodeid: str,
    *,
    suite: str | None,
    budget_options: Iterable[OptionValue],
    pytest_options: Iterable[OptionValue] = (),
    extra: Sequence[str] = (),
) -> str:
    """The shell command that runs the test ``nodeid`` again under the same options.

    ``suite`` is the bundled suite the test belongs to (``--budget-suite`` is set to it),
    or ``None`` for a test of the user's own; ``budget_options`` are the run's
    ``--budget-*`` values that differ from their defaults; ``pytest_options`` pytest's own
    options that change what a run reads (``-c``, ``--rootdir``, ``-o``, ``-p``);
    ``extra`` is appended (e.g. ``--snapshot-update``).
    """
    words = ["pytest"]
    if suite is not None:
        words.append(f"--budget-suite={suite}")
    for flag, value in budget_options:
        if flag not in NOT_REPLAYED:
            words.extend(_flag_words(flag, value))
    for flag, value in pytest_options:
        if isinstance(value, str):
            words.extend([flag, value])
        elif value is not True and value:
            for item in value:
                words.extend([flag, item])
    words.extend(extra)
    words.append(nodeid)
    return shlex.join(words)
