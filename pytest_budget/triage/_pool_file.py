"""User pools as JSONL files (TRIAGE §4): load, validate, chunk and write back.

One JSON object per line; blank lines are skipped (JSONL has no comment syntax)::

    {"id": "p1", "text": "What is 2 + 3?", "answer": 5, "grader": "numeric"}
    {"id": "p2", "text": "...", "value": 2, "baseline": {"solved": true, "tokens": 812}}

Fields: ``id`` (required; a non-empty string, an integer is accepted and turned into its
decimal string), ``text`` (required, non-empty string), ``answer`` (any JSON, default null),
``grader`` (string, default ``"exact"``), ``value`` (number > 0, default 1), ``unsolvable``
(boolean, default false), ``baseline`` (``{"solved": bool, "tokens": int from 0 to
10^12}``, the Phase 0 result when the user already has it) and ``domain`` (the item's own
domain label, default the file's stem: e.g. unsolvable items taken from another dataset,
as TRIAGE injects AbstentionBench items, keep their source's label).  Other fields are
allowed and ignored, so a file exported from another tool can carry its own metadata.  The
pool's name (and the planner prompt's domain) is the file's stem.

Every problem is reported as a :class:`PoolFileError` whose message is one line naming the
file, the line and the fix.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_budget.triage._types import Baseline, Item, Pool

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "KNOWN_FIELDS",
    "MAX_BASELINE_TOKENS",
    "PoolFileError",
    "chunk_pool",
    "load_pool_file",
    "load_pools",
    "write_pool_file",
]

#: Largest ``baseline.tokens`` a pool line may give (a trillion: far past any model's
#: output, and small enough that no pool's budget leaves int64).
MAX_BASELINE_TOKENS = 10**12

DEFAULT_CHUNK_SIZE = 30
"""TRIAGE partitions larger pools into consecutive chunks of at most 30 problems."""

KNOWN_FIELDS: tuple[str, ...] = (
    "id",
    "text",
    "answer",
    "grader",
    "value",
    "unsolvable",
    "baseline",
    "domain",
)
"""The fields a pool file line may set; any other field is ignored."""


class PoolFileError(ValueError):
    """A pool file cannot be used; the message is one line: ``file:line: problem; fix``."""


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages about wrong types."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Line:
    """Error helper for one line of one file."""

    def __init__(self, path: str, number: int) -> None:
        self.path = path
        self.number = number

    def error(self, problem: str) -> PoolFileError:
        return PoolFileError(f"{self.path}:{self.number}: {problem}")


def _parse_id(raw: dict[str, Any], where: _Line) -> str:
    if "id" not in raw:
        raise where.error('missing "id"; every item needs a unique "id" string')
    value = raw["id"]
    # JSON true/false decode to bool, a subclass of int: never an id.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise where.error(
            f'"id" must be a string, got {_json_type(value)} {json.dumps(value)}; quote it'
        )
    if not value.strip():
        raise where.error('empty "id"; give every item a non-empty, unique "id"')
    return value


def _parse_text(raw: dict[str, Any], where: _Line, item_id: str) -> str:
    if "text" not in raw:
        raise where.error(f'item {item_id!r} has no "text"; add the problem statement')
    value = raw["text"]
    if not isinstance(value, str):
        raise where.error(f'"text" of item {item_id!r} must be a string, got {_json_type(value)}')
    if not value.strip():
        raise where.error(f'"text" of item {item_id!r} is empty; add the problem statement')
    return value


def _parse_grader(
    raw: dict[str, Any], where: _Line, item_id: str, valid_graders: Collection[str] | None
) -> str:
    value = raw.get("grader", "exact")
    if not isinstance(value, str):
        raise where.error(f'"grader" of item {item_id!r} must be a string, got {_json_type(value)}')
    if valid_graders is not None and value not in valid_graders:
        known = ", ".join(sorted(valid_graders))
        raise where.error(f"unknown grader {value!r} for item {item_id!r}; use one of: {known}")
    return value


def _parse_value(raw: dict[str, Any], where: _Line, item_id: str) -> float:
    value = raw.get("value", 1)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(
            f'"value" of item {item_id!r} must be a number > 0, got '
            f"{_json_type(value)} {json.dumps(value)}"
        )
    # A huge literal such as 1e400 decodes to inf.
    if not math.isfinite(value) or value <= 0:
        raise where.error(f'"value" of item {item_id!r} must be a number > 0, got {value}')
    return float(value)


def _parse_unsolvable(raw: dict[str, Any], where: _Line, item_id: str) -> bool:
    value = raw.get("unsolvable", False)
    if not isinstance(value, bool):
        raise where.error(
            f'"unsolvable" of item {item_id!r} must be true or false, got '
            f"{_json_type(value)} {json.dumps(value)}"
        )
    return value


def _parse_baseline(raw: dict[str, Any], where: _Line, item_id: str) -> Baseline | None:
    value = raw.get("baseline")
    if value is None:
        return None
    shape = '{"solved": true, "tokens": 812}'
    if not isinstance(value, dict):
        raise where.error(
            f'"baseline" of item {item_id!r} must be an object like '
            f"{shape}, got {_json_type(value)}"
        )
    solved = value.get("solved")
    if not isinstance(solved, bool):
        raise where.error(
            f'"baseline.solved" of item {item_id!r} must be true or false, got {_json_type(solved)}'
        )
    tokens = value.get("tokens")
    # An integral float (812.0, as some tools write counts) is accepted as that integer.
    if isinstance(tokens, float) and tokens.is_integer():
        tokens = int(tokens)
    if (
        isinstance(tokens, bool)
        or not isinstance(tokens, int)
        or not 0 <= tokens <= MAX_BASELINE_TOKENS
    ):
        shown = (
            json.dumps(tokens) if not isinstance(tokens, int) or tokens < 10**20 else "a huge count"
        )
        got = f"got {shown}" if "tokens" in value else "it is missing"
        raise where.error(
            f'"baseline.tokens" of item {item_id!r} must be an integer from 0 to '
            f"{MAX_BASELINE_TOKENS} (output tokens); {got}"
        )
    return Baseline(solved=solved, tokens=tokens)


def _parse_domain(raw: dict[str, Any], where: _Line, item_id: str, default: str) -> str:
    value = raw.get("domain", default)
    if not isinstance(value, str) or not value.strip():
        raise where.error(
            f'"domain" of item {item_id!r} must be a non-empty string (the item\'s own domain '
            f"label, default the file's stem), got {_json_type(value)} {json.dumps(value)}"
        )
    return value.strip()


class _NonJsonConstant(Exception):
    pass


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN and Infinity by default; they are not JSON and write_pool_file
    # could not write them back.
    raise _NonJsonConstant(name)


def _read_lines(path: Path, shown: str) -> list[str]:
    """The file's lines (without line endings), or a PoolFileError for unreadable files."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise PoolFileError(f"{shown}: file not found; check the pool file path") from None
    except IsADirectoryError:
        raise PoolFileError(f"{shown}: is a directory; pass a .jsonl file") from None
    except OSError as exc:
        raise PoolFileError(
            f"{shown}: cannot be read ({exc.strerror}); check its permissions"
        ) from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark, as some editors write
    # Split bytes on b"\n" only: str.splitlines() would also split on U+2028 and friends,
    # which may legally appear unescaped inside JSON strings.
    lines = []
    for number, chunk in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(chunk.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as exc:
            # Everything before the bad byte decoded, so its character column is exact.
            column = len(chunk[: exc.start].decode("utf-8")) + 1
            raise PoolFileError(
                f"{shown}:{number}: not valid UTF-8 (byte 0x{chunk[exc.start]:02x} at column "
                f"{column}); save the file as UTF-8"
            ) from None
    return lines


def load_pool_file(
    path: str | os.PathLike[str], *, valid_graders: Collection[str] | None = None
) -> tuple[Item, ...]:
    """Read and validate one JSONL pool file; items keep the file's order.

    ``valid_graders``, when given, is the set of grader names an item may use (the caller
    passes the built-in graders' names); None accepts any name.
    """
    shown = os.fspath(path)
    file = Path(shown)
    domain = file.stem
    items: list[Item] = []
    first_seen: dict[str, int] = {}
    for number, line in enumerate(_read_lines(file, shown), start=1):
        if not line.strip():
            continue
        where = _Line(shown, number)
        try:
            raw = json.loads(line, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise where.error(
                f"not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object per line"
            ) from None
        except _NonJsonConstant as exc:
            raise where.error(
                f"not valid JSON ({exc.args[0]} is not a JSON value); write null or a number"
            ) from None
        except RecursionError:
            raise where.error(
                "JSON nested too deeply to read; write one flat JSON object per line"
            ) from None
        if not isinstance(raw, dict):
            raise where.error(
                f"expected a JSON object, got {_json_type(raw)}; write one object per line like "
                '{"id": "p1", "text": "..."}'
            )
        item_id = _parse_id(raw, where)
        if item_id in first_seen:
            raise where.error(
                f"duplicate id {item_id!r} (first seen on line {first_seen[item_id]}); "
                "ids must be unique within a file"
            )
        first_seen[item_id] = number
        items.append(
            Item(
                id=item_id,
                text=_parse_text(raw, where, item_id),
                value=_parse_value(raw, where, item_id),
                answer=raw.get("answer"),
                grader=_parse_grader(raw, where, item_id, valid_graders),
                unsolvable=_parse_unsolvable(raw, where, item_id),
                domain=_parse_domain(raw, where, item_id, domain),
                baseline=_parse_baseline(raw, where, item_id),
            )
        )
    if not items:
        raise PoolFileError(
            f"{shown}: no items (the file is empty or has only blank lines); "
            'add one JSON object per line like {"id": "p1", "text": "..."}'
        )
    return tuple(items)


def _check_chunk_size(chunk_size: int) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk size must be a positive integer, got {chunk_size!r}")


def chunk_pool(
    name: str, items: Sequence[Item], chunk_size: int = DEFAULT_CHUNK_SIZE
) -> tuple[Pool, ...]:
    """Split ``items`` into consecutive, balanced pools of at most ``chunk_size`` items.

    The fewest chunks that respect ``chunk_size`` are used, and their sizes differ by at
    most one (65 items at 30 -> 22, 22, 21, not 30, 30, 5): a tiny trailing chunk would
    make a cell whose budget, oracle and random reference rest on a handful of items.
    One chunk is named ``name``; several are ``name#0``, ``name#1``, ...  Each pool's
    domain is ``name``.  Larger pools are chunked because a planner sees the whole pool in
    one prompt and the TRIAGE setting is pools of at most 30.
    """
    _check_chunk_size(chunk_size)
    if not items:
        raise ValueError(f"pool {name!r} has no items")
    count = -(-len(items) // chunk_size)  # ceil
    small, extra = divmod(len(items), count)
    bounds = [0]
    for index in range(count):
        bounds.append(bounds[-1] + small + (index < extra))
    chunks = [tuple(items[bounds[i] : bounds[i + 1]]) for i in range(count)]
    if len(chunks) == 1:
        return (Pool(name=name, items=chunks[0], domain=name),)
    return tuple(
        Pool(name=f"{name}#{index}", items=chunk, domain=name) for index, chunk in enumerate(chunks)
    )


def load_pools(
    paths: Sequence[str | os.PathLike[str]],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    valid_graders: Collection[str] | None = None,
) -> tuple[Pool, ...]:
    """Load every file as a pool named by its stem, chunked; pools keep the files' order."""
    _check_chunk_size(chunk_size)
    by_stem: dict[str, str] = {}
    seen_files: set[Path] = set()
    pools: list[Pool] = []
    names: dict[str, str] = {}
    for path in paths:
        shown = os.fspath(path)
        stem = Path(shown).stem
        resolved = Path(shown).resolve()
        if resolved in seen_files:
            raise PoolFileError(f"{shown}: listed more than once; pass each pool file once")
        seen_files.add(resolved)
        if stem in by_stem:
            raise PoolFileError(
                f"{shown}: pool name {stem!r} is already taken by {by_stem[stem]}; "
                "pools are named by file stem, rename one of the files"
            )
        by_stem[stem] = shown
        items = load_pool_file(shown, valid_graders=valid_graders)
        for pool in chunk_pool(stem, items, chunk_size):
            # A stem such as 'aime#1' could collide with the chunks of 'aime'.
            if pool.name in names:
                raise PoolFileError(
                    f"{shown}: pool name {pool.name!r} collides with a chunk of "
                    f"{names[pool.name]}; rename the file (avoid '#' in pool file names)"
                )
            names[pool.name] = shown
            pools.append(pool)
    return tuple(pools)


def _item_record(item: Item, stem: str) -> dict[str, Any]:
    """An item as a JSONL record: always id and text, other fields only when not default."""
    record: dict[str, Any] = {"id": item.id, "text": item.text}
    if item.answer is not None:
        record["answer"] = item.answer
    if item.grader != "exact":
        record["grader"] = item.grader
    if item.value != 1.0:
        record["value"] = int(item.value) if float(item.value).is_integer() else item.value
    if item.unsolvable:
        record["unsolvable"] = True
    if item.baseline is not None:
        record["baseline"] = {"solved": item.baseline.solved, "tokens": item.baseline.tokens}
    if item.domain and item.domain != stem:
        record["domain"] = item.domain
    return record


def write_pool_file(path: str | os.PathLike[str], items: Iterable[Item]) -> None:
    """Write items as a UTF-8 JSONL pool file that :func:`load_pool_file` reads back.

    An item's ``domain`` is written only when it differs from the file's stem (loading
    gives the stem by default).  Duplicate ids are refused here rather than producing a
    file that cannot be loaded.
    """
    stem = Path(os.fspath(path)).stem
    records = []
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"duplicate item id {item.id!r}; ids must be unique within a file")
        seen.add(item.id)
        records.append(json.dumps(_item_record(item, stem), ensure_ascii=False, allow_nan=False))
    text = "".join(record + "\n" for record in records)
    Path(os.fspath(path)).write_text(text, encoding="utf-8", newline="\n")
