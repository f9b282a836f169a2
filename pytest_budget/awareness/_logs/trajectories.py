"""Import logged coding-agent trajectories (SWE-bench style) as awareness rollouts.

Two log formats are read besides our own rollout JSONL (``rollouts.py``):

``mini-swe-agent``
    A ``.traj.json`` file (one trajectory per file), or JSON Lines with one such trajectory
    per line.  Fields read: ``messages`` (``{role, content, extra?}``), each assistant
    call's usage at ``messages[i].extra.response.usage``, ``info.exit_status``,
    ``info.config.model.model_name`` and ``instance_id`` (or ``info.instance_id``).

``openai-chat``
    JSON Lines, one transcript per line:
    ``{"id"?, "model"?, "messages": [...], "resolved"|"success"?, ...}``; every assistant
    message carries a ``usage`` object.

Both formats give ``usage`` as ``prompt_tokens``, ``completion_tokens`` and optionally
``total_tokens``, ``completion_tokens_details.reasoning_tokens`` and
``prompt_tokens_details.cached_tokens``.

Turns and their usage (dimension ``"tokens"``)
    One turn per assistant call.  A chat API re-sends the whole history on every call, so
    the raw ``prompt_tokens`` counts earlier turns again.  As in BAGEN's public code the
    turn's input is what is *new* since the previous call::

        new_input_1 = prompt_1
        new_input_i = max(0, prompt_i - prompt_(i-1) - visible_(i-1))      (i >= 2)
        visible_j   = max(0, completion_j - reasoning_j)   (reasoning tokens are not re-sent)
        usage_i     = new_input_i + completion_i           (the call's own output in full)

    "Previous call" is the previous call that is kept (see the missing-usage policy).  A
    negative difference (history trimmed or compacted) is clamped to 0 and flagged
    (``Turn.info["clamped"]``, ``meta["clamped_turns"]``).  ``Turn.info`` keeps the raw
    counts: ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (as logged, else
    prompt + completion), ``reasoning_tokens`` / ``cached_tokens`` when logged,
    ``new_input_tokens`` and ``message_index``.

System prompt
    The first ``system``/``developer`` message before the first assistant call is kept
    whole in ``meta["actor_system_prompt"]``: the awareness estimator is shown it first, as
    BAGEN replays the actor's own system prompt (:mod:`pytest_budget.awareness._replay.dialogue`).

Observations and actions
    A turn's ``observation`` is the ``user``/``tool``/``function`` content that arrived
    since the previous assistant message (the task statement for turn 1), joined by blank
    lines; ``system``/``developer`` prompts and mini-swe-agent's final ``exit`` message
    belong to no turn.  Its ``action`` is the assistant content plus one
    ``[tool call] name(arguments)`` line per tool call.  Texts longer than
    :data:`MAX_TEXT_CHARS` (2,000) keep their first and last 1,000 characters around a
    ``[... N characters omitted ...]`` marker.

Success
    The first rule that applies: the caller's ``resolved={id: bool}`` mapping; then the
    SWE-bench harness reports given as ``verdicts`` (``--budget-swe-report``): success iff
    the id is in ``resolved_ids``, as BAGEN does; then, for mini-swe-agent, a boolean top-level
    ``resolved``, then ``info.resolved``, then ``info.exit_status == "Submitted"`` (a
    submitted patch counts as success when nothing says whether it resolved the issue; a
    missing or null exit status is no success); for openai-chat, a boolean ``resolved``,
    then ``success``, and a transcript with neither is an error.  ``meta["success_rule"]``
    records which rule decided.

Ids
    mini-swe-agent: ``instance_id``, else ``info.instance_id``; openai-chat: ``id``; else
    the file name without ``.traj.json``/``.jsonl``/... , plus ``:<line>`` when the file
    holds several records.  Ids must be unique over one :func:`load_trajectories` call.

Turn cap
    At most ``max_turns`` (160, the paper's SWE-bench cap) assistant calls are kept; a
    longer trajectory is cut after call 160, flagged (``meta["truncated"]``), and counts as
    *unsuccessful*: under the cap it did not finish (the logged outcome stays in
    ``meta["logged_success"]``).

Budget and family
    The env label (rollout family) is ``env=`` when given, else ``swe-<model>`` (the model
    name's last ``/`` segment, lower-cased; other characters than ``a-z0-9._-`` become
    ``-``), else ``swe``.  The budget is ``{"tokens": budget}`` when the caller gives one,
    else the family's median total tokens over every imported rollout of that family in
    the same :func:`load_trajectories` call (the paper's "rollout-family-specific median
    budgets"), computed as BAGEN's ``eval/swebench.sh`` does (:func:`family_budget`):
    ``statistics.median``, and ``statistics.median_low`` when that is not a whole number.

Bad input
    Every problem raises :class:`RolloutFileError` with one line naming the file, the line
    (JSON Lines) and the message index: an unreadable, empty, truncated or unparseable
    file, a record that is not an object, ``messages`` that is not a list, a message that
    is not an object, an unknown role, content of the wrong type, a malformed usage object
    (not an object, ``prompt_tokens``/``completion_tokens`` missing, not a number, negative
    or not finite), a non-boolean outcome, no assistant message, a duplicate id.  An
    assistant call with *no* usage (absent or null) is an error by default; with
    ``on_missing_usage="skip"`` the call is dropped from the turns (its observation and
    action are lost) and counted in ``meta["skipped_turns"]``; a trajectory left with no
    turn is still an error.  Missing usage is checked on every call, even past the cap.

Files in our own rollout format are passed through :func:`read_rollouts` unchanged
(``budget``, ``env`` and ``max_turns`` apply to imported logs only).

The bundled ``data/swe_synthetic.traj.jsonl`` is SYNTHETIC: written by
:func:`synthesize_swe_trajectories` (deterministic), marked ``info.synthetic = true`` in every
record and in its file name; it is no real agent's log.  Regenerate it with
``python -m pytest_budget.awareness._logs.trajectories``.  Plain Python and numpy: no pytest.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pytest_budget.awareness._logs.bagen import load_bagen_dialogues
from pytest_budget.awareness._logs.formats import (
    FORMATS,
    MAX_TEXT_CHARS,
    MAX_TURNS,
    SYNTHETIC_COUNT,
    SYNTHETIC_ENV,
    SYNTHETIC_FILE,
    SYNTHETIC_SEED,
    TrajectoryFormat,
    _import_record,
    _Imported,
    _read_records,
    detect_format,
    family_budget,
    family_label,
)
from pytest_budget.awareness._logs.inspect_eval import read_inspect_log
from pytest_budget.awareness._logs.verdicts import HarnessVerdicts
from pytest_budget.awareness._replay.rollouts import Rollout, RolloutFileError, read_rollouts

__all__ = [
    "FORMATS",
    "MAX_TEXT_CHARS",
    "MAX_TURNS",
    "SYNTHETIC_COUNT",
    "SYNTHETIC_ENV",
    "SYNTHETIC_FILE",
    "SYNTHETIC_SEED",
    "TrajectoryFormat",
    "bundled_swe_path",
    "bundled_swe_rollouts",
    "detect_format",
    "family_budget",
    "family_label",
    "load_trajectories",
    "synthesize_swe_trajectories",
    "synthetic_swe_text",
]

# ------------------------------------------------------------------------ loading


def _as_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(path) for path in paths]


def load_trajectories(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    fmt: TrajectoryFormat | Literal["auto"] = "auto",
    budget: float | None = None,
    env: str | None = None,
    max_turns: int = MAX_TURNS,
    on_missing_usage: Literal["error", "skip"] = "error",
    resolved: Mapping[str, bool] | None = None,
    verdicts: HarnessVerdicts | None = None,
) -> list[Rollout]:
    """Rollouts from trajectory files, in file order then record order (rules: module doc).

    ``fmt`` forces one format for every file (``"auto"`` sniffs each file); ``budget`` is a
    token cap for every imported family (default: each family's median total); ``env``
    relabels every imported trajectory into one family; ``resolved`` maps trajectory ids
    to the evaluation's verdict and overrides the outcome read from the file;
    ``verdicts`` (SWE-bench harness reports, :func:`~pytest_budget.awareness._logs.verdicts.
    read_harness_reports`) decide every other imported trajectory: success iff its id is
    in ``resolved_ids``.
    """
    _check_arguments(fmt, on_missing_usage, max_turns, budget, env)

    # Each entry is a finished Rollout (our format) or an import waiting for its budget.
    loaded: list[Rollout | _Imported] = []
    first_seen: dict[str, str] = {}
    formats = [(path, detect_format(path) if fmt == "auto" else fmt) for path in _as_paths(paths)]
    # BAGEN's logs set their own budgets (a SWE family's median spans its files): read first.
    bagen = load_bagen_dialogues(
        list(dict.fromkeys(path for path, kind in formats if kind == "bagen")),
        budget=budget,
        env=env,
        verdicts=verdicts,
    )
    for path, file_format in formats:
        entries = _file_entries(
            path, file_format, bagen, env, max_turns, on_missing_usage, resolved, verdicts
        )
        for where, entry in entries:
            if entry.id in first_seen:
                raise RolloutFileError(
                    f"{where}: duplicate trajectory id {entry.id!r} (first in "
                    f"{first_seen[entry.id]})"
                )
            first_seen[entry.id] = where
            loaded.append(entry)

    families, caps = _family_caps(loaded, budget)
    return _budgeted(loaded, families, caps, budget)


def _check_arguments(
    fmt: str, on_missing_usage: str, max_turns: object, budget: object, env: object
) -> None:
    """:func:`load_trajectories`' arguments, each checked (one-line ValueError)."""
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"fmt must be 'auto' or one of {', '.join(FORMATS)}, got {fmt!r}")
    if on_missing_usage not in ("error", "skip"):
        raise ValueError(f"on_missing_usage must be 'error' or 'skip', got {on_missing_usage!r}")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be a positive integer, got {max_turns!r}")
    if budget is not None:
        if isinstance(budget, bool) or not isinstance(budget, int | float):
            raise ValueError(f"budget must be a number of tokens, got {budget!r}")
        if not math.isfinite(budget) or budget <= 0:
            raise ValueError(f"budget must be positive and finite, got {budget!r}")
    if env is not None and (not isinstance(env, str) or not env):
        raise ValueError(f"env must be a non-empty string, got {env!r}")


