"""The report file's compact form of samples: every repeated value stored once.

A run's samples repeat a lot: the same pool item, query or rollout id in every agent's
cell, the same tags, the same ``{"tokens": 1000}`` budget in every probe, the same call
records.  The written report (schema version 2) keeps each cell's ``samples`` and the
report's ``sample_rollouts`` as references into one table, ``sample_pool``::

    "sample_pool": {"encoding": "pool-1", "shapes": [[key, ...], ...], "values": [...]}

An encoded value is read as follows (``docs/reference/report.md`` says the same):

* a string, a non-integer number, ``true``, ``false`` or ``null`` is itself;
* an integer ``i`` is ``values[i]``, read by the same rules (an integer entry of
  ``values`` is that integer: integers are always stored in the table);
* an array ``[0, a, b, ...]`` is the array of ``a``, ``b``, ...; an array ``[s, a, b, ...]``
  with ``s >= 1`` is the object whose keys are ``shapes[s - 1]`` and whose values are
  ``a``, ``b``, ... in that order.

A value used more than once is stored once in ``values`` (the most used first, so the
commonest references are the shortest) and referenced; a value used once is written in
place.  :func:`encode` and :func:`decode` are exact inverses on JSON values (key order and
the integer/float distinction kept).  Plain Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ENCODING", "PoolError", "SamplePool", "decode_pool", "encode"]

#: The name of this encoding in ``sample_pool.encoding``.
ENCODING = "pool-1"

# Node kinds in the interning table (internal).
_STR, _INT, _LIST, _DICT = 0, 1, 2, 3
#: A string this short is always written in place: a reference would be no shorter.
_SHORT = 4
#: A text at least this long with a line break is also stored line by line.
_SPLIT = 200


class PoolError(ValueError):
    """A ``sample_pool`` or an encoded value that does not follow the encoding."""


class SamplePool:
    """Interns JSON values (:meth:`add`), then writes them (:meth:`table`, :meth:`ref`).

    Two passes: every value is added first (equal values get one node, counted), then
    written, so that only values used more than once go into the table.
    """

    def __init__(self) -> None:
        self._nodes: dict[tuple[Any, ...], int] = {}
        self._kinds: list[tuple[Any, ...]] = []
        self._uses: list[int] = []
        self._shapes: dict[tuple[str, ...], int] = {}
        self._index: dict[int, int] | None = None
        self._lines: dict[int, tuple[int, ...]] = {}

    def _node(self, key: tuple[Any, ...]) -> int:
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = len(self._kinds)
            self._kinds.append(key)
            self._uses.append(0)
        self._uses[node] += 1
        return node

    def _text(self, value: str) -> int:
        key = (_STR, value)
        if key in self._nodes or len(value) < _SPLIT or "\n" not in value:
            return self._node(key)
        # A long text is also interned line by line (once per distinct text): a prompt or
        # an instruction block repeated inside many texts is then stored once.
        pieces = value.splitlines(keepends=True)
        if len(pieces) < 2:
            return self._node(key)
        lines = tuple(self._node((_STR, line)) for line in pieces)
        node = self._node(key)
        self._lines[node] = lines
        return node

    def add(self, value: Any) -> Any:
        """Intern ``value``; the returned handle goes to :meth:`ref` once :meth:`table`
        has been built.  A handle is hashable: a node's number (an ``int``), a short
        string or ``None`` as itself, a float or boolean as ``(tag, value, ...)`` (so that
        ``True``, ``1.0``, ``0.0`` and ``-0.0``, equal to ``==``, stay apart)."""
        kind = type(value)
        if kind is str:
            return value if len(value) <= _SHORT else self._text(value)
        if kind is float:
            return ("f", value) if value else ("z", value, str(value))
        if kind is int:
            return self._node((_INT, value))
        if kind is dict:
            keys = tuple(value)
            shape = self._shapes.get(keys)
            if shape is None:
                if not all(type(k) is str for k in keys):
                    keys = tuple(str(k) for k in keys)  # as json.dumps writes them
                shape = self._shapes.setdefault(keys, len(self._shapes) + 1)
            add = self.add
            return self._node((_DICT, shape, tuple([add(v) for v in value.values()])))
        if kind is list or kind is tuple:
            add = self.add
            return self._node((_LIST, 0, tuple([add(v) for v in value])))
        if kind is bool:
            return ("b", value)
        if value is None:
            return None
        if isinstance(value, Mapping):
            return self.add(dict(value))
        if isinstance(value, list | tuple):
            return self.add(list(value))
        raise TypeError(f"{kind.__name__} is not a JSON value")

    def table(self) -> dict[str, Any]:
        """The ``sample_pool`` object: shapes, and every value used more than once."""
        shared = [
            n
            for n, key in enumerate(self._kinds)
            if self._uses[n] > 1 or key[0] == _INT  # an integer in place reads as a ref
        ]
        shared.sort(key=lambda n: -self._uses[n])  # stable: ties keep first-seen order
        self._index = {node: i for i, node in enumerate(shared)}
        shapes = sorted(self._shapes.items(), key=lambda item: item[1])
        return {
            "encoding": ENCODING,
            "shapes": [list(keys) for keys, _ in shapes],
            "values": [self._write(node) for node in shared],
        }

    def ref(self, handle: Any) -> Any:
        """The encoded form of a value :meth:`add` returned ``handle`` for."""
        if type(handle) is not int:
            return handle[1] if type(handle) is tuple else handle
        if self._index is None:
            raise RuntimeError("SamplePool.table() must be built before ref()")
        index = self._index.get(handle)
        return index if index is not None else self._write(handle)

    def _joined(self, text: str, lines: tuple[int, ...]) -> Any:
        """A text as ``["", part, ...]`` when some of its lines are shared: shared lines
        by reference, the runs between them in place."""
        assert self._index is not None
        parts: list[Any] = [""]
        run: list[str] = []
        for line in lines:
            index = self._index.get(line)
            if index is None:
                run.append(self._kinds[line][1])
                continue
            if run:
                parts.append("".join(run))
                run = []
            parts.append(index)
        if len(parts) == 1:
            return text
        if run:
            parts.append("".join(run))
        return parts

    def _write(self, node: int) -> Any:
        key = self._kinds[node]
        if key[0] == _STR and node in self._lines:
            return self._joined(key[1], self._lines[node])
        if key[0] in (_STR, _INT):
            return key[1]
        ref = self.ref
        return [key[1], *[ref(child) for child in key[2]]]


def encode(values: Iterable[Any]) -> tuple[list[Any], dict[str, Any]]:
    """(the encoded values, the ``sample_pool`` they reference)."""
    pool = SamplePool()
    handles = [pool.add(value) for value in values]
    table = pool.table()
    return [pool.ref(handle) for handle in handles], table


def decode_pool(table: object) -> Any:
    """A decoder for the values encoded against ``table`` (a ``sample_pool``); raises
    :class:`PoolError` (one line) when the table does not follow the encoding."""
    if not isinstance(table, Mapping) or table.get("encoding") != ENCODING:
        found = table.get("encoding") if isinstance(table, Mapping) else type(table).__name__
        raise PoolError(f"sample_pool encoding {found!r} is not {ENCODING!r}")
    shapes, values = table.get("shapes"), table.get("values")
    if not isinstance(shapes, list) or not isinstance(values, list):
        raise PoolError("sample_pool needs the arrays 'shapes' and 'values'")
    if not all(isinstance(s, list) and all(isinstance(k, str) for k in s) for s in shapes):
        raise PoolError("sample_pool.shapes must hold arrays of keys")
    strings: dict[int, Any] = {}  # decoded scalars, shared (immutable)
    active: set[int] = set()

    def read(value: Any) -> Any:
        kind = type(value)
        if kind is int:
            if not 0 <= value < len(values):
                raise PoolError(f"reference {value} outside sample_pool.values")
            if value in strings:
                return strings[value]
            entry = values[value]
            if type(entry) is int or not isinstance(entry, list):
                strings[value] = entry
                return entry
            if value in active:
                raise PoolError(f"sample_pool.values[{value}] refers to itself")
            active.add(value)
            try:
                return read_compound(entry)
            finally:
                active.discard(value)
        if kind is list:
            return read_compound(value)
        return value

    def read_compound(entry: list[Any]) -> Any:
        if entry and entry[0] == "":
            parts = [read(v) for v in entry[1:]]
            if not all(isinstance(part, str) for part in parts):
                raise PoolError('a joined text ["", ...] must hold texts only')
            return "".join(parts)
        if not entry or type(entry[0]) is not int:
            raise PoolError("an encoded array must start with its kind (0 or a shape number)")
        shape = entry[0]
        items = [read(v) for v in entry[1:]]
        if shape == 0:
            return items
        if not 1 <= shape <= len(shapes) or len(shapes[shape - 1]) != len(items):
            raise PoolError(f"shape {shape} does not fit an object of {len(items)} values")
        return dict(zip(shapes[shape - 1], items, strict=True))

    return read
