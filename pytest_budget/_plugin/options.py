"""The plugin's command-line flags and ini keys (``pytest --help`` lists them under
"pytest-budget").  The run's own are declared here; each registered suite adds its own
(:attr:`~pytest_budget._core.registry.Suite.options`).  The values are read by
:func:`pytest_budget._run.options.parse_options`.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_budget._core.registry import bundled_cells_folder, registered_suites, suite_names

__all__ = ["OPTION_GROUP", "add_options", "refuse_a_gate_that_cannot_fail", "rerun_command_for"]

#: The ``--budget-*`` option group, kept for the re-run commands (``rerun_command_for``).
OPTION_GROUP: dict[str, Any] = {}
#: Every ``budget_*`` ini key and its default: a run that sets one uses the plugin.
INI_DEFAULTS: dict[str, Any] = {}


def add_options(parser: pytest.Parser) -> None:
    """The run's ``--budget-*`` flags and ``budget_*`` ini keys, then each suite's own."""
    group = parser.getgroup("budget", "pytest-budget: budget-awareness suites")
    OPTION_GROUP["budget"] = group  # read by the re-run commands (every option added here)

    def add_ini(name: str, help_text: str, type: Any = None, default: Any = "") -> None:
        INI_DEFAULTS[name] = default
        parser.addini(name, help_text, type=type, default=default)

    _add_run_flags(group)
    _add_gate_flags(group)
    _add_model_flags(group)
    _add_limit_flags(group)
    from pytest_budget._plugin.markdown import add_markdown_options

    add_markdown_options(group, parser.addini)  # --budget-markdown, --budget-step-summary
    # Each registered suite's own flags and ini keys.
    for suite in registered_suites().values():
        if suite.options is not None:
            suite.options.add(group.addoption, add_ini)
    add_ini(
        "budget_snapshot_dir",
        "directory for score snapshots, relative to rootdir",
        default="__budget_snapshots__",
    )
    for name, help_text in _INI_VALUES:
        add_ini(name, help_text, default="")
    for name, help_text in _INI_LINE_LISTS:
        add_ini(name, help_text, type="linelist", default=[])


def _add_run_flags(group: pytest.OptionGroup) -> None:
    """What to run, with which agents, and where its results go."""
    group.addoption(
        "--budget-suite",
        help=f"run the installed suite(s): {', '.join(suite_names())}, all, or a comma list",
    )
    group.addoption(
        "--budget-agent",
        help=f"agent(s) to evaluate, comma list: a reference agent ({_reference_agents()}) or "
        "'user' for the agent from your hook (default: the suite's reference agents, or "
        "'user' when your conftest supplies one)",
    )
    group.addoption("--budget-seed", help="seed for every random choice (default 42)")
    group.addoption(
        "--budget-concurrency",
        help="agent calls in flight at once per process, across its cells (default 8)",
    )
    group.addoption("--budget-report", metavar="PATH", help="write the run's JSON report here")
    group.addoption(
        "--budget-html",
        metavar="PATH",
        help="write the run's report as one self-contained HTML page with score tables and "
        'figures (needs matplotlib: pip install "pytest-budget[report]")',
    )
    group.addoption(
        "--budget-allow-partial",
        action="store_true",
        default=False,
        help="a cell some of whose model calls failed after the retries passes (marked "
        "partial in the report) instead of failing as incomplete",
    )
    group.addoption(
        "--budget-snapshot-dir",
        metavar="DIR",
        help="where score snapshots live (default: ini budget_snapshot_dir)",
    )


def _add_gate_flags(group: pytest.OptionGroup) -> None:
    """How a cell is gated: the gate, sequential batches, intervals, repeats."""
    group.addoption(
        "--budget-gate",
        help="tolerance: fail on regressions past tolerance against stored baselines; ci: "
        "fail only when a score's whole confidence interval is on the worse side of the "
        "stored value; overlap: only when it is on the worse side of the stored interval; "
        "paired: a paired test of each query's new values against the stored ones; off: "
        f"score and report without comparing (default per suite: {_default_gates()})",
    )
    group.addoption(
        "--budget-sequential",
        choices=("auto", "on", "off"),
        help="run each cell's units in batches and stop as soon as the paired gate decides "
        "(regressed, or no regression of the stated size): on, off, or auto (default: ini "
        "budget_sequential, else auto = on for metered model agents, off for the free ones)",
    )
    group.addoption(
        "--budget-ci-level",
        metavar="LEVEL",
        help="coverage of the bootstrap confidence interval of every score, strictly between "
        "0 and 1 (default: ini budget_ci_level, else 0.95)",
    )
    group.addoption(
        "--budget-ci-resamples",
        metavar="N",
        help="bootstrap resamples per cell (default: ini budget_ci_resamples, else 1000; "
        "0 turns intervals off)",
    )
    group.addoption(
        "--budget-repeat",
        metavar="K",
        help="run each cell's agent K times and report mean, spread and pass^k consistency "
        "(default: ini budget_repeat, else 1)",
    )


def _add_model_flags(group: pytest.OptionGroup) -> None:
    """Model calls: endpoint, headers, spend cap, record/replay, cache, retries."""
    group.addoption(
        "--budget-base-url",
        help="base URL of the model endpoint for openai:/anthropic: agents, e.g. "
        "http://localhost:8000/v1 (default: the provider's public API)",
    )
    group.addoption(
        "--budget-model-header",
        action="append",
        metavar="HEADER=ENV_VAR",
        help="extra request header for model calls (e.g. a gateway token), its value read "
        "from the environment variable ENV_VAR (repeatable); redacted like the key",
    )
    group.addoption(
        "--budget-api-key-env",
        help="name of the environment variable holding the API key (default OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY); keys are only ever read from the environment",
    )
    group.addoption(
        "--budget-max-usd",
        help="spend cap in USD for the whole run, shared by all xdist workers; when reached, no "
        "further model calls are made and remaining cells are skipped",
    )
    group.addoption(
        "--budget-max-usd-mode",
        choices=("refuse", "stop-at-cap"),
        help="what --budget-max-usd does when the forecast's worst case exceeds it: refuse "
        "(default: stop before any call) or stop-at-cap (start, and stop calling once the "
        "spend reaches the cap; the remaining cells are incomplete)",
    )
    group.addoption(
        "--budget-dry-run",
        action="store_true",
        default=False,
        help="print the cost forecast of the run's model calls (calls, tokens, USD) and exit "
        "without calling any model",
    )
    group.addoption(
        "--budget-record-mode",
        help="model-call record/replay: none, once, new (default: replay recorded calls, record "
        "new ones), all (re-record everything)",
    )
    group.addoption(
        "--budget-price-file",
        metavar="PATH",
        help="price table for model calls (USD per million input/output/cached tokens)",
    )
    group.addoption(
        "--budget-model-timeout",
        help="seconds per model HTTP call, a total deadline for the whole answer (default 60)",
    )
    group.addoption(
        "--budget-cache-dir",
        metavar="DIR",
        help="where Phase 0 results and recorded model calls are kept (default: inside "
        "pytest's cache directory, .pytest_cache/d/pytest_budget)",
    )
    group.addoption(
        "--budget-retries",
        help="retries of a model call after a 429, 5xx, timeout or dropped connection (default 5)",
    )
    group.addoption(
        "--budget-retry-max-s",
        help="give up retrying a model call after this many seconds in all (default 300)",
    )


def _add_limit_flags(group: pytest.OptionGroup) -> None:
    """Limits on each agent call, the run's size, and its shard."""
    group.addoption(
        "--budget-agent-timeout",
        metavar="S",
        help="seconds one agent call (Python or HTTP, sync or async) may take before it is "
        "that item's error and the run goes on (default: ini budget_agent_timeout, else 900; "
        "0: no limit)",
    )
    group.addoption(
        "--budget-max-output-chars",
        metavar="N",
        help="a raw agent output longer than N characters is scored invalid (the size is "
        "recorded) instead of parsed (default: ini budget_max_output_chars, else 1000000)",
    )
    group.addoption(
        "--budget-size",
        metavar="NAME",
        help="how many items each suite runs: default (sized by cost: a live run of all "
        "suites with a gpt-4o-mini-class model forecasts at most 5,000 calls, $5) or paper "
        "(the papers' protocol sizes); a count option still wins (default: ini budget_size)",
    )
    group.addoption(
        "--budget-max-usd-default",
        metavar="USD",
        help="with no --budget-max-usd, a live run whose forecast worst case is above this "
        "stops before the first call (default: ini budget_max_usd_default, else 500)",
    )
    group.addoption(
        "--budget-shard",
        metavar="I/N",
        help="run only shard I of N (1-based) of the collected tests, chosen by a hash of each "
        "test's id; merge the shards' reports with budget-report merge",
    )