def _file_entries(
    path: Path,
    file_format: str,
    bagen: Mapping[Path, list[Rollout]],
    env: str | None,
    max_turns: int,
    on_missing_usage: Literal["error", "skip"],
    resolved: Mapping[str, bool] | None,
    verdicts: HarnessVerdicts | None,
) -> list[tuple[str, Rollout | _Imported]]:
    """One file's (where, rollout or import waiting for its budget), in record order."""
    if file_format == "pytest-budget":
        entries: list[tuple[str, Rollout | _Imported]] = [
            (str(path), rollout) for rollout in read_rollouts(path)
        ]
    elif file_format == "bagen":
        entries = [(f"{path}: {r.id}", r) for r in bagen[path]]
    elif file_format == "inspect":
        entries = []
        for imported in read_inspect_log(path, on_missing_usage=on_missing_usage):
            if env is not None:
                imported.family = env
            entries.append((str(path), imported))
    else:
        entries = []
        for record in _read_records(path):
            imported = _import_record(
                record,
                file_format,
                max_turns=max_turns,
                on_missing_usage=on_missing_usage,
                resolved=resolved,
                verdicts=verdicts,
            )
            if env is not None:
                imported.family = env
            entries.append((record.where, imported))
    return entries


def _family_caps(
    loaded: list[Rollout | _Imported], budget: float | None
) -> tuple[dict[str, list[_Imported]], dict[str, float]]:
    """The imports by family, and each family's token cap (given, else its median total)."""
    families: dict[str, list[_Imported]] = {}
    for entry in loaded:
        if isinstance(entry, _Imported):
            families.setdefault(entry.family, []).append(entry)
    caps: dict[str, float] = {}
    for family, members in families.items():
        if budget is not None:
            caps[family] = float(budget)
            continue
        median = family_budget([member.total for member in members])
        if median <= 0:
            raise RolloutFileError(
                f"family {family!r}: median total tokens is 0, cannot set a budget; pass one"
            )
        caps[family] = median
    return families, caps


