"""CostBench user queries for the planning suite: generate, load and dump them.

Files (:func:`load_queries`, :func:`dump_queries`) use the layout of CostBench's
``env/data/runtime/queries/queries.json`` (fact sheet §1): a JSON list (or JSON Lines) of
objects with

* ``query_id`` ``<Query#####>``, unique in the file;
* ``task`` (one of the six) and, when present, ``is_location`` (1 for location, else 0) and
  ``goal_type`` (``Travel{Task}``), which must agree with it;
* ``TimeInfo`` ``<TimeInfo#####>`` (only a token: never checked against anything);
* ``preferences``: ``category``, ``tier``, ``style``, ``feature_package``, each one of the
  task's enum values (CostBench's ``enums.py``,
  :data:`~pytest_budget.planning._tools.PREFERENCE_VALUES`);
* ``location_preference`` ``<LocationPreference#####>`` (1..256) for every task but
  location, absent (or null) for location;
* ``groundtruth`` ``<{Task}Preference#####>``: when present it must be the search-space id
  of the preferences (:func:`~pytest_budget.planning._ids.search_space_id`);
* ``query.input``: the first user message, exactly as sent; ``user_requirements`` (optional).

Other fields (``validation_raw``, ``is_valid``, the fields CostBench's run.py adds) are
ignored.  Any problem is a :class:`QueryFileError` of one line naming the file, the entry,
the ``query_id`` and the field.

Generated queries (:func:`generate_queries`) have the same layout and enums.  Each draws one
preference package per query (a seeded permutation of all 256, so the first 256 queries of a
task differ), a ``TimeInfo`` token in 1..5000 and a location preference in 1..256, and phrases
the preferences vaguely (never naming an enum value) as ``user_requirements``; ``query.input``
is our own fixed sentence asking for a plan during the TimeInfo (and to the location), then
``User requirements: `` + the requirements + ``. ``, as CostBench builds it.  Every choice is a
sha256 digest of ``seed``, task, index and a slot name (never Python's salted ``hash``), and a
longer list extends a shorter one.

Generated query ids are unique across tasks: task number ``t`` (location = 0) owns
``t * 10000 + 1 .. t * 10000 + 9999``, so query ``i`` of a task is
``<Query{t * 10000 + i + 1:05d}>``.  Ids are positions, not content: the same id under
another ``seed`` is another query (and gets the same tool costs, which derive from the id).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._ids import LOCATION_PACKAGES, format_id, search_space_id
from pytest_budget.planning._tools import (
    DIMENSIONS,
    PREFERENCE_VALUES,
    TASKS,
    dimension_type,
    goal_type,
    task_label,
)

__all__ = [
    "QUERY_ID_BLOCK",
    "QueryFileError",
    "allowed_values",
    "allowed_values_text",
    "dump_queries",
    "generate_queries",
    "groundtruth_id",
    "load_queries",
    "query_from_dict",
    "query_id",
    "query_to_dict",
]

#: Ids per task: task ``t`` owns ``t * QUERY_ID_BLOCK + 1 .. (t + 1) * QUERY_ID_BLOCK - 1``.
QUERY_ID_BLOCK = 10_000
#: Generated TimeInfo tokens run 1..TIME_TOKENS (CostBench's test values run 6..4413).
TIME_TOKENS = 5000

# Vague phrasings per (task, dimension, value); none names a value of its task verbatim
# (tests check every text against every value of the task, underscores read as spaces).
_PHRASES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "location": {
        "category": {
            "city": ("I want streets, skyline and subway lines all around me.",),
            "seaside": ("I'd like to hear waves and walk on the sand every day.",),
            "mountain": ("High peaks, alpine trails and thin air are what I'm after.",),
            "village": ("Somewhere tiny and rural, with a handful of houses and a church square.",),
        },
        "tier": {
            "major_metropolis": ("It should be one of the biggest urban centres in the world.",),
            "mid_sized_city": (
                "A place of moderate size, bigger than a hamlet but no sprawling megalopolis.",
            ),
            "small_town": ("A modest little community where everyone knows the baker.",),
            "secluded_area": ("Remote and hidden away, far from crowds and main roads.",),
        },
        "style": {
            "historic_and_traditional": ("Old customs, ancient walls and heritage matter most.",),
            "modern_and_cosmopolitan": ("I love contemporary design and an international crowd.",),
            "natural_and_serene": ("Calm landscapes and peaceful greenery are what I need.",),
            "entertainment_and_vibrant": ("Lively nights, shows and buzz, please.",),
        },
        "feature_package": {
            "architectural_marvel": ("I want to gaze at remarkable buildings and monuments.",),
            "religious_center": ("Temples, cathedrals and pilgrimage sites draw me.",),
            "signature_theme_city": ("A place famous for one unmistakable theme or identity.",),
            "culinary_capital": ("The food scene should be the reason people go there.",),
        },
    },
    "transportation": {
        "category": {
            "flight": ("I'd rather go by air.",),
            "train": ("Riding the rails appeals to me.",),
            "bus": ("An intercity coach along the highway is fine by me.",),
            "car_rental": ("I want to pick up a hired vehicle and drive myself.",),
        },
        "tier": {
            "luxury_class": ("Only the most exclusive seat there is will do.",),
            "business_class": ("The tier corporate travellers usually get, short of the top.",),
            "standard_class": ("Just a regular ticket, nothing special.",),
            "budget_class": ("The cheapest fare going, please.",),
        },
        "style": {
            "speed_priority": ("Getting there fast is what matters most.",),
            "comfort_priority": ("Above all I want to be cosy on the way.",),
            "scenic_route": ("I'd love beautiful views along the way.",),
            "schedule_flexibility_priority": ("I need to be able to move my departure easily.",),
        },
        "feature_package": {
            "onboard_connectivity_and_power": ("Wi-Fi and a plug at my seat are essential.",),
            "full_meal_and_beverage_service": ("Hot food and drinks served on board, please.",),
            "special_luggage_allowance": ("I'm bringing bulky gear, so generous bag limits.",),
            "lie_flat_or_sleeper_facility": ("I want to stretch out fully and sleep en route.",),
        },
    },
    "accommodation": {
        "category": {
            "hotel": ("A place with a front desk, room service and daily housekeeping.",),
            "campsite": ("A tent pitch or cabin under the stars is what I picture.",),
            "homestay": ("I'd like to live with a local family in their house.",),
            "hostel": ("Dorm bunks and a shared lounge with backpackers are fine.",),
        },
        "tier": {
            "luxury_five_star": ("The most lavish, top-rated lodging possible.",),
            "business_four_star": ("Upmarket and polished, one notch below the finest.",),
            "standard_three_star": ("Comfortable and decent, middle of the market.",),
            "budget_basic": ("As cheap as possible; I just need a bed.",),
        },
        "style": {
            "centrality_priority": ("Being right in the middle of everything matters most.",),
            "scenery_priority": ("The view from the window is the main thing.",),
            "convenience_priority": ("Easy access to shops and transit is what I value.",),
            "tranquility_priority": ("Peace and quiet above everything else.",),
        },
        "feature_package": {
            "resort_style_recreation": ("Pools, spa and activities on site would be great.",),
            "specialized_pet_friendly_services": ("My dog is coming and needs proper care.",),
            "comprehensive_business_services": ("Meeting rooms, printing and a work desk.",),
            "self_catering_and_laundry": ("I want to cook my own meals and wash my clothes.",),
        },
    },
    "attraction": {
        "category": {
            "historic_site": ("Ruins, old forts and places where history happened.",),
            "museum_or_gallery": ("Exhibits and collections I can wander through indoors.",),
            "natural_wonder": ("A spectacular waterfall, canyon or reef made by nature.",),
            "amusement_or_entertainment": ("Rides, games and shows for a fun day out.",),
        },
        "tier": {
            "global_landmark": ("Something the whole world has heard of.",),
            "national_treasure": ("A place the whole country is proud of.",),
            "regional_highlight": ("A favourite of the surrounding area.",),
            "local_spot": ("A neighbourhood secret only residents know.",),
        },
        "style": {
            "learning_and_knowledge_priority": ("I want to come away knowing more.",),
            "action_and_thrill_priority": ("Give me adrenaline and excitement.",),
            "relaxation_and_aesthetics_priority": ("Somewhere beautiful to unwind.",),
            "social_and_community_priority": ("I want to meet people and join in.",),
        },
        "feature_package": {
            "in_depth_expert_guidance": ("A knowledgeable guide explaining everything.",),
            "live_performances": ("Music or theatre happening right in front of me.",),
            "hands_on_creation_experience": ("I'd like to make something with my own hands.",),
            "immersive_themed_dining": ("A meal staged inside the world of the place.",),
        },
    },
    "dining": {
        "category": {
            "coffee_shop": ("Somewhere for an espresso and a slice of cake.",),
            "restaurant": ("A sit-down place with waiters and a full menu.",),
            "street_food_vendor": ("Grab-and-go food from a stall on the pavement.",),
            "bakery": ("Fresh bread and pastries straight from the oven.",),
        },
        "tier": {
            "world_renowned_award_winner": ("Celebrated by critics all over the globe.",),
            "nationally_acclaimed": ("Famous across the whole country.",),
            "popular_local_mainstay": ("A favourite the neighbourhood has loved for years.",),
            "simple_and_budget_eats": ("Cheap, no-frills food is fine.",),
        },
        "style": {
            "culinary_quality_priority": ("What's on the plate matters more than anything.",),
            "ambiance_and_setting_priority": ("The atmosphere and decor are what I care about.",),
            "speed_and_convenience_priority": ("I want to eat quickly and get going.",),
            "value_for_money_priority": ("I want the most for what I pay.",),
        },
        "feature_package": {
            "live_music_or_performance": ("A band or show while we eat would be lovely.",),
            "exceptional_view_or_setting": ("A table with a breathtaking outlook.",),
            "chef_interaction_and_open_kitchen": ("I want to watch the cooks and talk to them.",),
            "unique_themed_environment": ("A place with a quirky concept decor.",),
        },
    },
    "shopping": {
        "category": {
            "shopping_center_or_mall": ("Lots of stores under one big roof.",),
            "shopping_street": ("A long avenue lined with shops to stroll along.",),
            "local_market_or_bazaar": ("Stalls, haggling and a bustling crowd.",),
            "boutiques_and_specialty_stores": ("Small independent stores with a niche.",),
        },
        "tier": {
            "high_end_luxury": ("Designer labels, money is no object.",),
            "mid_range_brand": ("Well-known labels at sensible prices.",),
            "affordable_price": ("Things that don't cost much.",),
            "bargain_deals": ("Discounts and steals wherever possible.",),
        },
        "style": {
            "brand_and_quality_priority": ("Craftsmanship and a trusted name come first.",),
            "price_priority": ("What it costs is the deciding factor.",),
            "uniqueness_and_discovery_priority": ("I want to find one-of-a-kind items.",),
            "efficiency_and_needs_priority": ("I know what I need; in and out quickly.",),
        },
        "feature_package": {
            "duty_free": ("I'd like to skip the taxes on my purchases.",),
            "personal_shopping_or_styling_service": ("Someone to advise me on outfits.",),
            "local_artisan_and_handcraft_specialty": ("Goods handmade by craftspeople nearby.",),
            "vintage_and_second_hand_specialty": ("Pre-loved and retro finds.",),
        },
    },
}

_MAX_PER_TASK = QUERY_ID_BLOCK - 1
_PREFERENCE_COMBINATIONS = 4**4


def _digest(*parts: object) -> int:
    text = ":".join(str(part) for part in parts)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def _pick(options: Sequence[str], *parts: object) -> str:
    return options[_digest(*parts) % len(options)]


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")


def query_id(task: str, index: int) -> str:
    """CostBench-form id of query ``index`` (from 0) of ``task``: see the module docstring."""
    _check_task(task)
    if not 0 <= index <= _MAX_PER_TASK - 1:
        raise ValueError(f"query index must be in 0..{_MAX_PER_TASK - 1}, got {index}")
    return f"<Query{TASKS.index(task) * QUERY_ID_BLOCK + index + 1:05d}>"


@lru_cache(maxsize=64)
def _combination_order(task: str, seed: int, cycle: int) -> tuple[tuple[str, ...], ...]:
    """All 256 preference combinations of ``task`` in a seeded order (one per cycle)."""
    values = [PREFERENCE_VALUES[task][d] for d in DIMENSIONS]
    combos = list(itertools.product(*values))
    return tuple(sorted(combos, key=lambda c: _digest(seed, task, "order", cycle, "|".join(c))))


def groundtruth_id(task: str, preferences: Mapping[str, str], location: str | None) -> str:
    """``<{Task}Preference#####>``: the search-space id of the package (fact sheet §5.5)."""
    number = None if location is None else _location_number(location)
    value = search_space_id(task, dict(preferences), number)
    return format_id(f"{task_label(task)}Preference", value)


