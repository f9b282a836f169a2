"""CostBench travel tools: tasks, preference enums, atomic chains and composite tools.

Facts follow DESIGN.md section 5.3 (read off CostBench's public code): for task ``X`` and
refinement level ``L`` the atomic chain is ``Decide_X_Preference -> Search_X_Candidates ->
X_Refinement_Step1..L -> Select_Final_X`` (``L + 3`` tools), and every contiguous run of at
least two atomics is a composite tool named by CostBench's table (:func:`composite_name`).

Preference values are CostBench's test-split enums, in declaration order (fact sheet §1).
:func:`build_tools` lists a task's tools in CostBench's registry order (fact sheet §5.1):
the atomic chain, then the composites by length ascending, then by start position; a
composite's inputs are the *sorted* set of its components' inputs not produced inside it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = [
    "DIMENSIONS",
    "LEVEL_SUFFIXES",
    "MAX_REFINEMENT_LEVEL",
    "PREFERENCE_VALUES",
    "TASKS",
    "Tool",
    "atomic_chain",
    "build_tools",
    "composite_name",
    "dimension_type",
    "goal_type",
    "initial_state",
    "task_label",
]

TASKS: tuple[str, ...] = (
    "location",
    "transportation",
    "accommodation",
    "attraction",
    "dining",
    "shopping",
)
DIMENSIONS: tuple[str, ...] = ("category", "tier", "style", "feature_package")
MAX_REFINEMENT_LEVEL = 5
# Output-type suffix of refinement step K (index K - 1), and what that step filters by.
LEVEL_SUFFIXES: tuple[str, ...] = ("Available", "Located", "Reviewed", "Verified", "Finalized")
_LEVEL_PURPOSE: tuple[str, ...] = (
    "availability for the requested time",
    "location",
    "reviews",
    "verification of the listing",
    "final consistency checks",
)

# CostBench's test-split enum values (``env/domains/travel/enums.py``), in declaration order:
# the order fixes the search-space ids (:mod:`pytest_budget.planning._ids`).
PREFERENCE_VALUES: dict[str, dict[str, tuple[str, ...]]] = {
    "location": {
        "category": ("city", "seaside", "mountain", "village"),
        "tier": ("major_metropolis", "mid_sized_city", "small_town", "secluded_area"),
        "style": (
            "historic_and_traditional",
            "modern_and_cosmopolitan",
            "natural_and_serene",
            "entertainment_and_vibrant",
        ),
        "feature_package": (
            "architectural_marvel",
            "religious_center",
            "signature_theme_city",
            "culinary_capital",
        ),
    },
    "transportation": {
        "category": ("flight", "train", "bus", "car_rental"),
        "tier": ("luxury_class", "business_class", "standard_class", "budget_class"),
        "style": (
            "speed_priority",
            "comfort_priority",
            "scenic_route",
            "schedule_flexibility_priority",
        ),
        "feature_package": (
            "onboard_connectivity_and_power",
            "full_meal_and_beverage_service",
            "special_luggage_allowance",
            "lie_flat_or_sleeper_facility",
        ),
    },
    "accommodation": {
        "category": ("hotel", "campsite", "homestay", "hostel"),
        "tier": ("luxury_five_star", "business_four_star", "standard_three_star", "budget_basic"),
        "style": (
            "centrality_priority",
            "scenery_priority",
            "convenience_priority",
            "tranquility_priority",
        ),
        "feature_package": (
            "resort_style_recreation",
            "specialized_pet_friendly_services",
            "comprehensive_business_services",
            "self_catering_and_laundry",
        ),
    },
    "attraction": {
        "category": (
            "historic_site",
            "museum_or_gallery",
            "natural_wonder",
            "amusement_or_entertainment",
        ),
        "tier": ("global_landmark", "national_treasure", "regional_highlight", "local_spot"),
        "style": (
            "learning_and_knowledge_priority",
            "action_and_thrill_priority",
            "relaxation_and_aesthetics_priority",
            "social_and_community_priority",
        ),
        "feature_package": (
            "in_depth_expert_guidance",
            "live_performances",
            "hands_on_creation_experience",
            "immersive_themed_dining",
        ),
    },
    "dining": {
        "category": ("coffee_shop", "restaurant", "street_food_vendor", "bakery"),
        "tier": (
            "world_renowned_award_winner",
            "nationally_acclaimed",
            "popular_local_mainstay",
            "simple_and_budget_eats",
        ),
        "style": (
            "culinary_quality_priority",
            "ambiance_and_setting_priority",
            "speed_and_convenience_priority",
            "value_for_money_priority",
        ),
        "feature_package": (
            "live_music_or_performance",
            "exceptional_view_or_setting",
            "chef_interaction_and_open_kitchen",
            "unique_themed_environment",
        ),
    },
    "shopping": {
        "category": (
            "shopping_center_or_mall",
            "shopping_street",
            "local_market_or_bazaar",
            "boutiques_and_specialty_stores",
        ),
        "tier": ("high_end_luxury", "mid_range_brand", "affordable_price", "bargain_deals"),
        "style": (
            "brand_and_quality_priority",
            "price_priority",
            "uniqueness_and_discovery_priority",
            "efficiency_and_needs_priority",
        ),
        "feature_package": (
            "duty_free",
            "personal_shopping_or_styling_service",
            "local_artisan_and_handcraft_specialty",
            "vintage_and_second_hand_specialty",
        ),
    },
}

TIME_INFO = "TimeInfo"
LOCATION_PREFERENCE = "LocationPreference"


def task_label(task: str) -> str:
    """``S`` in CostBench's names: the capitalised task, e.g. ``Location``."""
    label = _LABELS.get(task) if isinstance(task, str) else None
    if label is None:
        _check_task(task)
    return label or task.capitalize()


