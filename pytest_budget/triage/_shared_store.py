"""The triage bootstrap's plan-free tables kept on disk between runs.

Per resample of a cell, V_oracle and V_random (:mod:`pytest_budget.triage._intervals`) depend
on the pool, its Phase 0, alpha and the seeds, never on the plan; V_random alone is ~0.5 s of
processor time per run of the main job.  :class:`SharedTables` is the in-memory cache those
functions take (a dict: ``get``, ``setdefault``, item assignment, ``pop``), backed by one
``.npz`` file per entry under the run's cache directory, so a rerun (or another xdist worker)
reads them instead.  The entry key is the digest of every input (``_pool_digest``); the folder
is named after a digest of the code that computes the tables, so a change there never reads an
old file.  A missing or unreadable file is computed again; arrays round-trip bit for bit.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from pytest_budget._core.files import write_atomic

__all__ = ["SharedTables", "code_digest"]

#: The modules whose code computes the stored tables (their source names the folder).
_CODE = ("pytest_budget.triage._intervals", "pytest_budget.triage._scoring")
_KEY = re.compile(r"[0-9a-f]{64}")
_NAMES = ("v_oracle", "v_random")


def code_digest() -> str:
    """A short digest of the source of the modules computing the tables."""
    import importlib.util

    digest = hashlib.sha256()
    for name in _CODE:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        digest.update(Path(origin).read_bytes() if origin else name.encode())
    return digest.hexdigest()[:16]


class SharedTables(dict[str, Any]):
    """A dict of ``key -> (v_oracle, v_random)`` that reads missing entries from
    ``directory`` and writes every table pair assigned to it there."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__()
        self.directory = Path(directory) / f"triage-shared-{code_digest()}"

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key}.npz" if _KEY.fullmatch(key) else None

    def _load(self, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            # Read first: np.load leaves its file open when the archive is cut short.
            with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as data:
                return data["v_oracle"], data["v_random"]
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # absent or cut short
            return None

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key)
        if found is None and (loaded := self._load(key)) is not None:
            found = super().setdefault(key, loaded)
        return default if found is None else found

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self and (loaded := self._load(key)) is not None:
            return super().setdefault(key, loaded)
        return super().setdefault(key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        path = self._path(key)
        if path is None or not _is_table_pair(value):
            return  # a Future of a pair being computed, or a key that is no digest
        buffer = io.BytesIO()
        np.savez(buffer, **dict(zip(_NAMES, value, strict=True)))
        try:
            write_atomic(path, buffer.getvalue())
        except OSError:  # a read-only cache: the run goes on, the next computes again
            pass


def _is_table_pair(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == len(_NAMES)
        and all(isinstance(v, np.ndarray) for v in value)
    )
