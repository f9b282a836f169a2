"""CostBench travel environment (pytest_budget.planning): tools, costs, stepping, planning."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_budget.planning import (
    PREFERENCE_VALUES,
    TASKS,
    TravelEnv,
    atomic_chain,
    build_tools,
    expected_answer,
)
from pytest_budget.planning._costs import query_seed
from pytest_budget.planning._env import _lenient_arguments, fill_arguments, id_kind
from pytest_budget.planning._episode_records import Query
from pytest_budget.planning._ground_truth import _Held, dijkstra
from pytest_budget.planning._tools import Tool

QUERIES = [f"<Query{i:05d}>" for i in range(1, 9)]


def _prefs_args(task: str, prefs: dict[str, str]) -> dict[str, str]:
    s = task.capitalize()
    return {
        f"{s}Category": prefs["category"],
        f"{s}Tier": prefs["tier"],
        f"{s}Style": prefs["style"],
        f"{s}FeaturePackage": prefs["feature_package"],
    }


def _seed(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % (2**31 - 1)


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("level", range(6))
def test_chain_length_is_level_plus_three(task: str, level: int) -> None:
    chain = atomic_chain(task, level)
    assert len(chain) == level + 3
    s = task.capitalize()
    assert chain[0].name == f"Decide_{s}_Preference"
    assert chain[1].name == f"Search_{s}_Candidates"
    assert [t.name for t in chain[2:-1]] == [f"{s}_Refinement_Step{k}" for k in range(1, level + 1)]
    assert chain[-1].name == f"Select_Final_{s}"
    assert chain[-1].output == f"Travel{s}"
    # Each atomic consumes its predecessor's output.
    for prev, nxt in itertools.pairwise(chain):
        assert prev.output in nxt.inputs


# Hand-computed: a chain of m = L + 3 atomics has m(m-1)/2 contiguous runs of length >= 2.
COMPOSITES = {0: 3, 1: 6, 2: 10, 3: 15, 4: 21, 5: 28}


@pytest.mark.parametrize("level", range(6))
@pytest.mark.parametrize("ban", [False, True])
def test_composite_counts(level: int, ban: bool) -> None:
    tools = build_tools("dining", level, ban_longest=ban)
    composites = [t for t in tools if t.is_composite]
    assert len(composites) == COMPOSITES[level] - ban
    names = [t.name for t in tools]
    assert len(set(names)) == len(names)
    full = f"Dining_Complete_{level + 3}Steps_Pipeline"
    assert (full in names) is not ban


def test_names_from_table_hand_example() -> None:
    names = {t.name for t in build_tools("transportation", 3, ban_longest=False) if t.is_composite}
    assert names == {
        # length 2
        "Transportation_Preference_and_Search",
        "Transportation_Search_to_Step1",
        "Transportation_Refine_to_Step2",
        "Transportation_Refine_to_Step3",
        "Transportation_Finalize_from_Step3",
        # >= 3, ending in a refinement
        "Transportation_Full_Planning_to_Step1",
        "Transportation_Full_Planning_to_Step2",
        "Transportation_Full_Planning_to_Step3",
        "Transportation_Search_Planning_to_Step2",
        "Transportation_Search_Planning_to_Step3",
        "Transportation_Refine_Step1_to_Step3",
        # >= 3, ending in Select
        "Transportation_Complete_6Steps_Pipeline",
        "Transportation_Search_to_Final_5Steps",
        "Transportation_Finish_from_Step1_4Steps",
        "Transportation_Finish_from_Step2_3Steps",
    }
    l0 = {t.name for t in build_tools("location", 0, ban_longest=False) if t.is_composite}
    assert l0 == {
        "Location_Preference_and_Search",
        "Location_Finalize_from_Search",
        "Location_Complete_3Steps_Pipeline",
    }


def test_composite_inputs_follow_union_rule() -> None:
    tools = {t.name: t for t in build_tools("dining", 2)}
    # CostBench: the *sorted* set of component inputs not produced inside the run.
    assert tools["Dining_Preference_and_Search"].inputs == (
        "DiningCategory",
        "DiningFeaturePackage",
        "DiningStyle",
        "DiningTier",
        "LocationPreference",
        "TimeInfo",
    )
    assert tools["Dining_Search_to_Step1"].inputs == (
        "DiningPreference",
        "LocationPreference",
        "TimeInfo",
    )
    assert tools["Dining_Refine_to_Step2"].inputs == ("DiningCandidate_Raw", "TimeInfo")
    assert tools["Dining_Finalize_from_Step2"].inputs == ("DiningCandidate_L1_Available",)
    assert tools["Dining_Finalize_from_Step2"].output == "TravelDining"
    # In the location task "LocationPreference" is Decide's output, not a query input.
    loc = {t.name: t for t in build_tools("location", 1)}
    assert "LocationPreference" not in loc["Decide_Location_Preference"].inputs
    assert loc["Decide_Location_Preference"].output == "LocationPreference"
    assert loc["Search_Location_Candidates"].inputs == ("LocationPreference", "TimeInfo")


def test_initial_state() -> None:
    assert TravelEnv("location", 1, "<Query00001>").state == {
        "TimeInfo",
        "LocationCategory",
        "LocationTier",
        "LocationStyle",
        "LocationFeaturePackage",
    }
    assert "LocationPreference" in TravelEnv("shopping", 1, "<Query00001>").state


def test_bad_task_or_level() -> None:
    with pytest.raises(ValueError, match="unknown task"):
        TravelEnv("flying", 1, "<Query00001>")
    with pytest.raises(ValueError, match=r"0\.\.5"):
        TravelEnv("dining", 6, "<Query00001>")


# ---------------------------------------------------------------- costs


def _spec_costs(
    task: str, level: int, query_id: str, seed: int = 42, noise_std: float = 0.1
) -> dict[str, float]:
    """Independent re-derivation of DESIGN 5.3's cost recipe."""
    seed_q = _seed(f"{seed}:{query_id}")
    caps = [t.capitalize() for t in TASKS]
    order = [f"Decide_{s}_Preference" for s in caps]
    for s in caps:
        order.append(f"Search_{s}_Candidates")
        order.extend(f"{s}_Refinement_Step{k}" for k in range(1, level + 1))
    order.extend(f"Select_Final_{s}" for s in caps)
    rng = random.Random(seed_q)
    atomic = {name: round(rng.uniform(15, 25), 2) for name in order}
    out = {}
    for tool in build_tools(task, level):
        if not tool.is_composite:
            out[tool.name] = atomic[tool.name]
            continue
        k = len(tool.components)
        s = _seed(f"{seed_q}:{tool.name}")
        noise = np.random.default_rng(s).normal(0, noise_std * math.sqrt(k))
        out[tool.name] = round(max(1, sum(atomic[c] for c in tool.components) + noise), 2)
    return out


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("level", [0, 2, 5])
def test_costs_follow_spec_draw_order(task: str, level: int) -> None:
    for query in QUERIES[:3]:
        assert TravelEnv(task, level, query).costs == _spec_costs(task, level, query)


