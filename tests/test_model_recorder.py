"""Recorded model calls on disk: keys, journals, overrides, torn lines, the earlier layout."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import threading
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_budget.models._client import ChatResult, ToolCall
from pytest_budget.models._recorder import (
    CallRecorder,
    canonical_body,
    cassette_has_records,
    key_of,
    request_key,
    result_to_json,
)
from pytest_budget.models._usage import TokenUsage

BODY = {
    "model": "m",
    "messages": [{"role": "user", "content": "Wie weit? \u2014 \u00fcber 9 \U0001f600"}],
    "max_tokens": 16,
    "temperature": 0.0,
}


def result(text: str) -> ChatResult:
    return ChatResult(
        text=text,
        tool_calls=(ToolCall("c1", "move", {"to": "A"}, '{"to": "A"}'),),
        usage=TokenUsage(input=12, output=3, cached_read=2, reported=True),
        raw_finish_reason="stop",
    )


def test_the_key_hashes_provider_and_request_with_sorted_keys() -> None:
    # Worked out independently: the whole request object, sorted, compact, UTF-8.
    expected = hashlib.sha256(
        json.dumps(
            {"request": BODY, "provider": "openai"},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")
    ).hexdigest()
    assert request_key("openai", BODY) == expected
    assert key_of("openai", canonical_body(BODY)) == expected
    assert request_key("openai", dict(reversed(BODY.items()))) == expected
    assert request_key("anthropic", BODY) != expected
    assert json.loads(canonical_body(BODY)) == BODY


def test_a_repeat_is_part_of_the_key_except_the_first() -> None:
    # Index 0 keeps the key above (caches recorded before repeats were keyed replay it);
    # a later repeat hashes the request object with its index, sorted the same way.
    def expected(repeat: int) -> str:
        text = json.dumps(
            {"provider": "openai", "repeat": repeat, "request": BODY},
            sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        )  # fmt: skip
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    assert request_key("openai", BODY, 0) == request_key("openai", BODY)
    keys = [request_key("openai", BODY, repeat) for repeat in range(4)]
    assert keys[1:] == [expected(1), expected(2), expected(3)]
    assert len(set(keys)) == 4
    assert key_of("openai", canonical_body(BODY), 2) == expected(2)


def test_each_repeat_is_stored_and_replayed_apart(tmp_path: Path) -> None:
    writer = CallRecorder(tmp_path)
    for repeat in range(3):
        key = request_key("openai", BODY, repeat)
        journal = writer.store("openai", "m", key, BODY, result(f"r{repeat}"), repeat=repeat)
    reader = CallRecorder(tmp_path)
    answers = [reader.load("openai", "m", request_key("openai", BODY, n)) for n in range(4)]
    assert answers == [result("r0"), result("r1"), result("r2"), None]
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert [record.get("repeat") for record in records] == [None, 1, 2]
    assert all(record["request"] == BODY for record in records)


def test_a_stored_call_replays_in_a_new_process_view(tmp_path: Path) -> None:
    key = request_key("openai", BODY)
    writer = CallRecorder(tmp_path)
    journal = writer.store("openai", "m", key, BODY, result("ok"))
    assert writer.load("openai", "m", key) == result("ok")  # this process sees it at once
    reader = CallRecorder(tmp_path)  # reads the cassette afresh, as the next run does
    assert reader.load("openai", "m", key) == result("ok")
    assert reader.load("openai", "m", "0" * 64) is None
    assert reader.load("openai", "other", key) is None
    (line,) = journal.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record == {
        "format": 1,
        "key": key,
        "provider": "openai",
        "model": "m",
        "request": BODY,
        "response": result_to_json(result("ok")),
    }
    assert journal.parent == tmp_path / "openai" / "m" and journal.name.startswith("calls-")


def test_one_journal_per_recorder_and_one_line_per_call(tmp_path: Path) -> None:
    recorder = CallRecorder(tmp_path)
    keys = []
    for i in range(5):
        body = {**BODY, "max_tokens": 10 + i}
        keys.append(request_key("openai", body))
        recorder.store("openai", "m", keys[-1], body, result(f"answer {i}"))
    (journal,) = (tmp_path / "openai" / "m").glob("*.jsonl")
    assert [json.loads(x)["key"] for x in journal.read_text().splitlines()] == keys
    reader = CallRecorder(tmp_path)
    assert [reader.load("openai", "m", k).text for k in keys] == [  # type: ignore[union-attr]
        f"answer {i}" for i in range(5)
    ]


def test_a_later_recording_overrides_an_earlier_one(tmp_path: Path) -> None:
    key = request_key("openai", BODY)
    CallRecorder(tmp_path).store("openai", "m", key, BODY, result("first"))
    CallRecorder(tmp_path).store("openai", "m", key, BODY, result("second"))
    assert len(list((tmp_path / "openai" / "m").glob("*.jsonl"))) == 2
    assert CallRecorder(tmp_path).load("openai", "m", key) == result("second")
    # Within one journal too (record mode "all" in one process).
    same = CallRecorder(tmp_path / "one")
    same.store("openai", "m", key, BODY, result("old"))
    same.store("openai", "m", key, BODY, result("new"))
    assert CallRecorder(tmp_path / "one").load("openai", "m", key) == result("new")


def test_a_torn_last_line_is_skipped_and_the_rest_replays(tmp_path: Path) -> None:
    keys = [request_key("openai", {**BODY, "max_tokens": n}) for n in (1, 2)]
    recorder = CallRecorder(tmp_path)
    for n, key in zip((1, 2), keys, strict=True):
        journal = recorder.store("openai", "m", key, {**BODY, "max_tokens": n}, result(str(n)))
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) - 40])  # killed while writing the second line
    reader = CallRecorder(tmp_path)
    assert reader.load("openai", "m", keys[0]) == result("1")
    assert reader.load("openai", "m", keys[1]) is None
    assert reader.corrupt == 1


def test_a_hand_written_line_of_another_shape_is_still_read(tmp_path: Path) -> None:
    key = request_key("openai", BODY)
    folder = tmp_path / "openai" / "m"
    folder.mkdir(parents=True)
    record = {
        "response": result_to_json(result("pretty")),
        "key": key,
        "format": 1,
        "request": BODY,
    }
    (folder / "calls-00000000000000000001-1-aaaa.jsonl").write_text(json.dumps(record) + "\n")
    assert CallRecorder(tmp_path).load("openai", "m", key) == result("pretty")


def test_a_record_whose_stored_key_differs_is_a_miss(tmp_path: Path) -> None:
    key = request_key("openai", BODY)
    folder = tmp_path / "openai" / "m"
    folder.mkdir(parents=True)
    # The earlier layout, renamed by hand: the file name says one key, the record another.
    (folder / key[:2]).mkdir()
    wrong = {"format": 1, "key": "f" * 64, "response": result_to_json(result("x"))}
    (folder / key[:2] / f"{key}.json").write_text(json.dumps(wrong))
    reader = CallRecorder(tmp_path)
    assert reader.load("openai", "m", key) is None and reader.corrupt == 1


def test_records_in_the_earlier_one_file_per_call_layout_replay(tmp_path: Path) -> None:
    key = request_key("openai", BODY)
    folder = tmp_path / "openai" / "m" / key[:2]
    folder.mkdir(parents=True)
    record = {
        "format": 1,
        "provider": "openai",
        "model": "m",
        "key": key,
        "request": BODY,
        "response": result_to_json(result("old layout")),
    }
    (folder / f"{key}.json").write_text(json.dumps(record, sort_keys=True))
    assert cassette_has_records(tmp_path, "openai", "m")
    assert CallRecorder(tmp_path).load("openai", "m", key) == result("old layout")


def test_cassette_has_records_ignores_empty_journals(tmp_path: Path) -> None:
    assert not cassette_has_records(tmp_path, "openai", "m")
    folder = tmp_path / "openai" / "m"
    folder.mkdir(parents=True)
    (folder / "calls-00000000000000000001-1-aaaa.jsonl").write_text("")
    assert not cassette_has_records(tmp_path, "openai", "m")
    CallRecorder(tmp_path).store("openai", "m", request_key("openai", BODY), BODY, result("x"))
    assert cassette_has_records(tmp_path, "openai", "m")


def test_threads_storing_at_once_write_whole_lines(tmp_path: Path) -> None:
    recorder = CallRecorder(tmp_path)

    def store(worker: int) -> None:
        for i in range(50):
            body = {**BODY, "max_tokens": 1000 * worker + i + 1}
            recorder.store("openai", "m", request_key("openai", body), body, result("t" * 3000))

    threads = [threading.Thread(target=store, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (journal,) = (tmp_path / "openai" / "m").glob("*.jsonl")
    lines = journal.read_text().splitlines()
    assert len(lines) == 200 and all(json.loads(x)["response"]["text"] == "t" * 3000 for x in lines)
    reader = CallRecorder(tmp_path)
    body = {**BODY, "max_tokens": 3050}
    assert reader.load("openai", "m", request_key("openai", body)) == result("t" * 3000)


def _record_in_a_process(root: str, worker: int) -> None:
    recorder = CallRecorder(root)
    for i in range(20):
        body = {**BODY, "max_tokens": 100 * worker + i + 1}
        recorder.store("openai", "m", request_key("openai", body), body, result(f"{worker}/{i}"))


def test_processes_record_to_their_own_journals_and_all_replay(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_record_in_a_process, args=(str(tmp_path), w)) for w in (1, 2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert len(list((tmp_path / "openai" / "m").glob("*.jsonl"))) == 2
    reader = CallRecorder(tmp_path)
    for w in (1, 2):
        for i in range(20):
            body = {**BODY, "max_tokens": 100 * w + i + 1}
            found = reader.load("openai", "m", request_key("openai", body))
            assert found is not None and found.text == f"{w}/{i}"
    assert reader.corrupt == 0


def test_a_refresh_sees_what_another_process_recorded_meanwhile(tmp_path: Path) -> None:
    # Two xdist workers: the second read the cassette before the first recorded the call.
    first, second = CallRecorder(tmp_path), CallRecorder(tmp_path)
    body = {"model": "m", "messages": [{"role": "user", "content": "shared"}]}
    key = request_key("openai", body)
    assert second.load("openai", "m", key, body) is None  # its index is read now
    first.store("openai", "m", key, body, result("ok"))
    assert second.load("openai", "m", key, body) is None  # not seen without a refresh
    assert second.load("openai", "m", key, body, refresh=True) == result("ok")
    assert second.corrupt == 0


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), _JSON, max_size=8), st.data())
def test_a_body_with_values_given_encoded_is_the_same_text(body: dict, data: st.DataObject) -> None:
    # The runtime passes a planning tool list's JSON, made once; the key and the request
    # must be the bytes json.dumps gives for the whole body (a second method: json itself).
    given_keys = data.draw(st.sets(st.sampled_from(sorted(body))) if body else st.just(set()))
    options = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False}
    encoded = {key: json.dumps(body[key], **options) for key in given_keys}
    assert canonical_body(body, encoded) == json.dumps(body, **options)
