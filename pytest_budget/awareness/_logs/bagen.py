"""BAGEN's rollout dialogue logs (``*_eval_estimation_dialogues.json``) as rollouts.

The rules are BAGEN's reader (``TokenEstimationEnv._flatten_rollouts``) as
shared/facts/logs.md §1.4-1.6 states them:

* **File**: one JSON list of rollout objects (a single object is a one-element list).
* **Ids**: ``rollout-<i>``, ``i`` the 0-based position in the file's list, counting rollouts
  that yield nothing (BAGEN's ``rollout_index``); with several BAGEN files in one load the
  file name is put in front (``<stem>:rollout-<i>``).  ``absolute_env_id`` / ``instance_id``
  are kept in ``meta``.
* **Turn order**: turns sorted by ``turn_idx`` (missing or null = 0; ties keep file order).
* **Truncation**: stop at the first truncated turn and drop it and all after it; explicit:
  ``context_token_truncated`` true (on the turn or in its ``info``); implicit: the request
  total is above the budget B, the turn did not succeed, it has reply text, and no action
  ran (``actions`` an empty list; if ``actions`` is null/""/absent, ``action_names`` an
  empty list; neither present: not implicit).
* **Empty replies**: a turn whose reply (``parsed_response``, else ``raw_response``, else
  ``raw_generation``, each stripped) is empty vanishes with its tokens; a rollout left with
  no turn yields nothing (skipped, its index still counts).
* **Success**: ``rollout_success`` if truthy, else any kept turn's ``success`` is true (a
  SWE-bench harness report given with ``--budget-swe-report`` decides SWE rollouts by
  ``instance_id`` instead).
* **Observation / action**: ``user_prompt`` (else the last ``user`` message of
  ``messages``) / the reply text.  **Actor system prompt**: the first message of the first
  kept turn's ``messages`` when its role is ``system``.
* **Tokens** (§1.5, history excluded): per kept turn the request counts in/out/total (the
  ``api_*`` names, else the plain ones, else ``actual_token``), reasoning from
  ``api_interactions[*].usage.raw`` (``output_tokens_details`` else
  ``completion_tokens_details``), visible output = output - reasoning (else scaled by the
  word-and-punctuation counts of parsed over raw text), the history test (at least half of
  the comparisons ``in_i >= prev_in + visible_(i-1)``), fresh input and
  ``c_i = fresh_i + out_i``.  A turn whose ``c_i`` cannot be known is an error: BAGEN would
  make every probe of that rollout infeasible.
* **Budgets** (§1.6): Sokoban 2,500 tokens, Search-R1 3,500; SWE-bench (tag ``SWEBench`` /
  ``MiniSWEBench``) the family's ``statistics.median`` of C_T (``median_low`` when not
  whole), C_T taken with explicit truncation and empty replies only; then implicit
  truncation applies with that B.  ``--budget-rollout-cap`` replaces every B.  Warehouse
  logs (three money budgets) are refused.
* **Env label**: ``sokoban``, ``search`` or ``swe`` from the rollout's ``tag``, plus
  ``-<model>`` when the turns' ``api_interactions`` name one.

Every malformed input raises :class:`RolloutFileError` naming the file, the rollout and the
field.  Plain Python: no pytest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_budget.awareness._logs.formats import family_budget
from pytest_budget.awareness._logs.verdicts import HarnessVerdicts
from pytest_budget.awareness._replay.rollouts import Rollout, RolloutFileError, Turn, read_json_file

__all__ = ["BAGEN_BUDGETS", "SWE_TAGS", "load_bagen_dialogues", "read_bagen_list"]

#: Fixed budgets of BAGEN's token environments (logs.md §1.6).
BAGEN_BUDGETS = {"sokoban": 2500.0, "search": 3500.0}
#: Tags of BAGEN's SWE-bench converters (budget: the family median).
SWE_TAGS = ("SWEBench", "MiniSWEBench")
_WORDS = re.compile(r"\w+|[^\w\s]")


def read_bagen_list(path: Path) -> list[Any]:
    """The file's rollout list (a single object is a one-element list)."""
    data = read_json_file(path, "BAGEN dialogue log (a JSON list of rollouts)")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise RolloutFileError(
            f"{path}: expected a JSON list of rollouts, got a JSON {type(data).__name__}"
        )
    if not data:
        raise RolloutFileError(f"{path}: the rollout list is empty")
    return data