# Pinned by hand (DESIGN 5.3 recipe, then every partition of the chain summed on paper), so a
# change of numpy's or random's streams, or of the draw order, cannot pass unnoticed.
def test_hand_checked_costs_and_paths_location_l0() -> None:
    env = TravelEnv("location", 0, "<Query00001>", ban_longest=False)
    assert env.seed_q == 815343802
    assert env.costs == {
        "Decide_Location_Preference": 23.23,  # the first draw of the whole stream
        "Search_Location_Candidates": 17.0,
        "Select_Final_Location": 15.03,
        "Location_Preference_and_Search": 40.48,
        "Location_Complete_3Steps_Pipeline": 55.3,
        "Location_Finalize_from_Search": 31.8,
    }
    # Partitions: D+S+Sel 55.26, D+Finalize 55.03, PaS+Sel 55.51, Complete 55.30.
    assert env.optimal_paths() == (
        [["Decide_Location_Preference", "Location_Finalize_from_Search"]],
        23.23 + 31.8,
    )
    # Greedy, first step free: D 23.23, PaS 40.48/2 = 20.24, Complete 55.3/3 = 18.43.
    assert env.greedy_path() == (["Location_Complete_3Steps_Pipeline"], 55.3)


def test_hand_checked_costs_and_paths_dining_l1() -> None:
    env = TravelEnv("dining", 1, "<Query40001>", ban_longest=False)
    assert env.seed_q == 1276456912
    assert env.costs == {
        "Decide_Dining_Preference": 24.27,
        "Search_Dining_Candidates": 17.55,
        "Dining_Refinement_Step1": 22.72,
        "Select_Final_Dining": 21.56,
        "Dining_Preference_and_Search": 41.94,
        "Dining_Full_Planning_to_Step1": 64.55,
        "Dining_Complete_4Steps_Pipeline": 86.09,
        "Dining_Search_to_Step1": 40.36,
        "Dining_Search_to_Final_3Steps": 61.94,
        "Dining_Finalize_from_Step1": 44.26,
    }
    # The eight partitions: 86.10 (atomics), 86.08 (D, S, Finalize_from_Step1), 86.19, 86.21,
    # 86.22, 86.20, 86.11, 86.09 (Complete).
    assert env.optimal_paths() == (
        [["Decide_Dining_Preference", "Search_Dining_Candidates", "Dining_Finalize_from_Step1"]],
        24.27 + 17.55 + 44.26,  # the float sum, in path order, as CostBench adds it
    )
    # Greedy: PaS 20.97 per component beats D, Full_Planning (21.52) and Complete (21.52);
    # then, consuming the raw candidates only (the Search_* composites need the preference,
    # which PaS does not yield), Finalize_from_Step1 22.13 beats Step1 22.72.
    assert env.greedy_path() == (
        ["Dining_Preference_and_Search", "Dining_Finalize_from_Step1"],
        41.94 + 44.26,
    )


