"""CostBench travel environment (pytest_budget.planning): tools, costs, stepping, planning."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from pytest_budget.planning import (
    PREFERENCE_VALUES,
    TASKS,
    TravelEnv,
    atomic_chain,
    build_tools,
    expected_answer,
)
from pytest_budget.planning.env import fill_arguments
from pytest_budget.planning.records import Query

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
    names = {t.name for t in build_tools("transportation", 3) if t.is_composite}
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
    l0 = {t.name for t in build_tools("location", 0) if t.is_composite}
    assert l0 == {
        "Location_Preference_and_Search",
        "Location_Finalize_from_Search",
        "Location_Complete_3Steps_Pipeline",
    }


def test_composite_inputs_follow_union_rule() -> None:
    tools = {t.name: t for t in build_tools("dining", 2)}
    assert tools["Dining_Preference_and_Search"].inputs == (
        "DiningCategory",
        "DiningTier",
        "DiningStyle",
        "DiningFeaturePackage",
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
    env = TravelEnv("location", 0, "<Query00001>")
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
        55.03,
    )
    # Greedy, first step free: D 23.23, PaS 40.48/2 = 20.24, Complete 55.3/3 = 18.43.
    assert env.greedy_path() == (["Location_Complete_3Steps_Pipeline"], 55.3)


def test_hand_checked_costs_and_paths_dining_l1() -> None:
    env = TravelEnv("dining", 1, "<Query40001>")
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
        86.08,
    )
    # Greedy: PaS 20.97 per component beats D, Full_Planning (21.52) and Complete (21.52);
    # then, consuming the raw candidates only (the Search_* composites need the preference,
    # which PaS does not yield), Finalize_from_Step1 22.13 beats Step1 22.72.
    assert env.greedy_path() == (
        ["Dining_Preference_and_Search", "Dining_Finalize_from_Step1"],
        86.2,
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
    decide = specs["Decide_Transportation_Preference"]
    assert decide["type"] == "function"
    fn = decide["function"]
    assert f"{env.costs['Decide_Transportation_Preference']:.2f}" in fn["description"]
    assert "TransportationPreference" in fn["description"]
    params = fn["parameters"]
    assert params["required"] == [
        "TransportationCategory",
        "TransportationTier",
        "TransportationStyle",
        "TransportationFeaturePackage",
        "LocationPreference",
    ]
    assert params["properties"]["TransportationCategory"]["enum"] == [
        "flight",
        "train",
        "bus",
        "car rental",
    ]
    for task in TASKS:
        for values in PREFERENCE_VALUES[task].values():
            assert len(values) == len(set(values)) == 4


# ---------------------------------------------------------------- stepping


def _play(env: TravelEnv, path: list[str], prefs: dict[str, str]) -> tuple[str, float]:
    """Replay tool names, filling parameters from the query and the latest ids."""
    held: dict[str, str] = {
        **_prefs_args(env.task, prefs),
        "TimeInfo": "2025-06-01 to 2025-06-04",
        "LocationPreference": "Lisbon",
    }
    specs = {s.name: s for s in env.tool_specs}
    total = 0.0
    obs = ""
    for name in path:
        args = {p: held[p] for p in specs[name].inputs}
        obs, cost = env.step({"name": name, "arguments": json.dumps(args)})
        assert not obs.startswith("[ERROR]"), obs
        out_type, out_id = obs.rsplit(" ", 2)[-2:]
        held[out_type.rstrip(":")] = out_id
        total += cost
    return obs.rsplit(" ", 1)[-1], total


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
    loc = None if task == "location" else "Lisbon"
    assert answers == {expected_answer(task, _any(task), "2025-06-01 to 2025-06-04", loc)}
    other = dict(_any(task), tier=PREFERENCE_VALUES[task]["tier"][3])
    assert expected_answer(task, other, "2025-06-01 to 2025-06-04", loc) not in answers


def _any(task: str) -> dict[str, str]:
    return {d: values[1] for d, values in PREFERENCE_VALUES[task].items()}


def test_step_errors() -> None:
    env = TravelEnv("dining", 2, "<Query00001>")
    start = env.state
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": "Rome"}

    def err(call: object) -> str:
        obs, cost = env.step(call)  # type: ignore[arg-type]
        assert obs.startswith("[ERROR]"), obs
        assert cost == 0.0
        assert env.state == start
        return obs

    assert "Unknown tool" in err({"name": "Book_Flight", "arguments": {}})
    assert "missing tool name" in err({"arguments": {}})
    assert "not valid JSON" in err({"name": "Decide_Dining_Preference", "arguments": "{oops"})
    missing = err({"name": "Decide_Dining_Preference", "arguments": {"DiningTier": "budget"}})
    assert "DiningCategory" in missing and "LocationPreference" in missing
    extra = err({"name": "Decide_Dining_Preference", "arguments": {**args, "Colour": "red"}})
    assert "unexpected parameter(s): Colour" in extra
    bad_enum = err({"name": "Decide_Dining_Preference", "arguments": {**args, "DiningTier": "x"}})
    assert "DiningTier" in bad_enum and "michelin level" in bad_enum
    not_held = err(
        {"name": "Select_Final_Dining", "arguments": {"DiningCandidate_L2_Located": "x"}}
    )
    assert "not yet available: DiningCandidate_L2_Located" in not_held

    obs, cost = env.step({"function": {"name": "Decide_Dining_Preference", "arguments": args}})
    assert cost == env.costs["Decide_Dining_Preference"]
    pref_id = obs.rsplit(" ", 1)[-1]
    assert pref_id.startswith("DiningPreference-")
    start = env.state
    search = {"LocationPreference": "Rome", "TimeInfo": "May"}
    fmt = err(
        {
            "name": "Search_Dining_Candidates",
            "arguments": {**search, "DiningPreference": "pref-1"},
        }
    )
    assert "wrong id format" in fmt
    unknown = err(
        {
            "name": "Search_Dining_Candidates",
            "arguments": {**search, "DiningPreference": "DiningPreference-00000000"},
        }
    )
    assert "unknown DiningPreference id" in unknown
    obs, _ = env.step(
        {"name": "Search_Dining_Candidates", "arguments": {**search, "DiningPreference": pref_id}}
    )
    assert "DiningCandidate_Raw" in env.state and not env.done


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
            paths, cost_all = env.optimal_paths()
            assert {tuple(p) for p in paths} == tied
            assert cost_all == cost


def test_ties_broken_toward_fewer_calls() -> None:
    env = TravelEnv("location", 1, "<Query00001>")
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
    # Exact ties on cost and calls are all reported; the 3-call path of equal cost is not.
    env.costs["Location_Finalize_from_Step1"] = 20.0
    env.costs["Location_Full_Planning_to_Step1"] = 30.0
    paths, cost = env.optimal_paths()
    assert cost == 40.0
    assert paths == [
        ["Location_Full_Planning_to_Step1", "Select_Final_Location"],
        ["Location_Preference_and_Search", "Location_Finalize_from_Step1"],
    ]
    assert env.optimal_path()[0] == paths[0]


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
        assert env.done
        assert played == pytest.approx(cost)
        assert cost >= env.optimal_path()[1] - 1e-9


def test_greedy_picks_least_cost_per_component() -> None:
    env = TravelEnv("location", 0, "<Query00001>")
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
    env.costs["Location_Complete_3Steps_Pipeline"] = 33.0  # 11 per component > 10
    assert env.greedy_path() == (
        ["Decide_Location_Preference", "Search_Location_Candidates", "Select_Final_Location"],
        70.5,
    )


def test_speed_sanity_level5() -> None:
    env = TravelEnv("dining", 5, "<Query00009>")
    path, cost = env.optimal_path()
    assert cost <= sum(env.costs[t.name] for t in atomic_chain("dining", 5)) + 1e-9
    assert len(path) >= 1


# ---------------------------------------------------------------- blocking support


def test_step_detailed_reports_kind_and_output() -> None:
    env = TravelEnv("dining", 1, "<Query00001>")
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": "Rome"}
    result = env.step_detailed({"name": "Decide_Dining_Preference", "arguments": args})
    assert result.ok and result.error_kind is None
    assert result.tool == "Decide_Dining_Preference"
    assert result.output_type == "DiningPreference"
    assert result.output_id is not None and result.observation.endswith(result.output_id)
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
    env.ban("Decide_Location_Preference", "gone for good.")
    assert "Decide_Location_Preference" in {t.name for t in env.tool_specs}
    result = env.step_detailed({"name": "Decide_Location_Preference", "arguments": "{bad json"})
    assert result.error_kind == "banned" and result.cost == env.costs["Decide_Location_Preference"]
    assert result.observation == "[ERROR] Decide_Location_Preference: gone for good."
    path, _ = env.optimal_path()
    assert "Decide_Location_Preference" not in path
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


def test_reseed_costs_matches_a_fresh_instance() -> None:
    env = TravelEnv("shopping", 2, "<Query00004>")
    env.reseed_costs(1234)
    fresh = TravelEnv("shopping", 2, "<Query00004>", seed=1234)
    assert env.costs == fresh.costs and env.global_seed == 1234
    assert env.optimal_paths() == fresh.optimal_paths()


def test_reset_forgets_state_and_ids() -> None:
    env = TravelEnv("dining", 0, "<Query00005>")
    args = {**_prefs_args("dining", _any("dining")), "LocationPreference": "Rome"}
    obs, _ = env.step({"name": "Decide_Dining_Preference", "arguments": args})
    pref_id = obs.rsplit(" ", 1)[1]
    env.reset()
    assert env.state == env.initial_state
    again, _ = env.step(
        {"name": "Decide_Dining_Preference", "arguments": {**args, "DiningTier": "budget"}}
    )
    assert again.rsplit(" ", 1)[1] != pref_id
    search = {"DiningPreference": pref_id, "LocationPreference": "Rome", "TimeInfo": "May"}
    result = env.step_detailed({"name": "Search_Dining_Candidates", "arguments": search})
    assert result.error_kind == "bad_id"


def test_answer_problem_accepts_only_returned_goal_ids() -> None:
    env = TravelEnv("dining", 1, "<Query00005>")
    fake = "TravelDining-0123abcd"
    assert "not returned by a tool call" in str(env.answer_problem(fake))
    for bad in ("done", "", "TravelDining-XYZ", "DiningPreference-0123abcd", f"{fake}x"):
        problem = env.answer_problem(bad)
        assert problem is not None and problem.startswith("[ERROR] Answer: wrong id format")
        assert "TravelDining-<8 hex>" in problem
    goal_id, _ = _play(env, [t.name for t in atomic_chain("dining", 1)], _any("dining"))
    assert goal_id.startswith("TravelDining-")
    assert env.answer_problem(goal_id) is None
    assert env.answer_problem(f"  {goal_id}\n") is None  # surrounding space is not the id
    other = goal_id[:-1] + ("0" if goal_id[-1] != "0" else "1")  # well formed, not issued
    assert "not returned by a tool call" in str(env.answer_problem(other))
    env.reset()  # ids issued before a reset (a preference change) are void
    assert "not returned by a tool call" in str(env.answer_problem(goal_id))


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


def test_greedy_relaxes_when_nothing_consumes_the_previous_output() -> None:
    env = TravelEnv("dining", 0, "<Query00008>")
    env.ban("Select_Final_Dining")
    raw = env.initial_state | {"DiningCandidate_Raw"}
    path, _ = env.greedy_path(raw, previous="DiningCandidate_Raw")
    assert path and "Select_Final_Dining" not in path


def test_fill_arguments() -> None:
    prefs = _any("transportation")
    query = Query("<Query00001>", "transportation", prefs, "May", "Oslo", "text")
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
