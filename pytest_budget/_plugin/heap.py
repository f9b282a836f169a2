"""Keeps the garbage collector off the run's long-lived objects (registered by an engaged run).

After collection, the modules, fixtures and test items stay alive to the end, yet every full
collection CPython starts walks all of them again: about 0.4 s of the main job (seven full
collections and pytest's closing ``gc.collect``).  ``gc.freeze`` moves what is alive at
collection's end out of the collector's sight; objects made later are collected as usual.
At unconfigure (last, after pytest's own closing collection) they are handed back, so a run
inside a longer-lived process (pytester, an IDE) leaks nothing.  Objects someone else froze
already (an outer run) are left to them: this run then freezes nothing.
"""

from __future__ import annotations

import gc

import pytest

__all__ = ["FROZEN_KEY"]

#: Set on the config while this run keeps objects frozen.
FROZEN_KEY = pytest.StashKey[bool]()


def pytest_collection_finish(session: pytest.Session) -> None:
    if gc.get_freeze_count() == 0 and not session.config.stash.get(FROZEN_KEY, False):
        gc.freeze()
        session.config.stash[FROZEN_KEY] = True


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(FROZEN_KEY, False):
        config.stash[FROZEN_KEY] = False
        gc.unfreeze()
