"""User pool files: every error is one line naming file, line and fix; round trips; chunking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_budget.triage._pool_file import (
    PoolFileError,
    chunk_pool,
    load_pool_file,
    load_pools,
    write_pool_file,
)
from pytest_budget.triage._types import Baseline, Item

GRADERS = {"exact", "numeric", "choice"}


def write_lines(path: Path, *lines: str) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def item(index: int, domain: str = "big") -> Item:
    return Item(id=f"q{index}", text=f"What is {index} + 1?", answer=index + 1, domain=domain)


# -- loading --------------------------------------------------------------------------------


def test_loads_fields_defaults_and_ignores_unknown_fields(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "aime.jsonl",
        '{"id": "p1", "text": "What is 2 + 3?", "answer": 5, "grader": "numeric", "source": "x"}',
        "",
        "   ",
        '{"id": "p2", "text": "Pick one", "answer": ["A", {"k": 1}], "value": 2.5,'
        ' "unsolvable": true, "baseline": {"solved": false, "tokens": 812, "note": "ok"}}',
    )
    first, second = load_pool_file(path, valid_graders=GRADERS)
    assert first == Item(
        id="p1", text="What is 2 + 3?", answer=5, grader="numeric", domain="aime", value=1.0
    )
    assert second == Item(
        id="p2",
        text="Pick one",
        answer=["A", {"k": 1}],
        value=2.5,
        unsolvable=True,
        domain="aime",
        baseline=Baseline(solved=False, tokens=812),
    )


def test_integer_ids_become_strings(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", '{"id": 7, "text": "a"}', '{"id": -1, "text": "b"}')
    assert [i.id for i in load_pool_file(path)] == ["7", "-1"]


def test_integral_float_baseline_tokens_are_accepted(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "p.jsonl",
        '{"id": "a", "text": "t", "baseline": {"solved": true, "tokens": 40.0}}',
    )
    (loaded,) = load_pool_file(path)
    assert loaded.baseline == Baseline(solved=True, tokens=40)
    assert isinstance(loaded.baseline.tokens, int)


def test_crlf_bom_and_unicode_line_separators(tmp_path: Path) -> None:
    path = tmp_path / "win.jsonl"
    # U+2028 inside a JSON string is legal and must not split the line.
    payload = '{"id": "a", "text": "x\u2028y"}\r\n\r\n{"id": "b", "text": "é"}\r\n'
    path.write_bytes(b"\xef\xbb\xbf" + payload.encode("utf-8"))
    first, second = load_pool_file(path)
    assert (first.text, second.text) == ("x\u2028y", "é")


def test_any_grader_is_accepted_without_a_known_set(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", '{"id": "a", "text": "t", "grader": "mine"}')
    assert load_pool_file(path)[0].grader == "mine"


ERRORS = [
    pytest.param(
        ['{"id": "p1", "text": "a"}', '{"id": "p3", "text": "b"}', "", '{"id": "p3", "text": "c"}'],
        "P:4: duplicate id 'p3' (first seen on line 2); ids must be unique within a file",
        id="duplicate",
    ),
    pytest.param(
        ['{"id": "3", "text": "a"}', '{"id": 3, "text": "b"}'],
        "P:2: duplicate id '3' (first seen on line 1); ids must be unique within a file",
        id="duplicate-after-coercion",
    ),
    pytest.param(
        ['{"text": "a"}'],
        'P:1: missing "id"; every item needs a unique "id" string',
        id="missing-id",
    ),
    pytest.param(
        ['{"id": "  ", "text": "a"}'],
        'P:1: empty "id"; give every item a non-empty, unique "id"',
        id="empty-id",
    ),
    pytest.param(
        ['{"id": 1.5, "text": "a"}'],
        'P:1: "id" must be a string, got number 1.5; quote it',
        id="float-id",
    ),
    pytest.param(
        ['{"id": true, "text": "a"}'],
        'P:1: "id" must be a string, got boolean true; quote it',
        id="bool-id",
    ),
    pytest.param(
        ['{"id": "a", "text": "ok"}', '{"id": "b", "text": "x",}'],
        "P:2: not valid JSON (Expecting property name enclosed in double quotes at column 25); "
        "write one JSON object per line",
        id="not-json",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "value": NaN}'],
        "P:1: not valid JSON (NaN is not a JSON value); write null or a number",
        id="nan",
    ),
    pytest.param(
        ['["a", "t"]'],
        'P:1: expected a JSON object, got array; write one object per line like {"id": "p1", '
        '"text": "..."}',
        id="not-an-object",
    ),
    pytest.param(
        ['{"id": "a"}'],
        "P:1: item 'a' has no \"text\"; add the problem statement",
        id="missing-text",
    ),
    pytest.param(
        ['{"id": "a", "text": 12}'],
        "P:1: \"text\" of item 'a' must be a string, got number",
        id="text-type",
    ),
    pytest.param(
        ['{"id": "a", "text": ""}'],
        "P:1: \"text\" of item 'a' is empty; add the problem statement",
        id="empty-text",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "grader": "regex"}'],
        "P:1: unknown grader 'regex' for item 'a'; use one of: choice, exact, numeric",
        id="unknown-grader",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "grader": 3}'],
        "P:1: \"grader\" of item 'a' must be a string, got number",
        id="grader-type",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "value": 0}'],
        "P:1: \"value\" of item 'a' must be a number > 0, got 0",
        id="zero-value",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "value": -2.5}'],
        "P:1: \"value\" of item 'a' must be a number > 0, got -2.5",
        id="negative-value",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "value": "2"}'],
        'P:1: "value" of item \'a\' must be a number > 0, got string "2"',
        id="value-type",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "unsolvable": 1}'],
        "P:1: \"unsolvable\" of item 'a' must be true or false, got number 1",
        id="unsolvable-type",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": [true, 5]}'],
        "P:1: \"baseline\" of item 'a' must be an object like "
        '{"solved": true, "tokens": 812}, got array',
        id="baseline-type",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": {"solved": "yes", "tokens": 5}}'],
        "P:1: \"baseline.solved\" of item 'a' must be true or false, got string",
        id="baseline-solved",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": {"solved": true, "tokens": -5}}'],
        "P:1: \"baseline.tokens\" of item 'a' must be an integer from 0 to 1000000000000 "
        "(output tokens); got -5",
        id="negative-baseline-tokens",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": {"solved": true, "tokens": 5.5}}'],
        "P:1: \"baseline.tokens\" of item 'a' must be an integer from 0 to 1000000000000 "
        "(output tokens); got 5.5",
        id="fractional-baseline-tokens",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": {"solved": true}}'],
        "P:1: \"baseline.tokens\" of item 'a' must be an integer from 0 to 1000000000000 "
        "(output tokens); it is missing",
        id="missing-baseline-tokens",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "baseline": {"solved": true, "tokens": 1' + "0" * 30 + "}}"],
        "P:1: \"baseline.tokens\" of item 'a' must be an integer from 0 to 1000000000000 "
        "(output tokens); got a huge count",
        id="huge-baseline-tokens",
    ),
    pytest.param(
        ['{"id": "a", "text": "t", "domain": ""}'],
        "P:1: \"domain\" of item 'a' must be a non-empty string (the item's own domain label, "
        'default the file\'s stem), got string ""',
        id="empty-domain",
    ),
    pytest.param(
        ["", "  "],
        "P: no items (the file is empty or has only blank lines); add one JSON object per line "
        'like {"id": "p1", "text": "..."}',
        id="blank-file",
    ),
]


@pytest.mark.parametrize(("lines", "message"), ERRORS)
def test_errors_are_one_line_naming_file_line_and_fix(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = write_lines(tmp_path / "pool.jsonl", *lines)
    with pytest.raises(PoolFileError) as info:
        load_pool_file(path, valid_graders=GRADERS)
    assert str(info.value) == message.replace("P", path, 1)
    assert "\n" not in str(info.value)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(PoolFileError, match=r"empty\.jsonl: no items \(the file is empty"):
        load_pool_file(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(PoolFileError) as info:
        load_pool_file(path)
    assert str(info.value) == f"{path}: file not found; check the pool file path"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(PoolFileError) as info:
        load_pool_file(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory; pass a .jsonl file"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    # "é" is one character (two bytes) before the stray Latin-1 byte: columns count characters.
    path.write_bytes(b'{"id": "a", "text": "ok"}\n{"id": "\xc3\xa9", "text": "caf\xe9"}\n')
    with pytest.raises(PoolFileError) as info:
        load_pool_file(path)
    assert str(info.value) == (
        f"{path}:2: not valid UTF-8 (byte 0xe9 at column 25); save the file as UTF-8"
    )


def test_relative_path_is_shown_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pools").mkdir()
    write_lines(tmp_path / "pools" / "aime.jsonl", '{"id": "p1", "text": "a"}', '{"id": "p1"}')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PoolFileError) as info:
        load_pool_file("pools/aime.jsonl")
    assert str(info.value).startswith(
        "pools/aime.jsonl:2: duplicate id 'p1' (first seen on line 1)"
    )


def test_pool_file_error_is_a_value_error() -> None:
    assert issubclass(PoolFileError, ValueError)


# -- writing --------------------------------------------------------------------------------


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    items = (
        Item(id="p1", text="What is 2 + 3?", answer=5, grader="numeric", domain="mine"),
        Item(
            id="p2",
            text="Ünïcode\u2028text",
            answer={"choices": ["A", "B"]},
            value=2.0,
            domain="mine",
        ),
        Item(
            id="p3",
            text="x",
            value=0.5,
            unsolvable=True,
            domain="mine",
            baseline=Baseline(solved=False, tokens=0),
        ),
        Item(id="p4", text="y", answer=None, domain="mine"),
    )
    path = tmp_path / "mine.jsonl"
    write_pool_file(path, items)
    assert load_pool_file(path) == items
    first_line = path.read_text(encoding="utf-8").split("\n")[0]
    # Only non-default fields are written.
    assert json.loads(first_line) == {
        "id": "p1",
        "text": "What is 2 + 3?",
        "answer": 5,
        "grader": "numeric",
    }
    assert path.read_bytes().count(b"\n") == len(items)


def test_items_keep_their_own_domain_label_through_write_and_load(tmp_path: Path) -> None:
    path = tmp_path / "exported.jsonl"
    write_pool_file(
        path, [item(0, domain="arithmetic"), item(1, domain="exported"), item(2, domain="")]
    )
    lines = path.read_text(encoding="utf-8").splitlines()
    assert '"domain": "arithmetic"' in lines[0] and "domain" not in lines[1]
    assert [i.domain for i in load_pool_file(path)] == ["arithmetic", "exported", "exported"]


def test_an_unsolvable_line_from_another_dataset_keeps_its_label(tmp_path: Path) -> None:
    path = tmp_path / "gpqa.jsonl"
    path.write_text(
        '{"id": "g1", "text": "Which gas ...?", "answer": "B", "grader": "choice"}\n'
        '{"id": "x1", "text": "Which ...?", "unsolvable": true, "domain": "gpqa-abstain"}\n',
        encoding="utf-8",
    )
    (pool,) = load_pools([path])
    assert [(i.domain, i.unsolvable) for i in pool.items] == [
        ("gpqa", False), ("gpqa-abstain", True)
    ]  # fmt: skip
    assert pool.domain == "gpqa"


def test_write_refuses_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate item id 'q1'"):
        write_pool_file(tmp_path / "d.jsonl", [item(1), item(1)])
    assert not (tmp_path / "d.jsonl").exists()


# -- chunking -------------------------------------------------------------------------------


def test_chunking_65_items_gives_balanced_22_22_21() -> None:
    # Not 30, 30, 5: a 5-item trailing chunk makes a near-degenerate cell.
    items = [item(i) for i in range(65)]
    pools = chunk_pool("big", items)
    assert [pool.name for pool in pools] == ["big#0", "big#1", "big#2"]
    assert [len(pool) for pool in pools] == [22, 22, 21]
    assert [i for pool in pools for i in pool.items] == items  # consecutive, order kept
    assert {pool.domain for pool in pools} == {"big"}


def test_a_pool_that_fits_keeps_its_name() -> None:
    (pool,) = chunk_pool("small", [item(i) for i in range(30)])
    assert (pool.name, len(pool), pool.domain) == ("small", 30, "small")
    assert [p.name for p in chunk_pool("x", [item(i) for i in range(5)], chunk_size=2)] == [
        "x#0",
        "x#1",
        "x#2",
    ]


@pytest.mark.parametrize(
    ("n", "size", "expected"),
    [
        (61, 30, [21, 20, 20]),
        (60, 30, [30, 30]),
        (31, 30, [16, 15]),
        (8, 5, [4, 4]),
        (7, 1, [1] * 7),
    ],
)
def test_chunk_sizes_are_balanced(n: int, size: int, expected: list[int]) -> None:
    pools = chunk_pool("x", [item(i) for i in range(n)], chunk_size=size)
    assert [len(pool) for pool in pools] == expected
    assert max(expected) - min(expected) <= 1 and max(expected) <= size


@pytest.mark.parametrize("size", [0, -3])
def test_chunk_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match=f"chunk size must be a positive integer, got {size}"):
        chunk_pool("x", [item(0)], chunk_size=size)


def test_chunking_no_items_is_an_error() -> None:
    with pytest.raises(ValueError, match="pool 'x' has no items"):
        chunk_pool("x", [])


# -- several files --------------------------------------------------------------------------


def test_load_pools_names_by_stem_and_chunks(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    write_pool_file(big, [item(i) for i in range(65)])
    small = write_lines(tmp_path / "small.jsonl", '{"id": "s", "text": "t", "grader": "choice"}')
    pools = load_pools([big, small], valid_graders=GRADERS)
    assert [(p.name, len(p)) for p in pools] == [
        ("big#0", 22),
        ("big#1", 22),
        ("big#2", 21),
        ("small", 1),
    ]
    assert pools[3].items[0].domain == "small"
    assert [p.name for p in load_pools([big], chunk_size=40)] == ["big#0", "big#1"]
    assert load_pools([]) == ()


def test_load_pools_passes_valid_graders_through(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "g.jsonl", '{"id": "a", "text": "t", "grader": "regex"}')
    with pytest.raises(PoolFileError, match=r"g\.jsonl:1: unknown grader 'regex'"):
        load_pools([path], valid_graders=GRADERS)


def test_same_stem_in_two_files_asks_to_rename(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_lines(tmp_path / "a" / "aime.jsonl", '{"id": "x", "text": "t"}')
    second = write_lines(tmp_path / "b" / "aime.jsonl", '{"id": "x", "text": "t"}')
    with pytest.raises(PoolFileError) as info:
        load_pools([first, second])
    assert str(info.value) == (
        f"{second}: pool name 'aime' is already taken by {first}; "
        "pools are named by file stem, rename one of the files"
    )


def test_the_same_file_twice(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", '{"id": "x", "text": "t"}')
    with pytest.raises(PoolFileError) as info:
        load_pools([path, tmp_path / "." / "p.jsonl"])
    assert str(info.value) == f"{tmp_path / '.' / 'p.jsonl'}: listed more than once; " + (
        "pass each pool file once"
    )


def test_stem_colliding_with_a_chunk_name(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    write_pool_file(big, [item(i) for i in range(40)])
    clash = write_lines(tmp_path / "big#1.jsonl", '{"id": "x", "text": "t"}')
    with pytest.raises(PoolFileError) as info:
        load_pools([big, clash])
    assert str(info.value) == (
        f"{clash}: pool name 'big#1' collides with a chunk of {big}; "
        "rename the file (avoid '#' in pool file names)"
    )
