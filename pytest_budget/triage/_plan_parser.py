"""Read a planner's answer into a :class:`Plan`, repairing what can be repaired.

TRIAGE (App. B) parses plans as JSON and passes recoverable outputs through a deterministic
repair pass.  :func:`parse_plan` does the same for whatever a planner returned: a
:class:`Plan`, a ``{"plan": [...]}`` mapping, a bare list of entries, or raw model text
(reasoning tags, code fences and prose around the JSON are tolerated).

Every change is recorded in ``Plan.repairs`` as a short sentence, and the status says how
the plan was obtained: ``OK`` (clean input, nothing changed), ``REPAIRED`` (something was
changed, including discarding text around the JSON) or ``UNPARSEABLE`` (nothing plan-like
could be recovered; ``entries`` is empty and ``repairs`` gives the reason).  The parser never
raises on malformed input.  It knows nothing of the budget, so allocations summing past B
are left for the scorer.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from pytest_budget._core.textscan import remove_tag_blocks
from pytest_budget.triage._types import Plan, PlanEntry, PlanStatus

__all__ = ["MAX_TOKENS", "parse_plan"]

_ID_KEYS = ("id", "problem_id")
_TOKEN_KEYS = ("tokens", "allocation", "budget", "max_tokens")
_PLAN_KEY = "plan"

#: Work allowed for failed decode attempts while scanning one text (roughly characters
#: examined), so pathological input such as "[[[[..." stays cheap.
_SCAN_BUDGET = 30_000_000
#: Charge for a decode that failed by nesting too deeply (it gives no error position).
_DEEP_FAILURE_COST = 50_000
#: How deep to look inside decoded JSON for a nested plan.
_MAX_DEPTH = 6
#: Largest token count a plan entry keeps (2**53, exact as a JSON number in any reader).
#: Budgets are sums of measured output tokens, far below it, so a larger allocation
#: behaves exactly like this one: it exceeds whatever budget remains (regime E stops there).
MAX_TOKENS = 2**53
#: Integer literals longer than this are not converted digit by digit (Python refuses
#: past 4,300 digits, and the cost is quadratic): they are read as "huger than any budget".
_MAX_INT_DIGITS = 60

#: Reasoning blocks removed before the plan is read (linear time: pytest_budget._core.textscan).
_REASONING_TAGS = ("think", "thinking", "reasoning")
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
# Only starts a plan can have: an object with a string key (or empty), or an array of
# containers.  This skips LaTeX braces and citation brackets in prose without a decode.
_JSON_START = re.compile(r"\{\s*[\"}]|\[\s*[\[{\]]")
_FENCE = re.compile(r"```[\w+-]*")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_SINGLE_QUOTED = re.compile(r"'([^'\"\\\n]*)'")
_NUMBER = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?:tokens?)?", re.I)

_MISSING = object()
_SCALARS = (str, int, float, bool, type(None))


@dataclass
class _Located:
    """Raw entries found in the input, plus notes on how they were found."""

    items: Sequence[object]
    notes: list[str] = field(default_factory=list)
    #: True when pieced together from loose entries (the enclosing JSON never closed).
    salvaged: bool = False


def parse_plan(raw: object, pool_ids: Collection[str]) -> Plan:
    """Parse and repair ``raw`` into a plan over ``pool_ids``.

    Entries keep their order.  Ids are matched as strings (an integer id 3 matches pool id
    "3"); ids not in the pool are dropped, and of a repeated id only the first entry stays.
    Token counts become non-negative integers ("1,200" -> 1200, 12.7 -> 12, -5 -> 0, NaN
    and anything non-numeric -> 0, anything above :data:`MAX_TOKENS` (1e30, Infinity) ->
    :data:`MAX_TOKENS`).  Entries with 0 tokens are kept but are not planned.
    """
    # A frozenset (as a caller parsing many plans passes) is checked once, then reused.
    pool = (
        _string_ids(pool_ids)
        if isinstance(pool_ids, frozenset)
        else frozenset(str(item_id) for item_id in pool_ids)
    )
    prior: tuple[str, ...] = ()
    prior_repaired = False
    located: _Located | str
    if isinstance(raw, Plan):
        if raw.status is PlanStatus.UNPARSEABLE:
            return _unparseable(*(raw.repairs or ("plan was marked unparseable",)))
        prior, prior_repaired = raw.repairs, raw.status is PlanStatus.REPAIRED
        located = _Located(items=raw.entries)
    elif isinstance(raw, str | bytes | bytearray):
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", errors="replace")
        located = _from_text(text)
    elif isinstance(raw, Mapping | list | tuple):
        located = _select([(raw, 0, 0)], whole=True) or "no 'plan' list in the object"
    else:
        located = f"expected a plan object, list or text, got {type(raw).__name__}"
    if isinstance(located, str):
        return _unparseable(located)

    normalized = _normalize(located.items, pool)
    if isinstance(normalized, str):
        return _unparseable(*located.notes, normalized)
    entries, entry_notes = normalized
    repairs = (*prior, *located.notes, *entry_notes)
    repaired = prior_repaired or bool(repairs)
    return Plan(
        entries=tuple(entries),
        status=PlanStatus.REPAIRED if repaired else PlanStatus.OK,
        repairs=repairs,
    )


@functools.lru_cache(maxsize=64)
def _string_ids(pool_ids: frozenset[object]) -> frozenset[str]:
    return frozenset(str(item_id) for item_id in pool_ids)


def _unparseable(*reasons: str) -> Plan:
    return Plan(entries=(), status=PlanStatus.UNPARSEABLE, repairs=tuple(reasons))


# --------------------------------------------------------------------------- text


def _from_text(text: str) -> _Located | str:
    body = text.strip()
    if not body:
        return "empty text"
    visible = _strip_reasoning(body)
    attempts: list[tuple[str, list[str]]] = []
    if visible == body:
        attempts.append((body, []))
    else:
        attempts.append((visible, ["removed <think> reasoning"]))
        # Some models put the whole answer inside the reasoning block.
        attempts.append((body, ["plan taken from inside the <think> reasoning"]))
    for candidate, notes in attempts:
        if not candidate:
            continue
        # A complete plan, even one needing near-JSON fixes, beats salvaging loose entries.
        found = (
            _search(candidate, salvage=False)
            or _search_loosened(candidate, salvage=False)
            or _search(candidate, salvage=True)
            or _search_loosened(candidate, salvage=True)
        )
        if found is not None:
            found.notes[:0] = notes
            return found
    return "no JSON object with a 'plan' list found"


def _strip_reasoning(text: str) -> str:
    if "<" not in text:  # no tag at all: skip the three scans
        return text.strip()
    visible = remove_tag_blocks(text, _REASONING_TAGS, " ", space_before_close=True)
    closes = list(_THINK_CLOSE.finditer(visible))
    if closes:
        # The opening tag is often swallowed by the chat template; keep what follows.
        visible = visible[closes[-1].end() :]
    opened = _THINK_OPEN.search(visible)
    if opened:
        # Reasoning that never closed (cut off): nothing after it is an answer.
        visible = visible[: opened.start()]
    return visible.strip()


def _search_loosened(text: str, *, salvage: bool) -> _Located | None:
    """Retry after cheap fixes for near-JSON: trailing commas, then single quotes."""
    no_commas = _TRAILING_COMMA.sub(r"\1", text)
    if no_commas != text:
        found = _search(no_commas, salvage=salvage)
        if found is not None:
            found.notes.insert(0, "removed trailing commas")
            return found
    quoted = _SINGLE_QUOTED.sub(r'"\1"', no_commas)
    if quoted != no_commas:
        found = _search(quoted, salvage=salvage)
        if found is not None:
            found.notes[:0] = ["removed trailing commas"] if no_commas != text else []
            found.notes.insert(0, "read single-quoted strings as JSON strings")
            return found
    return None


def _search(text: str, *, salvage: bool) -> _Located | None:
    values = _decode_all(text)
    whole = len(values) == 1 and values[0][1] == 0 and values[0][2] == len(text)
    found = _select(values, whole=whole, salvage=salvage)
    if found is None or whole or found.salvaged:
        return found
    return _with_surroundings(found, text, values)


def _decode_all(text: str) -> list[tuple[object, int, int]]:
    """Every top-level JSON value in ``text`` as (value, start, end), left to right."""
    decoder = _FAST_DECODER
    values: list[tuple[object, int, int]] = []
    spent = 0
    position = 0
    while spent < _SCAN_BUDGET:
        match = _JSON_START.search(text, position)
        if match is None:
            break
        start = match.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as error:
            # Building the error counts lines up to its position, so charge for that too.
            spent += error.pos + 1
            position = start + 1
            continue
        except ValueError:
            # An integer literal past Python's 4,300-digit limit: decode again reading
            # long literals as +/-inf (clamped later).  Anything else: skip this start.
            spent += len(text) - start
            if decoder is _FAST_DECODER:
                decoder = _SAFE_DECODER
            else:
                position = start + 1
            continue
        except RecursionError:
            spent += _DEEP_FAILURE_COST
            position = start + 1
            continue
        values.append((value, start, end))
        # Values nested inside this one are reached through it, not by rescanning.
        position = end
    return values


def _parse_int(literal: str) -> int | float:
    """A JSON integer; one too long to matter becomes +/-inf (clamped or zeroed later)."""
    if len(literal.lstrip("-")) > _MAX_INT_DIGITS:
        return -math.inf if literal.startswith("-") else math.inf
    return int(literal)


def _parse_constant(name: str) -> float:
    # NaN / Infinity / -Infinity are not JSON but models write them; read them as floats.
    return float(name)


#: The C scanner's own integer parsing is fast; the safe decoder is only used for a text in
#: which it refused an integer literal (too many digits).
_FAST_DECODER = json.JSONDecoder(parse_constant=_parse_constant)
_SAFE_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_constant=_parse_constant)


def _with_surroundings(
    found: _Located, text: str, values: list[tuple[object, int, int]]
) -> _Located:
    parts: list[str] = []
    cursor = 0
    for _, start, end in values:
        parts.append(text[cursor:start])
        cursor = end
    parts.append(text[cursor:])
    outside = "".join(parts)
    notes: list[str] = []
    if _FENCE.search(outside):
        notes.append("removed markdown code fence")
    if _FENCE.sub("", outside).strip():
        notes.append("ignored text around the JSON plan")
    found.notes[:0] = notes
    return found


# --------------------------------------------------------------------------- choosing the plan


def _select(
    values: Sequence[tuple[object, int, int]], *, whole: bool, salvage: bool = True
) -> _Located | None:
    """Pick the plan among decoded values: a 'plan' list, else an entry list, else entries."""
    first = values[0][0] if len(values) == 1 else None
    if type(first) is dict:
        # Fast path for the usual answer, {"plan": [entries...], ...scalars}: the walk
        # below would find this one list and nothing else, so take it directly.
        found = first.get(_PLAN_KEY)
        if (
            type(found) is list
            and (not found or _is_entry(found[0]))
            and all(type(v) in _SCALARS for k, v in first.items() if k != _PLAN_KEY)
        ):
            return _Located(items=found)
    plans: list[tuple[tuple[str, ...], Sequence[object]]] = []
    entry_lists: list[tuple[tuple[str, ...], Sequence[object]]] = []
    for value, _, _ in values:
        for path, node in _walk(value, (), 0):
            if isinstance(node, Mapping):
                for key, child in node.items():
                    if str(key).strip().lower() == _PLAN_KEY and isinstance(child, list | tuple):
                        plans.append((path, child))
                        break
            elif any(_is_entry(item) for item in node):
                entry_lists.append((path, node))

    if plans:
        # Drafts come first and the final answer last, so the last plan wins.
        path, chosen = plans[-1]
        notes = []
        if len(plans) > 1:
            notes.append(f"found {len(plans)} plans; used the last")
        if path:
            notes.append(f"used the plan nested under {_show_path(path)}")
        return _Located(items=chosen, notes=notes)

    top = values[0][0] if values else None
    if whole and isinstance(top, list | tuple):
        return _Located(items=top)  # a bare entry list (possibly empty) is a plan as it is

    if entry_lists:
        path, items = entry_lists[-1]
        notes = []
        if path:
            notes.append(f"used the list under {_show_path(path)} as the plan")
        elif len(entry_lists) > 1:
            notes.append(f"found {len(entry_lists)} entry lists; used the last")
        return _Located(items=items, notes=notes)

    # Truncated output: the enclosing object never closed, but whole entries inside did.
    loose = [value for value, _, _ in values if _is_entry(value)] if salvage else []
    if loose:
        count = f"{len(loose)} whole {'entry' if len(loose) == 1 else 'entries'}"
        note = f"no complete plan list; recovered {count}"
        return _Located(items=loose, notes=[note], salvaged=True)
    return None


def _walk(
    node: object, path: tuple[str, ...], depth: int, seen: set[int] | None = None
) -> Iterator[tuple[tuple[str, ...], Mapping[object, object] | Sequence[object]]]:
    """Mappings and lists inside ``node`` (outermost first), with the keys leading to them.

    Each container is visited once: an object reply may hold one list under many
    references (40 references, 12 levels deep, are 40**12 paths but 13 lists)."""
    if depth > _MAX_DEPTH:
        return
    seen = set() if seen is None else seen
    if isinstance(node, Mapping | list | tuple):
        if id(node) in seen:
            return
        seen.add(id(node))
    if isinstance(node, Mapping):
        yield path, node
        for key, child in node.items():
            yield from _walk(child, (*path, str(key)), depth + 1, seen)
    elif isinstance(node, list | tuple):
        yield path, node
        if not any(_is_entry(item) for item in node):
            for item in node:
                yield from _walk(item, path, depth + 1, seen)


def _show_path(path: tuple[str, ...]) -> str:
    return ".".join(repr(part) for part in path)


# --------------------------------------------------------------------------- entries


def _fields(item: object) -> dict[str, object] | None:
    """An entry's fields with normalised key names, or None if it is not an object."""
    if isinstance(item, PlanEntry):
        return {"id": item.id, "tokens": item.tokens}
    if isinstance(item, Mapping):
        fields: dict[str, object] = {}
        for key, value in item.items():
            fields.setdefault(str(key).strip().lower(), value)
        return fields
    return None