def _budgeted(
    loaded: list[Rollout | _Imported],
    families: dict[str, list[_Imported]],
    caps: dict[str, float],
    budget: float | None,
) -> list[Rollout]:
    """Every entry as a rollout: the imports with their family's cap and how it was set."""
    out: list[Rollout] = []
    for entry in loaded:
        if isinstance(entry, Rollout):
            out.append(entry)
            continue
        meta = dict(entry.meta)
        meta.update(
            budget_rule="given" if budget is not None else "family median",
            family_size=len(families[entry.family]),
        )
        out.append(
            Rollout(
                entry.id,
                entry.family,
                {"tokens": caps[entry.family]},
                entry.success,
                entry.turns,
                meta,
            )
        )
    return out


# ------------------------------------------------------------------------ synthetic data

# Short, made-up step contents (the bundled file must stay small).
_SYN_STEPS: tuple[tuple[str, str], ...] = (
    ("Look at the layout.", "ls src tests"),
    ("Find the function.", "grep -rn 'def parse' src"),
    ("Read the module.", "sed -n 1,80p src/{mod}.py"),
    ("Reproduce the issue.", "python repro.py"),
    ("Patch the edge case.", "sed -i 's/< n/<= n/' src/{mod}.py"),
    ("Run the tests.", "pytest -q tests/test_{mod}.py"),
    ("Check the diff.", "git diff"),
)
_SYN_OUTPUTS: tuple[str, ...] = (
    "README.md setup.py src tests",
    "src/{mod}.py:41:def parse(text, n):",
    "Traceback (most recent call last): IndexError",
    "1 failed, 7 passed",
    "8 passed",
    "",
)
_SYN_MODULES = ("core", "parser", "io", "utils", "fields", "query")
_SYN_SUBMIT = "Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