def _requirements(task: str, preferences: Mapping[str, str], seed: int, index: int) -> str:
    sentences = [
        _pick(_PHRASES[task][d][preferences[d]], seed, task, index, "phrase", d) for d in DIMENSIONS
    ]
    order = sorted(range(len(sentences)), key=lambda k: _digest(seed, task, index, "order", k))
    return " ".join(sentences[k] for k in order).rstrip(".")


def query_input(time_info: str, location: str | None, requirements: str) -> str:
    """The first user message: our fixed request sentence, then the requirements."""
    where = "" if location is None else f" and to {location}"
    return (
        f"Please help me make a travel plan for the period {time_info}{where}. "
        f"User requirements: {requirements}. "
    )


def generate_queries(task: str, n: int, *, seed: int = 42) -> list[Query]:
    """``n`` reproducible queries for ``task`` in CostBench's layout (see the module doc)."""
    _check_task(task)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if n > _MAX_PER_TASK:
        raise ValueError(f"at most {_MAX_PER_TASK} queries per task (id block), got {n}")
    queries = []
    for index in range(n):
        cycle, position = divmod(index, _PREFERENCE_COMBINATIONS)
        combo = _combination_order(task, seed, cycle)[position]
        preferences = dict(zip(DIMENSIONS, combo, strict=True))
        time_info = format_id("TimeInfo", 1 + _digest(seed, task, index, "time") % TIME_TOKENS)
        location = None
        if task != "location":
            number = 1 + _digest(seed, task, index, "place") % LOCATION_PACKAGES
            location = format_id("LocationPreference", number)
        requirements = _requirements(task, preferences, seed, index)
        queries.append(
            Query(
                query_id=query_id(task, index),
                task=task,
                preferences=preferences,
                time_info=time_info,
                location_preference=location,
                text=query_input(time_info, location, requirements),
                user_requirements=requirements,
            )
        )
    return queries