def _first(fields: Mapping[str, object], keys: Sequence[str]) -> object:
    for key in keys:
        if key in fields:
            return fields[key]
    return _MISSING


def _is_entry(item: object) -> bool:
    if type(item) is dict and ("id" in item or "problem_id" in item):
        return True  # the common case, without building the normalised fields
    fields = _fields(item)
    return fields is not None and _first(fields, _ID_KEYS) is not _MISSING


def _normalize(
    items: Sequence[object], pool: AbstractSet[str]
) -> tuple[list[PlanEntry], list[str]] | str:
    entries: list[PlanEntry] = []
    notes: list[str] = []
    seen: set[str] = set()
    any_entry = False
    for position, item in enumerate(items, start=1):
        # Fast path for the common clean entry, e.g. {"id": "p3", "tokens": 120}: keys
        # already canonical, a pool id seen for the first time, a count needing no repair.
        # Anything else takes the general path below, which records what it changed.
        if type(item) is dict and len(item) == 2 and "id" in item and "tokens" in item:
            raw, count = item["id"], item["tokens"]
            if (
                type(raw) is str
                and type(count) is int
                and raw in pool
                and raw not in seen
                and 0 <= count <= MAX_TOKENS
            ):
                any_entry = True
                seen.add(raw)
                entries.append(PlanEntry(raw, count))
                continue
        where = f"entry {position}"
        fields = _fields(item)
        if fields is None:
            notes.append(f"{where}: not an object, dropped")
            continue
        raw_id = _first(fields, _ID_KEYS)
        if raw_id is _MISSING:
            notes.append(f"{where}: no id, dropped")
            continue
        any_entry = True
        item_id, id_note = _coerce_id(raw_id, pool)
        if item_id is None:
            notes.append(f"{where}: id {_show(raw_id)} is not usable, dropped")
            continue
        if id_note:
            notes.append(f"{where}: {id_note}")
        if item_id not in pool:
            notes.append(f"{where}: dropped id {_show(item_id)} (not in the pool)")
            continue
        if item_id in seen:
            notes.append(f"{where}: dropped repeated id {_show(item_id)}")
            continue
        seen.add(item_id)
        tokens, token_note = _coerce_tokens(_first(fields, _TOKEN_KEYS))
        if token_note:
            notes.append(f"{where} ({_show(item_id)}): {token_note}")
        entries.append(PlanEntry(id=item_id, tokens=tokens))
    if items and not any_entry:
        return "the plan list holds no entries with an id"
    return entries, notes


