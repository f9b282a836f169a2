"""A syrupy extension that stores one JSON file per cell and compares scores directionally.

Plugin-side only (syrupy imports pytest).  Each cell gets a small subclass carrying its
file location, the packaged fallback baseline, and the gated metrics, because syrupy
resolves locations through class methods.  Files live under the user's snapshot directory
(``<rootdir>/__budget_snapshots__/<suite>/<cell>.json`` by default), never next to the
installed suite.  Writes are atomic, so ``--snapshot-update -n 2`` cannot tear a file.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.data import SnapshotCollection, SnapshotCollections
from syrupy.extensions.json import JSONSnapshotExtension

from pytest_budget._core.files import write_atomic
from pytest_budget._stats.gating import (
    PAIRED_ALPHA,
    MetricSpec,
    Regression,
    compare,
    compare_ci,
    compare_overlap,
    compare_paired,
)

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import (
        PropertyFilter,
        PropertyMatcher,
        SerializableData,
        SerializedData,
        SnapshotIndex,
    )

__all__ = [
    "BASELINE_DIR",
    "SNAPSHOT_SCHEMA_VERSION",
    "BudgetBaselineWarning",
    "BudgetSnapshotExtension",
    "cell_file_name",
    "extension_for",
]

SNAPSHOT_SCHEMA_VERSION = 1
#: Baselines of the reference agents, shipped with the package (read-only fallback).
BASELINE_DIR = Path(__file__).parents[1] / "baselines"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=#-]+")


class BudgetBaselineWarning(UserWarning):
    """A stored baseline that can be used, but not fully (e.g. it has no intervals)."""


def cell_file_name(cell_id: str) -> str:
    """A file-system-safe name for a cell id (``openai:gpt-4o`` -> ``openai_gpt-4o``); never
    starts with ``.`` (a hidden file, or ``..``)."""
    return _UNSAFE.sub("_", cell_id).lstrip("._").rstrip("_") or "cell"


class BudgetSnapshotExtension(JSONSnapshotExtension):
    """Directional score comparison over one JSON snapshot file per cell."""

    location: ClassVar[str] = ""
    fallback: ClassVar[str | None] = None
    specs: ClassVar[tuple[MetricSpec, ...]] = ()
    exact: ClassVar[bool] = False
    suite: ClassVar[str] = ""
    #: ``tolerance``, ``ci``, ``overlap`` or ``paired`` (``--budget-gate``); ``level`` is the
    #: intervals' coverage.
    gate: ClassVar[str] = "tolerance"
    level: ClassVar[float | None] = None
    #: The command that re-records this cell with the run's options (else a generic one);
    #: a callable is called only when a message shows the command.
    rerecord: ClassVar[object] = None  # str | Callable[[], str] | None
    #: ``paired``: the level of one (cell, metric) test and what it was split from; the
    #: callback that receives the cell's per-unit changes for the run's pooled test.
    alpha: ClassVar[float] = PAIRED_ALPHA
    family: ClassVar[str] = ""
    sinks: ClassVar[tuple[Callable[[str, dict[str, Any]], None], ...]] = ()

    # -- where the file is ---------------------------------------------------------
    @classmethod
    def get_location(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        return cls.location

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(Path(cls.location).parent)

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        return True  # our files live outside the test's folder on purpose

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        # Never report our files as unused: syrupy would delete baselines of cells that
        # were merely deselected (-k) or belong to another agent.
        return SnapshotCollections()

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        return None

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializableData | None:
        for path in (snapshot_location, self.fallback):
            if path and os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    return handle.read()
        return None

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        target = Path(snapshot_collection.location)
        data = next(iter(snapshot_collection)).data
        write_atomic(target, str(data))

    # -- what is in it ---------------------------------------------------------------
    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def matches(
        self, *, serialized_data: SerializableData, snapshot_data: SerializableData
    ) -> bool:
        return not list(self._problems(str(serialized_data), str(snapshot_data), warn=True))

    def diff_lines(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> Iterator[str]:
        yield from self._problems(str(serialized_data), str(snapshot_data))

    def _problems(self, serialized: str, stored_text: str, *, warn: bool = False) -> Iterator[str]:
        """One line per reason the new scores do not pass against the stored ones."""
        path = self._stored_path()
        hint = _Hint(self.rerecord, f"pytest --budget-suite={self.suite} --snapshot-update")
        if not stored_text.strip():
            yield f"no stored baseline for this cell at {self.location}; record one with: {hint}"
            return
        new: Mapping[str, Any] = json.loads(serialized)
        try:
            stored = json.loads(stored_text)
        except json.JSONDecodeError as exc:
            yield (
                f"snapshot {path} is not valid JSON (line {exc.lineno}: {exc.msg}); "
                f"delete it and re-record with: {hint}"
            )
            return
        if not isinstance(stored, dict) or not isinstance(stored.get("scores"), dict):
            yield f"snapshot {path} has no 'scores' object; delete it and re-record with: {hint}"
            return
        if self.exact:
            if stored != new:
                yield "scores changed (recording with --snapshot-update)"
            return
        stored_context = stored.get("context", {})
        new_context = new.get("context", {})
        changed = sorted(
            key
            for key in set(stored_context) | set(new_context)
            if stored_context.get(key) != new_context.get(key)
        )
        if changed:
            details = ", ".join(
                f"{key}={stored_context.get(key)!r} (now {new_context.get(key)!r})"
                for key in changed
            )
            yield f"baseline {path} was recorded with {details}; re-record with: {hint}"
            return
        gate = self.gate
        if gate == "paired":
            found = self._paired(stored, new, path, hint, warn=warn)
            if found is not None:
                yield from found
                return
            gate = "overlap"  # no per-query values to pair: the interval rule, said so
        if gate not in ("ci", "overlap"):
            for regression in compare(stored["scores"], new["scores"], self.specs):
                yield regression.message()
            return
        yield from self._interval_problems(stored, new, path, hint, gate, warn=warn)

    def _interval_problems(
        self,
        stored: Mapping[str, Any],
        new: Mapping[str, Any],
        path: str,
        hint: _Hint,
        gate: str,
        *,
        warn: bool,
    ) -> Iterator[str]:
        """The ``ci`` and ``overlap`` gates' lines (``paired`` falls back to overlap)."""
        stored_ci = stored.get("ci")
        if not isinstance(stored_ci, dict):
            # The interval rule needs only the stored value, so an older baseline still
            # gates; it just cannot show its own interval.
            stored_ci = None
            # Re-recording helps only when this run makes intervals: cells that never have
            # any (online awareness) fall back to the tolerance rule and say so per failure.
            if warn and new.get("ci"):
                _notice(
                    f"baseline {path} stores no intervals (recorded by an older "
                    "pytest-budget or with --budget-ci-resamples=0); "
                    f"--budget-gate={gate} compares the new intervals with its "
                    f"values; re-record with: {hint}"
                )
        if gate == "overlap":
            regressions = compare_overlap(
                stored["scores"],
                new["scores"],
                new.get("ci") or {},
                stored_ci,
                self.specs,
                level=self.level,
            )
        else:
            regressions = compare_ci(
                stored["scores"],
                new["scores"],
                new.get("ci") or {},
                self.specs,
                stored_ci=stored_ci,
                level=self.level,
            )
        for regression in regressions:
            text = regression.message()
            if self.gate == "paired":
                text += " [--budget-gate=paired fell back to interval overlap: no per-query values]"
            yield text

    def _paired(  # hint: a _Hint
        self, stored: Mapping[str, Any], new: Mapping[str, Any], path: str, hint: Any, *, warn: bool
    ) -> list[str] | None:
        """Messages of the paired rule, or ``None`` when either side has no usable
        per-unit values (then the caller falls back to interval overlap)."""
        from pytest_budget._stats.paired import read_per_unit  # numpy: only when a cell gates
        from pytest_budget._stats.run_gate import unit_changes

        mine = read_per_unit(new.get("per_query"))
        if isinstance(mine, str):
            return None  # this suite (or the user's own test) records no per-unit values
        theirs = read_per_unit(stored.get("per_query"))
        sequential = new.get("sequential")
        if isinstance(sequential, dict) and not isinstance(theirs, str):
            # The cell ran some of its units in looks (pytest_budget._stats.sequential): the same
            # decision its test took, on the same units of the baseline.
            return self._sequential(stored, theirs[1], mine[1], sequential, new)
        why = theirs if isinstance(theirs, str) else ""
        if not why and theirs[0] != mine[0]:
            why = f"stores {theirs[0]} per-unit values (this run has {mine[0]})"
        if why:
            if warn:
                _notice(
                    f"baseline {path} {why} (recorded by an older pytest-budget?); "
                    "--budget-gate=paired compares it by interval overlap instead; "
                    f"re-record with: {hint}"
                )
            return None
        assert not isinstance(theirs, str)
        stored_ci = stored.get("ci") if isinstance(stored.get("ci"), dict) else None
        unit = new["per_query"].get("unit") or "unit"

        def overlap(spec: MetricSpec) -> list[Regression]:
            return compare_overlap(
                stored["scores"], new["scores"], new.get("ci") or {}, stored_ci, (spec,),
                level=self.level,
            )  # fmt: skip

        regressions = compare_paired(
            stored["scores"], new["scores"], theirs[1], mine[1], self.specs,
            alpha=self.alpha, fallback=overlap, fallback_name="interval overlap",
            unit=unit, family=self.family,
        )  # fmt: skip
        for sink in self.sinks:
            changes: dict[str, Any] = {}
            for spec in self.specs:
                kept = [theirs[1][n] for n in (spec.name, f"{spec.name}.2") if n in theirs[1]]
                got = [mine[1][n] for n in (spec.name, f"{spec.name}.2") if n in mine[1]]
                if kept and len(kept) == len(got):
                    d = unit_changes(kept, got, spec.direction)
                    if d is not None:
                        changes[spec.name] = {
                            "d": [float(x) for x in d],
                            "direction": spec.direction,
                        }
            sink(self.suite, changes)
        return [regression.message() for regression in regressions]

    def _sequential(
        self,
        stored: Mapping[str, Any],
        theirs: Mapping[str, Any],
        mine: Mapping[str, Any],
        sequential: Mapping[str, Any],
        new: Mapping[str, Any],
    ) -> list[str]:
        """Messages of the sequential gate's last look; the batches' changes to the sink."""
        from pytest_budget._stats.sequential import batch_bounds, batch_changes, cell_look

        ran = [int(b) for b in sequential["bounds"]]
        bounds = batch_bounds(int(sequential["total"]))
        verdict = cell_look(
            theirs, mine, self.specs, self.alpha, bounds, len(ran), stored.get("scores") or {}
        )
        for sink in self.sinks:
            changes: dict[str, Any] = {}
            for spec in self.specs:
                d = batch_changes(theirs, mine, spec, ran, bounds[-1])
                if d is not None:
                    changes[spec.name] = {
                        "d": [float(x) for x in d], "direction": spec.direction, "first": ran[0],
                        "total": bounds[-1],
                    }  # fmt: skip
            sink(self.suite, changes)
        return verdict.messages(new["per_query"].get("unit") or "unit", self.family)

    def _stored_path(self) -> str:
        if os.path.isfile(self.location) or not self.fallback:
            return self.location
        return self.fallback