def _bash(thought: str, command: str) -> str:
    return f"THOUGHT: {thought}\n```mswea_bash_command\n{command}\n```"


def synthesize_swe_trajectories(
    seed: int = SYNTHETIC_SEED, count: int = SYNTHETIC_COUNT
) -> list[dict[str, Any]]:
    """SYNTHETIC mini-swe-agent trajectories (no real agent), deterministic in ``seed``.

    Lengths run from 10 to 160 assistant calls (quantiles of 10 + 150 q^3, skewed to short runs).
    Token growth is what a chat API reports: call 1 reads a 1,800-4,200 token system +
    task prompt; each later call re-reads the history plus the last output and the new
    observation (20-8,000 tokens, log-normal); each call writes 30-1,200 tokens.  The
    160-call run stops with ``LimitsExceeded`` (unresolved); the others submit, resolved
    with probability falling from 0.85 at 10 calls to 0.25 at 160.  Every record carries
    ``info.synthetic = true``; only integers are stored, so the text is byte-stable.
    """
    if count < 2:
        raise ValueError("count must be at least 2 (the 10- and 160-call ends)")
    rng = np.random.default_rng(seed)
    # Quantiles of 10 + 150 q^3 (mean about 47 calls), ends pinned to 10 and 160 calls.
    lengths = [10 + round(150 * ((j + 0.5) / count) ** 3) for j in range(count)]
    lengths[0], lengths[-1] = 10, MAX_TURNS
    order = [int(i) for i in rng.permutation(count)]
    records: list[dict[str, Any]] = []
    for number, position in enumerate(order, start=1):
        length = lengths[position]
        module = _SYN_MODULES[int(rng.integers(len(_SYN_MODULES)))]
        capped = length >= MAX_TURNS
        resolved = (not capped) and bool(rng.random() < 0.85 - 0.6 * (length - 10) / 150)
        instance = f"synthetic__pkg-{number:04d}"
        messages = _syn_messages(rng, module, length, capped)
        records.append(_syn_record(instance, seed, capped, resolved, length, messages))
    return records