def dimension_type(task: str, dimension: str) -> str:
    """Type (and parameter) name of an enum dimension, e.g. ``DiningFeaturePackage``."""
    found = _DIMENSION_TYPES.get((task, dimension)) if isinstance(task, str) else None
    if found is None:
        found = task_label(task) + "".join(part.capitalize() for part in dimension.split("_"))
    return found


_LABELS = {task: task.capitalize() for task in TASKS}
_DIMENSION_TYPES = {
    (task, d): _LABELS[task] + "".join(part.capitalize() for part in d.split("_"))
    for task in TASKS
    for d in DIMENSIONS
}


def goal_type(task: str) -> str:
    return f"Travel{task_label(task)}"


def initial_state(task: str) -> frozenset[str]:
    """Types held before any call: TimeInfo, the four enums, LocationPreference (not location)."""
    held = {TIME_INFO, *(dimension_type(task, d) for d in DIMENSIONS)}
    if task != "location":
        held.add(LOCATION_PREFERENCE)
    return frozenset(held)


@dataclass(frozen=True)
class Tool:
    """A typed tool: held ``inputs`` -> one ``output`` type; ``components`` are atomic names."""

    name: str
    inputs: tuple[str, ...]
    output: str
    components: tuple[str, ...]
    # (kind, step) per component: kind in decide/search/refine/select, step K for refine.
    roles: tuple[tuple[str, int], ...]
    purpose: str

    @property
    def is_composite(self) -> bool:
        return len(self.components) > 1


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")


def _check_level(level: int) -> None:
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"refinement_level must be an int, got {level!r}")
    if not 0 <= level <= MAX_REFINEMENT_LEVEL:
        raise ValueError(f"refinement_level must be in 0..{MAX_REFINEMENT_LEVEL}, got {level}")


def atomic_chain(task: str, refinement_level: int) -> list[Tool]:
    """The ``L + 3`` atomic tools of ``task`` in chain order."""
    _check_task(task)
    _check_level(refinement_level)
    return list(_atomic_chain(task, refinement_level))


