"""Planning-suite queries: generation, allowed values, loading and dumping CostBench files."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_budget.planning import PREFERENCE_VALUES, TASKS, TravelEnv, expected_answer
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._queries import (
    _PHRASES,
    QUERY_ID_BLOCK,
    QueryFileError,
    allowed_values,
    allowed_values_text,
    dump_queries,
    generate_queries,
    load_queries,
    query_from_dict,
    query_id,
    query_to_dict,
)
from pytest_budget.planning._tools import DIMENSIONS

_ID_RE = re.compile(r"^<Query\d{5}>$")
_TIME_RE = re.compile(r"^<TimeInfo(\d{5})>$")
_LOC_RE = re.compile(r"^<LocationPreference(\d{5})>$")


def _literals(task: str) -> list[str]:
    # Values as written (snake_case) and as words.
    values = [v.lower() for values in PREFERENCE_VALUES[task].values() for v in values]
    return values + [v.replace("_", " ") for v in values]


def _digest(queries: list[Query]) -> str:
    rows = [query_to_dict(q) for q in queries]
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("task", TASKS)
def test_queries_are_well_formed(task: str) -> None:
    queries = generate_queries(task, 60)
    assert len(queries) == 60
    for q in queries:
        assert q.task == task
        assert _ID_RE.match(q.query_id)
        assert set(q.preferences) == set(DIMENSIONS)
        for dim, value in q.preferences.items():
            assert value in PREFERENCE_VALUES[task][dim]
        m = _TIME_RE.match(q.time_info)
        assert m is not None
        assert 1 <= int(m.group(1)) <= 5000
        # CostBench's query.input: the request sentence with the tokens, then the requirements.
        assert q.time_info in q.text
        assert q.text.endswith(f"User requirements: {q.user_requirements}. ")
        if task == "location":
            assert q.location_preference is None
            assert "LocationPreference" not in q.text
        else:
            assert isinstance(q.location_preference, str)
            loc = _LOC_RE.match(q.location_preference)
            assert loc is not None and 1 <= int(loc.group(1)) <= 256
            assert f"and to {q.location_preference}." in q.text


@pytest.mark.parametrize("task", TASKS)
def test_sixty_queries_are_distinct(task: str) -> None:
    queries = generate_queries(task, 60)
    keys = {(tuple(sorted(q.preferences.items())), q.text) for q in queries}
    assert len(keys) == 60
    assert len({q.text for q in queries}) == 60
    # The first 256 cover every preference combination once.
    combos = {tuple(q.preferences[d] for d in DIMENSIONS) for q in generate_queries(task, 256)}
    assert len(combos) == 256


@pytest.mark.parametrize("task", TASKS)
def test_no_text_names_a_preference_value(task: str) -> None:
    literals = _literals(task)
    queries = generate_queries(task, 512)
    drawn = {(d, q.preferences[d]) for q in queries for d in DIMENSIONS}
    # Every value of every dimension was drawn, so every value is tested.
    assert drawn == {(d, v) for d in DIMENSIONS for v in PREFERENCE_VALUES[task][d]}
    for q in queries:
        lowered = q.user_requirements.lower()
        assert not [lit for lit in literals if lit in lowered], q.text


@pytest.mark.parametrize("task", TASKS)
def test_every_phrasing_avoids_every_value(task: str) -> None:
    literals = _literals(task)
    for dim in DIMENSIONS:
        assert set(_PHRASES[task][dim]) == set(PREFERENCE_VALUES[task][dim])
        for value, phrasings in _PHRASES[task][dim].items():
            assert len(phrasings) >= 1
            assert len(set(phrasings)) == len(phrasings)
            for text in phrasings:
                hits = [lit for lit in literals if lit in text.lower()]
                assert not hits, (task, dim, value, text, hits)


def test_ids_unique_across_tasks_and_follow_the_block_scheme() -> None:
    all_ids = [q.query_id for task in TASKS for q in generate_queries(task, 80)]
    assert len(set(all_ids)) == len(all_ids)
    assert generate_queries("location", 1)[0].query_id == "<Query00001>"
    assert generate_queries("transportation", 1)[0].query_id == "<Query10001>"
    assert generate_queries("shopping", 3)[2].query_id == "<Query50003>"
    assert query_id("dining", 0) == f"<Query{4 * QUERY_ID_BLOCK + 1:05d}>"
    with pytest.raises(ValueError, match="query index"):
        query_id("dining", QUERY_ID_BLOCK - 1)


def test_generation_is_deterministic_and_prefix_stable() -> None:
    a = generate_queries("accommodation", 40, seed=7)
    assert a == generate_queries("accommodation", 40, seed=7)
    assert generate_queries("accommodation", 15, seed=7) == a[:15]
    b = generate_queries("accommodation", 40, seed=8)
    assert [q.text for q in a] != [q.text for q in b]
    # Beyond the 256 combinations the preferences start another seeded cycle.
    long = generate_queries("dining", 300)
    assert long[:256] == generate_queries("dining", 256)
    assert len({(q.text, q.query_id) for q in long}) == 300


def test_generation_is_identical_in_other_processes() -> None:
    code = (
        "import hashlib, json\n"
        "from pytest_budget.planning._queries import generate_queries, query_to_dict\n"
        "from pytest_budget.planning._tools import TASKS\n"
        "rows = [query_to_dict(q) for t in TASKS for q in generate_queries(t, 60, seed=3)]\n"
        "print(hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest())\n"
    )
    here = _digest([q for t in TASKS for q in generate_queries(t, 60, seed=3)])
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert out.stdout.strip() == here


@pytest.mark.parametrize(
    ("task", "n", "message"),
    [
        ("cruise", 3, "unknown task"),
        ("dining", -1, "non-negative"),
        ("dining", QUERY_ID_BLOCK, "at most"),
    ],
)
def test_generate_rejects_bad_arguments(task: str, n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate_queries(task, n)


def test_generate_zero_is_empty() -> None:
    assert generate_queries("shopping", 0) == []


@pytest.mark.parametrize("task", TASKS)
def test_allowed_values_match_the_decide_tool_enums(task: str) -> None:
    env = TravelEnv(task, 1, "<Query00001>")
    decide = next(
        spec["function"]
        for spec in env.tools
        if spec["function"]["name"] == f"Decide_{task.capitalize()}_Preference"
    )
    props = decide["parameters"]["properties"]
    allowed = allowed_values(task)
    assert len(allowed) == 4
    for name, values in allowed.items():
        assert props[name]["enum"] == list(values)
    text = allowed_values_text(task)
    assert len(text.splitlines()) == 4
    for values in allowed.values():
        assert all(v in text for v in values)


def test_generated_query_drives_the_environment_to_its_expected_answer() -> None:
    q = generate_queries("dining", 1)[0]
    env = TravelEnv("dining", 0, q.query_id)
    s = "Dining"
    args = {
        f"{s}{''.join(p.capitalize() for p in d.split('_'))}": q.preferences[d] for d in DIMENSIONS
    }
    args["LocationPreference"] = q.location_preference or ""
    args["TimeInfo"] = q.time_info
    # L=0 with ban-longest off: the 3-step pipeline does the whole task in one call.
    env = TravelEnv("dining", 0, q.query_id, ban_longest=False)
    obs, _ = env.step({"name": f"{s}_Complete_3Steps_Pipeline", "arguments": json.dumps(args)})
    assert not obs.startswith("[ERROR]"), obs
    final_id = re.findall(r"<DiningCandidate\d{5}>", obs)[-1]
    assert final_id == expected_answer("dining", q.preferences, q.time_info, q.location_preference)
    # Its digits are the search-space id the file's groundtruth field carries.
    assert final_id[-6:-1] == query_to_dict(q)["groundtruth"][-6:-1]


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_dump_and_load_round_trip(tmp_path: Path, suffix: str) -> None:
    queries = [q for task in TASKS for q in generate_queries(task, 5)]
    path = tmp_path / f"queries{suffix}"
    dump_queries(path, queries)
    assert load_queries(path) == queries
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        assert len(text.splitlines()) == len(queries)
    else:
        assert isinstance(json.loads(text), list)


def test_file_layout_is_costbench_style(tmp_path: Path) -> None:
    q = generate_queries("location", 1)[0]
    row = query_to_dict(q)
    assert list(row) == [
        "query_id",
        "TimeInfo",
        "task",
        "is_location",
        "goal_type",
        "preferences",
        "groundtruth",
        "user_requirements",
        "query",
    ]
    assert row["query"] == {"input": q.text}
    assert row["is_location"] == 1 and row["goal_type"] == "TravelLocation"
    assert "location_preference" not in row
    assert query_from_dict(row) == q
    other = query_to_dict(generate_queries("shopping", 1)[0])
    assert other["is_location"] == 0 and other["location_preference"].startswith("<Location")


def test_load_ignores_extra_fields_and_accepts_one_object(tmp_path: Path) -> None:
    q = generate_queries("attraction", 1)[0]
    row = {**query_to_dict(q), "extra": [1, 2], "query": {"input": q.text, "output": "x"}}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(row, indent=2), encoding="utf-8")
    assert load_queries(path) == [q]
    jsonl = tmp_path / "blank-lines.jsonl"
    jsonl.write_text("\n" + json.dumps(row) + "\n\n", encoding="utf-8")
    assert load_queries(str(jsonl)) == [q]


def _good_row(task: str = "dining", index: int = 0) -> dict[str, Any]:
    return query_to_dict(generate_queries(task, index + 1)[index])


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def _assert_one_line(exc: pytest.ExceptionInfo[QueryFileError], path: Path) -> str:
    message = str(exc.value)
    assert "\n" not in message
    assert str(path) in message
    assert isinstance(exc.value, ValueError)
    return message


_DINING_TIERS = ", ".join(PREFERENCE_VALUES["dining"]["tier"])


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r.update(task="cruise"), ["unknown task 'cruise'", "allowed: location"]),
        (
            lambda r: r["preferences"].update(tier="cheap"),
            ["field preferences.tier = 'cheap'", f"allowed: {_DINING_TIERS}"],
        ),
        (
            lambda r: r["preferences"].pop("tier"),
            ["lacks 'tier'", f"values: {_DINING_TIERS}"],
        ),
        (
            lambda r: r["preferences"].update(colour="red"),
            ["unknown dimension(s)", "'colour'", "allowed: category, tier"],
        ),
        (lambda r: r.update(preferences="cheap"), ["preferences must be an object"]),
        (lambda r: r.pop("TimeInfo"), ["missing field(s) TimeInfo", "required: query_id"]),
        (lambda r: r.pop("query"), ["missing field(s) query"]),
        (
            lambda r: r.pop("location_preference"),
            ["field location_preference must be <LocationPreference#####>", "got None"],
        ),
        (lambda r: r.update(TimeInfo=""), ["field TimeInfo must look like <TimeInfo00006>"]),
        (
            lambda r: r.update(TimeInfo="2025-07-14 to 2025-07-18"),
            ["field TimeInfo must look like <TimeInfo00006>"],
        ),
        (lambda r: r.update(groundtruth="<DiningPreference00001>"), ["field groundtruth"]),
        (lambda r: r.update(is_location=1), ["field is_location = 1 disagrees"]),
        (lambda r: r.update(goal_type="TravelShopping"), ["field goal_type"]),
        (lambda r: r.update(query_id="Q1"), ["field query_id must look like <Query00001>"]),
        (lambda r: r.update(query={"output": "x"}), ['{"input": <non-empty text>}']),
        (lambda r: r.update(query="just text"), ['{"input": <non-empty text>}']),
        (
            lambda r: r.update(location_preference="<LocationPreference00257>"),
            ["in 1..256 for dining", "'<LocationPreference00257>'"],
        ),
    ],
)
def test_load_reports_bad_entries_in_one_line(
    tmp_path: Path, mutate: Any, expected: list[str]
) -> None:
    rows = [_good_row(index=0), _good_row(index=1)]
    mutate(rows[1])
    path = _write(tmp_path / "bad.json", rows)
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert "entry 1" in message
    if rows[1].get("query_id", "").startswith("<Query"):
        assert f"(query_id {rows[1]['query_id']!r})" in message
    for part in expected:
        assert part in message


def test_load_reports_missing_query_id(tmp_path: Path) -> None:
    row = _good_row()
    del row["query_id"]
    path = _write(tmp_path / "noid.json", [row])
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert "entry 0:" in message
    assert "missing field(s) query_id" in message


def test_load_reports_location_string_for_location_task(tmp_path: Path) -> None:
    row = _good_row("location")
    row["location_preference"] = "<LocationPreference00001>"
    path = _write(tmp_path / "loc.json", [row])
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    assert "must be absent for location" in _assert_one_line(exc, path)


def test_load_reports_duplicate_ids(tmp_path: Path) -> None:
    first, second = _good_row(index=0), _good_row(index=1)
    second["query_id"] = first["query_id"]
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert f"entry 1 (line 2) (query_id {first['query_id']!r})" in message
    assert "field query_id: duplicate (first used by entry 0 (line 1))" in message


def test_load_reports_non_object_entry(tmp_path: Path) -> None:
    path = _write(tmp_path / "list.json", [_good_row(), ["not", "an", "object"]])
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert "entry 1: expected a JSON object, got list" in message


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("broken.json", '[{"query_id": "<Query00001>",\n  oops}]', "line 2: not valid JSON"),
        ("broken.jsonl", '{"query_id": 1}\n{not json}\n', "entry 1 (line 2): not valid JSON"),
        ("empty.json", "[]", "no queries found"),
        ("empty.jsonl", "\n\n", "no queries found"),
    ],
)
def test_load_reports_unreadable_files(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    assert expected in _assert_one_line(exc, path)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("latin1.json", b'[{"task": "caf\xe9"}]', "not UTF-8 text (byte 14)"),
        ("deep.json", b"[" * 100_000, "JSON nested too deeply"),
        ("deep.jsonl", b'{"query_id": "a"}\n{"a": ' + b"[" * 100_000, "entry 1 (line 2): JSON"),
    ],
)
def test_load_reports_undecodable_files_in_one_line(
    tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    assert expected in _assert_one_line(exc, path)


def test_load_reports_a_directory(tmp_path: Path) -> None:
    with pytest.raises(QueryFileError) as exc:
        load_queries(tmp_path)
    assert "cannot be read" in _assert_one_line(exc, tmp_path)


def test_multiline_values_stay_on_one_line(tmp_path: Path) -> None:
    row = _good_row()
    row["task"] = "cruise\nship"
    path = _write(tmp_path / "nl.json", [row])
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    assert "'cruise\\nship'" in _assert_one_line(exc, path)


def test_query_from_dict_raises_value_error() -> None:
    row = _good_row()
    row["task"] = "cruise"
    with pytest.raises(ValueError, match="unknown task 'cruise'"):
        query_from_dict(row)


# ------------------------------------------------- CostBench's own layout and ids

_COSTBENCH_FILE = Path(__file__).parent / "data" / "costbench_layout_queries.json"


def test_a_file_in_costbench_layout_loads_as_is() -> None:
    # Our own two queries, written field for field in the layout of CostBench's queries.json
    # (including the fields run.py ignores: validation_raw, is_valid).
    location, dining = load_queries(_COSTBENCH_FILE)
    assert location.task == "location" and location.location_preference is None
    assert location.time_info == "<TimeInfo00006>"
    assert dining.location_preference == "<LocationPreference00166>"
    assert dining.text.startswith("Hand-written request for the period <TimeInfo04413>")
    assert dining.user_requirements.startswith("Fresh bread")


def test_search_space_ids_hand_worked() -> None:
    # Dimensions in alphabetical order (category, feature_package, style, tier), values in
    # enum declaration order, base 4, ids from 1.  location: seaside = category 1,
    # culinary_capital = feature 3, natural_and_serene = style 2, small_town = tier 2:
    # index 1*64 + 3*16 + 2*4 + 2 = 122, id 123.
    from pytest_budget.planning._ids import search_space_id

    prefs = {
        "category": "seaside",
        "feature_package": "culinary_capital",
        "style": "natural_and_serene",
        "tier": "small_town",
    }
    assert search_space_id("location", prefs) == 1 * 64 + 3 * 16 + 2 * 4 + 2 + 1 == 123
    # dining at location 166: bakery=3, live_music_or_performance=0, value_for_money=3,
    # nationally_acclaimed=1 -> 3*64 + 0 + 3*4 + 1 = 205; (166 - 1) * 256 + 205 + 1 = 42446.
    dining = {
        "category": "bakery",
        "feature_package": "live_music_or_performance",
        "style": "value_for_money_priority",
        "tier": "nationally_acclaimed",
    }
    assert search_space_id("dining", dining, 166) == 165 * 256 + 205 + 1 == 42446
    first = {d: PREFERENCE_VALUES["shopping"][d][0] for d in DIMENSIONS}
    last = {d: PREFERENCE_VALUES["shopping"][d][-1] for d in DIMENSIONS}
    assert search_space_id("shopping", first, 1) == 1
    assert search_space_id("shopping", last, 256) == 65536


def test_a_wrong_groundtruth_is_named_with_the_right_one(tmp_path: Path) -> None:
    rows = json.loads(_COSTBENCH_FILE.read_text(encoding="utf-8"))
    assert [r["groundtruth"] for r in rows] == [
        "<LocationPreference00123>",
        "<DiningPreference42446>",
    ]
    rows[1]["groundtruth"] = "<DiningPreference42306>"
    path = _write(tmp_path / "bad.json", rows)
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert "'<Query00031>'" in message
    assert "field groundtruth = '<DiningPreference42306>'" in message
    assert "(<DiningPreference42446>)" in message


def test_costbench_enum_values_in_declaration_order() -> None:
    # Fact sheet §1 table, spot checks at both ends of each task's lists.
    assert PREFERENCE_VALUES["location"]["category"] == ("city", "seaside", "mountain", "village")
    assert PREFERENCE_VALUES["accommodation"]["tier"][0] == "luxury_five_star"
    assert PREFERENCE_VALUES["attraction"]["style"][-1] == "social_and_community_priority"
    assert PREFERENCE_VALUES["dining"]["style"][2] == "speed_and_convenience_priority"
    assert PREFERENCE_VALUES["shopping"]["feature_package"][-1] == (
        "vintage_and_second_hand_specialty"
    )


def test_a_train_split_entry_is_refused_naming_the_value(tmp_path: Path) -> None:
    # CostBench's train split uses another vocabulary and 7-digit ids; run.py itself cannot
    # run it (its enums and id length assume the test split), and neither can we.
    row = {
        "query_id": "<Query0000001>",
        "TimeInfo": "<TimeInfo0000085>",
        "task": "location",
        "preferences": {
            "category": "forest",
            "tier": "remote_outpost",
            "style": "bohemian_and_artsy",
            "feature_package": "unesco_world_heritage",
        },
        "query": {"input": "x"},
    }
    path = _write(tmp_path / "train.json", [row])
    with pytest.raises(QueryFileError) as exc:
        load_queries(path)
    message = _assert_one_line(exc, path)
    assert "field preferences.category = 'forest'" in message
    assert "CostBench's test enums" in message
