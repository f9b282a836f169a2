"""SWE-bench harness reports: which instances the evaluation resolved (logs.md §3).

The harness (``swebench/harness/reporting.py``, ``make_run_report``) writes one JSON object
per run with sorted id lists: ``resolved_ids``, ``unresolved_ids``, ``empty_patch_ids``,
``error_ids``, ``incomplete_ids``, ``completed_ids``, ``submitted_ids`` (newer versions add
``infra_failure_ids`` and ``ambiguous_failure_ids``).  Only ``resolved_ids`` means success.

As BAGEN's ``prepare_swebench_dialogues.py`` does, the id lists of several reports are
unioned and a trajectory succeeds iff its id is in ``resolved_ids``; one the reports do not
list at all is unresolved too, and is counted (``HarnessVerdicts.unlisted``).
Plain Python: no pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_budget.awareness._replay.rollouts import RolloutFileError, read_json_file

__all__ = ["ID_LISTS", "HarnessVerdicts", "read_harness_reports"]

#: The id lists a report may carry (all but ``resolved_ids`` mean "not resolved").
ID_LISTS = (
    "resolved_ids", "unresolved_ids", "empty_patch_ids", "error_ids", "incomplete_ids",
    "completed_ids", "submitted_ids", "infra_failure_ids", "ambiguous_failure_ids",
)  # fmt: skip


@dataclass
class HarnessVerdicts:
    """The union of one or more harness reports."""

    resolved: frozenset[str]
    listed: frozenset[str]
    sources: tuple[str, ...]
    #: Trajectory ids looked up that no report lists (counted by :meth:`verdict`).
    unlisted: set[str] = field(default_factory=set)

    def verdict(self, instance_id: str) -> bool:
        """Success iff the id is in ``resolved_ids`` (BAGEN's rule)."""
        if instance_id not in self.listed:
            self.unlisted.add(instance_id)
        return instance_id in self.resolved


def _ids(path: Path, data: dict[str, object], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise RolloutFileError(f"{path}: '{key}' must be a list of instance id strings")
    return list(value)


def read_harness_reports(paths: Iterable[str | os.PathLike[str]]) -> HarnessVerdicts:
    """The SWE-bench harness reports at ``paths``, unioned (one-line errors on bad files)."""
    resolved: set[str] = set()
    listed: set[str] = set()
    sources: list[str] = []
    for raw in paths:
        path = Path(raw)
        data = read_json_file(path, "SWE-bench harness report")
        if not isinstance(data, dict) or "resolved_ids" not in data:
            raise RolloutFileError(
                f"{path}: not a SWE-bench harness report: expected a JSON object with "
                "'resolved_ids' (the <model>.<run_id>.json the harness writes)"
            )
        for key in ID_LISTS:
            ids = _ids(path, data, key)
            listed.update(ids)
            if key == "resolved_ids":
                resolved.update(ids)
        sources.append(str(path))
    return HarnessVerdicts(frozenset(resolved), frozenset(listed), tuple(sources))