def _coerce_id(raw: object, pool: AbstractSet[str]) -> tuple[str | None, str | None]:
    if isinstance(raw, str):
        if raw not in pool and raw.strip() in pool:
            return raw.strip(), f"stripped spaces from id {_show(raw)}"
        return raw, None
    if isinstance(raw, bool):
        return None, None
    if isinstance(raw, int):
        if raw.bit_length() > 200:  # no pool id is that long; str() would be slow or refuse
            return None, None
        return str(raw), f"id {raw} read as {_show(str(raw))}"
    if isinstance(raw, float) and raw.is_integer():
        text = str(int(raw))
        return text, f"id {raw} read as {_show(text)}"
    return None, None


def _coerce_tokens(raw: object) -> tuple[int, str | None]:
    """A non-negative integer token count, and a note whenever the value had to change.

    Negative counts become 0, fractions are floored, and counts above :data:`MAX_TOKENS`
    (including +inf and literals too long to convert) become :data:`MAX_TOKENS`.  NaN and
    anything that is not a number read as 0.
    """
    if raw is _MISSING:
        return 0, "no token count, read as 0"
    number: float | int | None = None
    if isinstance(raw, bool):
        number = None
    elif isinstance(raw, int):
        if 0 <= raw <= MAX_TOKENS:
            return raw, None
        number = raw
    elif isinstance(raw, float):
        number = None if math.isnan(raw) else raw
    elif isinstance(raw, str):
        number = _parse_number(raw)
    if number is None:
        return 0, f"token count {_show(raw)} is not a number, read as 0"
    if number > MAX_TOKENS:
        return MAX_TOKENS, f"token count {_show(raw)} exceeds any budget, read as {MAX_TOKENS}"
    tokens = 0 if number <= 0 else math.floor(number)  # -inf included
    return tokens, f"token count {_show(raw)} read as {tokens}"


def _parse_number(text: str) -> float | None:
    # Thousands separators and a trailing unit are common in model output.
    cleaned = text.strip().replace(",", "").replace("_", "")
    if len(cleaned) > 400:
        return None
    match = _NUMBER.fullmatch(cleaned)
    if match is None:
        return None
    value = float(match.group(1))  # a huge literal gives inf, clamped by the caller
    return None if math.isnan(value) else value


def _show(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        # repr() of a huge integer is slow and refuses past 4,300 digits.
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except Exception:  # a user object whose repr fails must not crash the parser
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 40 else text[:37] + "..."