# Tools are frozen and a pure function of (task, level): built once per process (checked
# arguments only, so a bad one still raises; a bool level never reaches the cache).
@functools.cache
def _atomic_chain(task: str, refinement_level: int) -> tuple[Tool, ...]:
    s = task_label(task)
    loc = () if task == "location" else (LOCATION_PREFERENCE,)
    enums = tuple(dimension_type(task, d) for d in DIMENSIONS)
    chain = [
        Tool(
            f"Decide_{s}_Preference",
            (*loc, *enums),
            f"{s}Preference",
            (f"Decide_{s}_Preference",),
            (("decide", 0),),
            f"Turns the user's {task} requirements into a structured preference.",
        ),
        Tool(
            f"Search_{s}_Candidates",
            (f"{s}Preference", *loc, TIME_INFO),
            f"{s}Candidate_Raw",
            (f"Search_{s}_Candidates",),
            (("search", 0),),
            f"Searches {task} candidates matching the preference.",
        ),
    ]
    previous = f"{s}Candidate_Raw"
    for k in range(1, refinement_level + 1):
        output = f"{s}Candidate_L{k}_{LEVEL_SUFFIXES[k - 1]}"
        # Only Step1 needs the time (it filters by availability).
        inputs = (previous, TIME_INFO) if k == 1 else (previous,)
        name = f"{s}_Refinement_Step{k}"
        chain.append(
            Tool(
                name,
                inputs,
                output,
                (name,),
                (("refine", k),),
                f"Filters the {task} candidates by {_LEVEL_PURPOSE[k - 1]}.",
            )
        )
        previous = output
    chain.append(
        Tool(
            f"Select_Final_{s}",
            (previous,),
            goal_type(task),
            (f"Select_Final_{s}",),
            (("select", 0),),
            f"Selects the final {task} from the refined candidates.",
        )
    )
    return tuple(chain)


def composite_name(task: str, roles: tuple[tuple[str, int], ...]) -> str:
    """CostBench's composite name for a run of components given as ``(kind, step)`` roles."""
    s = task_label(task)
    n = len(roles)
    if n < 2:
        raise ValueError("a composite has at least two components")
    (first, i), (last, k) = roles[0], roles[-1]
    if n == 2:
        pair = {
            ("decide", "search"): "Preference_and_Search",
            ("decide", "refine"): f"Planning_to_Step{k}",
            ("search", "refine"): f"Search_to_Step{k}",
            ("refine", "refine"): f"Refine_to_Step{k}",
            ("search", "select"): "Finalize_from_Search",
            ("refine", "select"): f"Finalize_from_Step{i}",
        }.get((first, last))
        if pair is None:
            raise ValueError(f"no CostBench name for a run {first} -> {last}")
        return f"{s}_{pair}"
    if last == "refine":
        start = {"decide": "Full_Planning", "search": "Search_Planning"}.get(
            first, f"Refine_Step{i}"
        )
        return f"{s}_{start}_to_Step{k}"
    if last == "select":
        if first == "decide":
            return f"{s}_Complete_{n}Steps_Pipeline"
        if first == "search":
            return f"{s}_Search_to_Final_{n}Steps"
        return f"{s}_Finish_from_Step{i}_{n}Steps"
    raise ValueError(f"no CostBench name for a run {first} -> {last}")


def _compose(task: str, parts: list[Tool]) -> Tool:
    # Inputs: the sorted set of component inputs not produced earlier in the run (§5.1).
    produced: set[str] = set()
    inputs: set[str] = set()
    for part in parts:
        inputs.update(needed for needed in part.inputs if needed not in produced)
        produced.add(part.output)
    roles = tuple(role for part in parts for role in part.roles)
    return Tool(
        composite_name(task, roles),
        tuple(sorted(inputs)),
        parts[-1].output,
        tuple(part.name for part in parts),
        roles,
        f"Runs {len(parts)} {task} workflow steps in one call.",
    )


def build_tools(task: str, refinement_level: int, *, ban_longest: bool = True) -> list[Tool]:
    """The task's tools in CostBench's registry order: the atomic chain, then every
    composite by length ascending, then by start index.  ``ban_longest`` (CostBench's
    ``--ban_longest_tool``, on in every paper script) drops the composites of maximal length,
    i.e. the single tool that does the whole task."""
    _check_task(task)
    _check_level(refinement_level)
    return list(_build_tools(task, refinement_level, bool(ban_longest)))


@functools.cache
def _build_tools(task: str, refinement_level: int, ban_longest: bool) -> tuple[Tool, ...]:
    chain = list(_atomic_chain(task, refinement_level))
    m = len(chain)
    tools = list(chain)
    for length in range(2, m + 1):
        if ban_longest and length == m:
            continue
        for start in range(m - length + 1):
            tools.append(_compose(task, chain[start : start + length]))
    return tuple(tools)
