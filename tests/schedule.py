"""The order this suite's tests run in under ``pytest -n 2``, so both workers end together.

xdist's default (``--dist load``) hands each worker a quarter of the collection up front, in
collection order: the slowest tests (whole pytest runs of 20 to 100 s) landed wherever their
files sort, and one late in the run left the other worker idle until it ended.  Here the
collection is reordered into two halves that start with the known slow tests (dealt to the
half with less known work so far, slowest first), and ``--dist worksteal`` gives each worker
one half and lets an idle worker take the tail of the other's.  The rest keeps its order, so
tests of one module still run together.  Only the order changes: every test still runs.

The weights are the durations of a fresh-clone ``.ci/run`` (``--durations``), in seconds; a
test that is not listed weighs nothing (the work-stealing tail evens those out).  A module
whose tests share a module-scoped run (the browser pages) is one unit, so that run is made
once.
"""

from __future__ import annotations

from typing import Any

#: Node id prefix -> seconds (first match wins, so specific ids come before their file).
#: The slowest 20 of session 10's fresh-clone ``.ci/run`` (2,535 tests, 879-954 s,
#: ``--durations``; the middle of the figures given where runs differed; a module-scoped
#: run counted in its file's weight), then session 9's figures for the next ones.
SLOW: dict[str, float] = {
    # s13: its first run is one suite's, not all (README.md runs the all + HTML command).
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/read-the-html-re": 36,
    # s14: the main command runs in test_newcomer_runs; its HTML example is triage's.
    "tests/test_docs_run.py::test_the_page_runs_as_shown[README.md]": 15,
    # s14: README.md's cold plain run, a warm -n 2 rerun and a cold -n 2 run in a new folder.
    "tests/test_newcomer_runs.py::test_readme_main_command_cold_plain_then_warm_n2_and": 43,
    # s14: one unit (SAME_UNIT, one shared run): the pair's weight under either file's name
    "tests/test_html_browser.py": 59,
    "tests/test_html_drill_browser.py": 59,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/forecast-and-cap": 26,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/run-on-many-mac": 32,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/gate-ci.md]": 31,
    "tests/test_html_samples.py::test_saved_run_and_merged_shards": 27,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/bring-your-own-ret": 25,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/replay-logged": 22,
    "tests/test_live_runtime.py::test_ctrl_c_stops_a_live_run_promptly_and_a_rerun_resumes[2]": 13,
    "tests/test_merge.py::test_sharded_runs_merged_equal_the_unsharded_run": 20,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/tutorial/first-run.md]": 19,
    "tests/test_docs_examples.py::test_own_retrieval_server_with_the_suite": 19,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/tutorial/first-agent.md]": 17,
    "tests/test_plugin_awareness.py::test_default_run_gates_against_shipped_baselines": 17,
    "tests/test_plugin_snapshots.py::test_a_run_without_baselines_says_so_once_and_fails_"
    "once[n2]": 16,
    "tests/test_live_runtime.py::test_ctrl_c_stops_a_live_run_promptly_and_a_rerun_resu": 10,
    "tests/test_report_file.py::test_a_real_run_writes_json_gz_and_every_command_reads": 16,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/bring-your-own-mod": 16,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/how-to/compare-agents": 15,
    "tests/test_plugin_snapshots.py::test_a_run_without_baselines_says_so_once_and_fails_": 14,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/tutorial/first-planning": 14,
    "tests/test_agent_timeout.py::test_a_sleeping_sync_agent_fails_its_items_and_the_run": 9,
    "tests/test_docs_run.py::test_the_page_runs_as_shown[docs/tutorial/first-awareness": 16,
    "tests/test_docs_complete.py::test_documented_commands_are_accepted": 12,
    "tests/test_awareness_logs.py::test_inspect_logs_a_real_run_writes": 10,
    "tests/test_docs_run.py::test_the_page_runs_as_shown": 10,  # the other pages
}
#: Files run as one unit (their tests share a module-scoped run).
WHOLE_FILES = ("tests/test_html_browser.py", "tests/test_html_drill_browser.py")
#: Whole files run in one unit with another (named by the first's path): the browser tests
#: share one run of every suite per session (tests/html_runs.py), made once on one worker.
SAME_UNIT = {"tests/test_html_drill_browser.py": "tests/test_html_browser.py"}


def weight(nodeid: str) -> float:
    return next((seconds for prefix, seconds in SLOW.items() if nodeid.startswith(prefix)), 0.0)


def balanced_order(items: list[Any]) -> list[Any]:
    """The collection as two halves, each starting with its share of the slow tests.

    The first half is exactly ``len(items) // 2`` long: the part worksteal sends the first
    worker (the rest goes to the second).
    """
    units: list[list[Any]] = []
    whole: dict[str, list[Any]] = {}
    rest = []
    for item in items:
        path = item.nodeid.partition("::")[0]
        if path in WHOLE_FILES:
            path = SAME_UNIT.get(path, path)
            if path not in whole:
                whole[path] = []
                units.append(whole[path])
            whole[path].append(item)
        elif weight(item.nodeid) > 0:
            units.append([item])
        else:
            rest.append(item)
    # a unit weighs what its first test does (a whole file is listed once, by its path)
    slow_first = sorted(units, key=lambda unit: -weight(unit[0].nodeid))
    halves: tuple[list[Any], list[Any]] = ([], [])
    work = [0.0, 0.0]
    for unit in slow_first:
        side = 0 if work[0] <= work[1] else 1
        if len(halves[side]) + len(unit) > len(items) // 2:
            side = 1
        halves[side].extend(unit)
        work[side] += weight(unit[0].nodeid)
    room = len(items) // 2 - len(halves[0])
    return halves[0] + rest[:room] + halves[1] + rest[room:]


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's work-stealing scheduler (each worker starts with one half of the order)."""
    from xdist.scheduler import WorkStealingScheduling  # type: ignore[import-untyped]

    return WorkStealingScheduling(config, log)