def allowed_values(task: str) -> dict[str, tuple[str, ...]]:
    """The allowed value of each preference parameter (e.g. ``DiningTier``) of ``task``.

    These are the ``enum`` lists of the ``Decide_<Task>_Preference`` tool spec.
    """
    _check_task(task)
    return {dimension_type(task, d): PREFERENCE_VALUES[task][d] for d in DIMENSIONS}


def allowed_values_text(task: str) -> str:
    """One line per preference parameter listing its allowed values, for a prompt."""
    return "\n".join(
        f"{name}: {', '.join(values)}" for name, values in allowed_values(task).items()
    )


# ---------------------------------------------------------------------- files


class QueryFileError(ValueError):
    """A query file entry that cannot be used; the message is one line naming file and entry."""


_REQUIRED_FIELDS: tuple[str, ...] = ("query_id", "task", "preferences", "TimeInfo", "query")
_QUERY_ID_RE = re.compile(r"^<Query\d+>$")
_TIME_RE = re.compile(r"^<TimeInfo\d+>$")
_LOCATION_RE = re.compile(r"^<LocationPreference(\d+)>$")


def _location_number(location: str) -> int:
    match = _LOCATION_RE.match(location)
    if match is None:
        raise ValueError(f"not a <LocationPreference#####> id: {location!r}")
    return int(match.group(1))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def query_to_dict(query: Query) -> dict[str, Any]:
    """A query in CostBench's file layout (see the module docstring)."""
    row: dict[str, Any] = {
        "query_id": query.query_id,
        "TimeInfo": query.time_info,
        "task": query.task,
        "is_location": int(query.task == "location"),
        "goal_type": goal_type(query.task),
        "preferences": {d: query.preferences[d] for d in DIMENSIONS},
    }
    if query.location_preference is not None:
        row["location_preference"] = query.location_preference
    row["groundtruth"] = groundtruth_id(query.task, query.preferences, query.location_preference)
    row["user_requirements"] = query.user_requirements
    row["query"] = {"input": query.text}
    return row


