"""The drill-down's data: each cell's samples, packed into the page, opened on demand.

Every cell's samples (``cells[i].samples`` of the JSON report) go into the page as one
inline ``<script type="application/octet-stream">`` element holding gzip-compressed JSON in
base64: the browser neither parses nor runs it while the page loads, so a page with
50,000 samples opens as fast as one without; the page's script inflates one cell's block
when its row is opened (``DecompressionStream``) and draws only the rows in view.  Base64
holds no ``<``, so no sample text can end the element early; every text is drawn with
``textContent`` (never as markup).  Awareness cells share their rollout prefixes: one
block per rollout set.

A cell with more than :data:`SAMPLE_CAP` samples shows that many on the page (those with
a failure tag first, then the rest, each in run order) and says how many were left out:
the full set stays in the JSON report.  Plain Python (no matplotlib).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pytest_budget._core.records import CellRecord
from pytest_budget._core.samples import env_secrets, might_hold_secrets, scrub_tree

__all__ = [
    "CHANGED_LIMIT",
    "GOOD_TAGS",
    "SAMPLE_CAP",
    "SampleStore",
    "cap_samples",
    "changed_samples",
    "pack",
    "same_input",
    "unpack",
]

#: Samples per cell drawn into the page; more are left out with a note (the JSON report
#: keeps them all).  ``budget-report render --sample-cap=N`` changes it.
SAMPLE_CAP = 5000
#: Samples listed per suite on a --compare page (largest score changes first).
CHANGED_LIMIT = 25
#: Tags of samples that went right; any other tag marks a sample worth looking at first.
GOOD_TAGS = frozenset({"hit", "exact", "earned", "ok", "correct abort", "blocked", "not planned"})

Cell = CellRecord


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def pack(value: Any, secrets: Sequence[str] = ()) -> str:
    """JSON with credentials masked (:func:`~pytest_budget._core.samples.scrub`), gzip (no
    timestamp: same input, same bytes), base64."""
    raw = _json(value)
    if might_hold_secrets(raw, secrets):
        value = scrub_tree(value, secrets)
        raw = _json(value)
    try:
        data = raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate an agent returned: written escaped
        data = json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")
    return base64.b64encode(gzip.compress(data, 6, mtime=0)).decode("ascii")


def unpack(text: str) -> Any:
    """The inverse of :func:`pack` (tests and tools read a page's blocks with it)."""
    return json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))


def _interesting(sample: Any) -> bool:
    tags = sample.get("tags") if isinstance(sample, Mapping) else None
    return isinstance(tags, list) and any(tag not in GOOD_TAGS for tag in tags)


def cap_samples(samples: Sequence[Any], cap: int) -> list[Any]:
    """At most ``cap`` samples: those with a failure tag first, then the others, each
    group in run order (so the ones to look at are never the ones left out)."""
    if len(samples) <= cap:
        return list(samples)
    first = [i for i, s in enumerate(samples) if _interesting(s)]
    rest = [i for i, s in enumerate(samples) if not _interesting(s)]
    keep = sorted((first + rest)[:cap])
    return [samples[i] for i in keep]


class SampleStore:
    """The blocks of one page: one per cell with samples, one per rollout set."""

    def __init__(self, *, cap: int = SAMPLE_CAP, secrets: Sequence[str] | None = None) -> None:
        self.cap = cap
        self.secrets = list(env_secrets() if secrets is None else secrets)
        self.blocks: list[tuple[str, str]] = []
        self._rollouts: dict[tuple[int, str], str] = {}

    def _add(self, value: Any) -> str:
        ident = f"sb{len(self.blocks) + 1}"
        self.blocks.append((ident, pack(value, self.secrets)))
        return ident

    def _rollout_block(self, report: Mapping[str, Any], ref: object) -> str | None:
        store = report.get("sample_rollouts")
        if isinstance(ref, Mapping):  # a cell record not written through build_report
            return self._add(ref)
        if not isinstance(ref, str) or not isinstance(store, Mapping) or ref not in store:
            return None
        key = (id(report), ref)
        if key not in self._rollouts:
            self._rollouts[key] = self._add(store[ref])
        return self._rollouts[key]

    def add_cell(self, cell: Cell, report: Mapping[str, Any]) -> tuple[str, int] | None:
        """The block id of ``cell``'s samples and how many it has, or None without any."""
        samples = cell.samples
        if not samples:
            return None
        shown = cap_samples(samples, self.cap)
        options = report.get("options")
        path = options.get("report_path") if isinstance(options, Mapping) else None
        data = {
            "suite": cell.suite,
            "cell": cell.cell,
            "agent": cell.agent,
            "total": len(samples),
            "left_out": len(samples) - len(shown),
            "cap": self.cap,
            "report_path": path,
            **cell.drill_fields(),
            "rollouts": self._rollout_block(report, cell.sample_rollouts),
            "samples": shown,
        }
        return self._add(data), len(samples)

    def add_value(self, value: Any) -> str:
        """A block for any JSON value (the --compare page's sample pairs)."""
        return self._add(value)

    def html(self) -> str:
        return "".join(
            f'<script type="application/octet-stream" class="sample-block" id="{ident}">'
            f"{text}</script>"
            for ident, text in self.blocks
        )