def _syn_messages(
    rng: np.random.Generator, module: str, length: int, capped: bool
) -> list[dict[str, Any]]:
    """One synthetic run's chat: the task, then ``length`` calls with their usage, each
    but the submitting one followed by an observation (draws from ``rng`` in order)."""
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "SYNTHETIC trajectory generated by pytest-budget; not a real run.",
        },
        {
            "role": "user",
            "content": f"Please solve this issue: parse() drops item n in {module}.",
        },
    ]
    prompt = int(rng.integers(1800, 4201))
    for call in range(1, length + 1):
        completion = int(np.clip(rng.lognormal(math.log(150), 0.6), 30, 1200))
        last = call == length
        if last and not capped:
            content = _SYN_SUBMIT
        else:
            thought, command = _SYN_STEPS[int(rng.integers(len(_SYN_STEPS)))]
            content = _bash(thought, command.format(mod=module))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        messages.append(
            {
                "role": "assistant",
                "content": content,
                "extra": {"response": {"usage": usage}},
            }
        )
        if last and not capped:
            break
        observed = int(np.clip(rng.lognormal(math.log(300), 1.0), 20, 8000))
        output = _SYN_OUTPUTS[int(rng.integers(len(_SYN_OUTPUTS)))].format(mod=module)
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>",
            }
        )
        prompt += completion + observed
    return messages


def _syn_record(
    instance: str,
    seed: int,
    capped: bool,
    resolved: bool,
    length: int,
    messages: list[dict[str, Any]],
) -> dict[str, Any]:
    """The mini-swe-agent record around one synthetic chat."""
    status = "LimitsExceeded" if capped else "Submitted"
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": status}})
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": instance,
        "info": {
            "synthetic": True,
            # The generator's name when the bundled file was written (kept: regenerating it
            # gives the same bytes).
            "generator": "pytest_budget.awareness.trajectories.synthesize_swe_trajectories",
            "seed": seed,
            "exit_status": status,
            "submission": "",
            "resolved": resolved,
            "model_stats": {"instance_cost": 0, "api_calls": length},
            "config": {"model": {"model_name": "synthetic"}},
        },
        "messages": messages,
    }


def synthetic_swe_text(seed: int = SYNTHETIC_SEED, count: int = SYNTHETIC_COUNT) -> str:
    """The bundled file's exact text: one compact JSON record per line."""
    return "".join(
        json.dumps(record, separators=(",", ":")) + "\n"
        for record in synthesize_swe_trajectories(seed, count)
    )


def bundled_swe_path() -> Path:
    """Where the bundled SYNTHETIC trajectories live (inside the installed package)."""
    return Path(__file__).parents[1] / "data" / SYNTHETIC_FILE


def bundled_swe_rollouts(*, budget: float | None = None) -> list[Rollout]:
    """The bundled SYNTHETIC trajectories imported as rollouts of family ``swe-synthetic``."""
    return load_trajectories(
        [bundled_swe_path()], fmt="mini-swe-agent", budget=budget, env=SYNTHETIC_ENV
    )


if __name__ == "__main__":  # regenerate the bundled file
    bundled_swe_path().write_text(synthetic_swe_text(), encoding="utf-8")
    print(f"wrote {bundled_swe_path()}")
