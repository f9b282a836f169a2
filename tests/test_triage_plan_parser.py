"""Plan parsing and the deterministic repair pass (TRIAGE App. B)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_budget.triage._plan_parser import MAX_TOKENS, parse_plan
from pytest_budget.triage._types import Plan, PlanEntry, PlanStatus

POOL = ["p1", "p2", "p3", "4"]
CLEAN = '{"plan": [{"id": "p2", "tokens": 300}, {"id": "p1", "tokens": 120}]}'
CLEAN_ENTRIES = (PlanEntry("p2", 300), PlanEntry("p1", 120))


def test_clean_text_is_ok() -> None:
    plan = parse_plan(CLEAN, POOL)
    assert plan == Plan(entries=CLEAN_ENTRIES, status=PlanStatus.OK, repairs=())


def test_surrounding_whitespace_is_not_a_repair() -> None:
    assert parse_plan(f"\n  {CLEAN}\n\n", POOL).status is PlanStatus.OK


def test_clean_objects_are_ok() -> None:
    as_dict = {"plan": [{"id": "p2", "tokens": 300}, {"id": "p1", "tokens": 120}]}
    assert parse_plan(as_dict, POOL) == Plan(entries=CLEAN_ENTRIES)
    assert parse_plan(as_dict["plan"], POOL) == Plan(entries=CLEAN_ENTRIES)
    assert parse_plan(Plan(entries=CLEAN_ENTRIES), POOL) == Plan(entries=CLEAN_ENTRIES)


def test_alias_keys_and_extra_fields_are_accepted_as_is() -> None:
    raw = {
        "plan": [
            {"problem_id": "p1", "allocation": 10, "reason": "easy"},
            {"id": "p2", "budget": 20},
            {"ID": "p3", "max_tokens": 30},
        ],
        "total": 60,
    }
    plan = parse_plan(raw, POOL)
    assert plan.status is PlanStatus.OK
    assert plan.entries == (PlanEntry("p1", 10), PlanEntry("p2", 20), PlanEntry("p3", 30))


def test_explicit_empty_plan_is_ok() -> None:
    empties: list[object] = ['{"plan": []}', {"plan": []}, [], "[]"]
    for raw in empties:
        assert parse_plan(raw, POOL) == Plan(entries=(), status=PlanStatus.OK), raw


def test_prose_around_json_is_stripped() -> None:
    text = f"Sure! Here is my plan:\n{CLEAN}\nI chose the cheap ones first."
    plan = parse_plan(text, POOL)
    assert plan.entries == CLEAN_ENTRIES
    assert plan.status is PlanStatus.REPAIRED
    assert plan.repairs == ("ignored text around the JSON plan",)


def test_code_fence_is_stripped() -> None:
    plan = parse_plan(f"```json\n{CLEAN}\n```", POOL)
    assert plan.entries == CLEAN_ENTRIES
    assert plan.status is PlanStatus.REPAIRED
    assert plan.repairs == ("removed markdown code fence",)


def test_think_block_is_removed_even_if_it_holds_json() -> None:
    draft = '{"plan": [{"id": "p3", "tokens": 999}]}'
    text = f"<think>First idea: {draft}. Hmm, no.</think>\n{CLEAN}"
    plan = parse_plan(text, POOL)
    assert plan.entries == CLEAN_ENTRIES
    assert plan.repairs == ("removed <think> reasoning",)


def test_think_without_opening_tag() -> None:
    plan = parse_plan(f"reasoning about p3... </think>{CLEAN}", POOL)
    assert plan.entries == CLEAN_ENTRIES and plan.status is PlanStatus.REPAIRED


def test_plan_only_inside_think_is_used_and_flagged() -> None:
    plan = parse_plan(f"<think>my answer: {CLEAN}</think>", POOL)
    assert plan.entries == CLEAN_ENTRIES
    assert "plan taken from inside the <think> reasoning" in plan.repairs


def test_last_of_several_plans_wins() -> None:
    text = f'Draft: {{"plan": [{{"id": "p3", "tokens": 5}}]}}\nFinal: {CLEAN}'
    plan = parse_plan(text, POOL)
    assert plan.entries == CLEAN_ENTRIES
    assert "found 2 plans; used the last" in plan.repairs


def test_nested_plan_is_found() -> None:
    plan = parse_plan({"response": {"plan": [{"id": "p1", "tokens": 5}]}}, POOL)
    assert plan.entries == (PlanEntry("p1", 5),)
    assert plan.status is PlanStatus.REPAIRED


def test_truncated_json_keeps_whole_entries() -> None:
    cut = CLEAN[: CLEAN.index('"tokens": 120')]  # cut inside the second entry
    plan = parse_plan(cut, POOL)
    assert plan.entries == (PlanEntry("p2", 300),)
    assert plan.status is PlanStatus.REPAIRED
    assert plan.repairs == ("no complete plan list; recovered 1 whole entry",)


def test_truncated_json_after_a_complete_entry_list() -> None:
    cut = '{"plan": [{"id": "p1", "tokens": 10}, {"id": "p2", "tokens": 20}], "note": "we sh'
    plan = parse_plan(cut, POOL)
    assert plan.entries == (PlanEntry("p1", 10), PlanEntry("p2", 20))
    assert plan.status is PlanStatus.REPAIRED


def test_trailing_commas_and_single_quotes() -> None:
    plan = parse_plan("{'plan': [{'id': 'p1', 'tokens': 10},],}", POOL)
    assert plan.entries == (PlanEntry("p1", 10),)
    assert plan.repairs == (
        "read single-quoted strings as JSON strings",
        "removed trailing commas",
    )
    plan = parse_plan('{"plan": [{"id": "p1", "tokens": 10},]}', POOL)
    assert plan.entries == (PlanEntry("p1", 10),)
    assert plan.repairs == ("removed trailing commas",)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ("120", 120),
        (12.7, 12),
        (-5, 0),
        (-0.5, 0),
        ("1,200", 1200),
        (" 300 tokens", 300),
        ("1e3", 1000),
        (120.0, 120),
        ("lots", 0),
        (None, 0),
        (True, 0),
        ([5], 0),
    ],
)
def test_token_counts_are_coerced_and_recorded(tokens: object, expected: int) -> None:
    plan = parse_plan({"plan": [{"id": "p1", "tokens": tokens}]}, POOL)
    assert plan.entries == (PlanEntry("p1", expected),)
    assert plan.status is PlanStatus.REPAIRED
    assert len(plan.repairs) == 1 and plan.repairs[0].startswith("entry 1 ('p1'): token count")


def test_infinity_is_huge_and_nan_is_zero() -> None:
    # Infinity is an allocation larger than any budget (like 1e400 or a 5,000-digit
    # literal), so it is clamped, not zeroed; NaN is not a number at all.
    plan = parse_plan(
        '{"plan": [{"id": "p1", "tokens": Infinity}, {"id": "p2", "tokens": NaN}]}', POOL
    )
    assert plan.entries == (PlanEntry("p1", MAX_TOKENS), PlanEntry("p2", 0))
    assert plan.status is PlanStatus.REPAIRED


@pytest.mark.parametrize(
    "literal",
    ["1e30", "1e400", "10000000000000000000", "9999999999999999999", "9" * 5000, '"1e30"'],
)
def test_huge_token_counts_are_clamped_not_crashing(literal: str) -> None:
    # 5,000 digits used to raise ValueError (Python's int-string limit) out of the parser.
    plan = parse_plan(f'{{"plan": [{{"id": "p1", "tokens": {literal}}}]}}', POOL)
    assert plan.entries == (PlanEntry("p1", MAX_TOKENS),)
    assert plan.status is PlanStatus.REPAIRED
    assert "exceeds any budget" in plan.repairs[0]


def test_huge_python_integers_in_objects_are_clamped() -> None:
    plan = parse_plan({"plan": [{"id": "p1", "tokens": 10**5000}, {"id": 10**400}]}, POOL)
    assert plan.entries == (PlanEntry("p1", MAX_TOKENS),)
    assert "about 5000 digits" in plan.repairs[0]


def test_ten_thousand_entries_with_duplicates_and_unknown_ids() -> None:
    entries = [{"id": f"p{i % 5}", "tokens": i} for i in range(10_000)]
    plan = parse_plan({"plan": entries}, POOL)
    # p0 is unknown; of each repeated id only the first stays.
    assert plan.entries == (PlanEntry("p1", 1), PlanEntry("p2", 2), PlanEntry("p3", 3))
    assert plan.status is PlanStatus.REPAIRED


def test_missing_tokens_become_zero() -> None:
    plan = parse_plan([{"id": "p1"}], POOL)
    assert plan.entries == (PlanEntry("p1", 0),)
    assert plan.repairs == ("entry 1 ('p1'): no token count, read as 0",)


def test_integer_ids_match_string_pool_ids() -> None:
    plan = parse_plan('{"plan": [{"id": 4, "tokens": 7}]}', POOL)
    assert plan.entries == (PlanEntry("4", 7),)
    assert plan.repairs == ("entry 1: id 4 read as '4'",)


def test_padded_ids_are_stripped() -> None:
    plan = parse_plan([{"id": " p1 ", "tokens": 7}], POOL)
    assert plan.entries == (PlanEntry("p1", 7),)
    assert plan.status is PlanStatus.REPAIRED


def test_unknown_ids_are_dropped() -> None:
    plan = parse_plan([{"id": "p9", "tokens": 5}, {"id": "p1", "tokens": 6}], POOL)
    assert plan.entries == (PlanEntry("p1", 6),)
    assert plan.repairs == ("entry 1: dropped id 'p9' (not in the pool)",)


def test_duplicate_ids_keep_the_first_occurrence() -> None:
    raw = [{"id": "p1", "tokens": 5}, {"id": "p2", "tokens": 6}, {"id": "p1", "tokens": 99}]
    plan = parse_plan(raw, POOL)
    assert plan.entries == (PlanEntry("p1", 5), PlanEntry("p2", 6))
    assert plan.repairs == ("entry 3: dropped repeated id 'p1'",)


def test_all_entries_unknown_is_a_repaired_empty_plan() -> None:
    plan = parse_plan([{"id": "x", "tokens": 5}], POOL)
    assert plan.entries == () and plan.status is PlanStatus.REPAIRED


def test_entries_without_ids_or_not_objects_are_dropped() -> None:
    plan = parse_plan([{"id": "p1", "tokens": 5}, "p2", {"tokens": 3}, {"id": None}], POOL)
    assert plan.entries == (PlanEntry("p1", 5),)
    assert plan.repairs == (
        "entry 2: not an object, dropped",
        "entry 3: no id, dropped",
        "entry 4: id None is not usable, dropped",
    )


def test_zero_token_entries_are_kept_but_not_planned() -> None:
    plan = parse_plan('{"plan": [{"id": "p1", "tokens": 0}, {"id": "p2", "tokens": 50}]}', POOL)
    assert plan.status is PlanStatus.OK
    assert plan.entries == (PlanEntry("p1", 0), PlanEntry("p2", 50))
    assert plan.planned == (PlanEntry("p2", 50),)


def test_over_budget_allocations_are_left_alone() -> None:
    plan = parse_plan([{"id": "p1", "tokens": 10**9}], POOL)
    assert plan == Plan(entries=(PlanEntry("p1", 10**9),))


def test_plan_objects_are_validated_and_keep_earlier_repairs() -> None:
    given_plan = Plan(
        entries=(PlanEntry("p1", -3), PlanEntry("zz", 4), PlanEntry("p1", 8)),
        status=PlanStatus.REPAIRED,
        repairs=("earlier fix",),
    )
    plan = parse_plan(given_plan, POOL)
    assert plan.entries == (PlanEntry("p1", 0),)
    assert plan.status is PlanStatus.REPAIRED
    assert plan.repairs[0] == "earlier fix" and len(plan.repairs) == 4


def test_unparseable_plan_object_stays_unparseable() -> None:
    given_plan = Plan(status=PlanStatus.UNPARSEABLE, repairs=("timeout",))
    assert parse_plan(given_plan, POOL) == given_plan


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "expected a plan object, list or text, got NoneType"),
        (42, "expected a plan object, list or text, got int"),
        (3.5, "expected a plan object, list or text, got float"),
        ("", "empty text"),
        ("   \n", "empty text"),
        ("I cannot make a plan for these problems.", "no JSON object with a 'plan' list found"),
        ('{"answer": 42}', "no JSON object with a 'plan' list found"),
        ('{"plan": null}', "no JSON object with a 'plan' list found"),
        ("\\frac{1}{2} and [citation]", "no JSON object with a 'plan' list found"),
        ({"answer": 42}, "no 'plan' list in the object"),
        ([1, 2, 3], "the plan list holds no entries with an id"),
        ({"plan": ["p1", "p2"]}, "the plan list holds no entries with an id"),
    ],
)
def test_unparseable_inputs_give_a_reason(raw: object, reason: str) -> None:
    plan = parse_plan(raw, POOL)
    assert plan.status is PlanStatus.UNPARSEABLE
    assert plan.entries == ()
    assert plan.repairs[-1] == reason


def test_bytes_are_decoded() -> None:
    assert parse_plan(CLEAN.encode(), POOL) == Plan(entries=CLEAN_ENTRIES)


def test_pathological_text_is_cheap_and_safe() -> None:
    for text in ("[" * 200_000, '{"a":' * 100_000, "{" * 100_000):
        plan = parse_plan(text, POOL)
        assert plan.status is PlanStatus.UNPARSEABLE


def test_parsing_is_deterministic() -> None:
    text = f"<think>x</think> ```json\n{CLEAN[:-3]}\n``` trailing"
    assert parse_plan(text, POOL) == parse_plan(text, POOL)


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    plan = parse_plan(text, POOL)
    assert plan.status in set(PlanStatus)
    if plan.status is PlanStatus.UNPARSEABLE:
        assert plan.entries == () and plan.repairs


entries_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.sampled_from(POOL), st.text(max_size=4), st.integers(0, 6)),
            "tokens": st.one_of(
                st.integers(-100, 10_000),
                st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=6),
            ),
        }
    ),
    max_size=8,
)


@given(entries_strategy)
def test_repaired_plans_satisfy_the_invariants(entries: list[dict[str, object]]) -> None:
    text = json.dumps({"plan": entries})
    plan = parse_plan(text, POOL)
    assert plan.status is not PlanStatus.UNPARSEABLE
    ids = [entry.id for entry in plan.entries]
    assert set(ids) <= set(POOL) and len(ids) == len(set(ids))
    assert all(isinstance(e.tokens, int) and e.tokens >= 0 for e in plan.entries)
    # The first occurrence of each pool id is the one kept, in the original order.
    firsts: list[str] = []
    for entry in entries:
        key = str(entry["id"]).strip()
        if key in POOL and key not in firsts:
            firsts.append(key)
    assert ids == firsts
    assert (plan.status is PlanStatus.OK) == (not plan.repairs)


def test_negative_infinity_reads_as_zero() -> None:
    # Found by the property test: math.floor(-inf) raised OverflowError.
    plan = parse_plan({"plan": [{"id": "p1", "tokens": float("-inf")}]}, POOL)
    assert plan.entries == (PlanEntry("p1", 0),)
    assert parse_plan('{"plan": [{"id": "p1", "tokens": -Infinity}]}', POOL).entries == (
        PlanEntry("p1", 0),
    )


def test_fast_path_never_hides_a_later_nested_plan() -> None:
    # The last plan wins (drafts first); a container beside "plan" disables the fast path.
    raw = '{"plan": [{"id": "p1", "tokens": 5}], "final": {"plan": [{"id": "p2", "tokens": 7}]}}'
    plan = parse_plan(raw, POOL)
    assert plan.entries == (PlanEntry("p2", 7),)
    assert plan.repairs == ("found 2 plans; used the last", "used the plan nested under 'final'")
    simple = parse_plan('{"plan": [{"id": "p1", "tokens": 5}], "total": 5}', frozenset(POOL))
    assert simple == Plan(entries=(PlanEntry("p1", 5),))
