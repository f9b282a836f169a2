"""The two xdist workers of ``pytest -n 2`` share their assertion-rewritten test modules.

Each worker collects every test module, and pytest rewrites each module's asserts (an AST
pass over ~5,500 asserts: ~10 s of CPU per worker on this suite).  Where bytecode is not
written (``PYTHONDONTWRITEBYTECODE``, as on the CI machine) both workers did all of it.
Here they write the rewritten modules to the session's shared bytecode folder while they
collect (conftest.py, ``PYTHONPYCACHEPREFIX``), and the second worker first rewrites the
modules from the end of the collection order backwards, until it meets one the first
worker has written: each does about half, and reads the other half.

pytest keys a rewritten module by its source's hash and writes it by an atomic rename, so
a module read back is always whole and current.  Only collection writes: the modules tests
make and rewrite during a test stay unwritten (conftest.py's ``_share_compiled_modules``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: The worker that rewrites backwards ahead of its collection.
_BACKWARDS_WORKER = "gw1"


def rewrite_backwards(config: pytest.Config, tests: Path) -> int:
    """In the second worker, rewrite the test modules from the last one backwards, stopping
    at the first whose rewritten module is already written.  Returns how many it wrote."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or workerinput.get("workerid") != _BACKWARDS_WORKER:
        return 0
    try:
        from _pytest.assertion import rewrite
    except ImportError:  # pytest's private module moved: each worker rewrites all
        return 0
    state = config.stash.get(rewrite.assertstate_key, None)
    if state is None:  # --assert=plain: nothing is rewritten
        return 0
    written = 0
    for source in sorted(tests.glob("test_*.py"), reverse=True):
        pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
        if pyc.exists() or not rewrite.try_makedirs(pyc.parent):
            break
        source_hash, code = rewrite._rewrite_test(source, config)
        if not rewrite._write_pyc(state, code, source_hash, pyc):
            break
        written += 1
    return written