def _notice(text: str) -> None:
    """A ``BudgetBaselineWarning``: a notice, not a failure, even under ``-W error``."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", BudgetBaselineWarning)
        warnings.warn(BudgetBaselineWarning(text), stacklevel=3)


class _Hint:
    """The re-record command in a message, worked out the first time a message shows it:
    the run's command reads every option of the run (~1-4 ms a cell, every cell)."""

    __slots__ = ("_default", "_given", "_text")

    def __init__(self, given: object, default: str) -> None:
        self._given = given
        self._default = default
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            given = self._given() if callable(self._given) else self._given
            self._text = str(given) if given else self._default
        return self._text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def extension_for(
    *,
    suite: str,
    cell_id: str,
    snapshot_dir: str,
    specs: tuple[MetricSpec, ...],
    exact: bool,
    fallback_dir: str | None,
    gate: str = "tolerance",
    level: float | None = None,
    rerecord: str | Callable[[], str] | None = None,
    alpha: float = PAIRED_ALPHA,
    family: str = "",
    sink: Callable[[str, dict[str, Any]], None] | None = None,
) -> type[BudgetSnapshotExtension]:
    """A per-cell subclass bound to the cell's file (and packaged fallback, if any)."""
    name = cell_file_name(cell_id) + ".json"
    location = str(Path(snapshot_dir) / suite / name)
    fallback = str(Path(fallback_dir) / suite / name) if fallback_dir else None
    attrs: dict[str, Any] = {
        "location": location,
        "fallback": fallback,
        "specs": specs,
        "exact": exact,
        "suite": suite,
        "gate": gate,
        "level": level,
        # Not bound as a method when read from the class's instances.
        "rerecord": staticmethod(rerecord) if callable(rerecord) else rerecord,
        "alpha": alpha,
        "family": family,
        "sinks": (sink,) if sink is not None else (),
    }
    return type("BudgetCellSnapshot", (BudgetSnapshotExtension,), attrs)
