"""Files the run writes: atomic replacement with the mode any new file would get.

``tempfile.mkstemp`` creates its file ``0600``; renamed into place that would make the
report and the snapshots private while the HTML page is not.  Everything the run writes
gets ``0666`` minus the process umask instead (``0644`` under the usual umask ``022``),
like a file opened with ``open(path, "w")``.  Temporary names start with ``.`` and end
with ``.tmp``; final names are the caller's.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["current_umask", "new_file_mode", "write_atomic"]


def current_umask() -> int:
    """The process umask, read without changing it where the system allows
    (``/proc/self/status``), else by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """What ``open(path, "w")`` would give a new file: ``0o666 & ~umask``."""
    return 0o666 & ~current_umask()


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write ``text`` (UTF-8; bytes as they are) to ``path`` through a temporary file and a
    rename, so a reader never sees half a file; the file gets :func:`new_file_mode`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, new_file_mode())
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as raw:
                raw.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