def _num(value: Any, where: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RolloutFileError(f"{where}: '{name}' must be a number of tokens, got {value!r}")
    if value < 0:
        raise RolloutFileError(f"{where}: '{name}' is negative ({value})")
    return float(value)


def _first(turn: Mapping[str, Any], names: Sequence[str], where: str) -> float | None:
    for name in names:
        value = _num(turn.get(name), where, name)
        if value is not None:
            return value
    return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _reply(turn: Mapping[str, Any]) -> str:
    for name in ("parsed_response", "raw_response", "raw_generation"):
        text = _text(turn.get(name))
        if text:
            return text
    return ""


def _reasoning(turn: Mapping[str, Any]) -> float | None:
    interactions = turn.get("api_interactions")
    if not isinstance(interactions, list):
        return None
    total, known = 0.0, False
    for attempt in interactions:
        usage = attempt.get("usage") if isinstance(attempt, dict) else None
        raw = usage.get("raw") if isinstance(usage, dict) else None
        if not isinstance(raw, dict):
            continue
        for details in ("output_tokens_details", "completion_tokens_details"):
            block = raw.get(details)
            count = block.get("reasoning_tokens") if isinstance(block, dict) else None
            if isinstance(count, int | float) and not isinstance(count, bool):
                total += float(count)
                known = True
                break
    return total if known else None


def _model(turns: Sequence[Mapping[str, Any]]) -> str | None:
    for turn in turns:
        interactions = turn.get("api_interactions")
        for attempt in interactions if isinstance(interactions, list) else ():
            model = attempt.get("model") if isinstance(attempt, dict) else None
            if isinstance(model, str) and model.strip():
                return model.strip()
    return None


def _explicit(turn: Mapping[str, Any]) -> bool:
    info = turn.get("info")
    nested = isinstance(info, dict) and info.get("context_token_truncated") is True
    return turn.get("context_token_truncated") is True or nested


def _request_total(turn: Mapping[str, Any], where: str) -> float | None:
    total = _first(turn, ("api_total_tokens", "total_tokens"), where)
    if total is not None:
        return total
    pin = _first(turn, ("api_input_tokens", "input_tokens"), where)
    pout = _first(turn, ("api_output_tokens", "output_tokens"), where)
    if pin is not None or pout is not None:
        return (pin or 0.0) + (pout or 0.0)
    return _num(turn.get("actual_token"), where, "actual_token")


def _implicit(turn: Mapping[str, Any], budget: float, where: str) -> bool:
    total = _request_total(turn, where)
    if total is None or total <= budget or turn.get("success") is True or not _reply(turn):
        return False
    actions = turn.get("actions")
    if actions is not None and actions != "":
        return isinstance(actions, list) and not actions
    names = turn.get("action_names")
    return isinstance(names, list) and not names


@dataclass
class _Raw:
    """One rollout of a file before its budget is known."""

    index: int
    where: str
    data: dict[str, Any]
    turns: list[dict[str, Any]]  # sorted by turn_idx
    kind: str
    model: str | None
    meta: dict[str, Any] = field(default_factory=dict)


def _kind(tag: Any, where: str) -> str:
    text = tag.lower() if isinstance(tag, str) else ""
    if tag in SWE_TAGS or "swe" in text:
        return "swe"
    if "sokoban" in text:
        return "sokoban"
    if "search" in text:
        return "search"
    if "warehouse" in text or "money" in text:
        raise RolloutFileError(
            f"{where}: Warehouse dialogue logs (three money budgets) are not read; "
            "replay Warehouse with --budget-env=warehouse"
        )
    raise RolloutFileError(
        f"{where}: 'tag' {tag!r} names no BAGEN token environment (Sokoban, Search-R1, "
        "SWEBench); give --budget-rollout-cap=TOKENS and --budget-rollout-env=LABEL to read it"
    )


def _parse(path: Path, index: int, data: Any, *, cap_given: bool) -> _Raw:
    where = f"{path}: rollout {index}"
    if not isinstance(data, dict):
        raise RolloutFileError(f"{where}: expected a rollout object, got {type(data).__name__}")
    turns = data.get("turns")
    if not isinstance(turns, list):
        raise RolloutFileError(f"{where}: 'turns' is missing or not a list")
    for j, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise RolloutFileError(f"{where}: turns[{j}] is not an object")
        key = turn.get("turn_idx")
        if key is not None and (isinstance(key, bool) or not isinstance(key, int)):
            raise RolloutFileError(f"{where}: turns[{j}]: 'turn_idx' must be an integer")
    ordered = sorted(turns, key=lambda t: t.get("turn_idx") or 0)  # stable: file order on ties
    try:
        kind = _kind(data.get("tag"), where)
    except RolloutFileError:
        if not cap_given:
            raise
        kind = re.sub(r"[^a-z0-9._-]+", "-", str(data.get("tag") or "bagen").lower()) or "bagen"
    return _Raw(index, where, data, ordered, kind, _model(ordered))


def _kept(raw: _Raw, budget: float | None) -> tuple[list[dict[str, Any]], str | None]:
    """Rules 3 and 4: cut at the first truncated turn, then drop empty replies."""
    kept: list[dict[str, Any]] = []
    cut: str | None = None
    for turn in raw.turns:
        where = f"{raw.where}: turn_idx {turn.get('turn_idx')}"
        if _explicit(turn):
            cut = "explicit"
            break
        if budget is not None and _implicit(turn, budget, where):
            cut = "implicit"
            break
        kept.append(turn)
    return [t for t in kept if _reply(t)], cut


@dataclass(frozen=True)
class _Counts:
    fresh: list[float]
    out: list[float]
    cost: list[float]
    prompt: list[float | None]
    reasoning: list[float | None]
    resent: bool


def _counts(raw: _Raw, turns: Sequence[Mapping[str, Any]]) -> _Counts:
    """§1.5: fresh input, output and c_i per kept turn (history excluded)."""
    ins: list[float | None] = []
    outs: list[float | None] = []
    tots: list[float | None] = []
    visible: list[float | None] = []
    reasoning: list[float | None] = []
    for turn in turns:
        where = f"{raw.where}: turn_idx {turn.get('turn_idx')}"
        pin = _first(turn, ("api_input_tokens", "input_tokens"), where)
        pout = _first(turn, ("api_output_tokens", "output_tokens", "actual_token"), where)
        tot = _request_total(turn, where)
        if tot is not None:
            if pin is None and pout is not None and tot - pout >= 0:
                pin = tot - pout
            if pout is None and pin is not None and tot - pin >= 0:
                pout = tot - pin
        r = _reasoning(turn)
        if pout is None:
            v = None
        elif r is not None:
            v = max(0.0, pout - r)
        else:
            raw_text = _text(turn.get("raw_response")) or _text(turn.get("raw_generation"))
            parsed = _text(turn.get("parsed_response"))
            if raw_text and parsed and raw_text != parsed:
                n_raw = len(_WORDS.findall(raw_text))
                ratio = min(1.0, len(_WORDS.findall(parsed)) / n_raw) if n_raw else 1.0
                v = float(round(pout * ratio))
            else:
                v = pout
        ins.append(pin)
        outs.append(pout)
        tots.append(tot)
        visible.append(v)
        reasoning.append(r)
    comparisons = passed = 0
    prev_in: float | None = None
    for i, pin in enumerate(ins):
        if i >= 1 and pin is not None and prev_in is not None:
            comparisons += 1
            passed += pin >= prev_in + (visible[i - 1] or 0.0)
        if pin is not None:
            prev_in = pin
    resent = comparisons >= 1 and 2 * passed >= comparisons
    fresh: list[float] = []
    outs_known: list[float] = []
    costs: list[float] = []
    prev_in = None
    for i, turn in enumerate(turns):
        pin, pout = ins[i], outs[i]
        f: float | None
        if pin is None:
            f = None
        elif resent and i > 0 and prev_in is not None:
            f = max(0.0, pin - prev_in - (visible[i - 1] or 0.0))
        else:
            f = pin
        if pin is not None:
            prev_in = pin
        if f is not None and pout is not None:
            c: float | None = f + pout
        elif not resent and tots[i] is not None:
            c = tots[i]
        else:
            c = f
        if c is None:
            raise RolloutFileError(
                f"{raw.where}: turn_idx {turn.get('turn_idx')}: no token counts "
                "('api_input_tokens'/'api_output_tokens'/'api_total_tokens' or "
                "'input_tokens'/'output_tokens'/'total_tokens' or 'actual_token'); BAGEN "
                "cannot know this rollout's total"
            )
        fresh.append(f if f is not None else c - (pout or 0.0))
        outs_known.append(pout if pout is not None else c - (f or 0.0))
        costs.append(c)
    return _Counts(fresh, outs_known, costs, ins, reasoning, resent)


def _observation(turn: Mapping[str, Any]) -> str | None:
    prompt = turn.get("user_prompt")
    if isinstance(prompt, str):
        return prompt
    messages = turn.get("messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else None
    return None


def _system(turn: Mapping[str, Any]) -> str | None:
    messages = turn.get("messages")
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, dict) and first.get("role") == "system":
            content = first.get("content")
            return content if isinstance(content, str) else None
    return None


def _label(kind: str, model: str | None) -> str:
    if not model:
        return kind
    name = re.sub(r"[^a-z0-9._-]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-")
    return f"{kind}-{name}" if name else kind


def _total(raw: _Raw, budget: float | None) -> float:
    turns, _ = _kept(raw, budget)
    return sum(_counts(raw, turns).cost) if turns else 0.0


def _family_caps(
    raws: Mapping[Path, list[_Raw]], budget: float | None, env: str | None
) -> dict[str, float]:
    """Each family's B: given, BAGEN's per environment, or a SWE family's median."""
    # SWE families: B = BAGEN's median of C_T over all their rollouts (explicit cuts only).
    caps: dict[str, float] = {}
    swe: dict[str, list[float]] = {}
    for items in raws.values():
        for raw in items:
            label = env or _label(raw.kind, raw.model)
            if budget is not None:
                caps[label] = budget
            elif raw.kind in BAGEN_BUDGETS:
                caps[label] = BAGEN_BUDGETS[raw.kind]
            elif raw.kind == "swe":
                swe.setdefault(label, []).append(_total(raw, None))
    for label, totals in swe.items():
        median = family_budget(totals)
        if median <= 0:
            raise RolloutFileError(
                f"family {label!r}: median total tokens is 0, cannot set a budget; pass one"
            )
        caps[label] = median
    return caps


def _built(turns: list[dict[str, Any]], counts: _Counts) -> list[Turn]:
    """The kept turns as rollout turns, charged and annotated with their counts."""
    built: list[Turn] = []
    for i, turn in enumerate(turns):
        info: dict[str, Any] = {
            "new_input_tokens": counts.fresh[i],
            "completion_tokens": counts.out[i],
            "turn_idx": turn.get("turn_idx"),
        }
        if counts.prompt[i] is not None:
            info["prompt_tokens"] = counts.prompt[i]
        if counts.reasoning[i] is not None:
            info["reasoning_tokens"] = counts.reasoning[i]
        built.append(Turn({"tokens": counts.cost[i]}, _observation(turn), _reply(turn), info))
    return built


def load_bagen_dialogues(
    paths: Sequence[Path],
    *,
    budget: float | None = None,
    env: str | None = None,
    verdicts: HarnessVerdicts | None = None,
) -> dict[Path, list[Rollout]]:
    """Every BAGEN dialogue file of one load, as rollouts per file (rules: module doc).

    ``budget`` replaces every environment's B; ``env`` relabels every rollout into one
    family; ``verdicts`` decide SWE rollouts by ``instance_id``.
    """
    prefix = len(paths) > 1
    raws: dict[Path, list[_Raw]] = {}
    for path in paths:
        raws[path] = [
            _parse(path, i, data, cap_given=budget is not None)
            for i, data in enumerate(read_bagen_list(path))
        ]
    caps = _family_caps(raws, budget, env)
    out: dict[Path, list[Rollout]] = {}
    for path, items in raws.items():
        rollouts: list[Rollout] = []
        for raw in items:
            label = env or _label(raw.kind, raw.model)
            cap = caps[label]
            turns, cut = _kept(raw, cap)
            if not turns:
                continue  # yields nothing; its index still counts
            counts = _counts(raw, turns)
            data = raw.data
            instance = data.get("instance_id")
            if verdicts is not None and isinstance(instance, str):
                success, rule = verdicts.verdict(instance), "harness report resolved_ids"
            elif data.get("rollout_success"):
                success, rule = True, "rollout_success"
            else:
                success = any(t.get("success") is True for t in turns)
                rule = "any kept turn's success"
            built = _built(turns, counts)
            meta: dict[str, Any] = {
                "format": "bagen",
                "source": str(path),
                "rollout_index": raw.index,
                "tag": data.get("tag"),
                "success_rule": rule,
                "history_resent": counts.resent,
                "truncated": cut,
                "budget_rule": "given"
                if budget is not None
                else ("family median" if raw.kind == "swe" else f"BAGEN {raw.kind} budget"),
                "model": raw.model,
            }
            for key in ("absolute_env_id", "env_id", "instance_id"):
                if data.get(key) is not None:
                    meta[key] = data[key]
            system = _system(turns[0])
            if system is not None:
                meta["actor_system_prompt"] = system
            rid = f"rollout-{raw.index}"
            if prefix:
                rid = f"{path.name.split('.')[0]}:{rid}"
            rollouts.append(Rollout(rid, label, {"tokens": cap}, success, tuple(built), meta))
        out[path] = rollouts
    return out
