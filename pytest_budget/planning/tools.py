"""CostBench travel tools: tasks, preference enums, atomic chains and composite tools.

Facts follow DESIGN.md section 5.3 (read off CostBench's public code): for task ``X`` and
refinement level ``L`` the atomic chain is ``Decide_X_Preference -> Search_X_Candidates ->
X_Refinement_Step1..L -> Select_Final_X`` (``L + 3`` tools), and every contiguous run of at
least two atomics is a composite tool named by CostBench's table (:func:`composite_name`).

The paper only lists the transportation preference values (App. E table); the other five
tasks' values are ours, four per dimension, fixed here so every process agrees.
"""

from __future__ import annotations

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

PREFERENCE_VALUES: dict[str, dict[str, tuple[str, ...]]] = {
    "location": {
        "category": ("city", "beach", "mountain", "countryside"),
        "tier": ("luxury", "premium", "mid-range", "budget"),
        "style": ("cultural immersion", "relaxation", "adventure", "nightlife"),
        "feature_package": (
            "family friendly",
            "romantic getaway",
            "solo explorer",
            "group celebration",
        ),
    },
    # The only task whose test-split values the paper prints (App. E).
    "transportation": {
        "category": ("flight", "train", "bus", "car rental"),
        "tier": ("luxury class", "business class", "standard class", "budget class"),
        "style": (
            "speed priority",
            "comfort priority",
            "scenic route",
            "schedule flexibility priority",
        ),
        "feature_package": (
            "onboard connectivity and power",
            "full meal and beverage service",
            "special luggage allowance",
            "lie flat or sleeper facility",
        ),
    },
    "accommodation": {
        "category": ("hotel", "hostel", "vacation rental", "resort"),
        "tier": ("five star", "four star", "three star", "economy"),
        "style": ("business", "boutique", "family", "wellness"),
        "feature_package": (
            "free breakfast included",
            "pool and spa access",
            "kitchen facilities",
            "airport shuttle service",
        ),
    },
    "attraction": {
        "category": ("museum", "theme park", "nature park", "historic site"),
        "tier": ("vip access", "premium ticket", "standard ticket", "free entry"),
        "style": ("educational", "thrill seeking", "relaxing", "photography"),
        "feature_package": (
            "guided tour included",
            "skip the line access",
            "audio guide",
            "family bundle",
        ),
    },
    "dining": {
        "category": ("fine dining", "casual dining", "street food", "cafe"),
        "tier": ("michelin level", "upscale", "mid-range", "budget"),
        "style": (
            "local cuisine",
            "international cuisine",
            "vegetarian friendly",
            "seafood focused",
        ),
        "feature_package": ("private room", "outdoor seating", "live music", "tasting menu"),
    },
    "shopping": {
        "category": ("shopping mall", "local market", "boutique district", "outlet center"),
        "tier": ("luxury brands", "premium brands", "mainstream brands", "discount"),
        "style": ("fashion", "souvenirs and crafts", "electronics", "food and specialties"),
        "feature_package": (
            "tax free shopping",
            "personal shopper service",
            "delivery to hotel",
            "loyalty discounts",
        ),
    },
}

TIME_INFO = "TimeInfo"
LOCATION_PREFERENCE = "LocationPreference"


def task_label(task: str) -> str:
    """``S`` in CostBench's names: the capitalised task, e.g. ``Location``."""
    _check_task(task)
    return task.capitalize()


def dimension_type(task: str, dimension: str) -> str:
    """Type (and parameter) name of an enum dimension, e.g. ``DiningFeaturePackage``."""
    return task_label(task) + "".join(part.capitalize() for part in dimension.split("_"))


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
    s = task_label(task)
    loc = () if task == "location" else (LOCATION_PREFERENCE,)
    enums = tuple(dimension_type(task, d) for d in DIMENSIONS)
    chain = [
        Tool(
            f"Decide_{s}_Preference",
            (*enums, *loc),
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
    return chain


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
    # Inputs: union of component inputs not produced inside the run, in first-seen order.
    produced: set[str] = set()
    inputs: list[str] = []
    for part in parts:
        for needed in part.inputs:
            if needed not in produced and needed not in inputs:
                inputs.append(needed)
        produced.add(part.output)
    roles = tuple(role for part in parts for role in part.roles)
    return Tool(
        composite_name(task, roles),
        tuple(inputs),
        parts[-1].output,
        tuple(part.name for part in parts),
        roles,
        f"Runs {len(parts)} {task} workflow steps in one call.",
    )


def build_tools(task: str, refinement_level: int, *, ban_longest: bool = False) -> list[Tool]:
    """Atomics in chain order, then composites by start position and length."""
    chain = atomic_chain(task, refinement_level)
    m = len(chain)
    tools = list(chain)
    for start in range(m):
        for end in range(start + 2, m + 1):
            if ban_longest and start == 0 and end == m:
                continue  # "ban longest": drop the single tool that does the whole task
            tools.append(_compose(task, chain[start:end]))
    return tools