def _score(sample: Any) -> float | None:
    value = sample.get("score") if isinstance(sample, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _prefix(report: Mapping[str, Any], cell: Cell, sample: Mapping[str, Any]) -> Any:
    """An awareness probe's replayed rollout (for a pair shown on its own)."""
    store = report.get("sample_rollouts")
    ref = cell.sample_rollouts
    rollouts = store.get(ref) if isinstance(store, Mapping) and isinstance(ref, str) else ref
    if not isinstance(rollouts, Mapping):
        return None
    return rollouts.get(str(sample.get("rollout")))


#: Fields that say what a sample was asked (a seed or a query file can put other inputs
#: under the same id): samples whose inputs differ are not compared.
_INPUT_FIELDS = ("query", "text", "rollout", "k", "used", "budget", "T")


def same_input(base: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when the two samples were asked the same thing (every input field equal)."""
    return all(base.get(key) == new.get(key) for key in _INPUT_FIELDS if key in base or key in new)


def changed_samples(
    pairs: Sequence[tuple[Cell, Cell]],
    base_report: Mapping[str, Any],
    new_report: Mapping[str, Any],
    limit: int = CHANGED_LIMIT,
) -> list[dict[str, Any]]:
    """The samples whose score changed most between two runs, largest change first.

    Samples are matched by id within matched cells, and compared only when they were
    asked the same thing (:func:`same_input`); a sample whose score appeared or
    vanished, or whose tags changed with the score equal, ranks after every numeric
    change.  Ties keep cell order, then sample order.
    """
    found: list[tuple[float, int, dict[str, Any]]] = []
    for base_cell, new_cell in pairs:
        base_samples = base_cell.samples
        new_samples = new_cell.samples
        if not isinstance(base_samples, list) or not isinstance(new_samples, list):
            continue
        by_id = {s.get("id"): s for s in base_samples if isinstance(s, Mapping)}
        for sample in new_samples:
            if not isinstance(sample, Mapping) or sample.get("id") not in by_id:
                continue
            old = by_id[sample.get("id")]
            if not same_input(old, sample):
                continue
            before, after = _score(old), _score(sample)
            if before is not None and after is not None:
                change = after - before
                if abs(change) < 1e-12 and old.get("tags") == sample.get("tags"):
                    continue
                rank = abs(change)
            elif before is None and after is None:
                if old.get("tags") == sample.get("tags"):
                    continue
                change, rank = None, -1.0
            else:
                change, rank = None, -0.5
            entry = {
                "cell": new_cell.cell,
                "agent": new_cell.agent,
                "suite": new_cell.suite,
                "id": sample.get("id"),
                "change": change,
                "base": dict(old),
                "new": dict(sample),
                "base_prefix": _prefix(base_report, base_cell, old),
                "new_prefix": _prefix(new_report, new_cell, sample),
            }
            found.append((rank, len(found), entry))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [entry for _, _, entry in found[:limit]]


def _number(value: Any) -> str:
    number = _score({"score": value})
    return "\u2013" if number is None else f"{number:.3f}"


def changed_table(entries: Sequence[Mapping[str, Any]], block: str) -> str:
    """The --compare page's table of changed samples (a row opens both sides)."""
    rows = []
    for index, entry in enumerate(entries):
        change = entry.get("change")
        delta = "\u2013" if change is None else f"{change:+.3f}"
        base, new = entry["base"], entry["new"]
        rows.append(
            f'<tr data-pair="{index}"><td><button type="button" class="pair-open" '
            f'data-block="{block}" data-pair="{index}">open</button></td>'
            f"<td>{escape(str(entry.get('cell')))}</td><td>{escape(str(entry.get('agent')))}</td>"
            f"<td>{escape(str(entry.get('id')))}</td>"
            f'<td class="num">{_number(base.get("score"))}</td>'
            f'<td class="num">{_number(new.get("score"))}</td><td class="num">{delta}</td>'
            f"<td>{escape(', '.join(map(str, base.get('tags') or [])))}</td>"
            f"<td>{escape(', '.join(map(str, new.get('tags') or [])))}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("", "cell", "agent", "sample", "base score", "new score", "\u0394",
                  "base outcome", "new outcome")
    )  # fmt: skip
    return (
        f'<div class="table-wrap"><table class="scores changed"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        '<div class="pair-view" hidden></div>'
    )
