"""Keeps the garbage collector off the run's long-lived objects (registered by an engaged run).

After collection (in an xdist controller, once its first worker has collected), the
modules, fixtures and test items stay alive to the end, yet every full
collection CPython starts walks all of them again: about 0.4 s of the main job (seven full
collections and pytest's closing ``gc.collect``).  ``gc.freeze`` moves what is alive at
collection's end out of the collector's sight; objects made later are collected as usual.

The run's end is settled in a cleanup registered when the run engages at its start (before
pytest's unraisable-exception plugin configures), so it runs last, after pytest's closing
collections (one at unconfigure, one in that plugin's cleanup):

* a process that ends with the run (the ``pytest`` command, an xdist worker) freezes
  everything still alive: the interpreter's own closing collection then walks nothing, where
  it took ~0.3-0.4 s of CPU per process (each xdist worker's exit is on a ``-n`` run's
  critical path: the controller waits for it); the operating system takes the memory back;
* a run inside a longer-lived process (pytester, an IDE) hands back what it froze, so it
  leaks nothing.  Objects someone else froze already (an outer run) are left to them: this
  run then freezes nothing.
"""

from __future__ import annotations

import functools
import gc
import sys
from typing import Any

import pytest

__all__ = ["FROZEN_KEY"]

#: Set on the config while this run keeps objects frozen.
FROZEN_KEY = pytest.StashKey[bool]()
#: The functions of ``_pytest.config`` through which the ``pytest`` command runs.
_CONSOLE_ENTRIES = frozenset({"console_main", "_console_main"})
#: ``pytest.main`` (and, from pytest 9.1, the ``_main`` both entries call).
_MAINS = frozenset({"main", "_main"})


def pytest_collection_finish(session: pytest.Session) -> None:
    _freeze(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """An xdist controller collects nothing: it freezes when its first worker has
    collected, before the reports come (its full collections walked its start-up heap,
    ~0.2 s of its CPU on the main job with -n 2)."""
    _freeze(node.config)


def _freeze(config: pytest.Config) -> None:
    if gc.get_freeze_count() == 0 and not config.stash.get(FROZEN_KEY, False):
        gc.freeze()
        config.stash[FROZEN_KEY] = True


def pytest_configure(config: pytest.Config) -> None:
    config.add_cleanup(functools.partial(_settle, config))


def _settle(config: pytest.Config) -> None:
    if _process_ends_with_run(config):
        gc.freeze()
    elif config.stash.get(FROZEN_KEY, False):
        config.stash[FROZEN_KEY] = False
        gc.unfreeze()


def _process_ends_with_run(config: pytest.Config) -> bool:
    """An xdist worker (started for this run) or the ``pytest`` command: the run's
    ``pytest.main`` was called by pytest's console entry (``console_main``, ``_console_main``
    from pytest 9.1), not by other code (pytester, an IDE, a run inside a test)."""
    if hasattr(config, "workerinput"):
        return True
    frame = sys._getframe(1)
    while frame is not None and not _pytest_function(frame, _MAINS):
        frame = frame.f_back  # type: ignore[assignment]
    while frame is not None and _pytest_function(frame, _MAINS):
        frame = frame.f_back  # type: ignore[assignment]  # pytest 9.1+: main calls _main
    return frame is not None and _pytest_function(frame, _CONSOLE_ENTRIES)


def _pytest_function(frame: Any, names: frozenset[str]) -> bool:
    return frame.f_code.co_name in names and frame.f_globals.get("__name__") == "_pytest.config"
