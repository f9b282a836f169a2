"""The planning suite's options: its flags, its scenarios and their parsed value.

:func:`add_options` registers the flags (the plugin calls it with pytest's option group);
:func:`parse_options` reads them into :class:`PlanningOptions`, one line per bad value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_budget._core.sizes import DEFAULT_SIZE, SIZES

if TYPE_CHECKING:  # the checks load when options are parsed, not registered
    from pytest_budget._core.option_checks import OptionReader

__all__ = [
    "DEFAULT_QUERY_COUNT",
    "DEFAULT_SCENARIOS",
    "PLANNING_MODES",
    "PLANNING_TASKS",
    "PlanningOptions",
    "Scenario",
    "add_options",
    "parse_options",
    "parse_scenarios",
]

PLANNING_TASKS: tuple[str, ...] = (
    "location", "transportation", "accommodation", "attraction", "dining", "shopping",
)  # fmt: skip
PLANNING_MODES: tuple[str, ...] = (
    "static", "ban_tool", "preference_change", "cost_change", "remove_tools",
)  # fmt: skip
#: The default planning scenarios: L = 2 static, and L = 5 with each blocking mode once.
DEFAULT_SCENARIOS = "static@2,ban_tool:1@5,preference_change:1@5,cost_change:1@5,remove_tools:1@5"
#: Generated queries per task at the default run size (:mod:`pytest_budget._core.sizes` says why:
#: a planning episode is the dearest unit of a live run).
DEFAULT_QUERY_COUNT = SIZES[DEFAULT_SIZE].query_count
DESTS = ("budget_scenario", "budget_task", "budget_query_count", "budget_queries")
LIST_DESTS = ("budget_task", "budget_scenario")


@dataclass(frozen=True)
class Scenario:
    """A planning setting: blocking ``mode`` with ``blocks`` events at refinement ``level``."""

    mode: str
    blocks: int
    level: int

    @property
    def id(self) -> str:
        blocks = "" if self.mode == "static" else str(self.blocks)
        return f"{self.mode}{blocks}-L{self.level}"


def parse_scenarios(value: str) -> tuple[Scenario, ...]:
    """``MODE[:N]@L`` items, comma separated, e.g. ``static@2,ban_tool:2@5``."""
    from pytest_budget._core.option_checks import OptionError

    example = "e.g. --budget-scenario=static@2,ban_tool:1@5"
    out: list[Scenario] = []
    for raw in str(value).split(","):
        text = raw.strip()
        if not text:
            continue
        head, sep, level_text = text.partition("@")
        mode, colon, blocks_text = head.strip().partition(":")
        mode = mode.strip()
        if not sep or mode not in PLANNING_MODES:
            raise OptionError(
                f"--budget-scenario: {text!r} is not MODE[:N]@L with MODE one of "
                f"{', '.join(PLANNING_MODES)} ({example})"
            )
        try:
            level = int(level_text)
            blocks = int(blocks_text) if colon else (0 if mode == "static" else 1)
        except ValueError:
            raise OptionError(
                f"--budget-scenario: {text!r}: N and L must be integers ({example})"
            ) from None
        if not 0 <= level <= 5:
            raise OptionError(f"--budget-scenario: {text!r}: refinement level must be 0..5")
        if mode == "static" and blocks != 0:
            raise OptionError(f"--budget-scenario: {text!r}: static takes no block count")
        if mode != "static" and not 1 <= blocks <= 3:
            raise OptionError(f"--budget-scenario: {text!r}: block count must be 1..3")
        scenario = Scenario(mode, blocks, level)
        if scenario not in out:
            out.append(scenario)
    if not out:
        raise OptionError(f"--budget-scenario: no scenario given ({example})")
    return tuple(out)


@dataclass(frozen=True)
class PlanningOptions:
    """What a planning run was asked to do.  The protocol is CostBench's as coded by
    default: ban the longest tool, read the metrics as eval.py codes them, no feedback on
    a turn without a call or an answer."""

    scenarios: tuple[Scenario, ...] = field(
        default_factory=lambda: parse_scenarios(DEFAULT_SCENARIOS)
    )
    tasks: tuple[str, ...] = PLANNING_TASKS
    query_count: int = DEFAULT_QUERY_COUNT
    # Queries per task where they differ by task (--budget-size=paper: CostBench's test
    # split); a task not listed has query_count.
    task_query_counts: dict[str, int] = field(default_factory=dict)
    queries: tuple[str, ...] = ()
    planning_ban_longest: bool = True
    planning_reading: str = "code"
    planning_answer_feedback: bool = False

    def queries_for(self, task: str) -> int:
        """How many queries ``task`` generates."""
        return self.task_query_counts.get(task, self.query_count)


def add_options(add: Callable[..., None], add_ini: Callable[..., None]) -> None:
    add(
        "--budget-scenario",
        help="planning: MODE[:N]@L comma list, MODE static, ban_tool, preference_change, "
        "cost_change or remove_tools, N blocks 1..3, L refinement level 0..5 (default "
        "static@2 and each blocking mode once at L 5)",
    )
    add("--budget-task", help="planning: travel tasks, comma list (default: all six)")
    add(
        "--budget-query-count",
        help=f"planning: generated queries per task (default {DEFAULT_QUERY_COUNT}; "
        "--budget-size=paper: CostBench's test split, 29 to 102 by task)",
    )
    add(
        "--budget-queries",
        action="append",
        metavar="PATH",
        help="planning: a JSON/JSONL query file in CostBench's layout (repeatable); "
        "replaces generated queries",
    )
    add(
        "--budget-planning-keep-longest",
        action="store_true",
        default=None,
        help="planning: keep the composite that does the whole task (CostBench's paper "
        "scripts ban it; banned by default)",
    )
    add(
        "--budget-planning-reading",
        help="planning: code (CostBench's eval.py, default) or prose (the paper's App. B.3 "
        "text: runs that miss the goal leave the path metrics and UIHR)",
    )
    add(
        "--budget-planning-answer-feedback",
        action="store_true",
        default=None,
        help="planning: answer a turn with neither a tool call nor a well-formed answer with "
        "an error message and go on (CostBench ends the episode; off by default)",
    )


def _reading(value: Any) -> str:
    from pytest_budget._core.option_checks import OptionError

    reading = str(value or "code").strip().lower()
    if reading not in ("code", "prose"):
        raise OptionError(
            f"--budget-planning-reading: {value!r} is not code or prose (code: CostBench's "
            "eval.py, the default; prose: the paper's App. B.3 text)"
        )
    return reading


def parse_options(read: OptionReader) -> PlanningOptions:
    from pytest_budget._core.option_checks import OptionError, positive_int

    get: Callable[[str], Any] = read.get_option
    task_value = str(get("budget_task") or ",".join(PLANNING_TASKS))
    tasks = tuple(dict.fromkeys(t.strip() for t in task_value.split(",") if t.strip()))
    for task in tasks:
        if task not in PLANNING_TASKS:
            raise OptionError(
                f"--budget-task: unknown task {task!r}; choose from {', '.join(PLANNING_TASKS)}"
            )
    size = read.size()
    count = get("budget_query_count")
    return PlanningOptions(
        scenarios=parse_scenarios(get("budget_scenario") or DEFAULT_SCENARIOS),
        tasks=tasks or PLANNING_TASKS,
        query_count=positive_int("--budget-query-count", count or size.query_count, maximum=10_000),
        task_query_counts={} if count else dict(size.task_query_counts),
        queries=read.input_files("budget_queries", "give a JSON or JSONL query file"),
        planning_ban_longest=not get("budget_planning_keep_longest"),
        planning_reading=_reading(get("budget_planning_reading")),
        planning_answer_feedback=bool(get("budget_planning_answer_feedback")),
    )