#: The run's ini keys read as one value ("" when unset: the flag's default applies).
_INI_VALUES: tuple[tuple[str, str], ...] = (
    ("budget_tolerance", "absolute tolerance for every gated metric"),
    ("budget_ci_level", "coverage of the scores' bootstrap intervals"),
    ("budget_ci_resamples", "bootstrap resamples per cell (0: none)"),
    ("budget_repeat", "runs of each cell's agent (default 1)"),
    (
        "budget_cache_dir",
        "where Phase 0 results are cached (default: inside pytest's cache directory)",
    ),
    ("budget_record_mode", "model-call record/replay mode"),
    ("budget_price_file", "price table file for model calls"),
    ("budget_model_timeout", "seconds per model HTTP call"),
    (
        "budget_max_output_chars",
        "longest raw agent output parsed, in characters (default 1000000)",
    ),
    ("budget_retries", "retries of a failed model call (default 5)"),
    ("budget_agent_timeout", "seconds one agent call may take (default 900; 0: none)"),
    ("budget_retry_max_s", "seconds after which a model call stops retrying"),
    ("budget_size", "run size: default or paper (see --budget-size)"),
    ("budget_sequential", "sequential gate: auto, on or off (see --budget-sequential)"),
    ("budget_max_usd_default", "worst-case USD a live run without --budget-max-usd may forecast"),
)
#: The run's ini keys read as one entry per line.
_INI_LINE_LISTS: tuple[tuple[str, str], ...] = (
    ("budget_tolerances", "per-metric absolute tolerances, one 'metric = value' per line"),
    (
        "budget_prices",
        "model prices per million tokens, one 'MODEL = INPUT_USD OUTPUT_USD [CACHED_USD]' per line",
    ),
    (
        "budget_role_agents",
        "agent per role, one 'ROLE = AGENT' per line, e.g. 'solver = openai:gpt-4o-mini'",
    ),
)