def _entry_problem(entry: object) -> tuple[str | None, Query | str]:
    """``(query_id or None, Query)`` for a valid entry, ``(query_id or None, problem)`` else."""
    if not isinstance(entry, Mapping):
        return None, f"expected a JSON object, got {type(entry).__name__}"
    raw_id = entry.get("query_id")
    qid = raw_id if isinstance(raw_id, str) and raw_id.strip() else None
    missing = [name for name in _REQUIRED_FIELDS if name not in entry]
    if missing:
        return qid, (
            f"missing field(s) {', '.join(missing)}; required: {', '.join(_REQUIRED_FIELDS)}"
        )
    if qid is None or not _QUERY_ID_RE.match(qid):
        return qid, f"field query_id must look like <Query00001>, got {raw_id!r}"
    task = entry["task"]
    if task not in TASKS:
        return qid, f"field task: unknown task {task!r}; allowed: {', '.join(TASKS)}"
    if "is_location" in entry and entry["is_location"] != int(task == "location"):
        return qid, (
            f"field is_location = {entry['is_location']!r} disagrees with task {task!r} "
            f"(expected {int(task == 'location')})"
        )
    if "goal_type" in entry and entry["goal_type"] != goal_type(task):
        return qid, (
            f"field goal_type = {entry['goal_type']!r} disagrees with task {task!r} "
            f"(expected {goal_type(task)!r})"
        )
    prefs = entry["preferences"]
    if not isinstance(prefs, Mapping):
        return qid, f"field preferences must be an object with keys {', '.join(DIMENSIONS)}"
    unknown = sorted(str(k) for k in prefs if k not in DIMENSIONS)
    if unknown:
        return qid, (
            f"field preferences: unknown dimension(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(DIMENSIONS)}"
        )
    for dim in DIMENSIONS:
        allowed = PREFERENCE_VALUES[task][dim]
        if dim not in prefs:
            return qid, (
                f"field preferences lacks {dim!r}; allowed {task} {dim} values: "
                f"{', '.join(allowed)}"
            )
        if prefs[dim] not in allowed:
            return qid, (
                f"field preferences.{dim} = {prefs[dim]!r} is not a {task} {dim} value of "
                f"CostBench's test enums; allowed: {', '.join(allowed)}"
            )
    time_info = entry["TimeInfo"]
    if not isinstance(time_info, str) or not _TIME_RE.match(time_info):
        return qid, f"field TimeInfo must look like <TimeInfo00006>, got {time_info!r}"
    place = entry.get("location_preference")
    if task == "location":
        if place is not None:
            return qid, f"field location_preference must be absent for location, got {place!r}"
    else:
        match = _LOCATION_RE.match(place) if isinstance(place, str) else None
        if match is None or not 1 <= int(match.group(1)) <= LOCATION_PACKAGES:
            return qid, (
                f"field location_preference must be <LocationPreference#####> in "
                f"1..{LOCATION_PACKAGES} for {task}, got {place!r}"
            )
    preferences = {d: str(prefs[d]) for d in DIMENSIONS}
    stated = entry.get("groundtruth")
    if stated is not None and not isinstance(stated, str):
        return qid, f"field groundtruth must be text, got {stated!r}"
    if isinstance(stated, str):
        expected = groundtruth_id(task, preferences, place)
        if stated != expected:
            return qid, (
                f"field groundtruth = {stated!r} is not the search-space id of the "
                f"preferences{'' if task == 'location' else ' and location'} ({expected})"
            )
    body = entry["query"]
    text = body.get("input") if isinstance(body, Mapping) else None
    if not isinstance(text, str) or not text.strip():
        return qid, 'field query must be an object {"input": <non-empty text>}'
    requirements = entry.get("user_requirements", "")
    if not isinstance(requirements, str):
        return qid, f"field user_requirements must be text, got {requirements!r}"
    return qid, Query(qid, task, preferences, time_info, place, text, requirements)