def test_seed_replaces_the_constant_42() -> None:
    default = TravelEnv("dining", 3, "<Query00007>").costs
    assert TravelEnv("dining", 3, "<Query00007>", seed=42).costs == default
    other = TravelEnv("dining", 3, "<Query00007>", seed=1000).costs
    assert other == _spec_costs("dining", 3, "<Query00007>", seed=1000)
    assert other != default


def test_noise_and_range_options() -> None:
    flat = TravelEnv("dining", 2, "<Query00002>", noise_std=0.0, cost_range=(10, 10))
    for tool in flat.tool_specs:
        assert flat.costs[tool.name] == pytest.approx(10.0 * len(tool.components))


def test_costs_deterministic_across_processes() -> None:
    code = (
        "import json; from pytest_budget.planning import TravelEnv;"
        "print(json.dumps(TravelEnv('attraction', 4, '<Query00003>').costs))"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h)},
        ).stdout
        for h in (1, 2)
    ]
    assert outs[0] == outs[1]
    assert json.loads(outs[0]) == TravelEnv("attraction", 4, "<Query00003>").costs


def test_core_does_not_import_pytest() -> None:
    code = (
        "import sys, pytest_budget.planning\n"
        "print(','.join(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------- tools format


def test_openai_tool_format() -> None:
    env = TravelEnv("transportation", 1, "<Query00001>")
    specs = {spec["function"]["name"]: spec for spec in env.tools}
    assert set(specs) == set(env.costs)
    # Registry order: the atomic chain, then composites by length, then by start.
    assert [spec["function"]["name"] for spec in env.tools] == [t.name for t in env.tool_specs]
    decide = specs["Decide_Transportation_Preference"]
    assert decide["type"] == "function"
    fn = decide["function"]
    cost = env.costs["Decide_Transportation_Preference"]
    assert fn["description"].startswith("[Atomic tool] ")
    assert f"costs {cost} units" in fn["description"]  # Python str(float), as CostBench
    assert fn["description"].endswith("Output type: TransportationPreference.")
    params = fn["parameters"]
    assert params["required"] == [
        "LocationPreference",
        "TransportationCategory",
        "TransportationTier",
        "TransportationStyle",
        "TransportationFeaturePackage",
    ]
    category = params["properties"]["TransportationCategory"]
    assert category["enum"] == ["flight", "train", "bus", "car_rental"]
    assert "flight, train, bus, car_rental" in category["description"]
    composite = specs["Transportation_Preference_and_Search"]["function"]["description"]
    assert composite.startswith("[Composite tool] ")
    assert "Components: Decide_Transportation_Preference, Search_Transportation_Candidates" in (
        composite
    )
    for task in TASKS:
        for values in PREFERENCE_VALUES[task].values():
            assert len(values) == len(set(values)) == 4


@pytest.mark.parametrize(("level", "count"), [(2, 14), (5, 35)])
def test_tool_counts_with_ban_longest_as_costbench(level: int, count: int) -> None:
    # Fact sheet §4.1: 14 tools at L=2 with the ban (5 atomic + 9 composite), 35 at L=5.
    assert len(TravelEnv("dining", level, "<Query00001>").tools) == count


# ---------------------------------------------------------------- stepping


_LOCATION = "<LocationPreference00007>"
_TIME = "<TimeInfo00042>"


def _play(env: TravelEnv, path: list[str], prefs: dict[str, str]) -> tuple[str, float]:
    """Replay tool names, filling parameters from the query and the latest id of each kind."""
    fixed = {**_prefs_args(env.task, prefs), "TimeInfo": _TIME, "LocationPreference": _LOCATION}
    kinds: dict[str, str] = {}
    specs = {s.name: s for s in env.tool_specs}
    total = 0.0
    out = ""
    for name in path:
        args = {
            p: kinds[id_kind(env.task, p)] if id_kind(env.task, p) in kinds else fixed[p]
            for p in specs[name].inputs
        }
        obs, cost = env.step({"name": name, "arguments": json.dumps(args)})
        assert not obs.startswith("[ERROR]"), obs
        assert obs.endswith(f" Cost: {cost}")
        out = re.findall(r"<[A-Za-z]+\d{5}>", obs)[-1]
        kinds[out[1:-6]] = out
        total += cost
    return out, total


@pytest.mark.parametrize("task", ["location", "dining"])
def test_every_path_reaches_the_same_answer(task: str) -> None:
    chain = [t.name for t in atomic_chain(task, 3)]
    answers = set()
    for path in (chain, TravelEnv(task, 3, "<Query00004>").optimal_path()[0]):
        env = TravelEnv(task, 3, "<Query00004>")
        answer, cost = _play(env, path, _any(task))
        assert env.done
        assert cost == pytest.approx(sum(env.costs[n] for n in path))
        answers.add(answer)
    loc = None if task == "location" else _LOCATION
    assert answers == {expected_answer(task, _any(task), _TIME, loc)}
    other = dict(_any(task), tier=PREFERENCE_VALUES[task]["tier"][3])
    assert expected_answer(task, other, _TIME, loc) not in answers


def _any(task: str) -> dict[str, str]:
    return {d: values[1] for d, values in PREFERENCE_VALUES[task].items()}


def test_step_errors() -> None:
    env = TravelEnv("dining", 2, "<Query00001>")
    start = env.state
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": _LOCATION}

    def err(call: object) -> str:
        obs, cost = env.step(call)  # type: ignore[arg-type]
        assert obs.startswith("[ERROR]"), obs
        assert cost == 0.0
        assert env.state == start
        return obs

    assert "Invalid tool: 'Book_Flight'" in err({"name": "Book_Flight", "arguments": {}})
    assert "Invalid tool: None" in err({"arguments": {}})
    assert "not valid JSON" in err({"name": "Decide_Dining_Preference", "arguments": "{oops"})
    # Lenient repair: single quotes, trailing commas and code fences are read.
    fenced = "```json\n" + json.dumps(args).replace('"', "'")[:-1] + ",}\n```"
    missing = err({"name": "Decide_Dining_Preference", "arguments": {"DiningTier": "budget"}})
    assert "DiningCategory" in missing and "LocationPreference" in missing
    extra = err({"name": "Decide_Dining_Preference", "arguments": {**args, "Colour": "red"}})
    assert "unexpected parameter(s): Colour" in extra
    bad_enum = err({"name": "Decide_Dining_Preference", "arguments": {**args, "DiningTier": "x"}})
    assert "DiningTier" in bad_enum and "popular_local_mainstay" in bad_enum
    bad_place = err(
        {
            "name": "Decide_Dining_Preference",
            "arguments": {**args, "LocationPreference": "<LocationPreference00257>"},
        }
    )
    assert "unknown LocationPreference" in bad_place
    # Inputs not held: the cost is shown, not charged, and the arguments are not read.
    not_held = err({"name": "Select_Final_Dining", "arguments": "{not even json"})
    assert "Missing input types for Select_Final_Dining: DiningCandidate_L2_Located" in not_held
    assert not_held.endswith(f"Cost: {env.costs['Select_Final_Dining']}.")

    obs, cost = env.step({"function": {"name": "Decide_Dining_Preference", "arguments": fenced}})
    assert cost == env.costs["Decide_Dining_Preference"]
    pref_id = re.findall(r"<DiningPreference\d{5}>", obs)[-1]
    start = env.state
    search = {"LocationPreference": _LOCATION, "TimeInfo": "anything: never checked"}
    fmt = err(
        {
            "name": "Search_Dining_Candidates",
            "arguments": {**search, "DiningPreference": "<DiningPreference0001>"},
        }
    )
    assert "exactly 5 digits" in fmt
    # Ids are never checked against what a tool returned: any 5 digits pass through.
    obs, _ = env.step(
        {
            "name": "Search_Dining_Candidates",
            "arguments": {**search, "DiningPreference": "<DiningPreference31337>"},
        }
    )
    assert "<DiningCandidateSet31337>" in obs
    assert "DiningCandidate_Raw" in env.state and not env.done
    assert pref_id != "<DiningPreference31337>"


# ---------------------------------------------------------------- planning


def _brute_force(env: TravelEnv) -> tuple[tuple[int, int], set[tuple[str, ...]]]:
    """Enumerate every sequence of usable, state-changing calls that reaches the goal."""
    specs = env.tool_specs
    cents = {name: round(cost * 100) for name, cost in env.costs.items()}
    results: list[tuple[tuple[int, int], tuple[str, ...]]] = []

    def walk(state: frozenset[str], path: tuple[str, ...], cost: int) -> Iterator[None]:
        if env.goal in state:
            results.append(((cost, len(path)), path))
            return
        for tool in specs:
            if tool.output not in state and set(tool.inputs) <= state:
                yield from walk(state | {tool.output}, (*path, tool.name), cost + cents[tool.name])

    for _ in walk(env.initial_state, (), 0):
        pass
    best = min(key for key, _ in results)
    return best, {path for key, path in results if key == best}


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("task", ["location", "accommodation", "shopping"])
def test_dijkstra_matches_brute_force(task: str, level: int) -> None:
    for query in QUERIES:
        for ban in (False, True):
            env = TravelEnv(task, level, query, ban_longest=ban)
            (best_cents, best_calls), tied = _brute_force(env)
            path, cost = env.optimal_path()
            assert round(cost * 100) == best_cents
            assert len(path) == best_calls
            assert tuple(path) in tied
            assert cost == sum_in_order(env.costs[n] for n in path)
            # CostBench keeps the single path its heap returns.
            assert env.optimal_paths() == ([path], cost)


def sum_in_order(values: Iterator[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def test_ties_broken_toward_fewer_calls() -> None:
    env = TravelEnv("location", 1, "<Query00001>", ban_longest=False)
    for name in env.costs:
        env.costs[name] = 50.0  # every composite is strictly worse than its atomics...
    chain = [t.name for t in atomic_chain("location", 1)]
    for name in chain:
        env.costs[name] = 10.0
    # ...except two that exactly equal the atomics they replace.
    env.costs["Location_Preference_and_Search"] = 20.0
    env.costs["Location_Complete_4Steps_Pipeline"] = 40.0
    path, cost = env.optimal_path()
    assert cost == 40.0
    assert path == ["Location_Complete_4Steps_Pipeline"]
    env.costs["Location_Complete_4Steps_Pipeline"] = 40.01
    path, cost = env.optimal_path()
    assert cost == 40.0
    assert path == [
        "Location_Preference_and_Search",
        "Location_Refinement_Step1",
        "Select_Final_Location",
    ]


def _costbench_dijkstra(env: TravelEnv) -> tuple[list[str], float]:
    """The fact sheet's solver written out again, over *all six tasks'* tools in registry
    order (tools of other tasks never apply, but are pushed in CostBench's order)."""

    registry = [
        t
        for task in TASKS
        for t in build_tools(task, env.refinement_level, ban_longest=False)
        if not t.is_composite
    ]
    composites = [
        t
        for task in TASKS
        for t in build_tools(task, env.refinement_level, ban_longest=False)
        if t.is_composite
    ]
    decides = [t for t in registry if t.name.startswith("Decide_")]
    selects = [t for t in registry if t.name.startswith("Select_Final_")]
    middle = [t for t in registry if t not in decides and t not in selects]
    listed = {t.name for t in env.tool_specs}
    tools = [t for t in (*decides, *middle, *selects, *composites) if t.name in listed]
    found = _frozenset_heap(env.goal, env.initial_state, tools, [env.costs[t.name] for t in tools])
    if found is None:
        raise AssertionError("unreachable")
    return list(found[0]), found[1]


def _frozenset_heap(
    goal: str, start: frozenset[str], tools: list[Tool], prices: list[float]
) -> tuple[tuple[str, ...], float] | None:
    """CostBench's heap search with frozenset states, as the fact sheet writes it."""
    import heapq

    heap: list[tuple[float, int, frozenset[str], tuple[str, ...]]] = [(0.0, 0, start, ())]
    seen: set[frozenset[str]] = set()
    while heap:
        cost, calls, state, path = heapq.heappop(heap)
        if state in seen:
            continue
        seen.add(state)
        if goal in state:
            return path, cost
        for tool, price in zip(tools, prices, strict=True):
            nxt = state | {tool.output}
            if set(tool.inputs) <= state and nxt not in seen:
                heapq.heappush(heap, (cost + price, calls + 1, nxt, (*path, tool.name)))
    return None


_TYPES = [f"T{i}" for i in range(7)]


@st.composite
def _tool_graphs(draw: st.DrawFn) -> tuple[frozenset[str], list[Tool], list[float]]:
    # Few types and prices from {1, 2, 3}: exact (cost, calls) ties are the common case, so
    # the heap's frozenset tie-break decides most searches.
    count = draw(st.integers(min_value=1, max_value=14))
    tools = [
        Tool(
            name=f"tool{i}",
            inputs=tuple(draw(st.lists(st.sampled_from(_TYPES), max_size=3, unique=True))),
            output=draw(st.sampled_from(_TYPES)),
            components=(f"tool{i}",),
            roles=(("refine", 1),),
            purpose="",
        )
        for i in range(count)
    ]
    prices = [float(draw(st.integers(min_value=1, max_value=3))) for _ in tools]
    start = frozenset(draw(st.lists(st.sampled_from(_TYPES[:3]), max_size=2)))
    return start, tools, prices


@settings(max_examples=300, deadline=None)
@given(_tool_graphs(), st.sampled_from(_TYPES))
def test_mask_dijkstra_pops_as_the_frozenset_heap(
    graph: tuple[frozenset[str], list[Tool], list[float]], goal: str
) -> None:
    # ground_truth.dijkstra keeps states as bit masks: same entries, same order, same ties.
    start, tools, prices = graph
    found = dijkstra(goal, start, tuple(tools), tuple(prices))
    assert found == _frozenset_heap(goal, start, tools, prices)


@given(st.sets(st.integers(0, 5)), st.sets(st.integers(0, 5)))
def test_held_masks_order_as_frozensets(a: set[int], b: set[int]) -> None:
    mask_a, mask_b = (_Held(sum(1 << i for i in s)) for s in (a, b))
    assert (mask_a < mask_b) == (frozenset(a) < frozenset(b))
    assert (mask_a == mask_b) == (a == b)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_exact_ties_resolve_as_costbench_heap(level: int) -> None:
    # Rounded costs make exact float ties common; the single path returned must be the one
    # CostBench's heap pops first, whatever the tie.
    for task, query in itertools.product(TASKS, QUERIES):
        env = TravelEnv(task, level, query)
        for name in env.costs:
            env.costs[name] = float(round(env.costs[name] / 5) * 5)  # force many ties
        assert env.optimal_path() == _costbench_dijkstra(env)


def test_costbench_check_values_query00001_level2() -> None:
    # Fact sheet §5.2, checked against CostBench's own outputs: Query00001 at L=2 with the ban.
    env = TravelEnv("location", 2, "<Query00001>")
    assert env.costs["Decide_Location_Preference"] == 23.23
    assert env.costs["Location_Preference_and_Search"] == 40.48
    assert (
        TravelEnv("transportation", 2, "<Query00001>").costs["Decide_Transportation_Preference"]
        == 20.31
    )
    path, cost = env.optimal_path()
    assert path == ["Location_Full_Planning_to_Step1", "Location_Finalize_from_Step2"]
    assert round(cost, 2) == 98.82


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("level", [0, 3, 5])
def test_greedy_path_is_valid_and_never_beats_optimum(task: str, level: int) -> None:
    for query in QUERIES[:4]:
        env = TravelEnv(task, level, query)
        path, cost = env.greedy_path()
        specs = {t.name: t for t in env.tool_specs}
        for prev, nxt in itertools.pairwise(path):
            assert specs[prev].output in specs[nxt].inputs  # chain property
        _, played = _play(env, path, _any(task))
        assert env.done  # static greedy always reaches the goal
        assert played == pytest.approx(cost)
        assert cost >= env.optimal_path()[1] - 1e-9


def test_greedy_picks_least_cost_per_component() -> None:
    env = TravelEnv("location", 0, "<Query00001>", ban_longest=False)
    env.costs.update(
        {
            "Decide_Location_Preference": 10.5,
            "Search_Location_Candidates": 30.0,
            "Select_Final_Location": 30.0,
            "Location_Preference_and_Search": 22.0,  # 11 per component
            "Location_Finalize_from_Search": 61.0,  # 30.5 per component > 30
            "Location_Complete_3Steps_Pipeline": 31.0,  # 10.33 per component
        }
    )
    assert env.greedy_path() == (["Location_Complete_3Steps_Pipeline"], 31.0)
    env.costs["Location_Complete_3Steps_Pipeline"] = 33.0  # 11 per component > 10.5
    assert env.greedy_path() == (
        ["Decide_Location_Preference", "Search_Location_Candidates", "Select_Final_Location"],
        70.5,
    )
    # Ties: the first minimum in registry order (Decide 10.5 = Complete 31.5 / 3).
    env.costs["Location_Complete_3Steps_Pipeline"] = 31.5
    assert env.greedy_path()[0][0] == "Decide_Location_Preference"


def test_speed_sanity_level5() -> None:
    env = TravelEnv("dining", 5, "<Query00009>")
    path, cost = env.optimal_path()
    assert cost <= sum(env.costs[t.name] for t in atomic_chain("dining", 5)) + 1e-9
    assert len(path) >= 1


# ---------------------------------------------------------------- blocking support


def test_step_detailed_reports_kind_and_output() -> None:
    env = TravelEnv("dining", 1, "<Query00001>")
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": _LOCATION}
    result = env.step_detailed({"name": "Decide_Dining_Preference", "arguments": args})
    assert result.ok and result.error_kind is None
    assert result.tool == "Decide_Dining_Preference"
    assert result.output_type == "DiningPreference"
    assert result.output_id is not None and result.output_id in result.observation
    assert result.cost == env.costs["Decide_Dining_Preference"]
    kinds = {
        "unknown_tool": {"name": "Nope", "arguments": {}},
        "bad_arguments": {"name": "Decide_Dining_Preference", "arguments": "[]"},
        "wrong_parameters": {"name": "Decide_Dining_Preference", "arguments": {}},
        "inaccessible": {
            "name": "Select_Final_Dining",
            "arguments": {"DiningCandidate_L1_Available": "x"},
        },
        "bad_id": {
            "name": "Search_Dining_Candidates",
            "arguments": {"DiningPreference": "x", "LocationPreference": "R", "TimeInfo": "T"},
        },
    }
    for kind, call in kinds.items():
        bad = env.step_detailed(call)
        assert (bad.ok, bad.error_kind, bad.cost) == (False, kind, 0.0)
        assert bad.observation.startswith("[ERROR]")
    assert env.step(kinds["bad_id"]) == (env.step_detailed(kinds["bad_id"]).observation, 0.0)


def test_ban_keeps_tool_listed_and_charges() -> None:
    env = TravelEnv("location", 1, "<Query00002>")
    env.ban("Decide_Location_Preference", "[ERROR] gone for now.")
    assert "Decide_Location_Preference" in {t.name for t in env.tool_specs}
    result = env.step_detailed({"name": "Decide_Location_Preference", "arguments": "{bad json"})
    cost = env.costs["Decide_Location_Preference"]
    assert result.error_kind == "banned" and result.cost == cost
    assert result.observation == f"[ERROR] gone for now. Cost: {cost}"
    path, _ = env.optimal_path()
    assert "Decide_Location_Preference" not in path
    # The ground truth has bans of its own: it may ignore the agent's.
    assert env.solve(use_bans=False) == TravelEnv("location", 1, "<Query00002>").solve()
    assert "Decide_Location_Preference" not in env.greedy_path()[0]
    with pytest.raises(KeyError):
        env.ban("Nope")


def test_remove_composites_replaces_previous_removal() -> None:
    env = TravelEnv("dining", 3, "<Query00003>")
    atomics = {t.name for t in atomic_chain("dining", 3)}
    env.remove_composites(2)
    assert all(len(t.components) != 2 for t in env.tool_specs)
    assert atomics <= {t.name for t in env.tool_specs}
    names = {spec["function"]["name"] for spec in env.tools}
    assert names == {t.name for t in env.tool_specs}
    env.remove_composites(4)
    lengths = {len(t.components) for t in env.tool_specs}
    assert 2 in lengths and 4 not in lengths
    assert all(name in {t.name for t in env.tool_specs} for name in env.optimal_path()[0])
    env.remove_composites(None)
    assert len(env.tool_specs) == len(env.all_tool_specs)
    with pytest.raises(ValueError, match="composites"):
        env.remove_composites(1)


def test_reseed_costs_uses_the_seed_as_the_query_cost_seed() -> None:
    # A global seed g gives the query its own cost seed query_seed(id, g); reseeding with
    # that cost seed must give exactly the instance built with seed=g.
    env = TravelEnv("shopping", 2, "<Query00004>")
    env.reseed_costs(query_seed("<Query00004>", 1234))
    fresh = TravelEnv("shopping", 2, "<Query00004>", seed=1234)
    assert env.costs == fresh.costs and env.seed_q == fresh.seed_q
    assert env.optimal_paths() == fresh.optimal_paths()


def test_cost_change_prices_by_hand_from_the_fact_sheet() -> None:
    # costbench.md §2.1/§2.4/§5.2, Query00001 at L=2, block 0: base_seed = stable("42:<id>")
    # = 815343802, the drawn seed Random(base_seed).choice(range(1, 10000)), and the atomic
    # costs a Random(that seed) stream walked over the registry's atomic tools, each
    # round(uniform(15, 25), 2).  The seed is used as seed_q itself, not hashed again.
    base = int.from_bytes(hashlib.sha256(b"42:<Query00001>").digest(), "big") % (2**31 - 1)
    assert base == 815343802
    drawn = random.Random(base).choice(list(range(1, 10000)))
    rng = random.Random(drawn)
    # Registry order of the L=2 atomics: 6 Decide, per task Search + Step1..2, 6 Select.
    tasks = ("Location", "Transportation", "Accommodation", "Attraction", "Dining", "Shopping")
    order = [f"Decide_{t}_Preference" for t in tasks]
    for t in tasks:
        order += [f"Search_{t}_Candidates", f"{t}_Refinement_Step1", f"{t}_Refinement_Step2"]
    order += [f"Select_Final_{t}" for t in tasks]
    by_hand = {name: round(rng.uniform(15, 25), 2) for name in order}
    env = TravelEnv("location", 2, "<Query00001>")
    assert env.costs["Decide_Location_Preference"] == 23.23  # §5.2 check value, before
    env.reseed_costs(drawn)
    mine = {name: cost for name, cost in by_hand.items() if "Location" in name}
    assert len(mine) == 5 and {name: env.costs[name] for name in mine} == mine
    assert env.seed_q == drawn


def test_reset_forgets_state() -> None:
    env = TravelEnv("dining", 0, "<Query00005>")
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": _LOCATION}
    env.step({"name": "Decide_Dining_Preference", "arguments": args})
    assert "DiningPreference" in env.state
    env.reset()
    assert env.state == env.initial_state


def test_answer_problem_needs_a_five_digit_candidate() -> None:
    env = TravelEnv("dining", 1, "<Query00005>")
    assert env.answer_problem("<answer> <DiningCandidate01234> </answer>") is None
    # Any task's candidate form passes the parser; correctness is scored later.
    assert env.answer_problem("<answer><ShoppingCandidate{Candidate_ID: 00042}></answer>") is None
    for bad in ("done", "", "<answer>DiningCandidate1234</answer>", "<DiningCandidate01234>"):
        assert env.answer_problem(bad) is not None


def test_planning_from_a_given_state() -> None:
    env = TravelEnv("attraction", 4, "<Query00006>")
    chain = atomic_chain("attraction", 4)
    state = env.initial_state | {chain[0].output, chain[1].output}
    path, cost = env.optimal_path(state)
    # Re-deriving by brute force from that state.
    sub = TravelEnv("attraction", 4, "<Query00006>")
    sub.initial_state = state
    (cents, calls), tied = _brute_force(sub)
    assert round(cost * 100) == cents and tuple(path) in tied and len(path) == calls
    assert env.optimal_path() == TravelEnv("attraction", 4, "<Query00006>").optimal_path()
    goal_state = state | {env.goal}
    assert env.optimal_path(goal_state) == ([], 0.0)
    assert env.greedy_path(goal_state) == ([], 0.0)


def test_reachable() -> None:
    env = TravelEnv("dining", 0, "<Query00007>", ban_longest=True)
    assert env.reachable()
    env.ban("Decide_Dining_Preference")
    assert env.reachable()
    assert not env.reachable(without="Dining_Preference_and_Search")
    raw = env.initial_state | {"DiningCandidate_Raw"}
    assert env.reachable(raw)
    assert not env.reachable(raw, without="Select_Final_Dining")


def test_greedy_never_relaxes_the_chain_rule() -> None:
    # Fact sheet §5.4: the relaxation App. B.2 describes never happens in the code; with
    # nothing consuming the previous output the greedy stops short of the goal.
    env = TravelEnv("dining", 0, "<Query00008>")
    env.ban("Select_Final_Dining")
    raw = env.initial_state | {"DiningCandidate_Raw"}
    assert env.greedy_path(raw, previous="DiningCandidate_Raw") == ([], 0.0)


def test_fill_arguments() -> None:
    prefs = _any("transportation")
    query = Query("<Query00001>", "transportation", prefs, "May", "Oslo", "text")
    # (fill_arguments copies the query's tokens whatever they hold)
    tools = {t.name: t for t in build_tools("transportation", 1)}
    args = fill_arguments(tools["Transportation_Preference_and_Search"], query, {})
    assert args == {
        **_prefs_args("transportation", prefs),
        "LocationPreference": "Oslo",
        "TimeInfo": "May",
    }
    ids = {"TransportationCandidate_Raw": "TransportationCandidate_Raw-0123abcd"}
    assert fill_arguments(tools["Transportation_Refinement_Step1"], query, ids) == {
        "TransportationCandidate_Raw": ids["TransportationCandidate_Raw"],
        "TimeInfo": "May",
    }
    with pytest.raises(KeyError):
        fill_arguments(tools["Select_Final_Transportation"], query, ids)


@pytest.mark.parametrize("task", TASKS)
def test_plan_reuse_along_the_plan_matches_a_fresh_search(task: str) -> None:
    """optimal_path() reuses the suffix of the last plan for states along it; a fresh
    environment (nothing to reuse) must give the same plan and cost from every such state."""
    for level, query in itertools.product((2, 5), QUERIES[:4]):
        env = TravelEnv(task, level, query)
        path, _ = env.optimal_path()
        specs = {t.name: t for t in env.tool_specs}
        state = env.initial_state
        for name in path:
            state = state | {specs[name].output}
            fresh = TravelEnv(task, level, query)
            assert env.optimal_path(state) == fresh.optimal_path(state)
        env.costs[path[0]] += 100.0  # an in-place cost edit invalidates the reuse
        assert env.optimal_path() == _fresh_with(env).optimal_path()


def _fresh_with(env: TravelEnv) -> TravelEnv:
    fresh = TravelEnv(env.task, env.refinement_level, env.query_id)
    fresh.costs = dict(env.costs)
    return fresh


def _eager_lenient(raw: str) -> dict[str, object] | str:
    """The argument repair as first written: every candidate built before any is tried."""
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", raw, flags=re.IGNORECASE).strip()
    if not text:
        return {}
    candidates = [text, re.sub(r",\s*([}\]])", r"\1", text)]
    candidates.append(candidates[-1].replace("'", '"'))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        return dict(value) if isinstance(value, dict) else "arguments must be a JSON object."
    return "arguments are not valid JSON."


@settings(max_examples=1000, deadline=None)
@example('{"a": ",}"}')  # a comma before a brace inside a string: the text as written wins
@example("```json\n{'a': [1,],}\n```")  # a fence, single quotes and trailing commas
@example('{"a": "```"}')  # backticks that are no fence
@given(
    st.lists(
        st.sampled_from(
            [
                "{",
                "}",
                "[",
                "]",
                '"',
                "'",
                '"a"',
                "'a'",
                ":",
                ",",
                " ",
                "\n",
                "1",
                "`",
                "```",
                "json",
            ]
        ),
        max_size=16,
    ).map("".join)
)
def test_lenient_arguments_read_as_the_eager_repair(raw: str) -> None:
    # Repairs are built lazily and fences stripped only when a backtick is present: the
    # same result as building every candidate first, for texts full of near-JSON.
    assert _lenient_arguments(raw) == _eager_lenient(raw)