def _reference_agents() -> str:
    """``triage: cheapest-first, random, ...; awareness: ...`` from the registry."""
    return "; ".join(
        f"{name}: {', '.join(suite.kinds[0].reference_agents)}"
        for name, suite in registered_suites().items()
        if suite.kinds and suite.kinds[0].reference_agents
    )


def _default_gates() -> str:
    return ", ".join(f"{name} {suite.default_gate}" for name, suite in registered_suites().items())


def _addopts_values(addopts: str) -> set[str]:
    """The values of ``-o``/``-p`` options in a PYTEST_ADDOPTS string."""
    words = shlex.split(addopts)
    values: set[str] = set()
    for index, word in enumerate(words):
        if word in ("-o", "--override-ini", "-p") and index + 1 < len(words):
            values.add(words[index + 1])
        elif word.startswith("--override-ini="):
            values.add(word.partition("=")[2])
        elif word.startswith(("-o", "-p")) and len(word) > 2:
            values.add(word[2:])
    return values


def rerun_command_for(item: pytest.Item, extra: tuple[str, ...] = ()) -> str:
    """The exact command that runs ``item`` again with every option of this run that
    changes its cells, scores or snapshot (``extra``, e.g. ``--snapshot-update``, added)."""
    from pytest_budget._run.rerun import OptionValue, rerun_command, suite_of_module

    config = item.config
    group = OPTION_GROUP.get("budget")
    budget_options: list[OptionValue] = []
    for option in group.options if group is not None else ():
        flag = option.names()[-1]
        value = config.getoption(option.dest)
        if value is None or value is False or value == option.attrs().get("default"):
            continue
        budget_options.append((flag, value))
    pytest_options: list[OptionValue] = []
    known = config.option
    if getattr(known, "inifilename", None):
        pytest_options.append(("-c", str(known.inifilename)))
    if getattr(known, "rootdir", None):
        pytest_options.append(("--rootdir", str(known.rootdir)))
    # PYTEST_ADDOPTS and the ini's addopts apply to the re-run as well: not repeated.
    from_env = _addopts_values(os.environ.get("PYTEST_ADDOPTS", ""))
    from_env |= _addopts_values(shlex.join(str(word) for word in config.getini("addopts")))
    for flag, dest in (("-o", "override_ini"), ("-p", "plugins")):
        values = [str(v) for v in getattr(known, dest, None) or () if str(v) not in from_env]
        if values:
            pytest_options.append((flag, values))
    in_suite = Path(item.path).resolve().parent == bundled_cells_folder()
    suite = suite_of_module(Path(item.path).name, suite_names()) if in_suite else None
    return rerun_command(
        item.nodeid,
        suite=suite,
        budget_options=budget_options,
        pytest_options=pytest_options,
        extra=extra,
    )


def refuse_a_gate_that_cannot_fail(config: pytest.Config, gate: str) -> None:
    """A suite gates its scores with an ``assert`` statement, which ``python -O`` (or
    ``PYTHONOPTIMIZE``) removes unless pytest rewrites it: under ``--assert=plain`` every
    cell would pass whatever its scores.  Refuse that run instead of passing it."""
    if gate == "off" or not sys.flags.optimize:
        return
    if config.getoption("assertmode", "rewrite") == "plain":
        raise pytest.UsageError(
            "--assert=plain with python -O (PYTHONOPTIMIZE) removes the budget gate's assert "
            "statements, so every cell would pass: drop -O, or --assert=plain, or gate "
            "nothing with --budget-gate=off"
        )
