"""Estimates already made, scored as they are: the ``logged`` estimator replays recorded
answers keyed by rollout and turn, and never calls a model.

Two sources (``--budget-logged-estimates=PATH``, repeatable):

BAGEN's estimation output (logs.md §2.1-2.2)
    ``<run>.json`` = ``{config, selection?, summary, results}``; each result has
    ``rollout_index`` (position in the dialogue file ``config.input_json``), ``turn_idx``
    (= k, kept turns completed) and ``prediction.raw_response`` (the estimator's raw text,
    the only copy).  A probe is keyed ``(file name of config.input_json, rollout_index,
    k)`` and matches a rollout read from BAGEN's dialogue log of that name
    (``meta["rollout_index"]``); when ``config.input_json`` is absent the key has no file
    name and matches any BAGEN log.  For SWE-bench the file holds only BAGEN's 512 selected
    probes; BAGEN's SWE dialogue logs are probed with that same selection
    (:mod:`~pytest_budget.awareness._replay.fair_split`), so they match.
pytest-budget's JSON report (``--budget-report``)
    Every awareness cell's ``samples`` (``rollout``, ``k``, ``raw``): keyed ``(env,
    rollout id, k)``.  A report may hold several estimators: the cells of reference
    agents are left out when any other estimator is there, and more than one estimator
    left is an error (give one run's report).

A probe the logs lack is never invented: the estimator raises, so the probe counts as an
error of the cell (``n_errors``, ``first_error`` "not in the logged estimates"), outside
every score.  Answers are re-read with the run's parser (``--budget-parse``), so logged
estimates can be scored under a new parser or metric version.  Plain Python: no pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pytest_budget.awareness._replay.probes import Probe
from pytest_budget.awareness._replay.rollouts import RolloutFileError, read_json_file

__all__ = [
    "LoggedAnswers",
    "LoggedEstimator",
    "MissingEstimate",
    "configure_logged",
    "read_logged_answers",
]

#: The awareness suite's reference estimators (left out of a report's answers).
_REFERENCES = frozenset(
    {"oracle", "random", "linear-knows-T", "linear-visible", "always-feasible",
     "always-impossible", "logged"}
)  # fmt: skip


class MissingEstimate(LookupError):
    """The logs hold no answer for this probe (it counts as an error, never invented)."""


@dataclass
class LoggedAnswers:
    """Recorded answers: BAGEN keys ``(file, rollout_index, k)``, ours ``(env, id, k)``."""

    bagen: dict[tuple[str | None, int, int], str] = field(default_factory=dict)
    report: dict[tuple[str, str, int], str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    def answer(self, probe: Probe, meta: Mapping[str, Any]) -> str:
        """The logged text for ``probe`` of a rollout with ``meta``; raises when absent."""
        index = meta.get("rollout_index")
        if meta.get("format") == "bagen" and isinstance(index, int):
            name = Path(str(meta.get("source", ""))).name
            for key in ((name, index, probe.k), (None, index, probe.k)):
                if key in self.bagen:
                    return self.bagen[key]
        key2 = (probe.env, probe.rollout_id, probe.k)
        if key2 in self.report:
            return self.report[key2]
        raise MissingEstimate(
            f"not in the logged estimates: rollout {probe.rollout_id} turn {probe.k}"
        )


def _int(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RolloutFileError(f"{where}: '{name}' must be an integer, got {value!r}")
    return value


def _bagen(path: Path, data: Mapping[str, Any], into: LoggedAnswers) -> None:
    config = data.get("config")
    source = config.get("input_json") if isinstance(config, dict) else None
    name = Path(source).name if isinstance(source, str) and source else None
    results = data["results"]
    if not isinstance(results, list):
        raise RolloutFileError(f"{path}: 'results' must be a list of probe results")
    for i, result in enumerate(results):
        where = f"{path}: results[{i}]"
        if not isinstance(result, dict):
            raise RolloutFileError(f"{where}: not an object")
        index = _int(result.get("rollout_index"), where, "rollout_index")
        k = _int(result.get("turn_idx"), where, "turn_idx")
        prediction = result.get("prediction")
        raw = prediction.get("raw_response") if isinstance(prediction, dict) else None
        if not isinstance(raw, str):
            raise RolloutFileError(
                f"{where}: 'prediction.raw_response' (the estimator's text) is missing"
            )
        into.bagen[(name, index, k)] = raw


def _report(path: Path, data: Mapping[str, Any], into: LoggedAnswers) -> None:
    cells = [
        c
        for c in data.get("cells") or []
        if isinstance(c, dict) and c.get("suite") == "awareness" and c.get("samples")
    ]
    if not cells:
        raise RolloutFileError(
            f"{path}: no awareness cell with samples (write the report with --budget-report "
            "from an awareness run)"
        )
    own = [c for c in cells if c.get("agent") not in _REFERENCES] or cells
    agents = sorted({str(c.get("agent")) for c in own})
    if len(agents) > 1:
        raise RolloutFileError(
            f"{path}: answers of several estimators ({', '.join(agents)}); give the report "
            "of a run with one estimator"
        )
    for cell in own:
        env = str(cell.get("env"))
        for j, sample in enumerate(cell["samples"]):
            where = f"{path}: cell {cell.get('cell')} sample {j}"
            if not isinstance(sample, dict):
                raise RolloutFileError(f"{where}: not an object")
            raw = sample.get("raw")
            if raw is None:
                continue  # the estimator raised there: nothing was answered
            if not isinstance(raw, str):
                raise RolloutFileError(f"{where}: 'raw' must be the answer text")
            rid = sample.get("rollout")
            k = _int(sample.get("k"), where, "k")
            into.report[(env, str(rid), k)] = raw


def _read(path: Path) -> Any:
    """The file's JSON; a pytest-budget report may be gzip-compressed (``.json.gz``) and
    has its pooled samples expanded."""
    what = "logged estimates (BAGEN output or pytest-budget report)"
    from pytest_budget.report._document import ReportFileError, is_gzip, load_report_json

    if is_gzip(path):
        try:
            return load_report_json(path)
        except ReportFileError as exc:
            raise RolloutFileError(str(exc)) from None
    data = read_json_file(path, what)
    if isinstance(data, dict) and "sample_pool" in data:
        from pytest_budget.report._document import unpack_samples
        from pytest_budget.report._sample_pool import PoolError

        try:
            unpack_samples(data)
        except PoolError as exc:
            raise RolloutFileError(f"{path}: {exc} (file is corrupt)") from None
    return data


def read_logged_answers(paths: Iterable[str | os.PathLike[str]]) -> LoggedAnswers:
    """The answers in ``paths`` (BAGEN estimation outputs or pytest-budget reports)."""
    answers = LoggedAnswers()
    sources = []
    for raw_path in paths:
        path = Path(raw_path)
        data = _read(path)
        if isinstance(data, dict) and "results" in data:
            _bagen(path, data, answers)
        elif isinstance(data, dict) and "cells" in data:
            _report(path, data, answers)
        else:
            raise RolloutFileError(
                f"{path}: neither BAGEN's estimation output ({{config, results}}) nor a "
                "pytest-budget JSON report ({cells})"
            )
        sources.append(str(path))
    answers.sources = tuple(sources)
    return answers


_CONFIGURED: list[LoggedAnswers] = []


def configure_logged(paths: Iterable[str | os.PathLike[str]]) -> LoggedAnswers:
    """Read the run's logged estimates once (``--budget-logged-estimates``)."""
    answers = read_logged_answers(paths)
    _CONFIGURED[:] = [answers]
    return answers


@dataclass
class LoggedEstimator:
    """Replays logged answers (``--budget-agent=logged``); no model is called."""

    name: str = "logged"
    run_inline: ClassVar[bool] = True
    answers: LoggedAnswers | None = None
    #: Rollout metadata by id (set by :meth:`with_rollouts`).
    metas: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def _answers(self) -> LoggedAnswers:
        if self.answers is not None:
            return self.answers
        if not _CONFIGURED:
            raise MissingEstimate(
                "the logged estimator has nothing to replay: give --budget-logged-estimates"
            )
        return _CONFIGURED[0]

    def with_rollouts(self, metas: Mapping[str, Mapping[str, Any]]) -> LoggedEstimator:
        return LoggedEstimator(self.name, self.answers, dict(metas))

    def estimate(self, probe: Probe) -> str:
        return self._answers().answer(probe, self.metas.get(probe.rollout_id, {}))
