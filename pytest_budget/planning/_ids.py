"""CostBench's ids: the search space, id formats and the answer parser (fact sheet §4.4, §5.5).

* The *search-space id* of a preference package: for the location task, ``1 +`` the index of
  (category, feature_package, style, tier) in the Cartesian product over those dimensions in
  alphabetical order, each dimension's values in enum declaration order (256 packages).  For
  another task with location preference ``k`` (1..256): ``(k - 1) * 256 + 1 +`` the same
  index for that task's values.
* Ids are ``<Kind#####>``, zero-padded to :data:`ID_DIGITS` digits.  ``Decide`` returns
  ``<TPreference#####>``, ``Search`` and every refinement step ``<TCandidateSet#####>`` with
  the same digits, ``Select`` ``<TCandidate#####>``; so the correct final answer carries the
  digits of the query's search-space id (its ``groundtruth``).
* :func:`parse_answer` is CostBench's ``get_agent_final_answer`` parser for one message.

Plain Python.
"""

from __future__ import annotations

import re

from pytest_budget.planning._tools import DIMENSIONS, PREFERENCE_VALUES, task_label

__all__ = [
    "ID_DIGITS",
    "LOCATION_PACKAGES",
    "format_id",
    "id_digits",
    "location_number",
    "package_index",
    "parse_answer",
    "search_space_id",
]

ID_DIGITS = 5
#: Preference packages per task (4 values in each of 4 dimensions): location preference ids
#: run 1..LOCATION_PACKAGES.
LOCATION_PACKAGES = 4**4
_ALPHABETICAL = tuple(sorted(DIMENSIONS))  # category, feature_package, style, tier

_ID_RE = re.compile(r"^\s*<?\s*([A-Za-z_]*?)\s*(\d+)\s*>?\s*$")
# CostBench's four candidate forms, tried in order, each with exactly 5 digits.  They are
# matched from each "Candidate" found by str.find (so parsing stays linear in the text); the
# bracketed forms also need "<" and only letters or spaces between it and "Candidate".
_AFTER = (
    re.compile(r"Candidate\s*\{\s*Candidate_ID\s*:\s*(\d{5})\s*\}\s*>"),
    re.compile(r"Candidate\s*\{\s*(\d{5})\s*\}\s*>"),
    re.compile(r"Candidate\s*(\d{5})\s*>"),
    re.compile(r"Candidate\s*\{?\s*(?:Candidate_ID\s*:\s*)?(\d{5})"),
)
_BRACKETED = (True, True, True, False)
_PREFIX = re.compile(r"<[A-Za-z\s]{0,40}$")


def package_index(task: str, preferences: dict[str, str]) -> int:
    """0-based index of ``preferences`` in the alphabetical-dimension product (§5.5)."""
    index = 0
    for dimension in _ALPHABETICAL:
        values = PREFERENCE_VALUES[task][dimension]
        index = index * len(values) + values.index(preferences[dimension])
    return index


def search_space_id(task: str, preferences: dict[str, str], location: int | None = None) -> int:
    """The search-space id (an int) of a preference package; ``location`` is the location
    preference number (1..256), required for every task but location."""
    base = package_index(task, preferences) + 1
    if task == "location":
        return base
    if location is None or not 1 <= location <= LOCATION_PACKAGES:
        raise ValueError(f"location preference must be in 1..{LOCATION_PACKAGES}, got {location}")
    return (location - 1) * LOCATION_PACKAGES + base


def format_id(kind: str, number: int, digits: int = ID_DIGITS) -> str:
    """``<KindNNNNN>``, e.g. ``format_id("DiningPreference", 7)`` -> ``<DiningPreference00007>``."""
    return f"<{kind}{number:0{digits}d}>"


def id_digits(value: object, digits: int = ID_DIGITS) -> str | None:
    """The digits of an id argument (``<Kind#####>``, brackets optional), or ``None`` when it
    does not hold exactly ``digits`` digits (CostBench's only id check)."""
    if not isinstance(value, str):
        return None
    match = _ID_RE.match(value)
    if match is None or len(match.group(2)) != digits:
        return None
    return match.group(2)


def location_number(value: object) -> int | None:
    """The number of a ``<LocationPreference#####>`` (angle brackets optional), else None."""
    if not isinstance(value, str):
        return None
    match = _ID_RE.match(value)
    if match is None or match.group(1) not in ("", "LocationPreference"):
        return None
    return int(match.group(2))


def _first_pair(text: str, lowered: str, open_tag: str, close_tag: str) -> str | None:
    start = lowered.find(open_tag)
    if start < 0:
        return None
    end = lowered.find(close_tag, start + len(open_tag))
    return None if end < 0 else text[start + len(open_tag) : end]


def parse_answer(content: str | None) -> str | None:
    """The 5 digits of the candidate id in the first ``<answer>...</answer>`` of ``content``,
    after dropping everything up to ``</think>``; ``None`` when there is none (§3.1).
    Linear in the length of ``content``."""
    if not content:
        return None
    lowered = content.lower()
    think = lowered.find("</think>")
    if think >= 0 and "<think>" in lowered:
        content, lowered = content[think + 8 :], lowered[think + 8 :]
    inner = _first_pair(content, lowered, "<answer>", "</answer>")
    if inner is None:
        return None
    for form, bracketed in zip(_AFTER, _BRACKETED, strict=True):
        at = inner.find("Candidate")
        while at >= 0:
            match = form.match(inner, at)
            digits_ok = match is not None and not inner[match.end(1) : match.end(1) + 1].isdigit()
            if (
                match
                and digits_ok
                and (not bracketed or _PREFIX.search(inner, max(0, at - 41), at))
            ):
                return match.group(1)
            at = inner.find("Candidate", at + 1)
    return None


def goal_id(task: str, number: int) -> str:
    """The final candidate id a run with search-space id ``number`` reaches."""
    return format_id(f"{task_label(task)}Candidate", number)