def query_from_dict(entry: Mapping[str, Any]) -> Query:
    """One query from CostBench's layout; ``ValueError`` (one line) when it is not valid."""
    qid, result = _entry_problem(entry)
    if isinstance(result, str):
        raise ValueError(_one_line(f"query {qid or '(no query_id)'}: {result}"))
    return result


def _read_entries(path: Path) -> list[tuple[str, object]]:
    """``(label, parsed JSON)`` per entry; label names the entry's index (and JSONL line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise QueryFileError(
            f"{path}: not UTF-8 text (byte {exc.start}); expected a JSON list or JSONL file"
        ) from None
    except OSError as exc:
        raise QueryFileError(_one_line(f"{path}: cannot be read ({exc.strerror})")) from None
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            whole = json.loads(text)
        except RecursionError:
            raise QueryFileError(f"{path}: JSON nested too deeply to be a query file") from None
        except json.JSONDecodeError as exc:
            if stripped.startswith("["):
                raise QueryFileError(
                    _one_line(
                        f"{path}: line {exc.lineno}: not valid JSON ({exc.msg}); expected a "
                        "JSON list of query objects or one object per line (JSONL)"
                    )
                ) from None
        else:
            if isinstance(whole, list):
                return [(f"entry {i}", item) for i, item in enumerate(whole)]
            return [("entry 0", whole)]
    entries: list[tuple[str, object]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label = f"entry {len(entries)} (line {lineno})"
        try:
            entries.append((label, json.loads(line)))
        except RecursionError:
            raise QueryFileError(
                f"{path}: {label}: JSON nested too deeply to be a query object"
            ) from None
        except json.JSONDecodeError as exc:
            raise QueryFileError(
                _one_line(
                    f"{path}: {label}: not valid JSON ({exc.msg}); expected a JSON list of "
                    "query objects or one object per line (JSONL)"
                )
            ) from None
    return entries


def load_queries(path: str | os.PathLike[str]) -> list[Query]:
    """Queries from a JSON list or JSONL file in CostBench's layout (CostBench's own
    ``queries.json`` loads as is).

    Raises :class:`QueryFileError` (one line: file, entry index and query_id, the field and
    what is allowed) for invalid JSON, an unknown task or enum value, a missing field, a
    groundtruth that is not the preferences' search-space id, duplicate ids or an empty file.
    """
    path = Path(path)
    entries = _read_entries(path)
    if not entries:
        raise QueryFileError(f"{path}: no queries found; expected a JSON list or JSONL file")
    queries: list[Query] = []
    seen: dict[str, str] = {}
    for label, entry in entries:
        qid, result = _entry_problem(entry)
        where = f"{path}: {label} (query_id {qid!r})" if qid else f"{path}: {label}"
        if isinstance(result, str):
            raise QueryFileError(_one_line(f"{where}: {result}"))
        if result.query_id in seen:
            raise QueryFileError(
                _one_line(
                    f"{where}: field query_id: duplicate (first used by {seen[result.query_id]}); "
                    "query ids must be unique"
                )
            )
        seen[result.query_id] = label
        queries.append(result)
    return queries


def dump_queries(path: str | os.PathLike[str], queries: Iterable[Query]) -> None:
    """Write ``queries`` in CostBench's layout: JSONL if ``path`` ends in ``.jsonl``, else a
    JSON list (UTF-8, indented)."""
    path = Path(path)
    rows = [query_to_dict(q) for q in queries]
    if path.suffix.lower() == ".jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        text = json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
