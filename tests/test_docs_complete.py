"""The docs keep up with the code, and what they show runs.

- Registries: every ``--budget-*`` flag and ``budget_*`` ini key the plugin registers is in
  docs/reference/options.md (flags with a table row), every marker it registers too, every
  public fixture has a row in fixtures.md, every hook a section in hooks.md, every gated
  metric a row in a metrics page with its direction, tolerance and paper section, and every
  score key a mention on its suite's metrics page.
- Links: every relative link in docs/**/*.md and README.md points to an existing file, and an
  ``#anchor`` to a heading of that file (GitHub's slugs).
- Examples: every file under docs/examples parses (JSON, JSONL) or compiles (Python), and is
  run by a test of tests/test_docs_*.py.
- Blocks: every ``pytest`` command shown in the docs is accepted by the plugin (parsed and
  configured in a directory holding the example files); every ini/toml block configures;
  every json block parses; every Python block of a tutorial or how-to page is part of a
  tested example file, run by a named test, or marked a fragment with a reason.
- Tutorials: first-run.md and first-agent.md, run as written, print what they show.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pytest_budget._plugin.hookspecs
from pytest_budget._run.options import parse_options
from pytest_budget._stats.gated_metrics import suite_metrics
from pytest_budget.awareness._options import AwarenessOptions

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
TESTS = Path(__file__).resolve().parent
#: How-to pages written alongside this file by other engineers; they test their own Python
#: blocks. Their links, commands and ini/json blocks are still checked here.
ELSEWHERE = {
    "how-to/gate-ci.md",
    "how-to/read-the-html-report.md",
    "how-to/run-on-many-machines.md",
}
#: The source papers, when present (not shipped with the repository).
PAPERS = Path(os.environ.get("BUDGET_PAPERS_DIR", "/work/shared/papers"))
PAPER_TITLES = {
    "TRIAGE": "Triage: Evaluating Prospective Metacognitive Control",
    "BAGEN": "Budget-Aware",
    "CostBench": "CostBench: Evaluating Multi-Turn Cost-Optimal Planning",
}
SUITE_PAPER = {"triage": "TRIAGE", "triage-resolve": "TRIAGE", "awareness": "BAGEN",
               "planning": "CostBench", "awareness-online": "BAGEN"}  # fmt: skip
METRIC_PAGES = {"triage": "metrics.md", "triage-resolve": "metrics.md",
                "awareness": "metrics-awareness.md", "planning": "metrics-planning.md",
                "awareness-online": "metrics-awareness.md"}  # fmt: skip


#: Plugins the checked runs do not need: without them an in-process run does not import
#: hypothesis again (about 2 s), nor run the garbage collector at unconfigure (0.1 s each).
FAST = ("-p", "no:hypothesispytest", "-p", "no:unraisableexception")
# The runs name hypothesis's plugin off on their command line, and the re-run commands they
# check repeat it: conftest.py must not also put it in PYTEST_ADDOPTS.
pytestmark = pytest.mark.hypothesis_plugin


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process runs here stand for a user's plain run; inside an xdist worker the
    environment says otherwise, and syrupy then leaves its summary to a controller."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in this process (no start-up cost), as a user would run it from pytester.path."""
    return pytester.runpytest_inprocess(*FAST, *args)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def markdown_files() -> list[Path]:
    return [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]


def rel(path: Path) -> str:
    return path.relative_to(DOCS).as_posix() if path.is_relative_to(DOCS) else path.name


# --------------------------------------------------------------------------- markdown


@dataclass(frozen=True)
class Block:
    """A fenced code block: language, text (dedented), first line number, docs-test marker."""

    page: str
    lang: str
    body: str
    line: int
    marker: str | None


FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^ *```[ \t]*$", re.DOTALL | re.MULTILINE)
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")


def blocks(path: Path) -> list[Block]:
    text = read(path)
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        body = textwrap.dedent(match.group(3)) if match.group(1) else match.group(3)
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(rel(path), match.group(2), body, line, marker and marker.group(1)))
    return found


def prose(text: str) -> str:
    """The text without fenced blocks and inline code (links there are not links)."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link keeps its text
    title = title.strip().lower().replace("`", "")
    title = re.sub(r"[^\w\- ]", "", title)
    return title.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: Counter[str] = Counter()
    out = set()
    for line in FENCE.sub("", read(path)).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


# --------------------------------------------------------------------------- registries


def help_text(pytester: pytest.Pytester) -> str:
    result = run(pytester, "--help")
    assert result.ret == 0
    return result.stdout.str()


def test_every_option_has_a_row_in_the_options_reference(pytester: pytest.Pytester) -> None:
    registered = set(re.findall(r"^\s+(--budget-[a-z0-9-]+)", help_text(pytester), re.M))
    assert {"--budget-suite", "--budget-gate", "--budget-report"} <= registered
    page = read(DOCS / "reference" / "options.md")
    rows = set(re.findall(r"^\| `(--budget-[a-z0-9-]+)", page, re.M))
    missing = sorted(registered - rows)
    assert not missing, f"options without a row in docs/reference/options.md: {missing}"
    # ... and the docs mention no flag that does not exist (a rename leaves no stale name).
    stale = {
        f"{rel(path)}: {flag}"
        for path in markdown_files()
        for flag in re.findall(r"--budget-[a-z0-9][a-z0-9-]*[a-z0-9]", read(path))
        if flag not in registered
    }
    assert not stale, f"documented flags the plugin does not register: {sorted(stale)}"


def test_every_ini_key_is_in_the_options_reference(pytester: pytest.Pytester) -> None:
    registered = set(re.findall(r"^\s+(budget_[a-z0-9_]+) \(", help_text(pytester), re.M))
    assert {"budget_snapshot_dir", "budget_tolerances"} <= registered
    page = read(DOCS / "reference" / "options.md")
    missing = sorted(key for key in registered if f"`{key}`" not in page)
    assert not missing, f"ini keys not in docs/reference/options.md: {missing}"


def test_every_marker_is_in_the_options_reference(pytester: pytest.Pytester) -> None:
    def markers(*args: str) -> set[str]:
        result = run(pytester, "--markers", *args)
        return set(re.findall(r"^@pytest\.mark\.(\w+)", result.stdout.str(), re.M))

    ours = markers() - markers("-p", "no:budget")  # what the plugin adds
    assert "budget" in ours
    page = read(DOCS / "reference" / "options.md")
    missing = sorted(name for name in ours if f"| `@pytest.mark.{name}" not in page)
    assert not missing, f"markers without a row in docs/reference/options.md: {missing}"


def test_every_public_fixture_has_a_row_in_the_fixtures_reference(
    pytester: pytest.Pytester,
) -> None:
    output = run(pytester, "--fixtures", "-v").stdout.str()
    ours: set[str] = set()
    for section in re.split(r"^-+ fixtures defined from ", output, flags=re.M)[1:]:
        if section.startswith("pytest_budget."):
            ours |= set(re.findall(r"^([a-z]\w*)(?: \[\w+ scope\])? -- ", section, re.M))
    assert {"budget_planner", "budget_snapshot", "triage_ground_truth"} <= ours
    page = read(DOCS / "reference" / "fixtures.md")
    missing = sorted(name for name in ours if f"| `{name}` |" not in page)
    assert not missing, f"fixtures without a row in docs/reference/fixtures.md: {missing}"


def test_every_hook_has_a_section_in_the_hooks_reference() -> None:
    hooks = [
        name
        for name, _ in inspect.getmembers(pytest_budget._plugin.hookspecs, inspect.isfunction)
        if name.startswith("pytest_budget_")
    ]
    assert "pytest_budget_planner" in hooks
    page = read(DOCS / "reference" / "hooks.md")
    missing = [name for name in hooks if f"## `{name}`" not in page]
    assert not missing, f"hooks without a section in docs/reference/hooks.md: {missing}"


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of ``text``: rows of cells, header first, rule row dropped."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= set("-: ") for cell in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def gate_rows() -> dict[tuple[str, str], dict[str, str]]:
    """The rows of the metrics pages' tables with suite, metric and paper columns."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for name in sorted(set(METRIC_PAGES.values())):
        for header, *body in tables(read(DOCS / "reference" / name)):
            if not {"suite", "metric", "paper"} <= set(header):
                continue
            for cells in body:
                row = dict(zip(header, cells, strict=True))
                key = (row["suite"].strip("`"), row["metric"].strip("`"))
                assert key not in rows, f"{key} has two rows in the metrics pages"
                rows[key] = row | {"page": name}
    return rows


CITATION = re.compile(
    r"^(?P<paper>TRIAGE|BAGEN|CostBench) (?:§\d+(?:\.\d+)*|App\. [A-G](?:\.\d+)*)"
)


def test_every_gated_metric_has_a_row_with_its_paper_section() -> None:
    rows = gate_rows()
    for suite, specs in suite_metrics().items():
        for spec in specs:
            row = rows.get((suite, spec.name))
            assert row is not None, (
                f"gated metric {suite}/{spec.name} has no row (suite, metric, better, default "
                f"tolerance, paper) in docs/reference/{METRIC_PAGES[suite]}"
            )
            assert row["page"] == METRIC_PAGES[suite]
            assert row["better"] == spec.direction, (suite, spec.name)
            assert float(row["default tolerance"]) == spec.tolerance, (suite, spec.name)
            cited = CITATION.match(row["paper"])
            assert cited, f"{suite}/{spec.name}: no paper section in {row['paper']!r}"
            assert cited.group("paper") == SUITE_PAPER[suite]
    gated = {(suite, spec.name) for suite, specs in suite_metrics().items() for spec in specs}
    assert set(rows) == gated, f"rows for metrics that do not gate: {set(rows) - gated}"


def test_tolerances_row_lists_exactly_the_gated_metrics() -> None:
    page = read(DOCS / "reference" / "options.md")
    row = next(line for line in page.splitlines() if line.startswith("| `budget_tolerances` |"))
    allowed = row[row.index("Only gated metrics are allowed") :].split(";")[0]
    gated = {spec.name for specs in suite_metrics().values() for spec in specs}
    assert set(re.findall(r"`(\w+)`", allowed)) == gated


def paper_text(name: str) -> str:
    for path in sorted(PAPERS.glob("*.txt")):
        text = read(path).replace("\\", "")  # one copy escapes every punctuation mark
        if PAPER_TITLES[name] in text[:3000]:
            return text
    pytest.skip(f"the {name} paper is not in {PAPERS} (set BUDGET_PAPERS_DIR)")


def section_exists(text: str, section: str) -> bool:
    if re.fullmatch(r"[A-G]", section):  # an appendix: "Appendix E ..." or "### E. ..."
        pattern = rf"^(?:#+ *)?(?:Appendix *{section}(?![a-z])|#* *{section}\. )"
    else:
        pattern = rf"^(?:#+ *)?(?:Appendix *)?{re.escape(section)}\.? *[A-Za-z(]"
    return re.search(pattern, text, re.M) is not None


def test_cited_sections_and_equations_exist_in_the_papers() -> None:
    """Every section, appendix and equation the metrics pages cite is in that paper."""
    citations: list[tuple[str, str]] = [
        (row["paper"].split()[0], row["paper"]) for row in gate_rows().values()
    ]
    for name in set(METRIC_PAGES.values()):
        for line in re.findall(r"^Source: (.*)$", read(DOCS / "reference" / name), re.M):
            citations.append((line.split()[0], line))
    assert citations
    for paper, text in citations:
        source = paper_text(paper)
        sections = re.findall(r"§(\d+(?:\.\d+)*)", text)
        sections += re.findall(r"App\. ([A-G](?:\.\d+)*)", text)
        sections += re.findall(r"App\. [A-G](?:\.\d+)*-([A-G](?:\.\d+)*)", text)
        assert sections, text
        for section in sections:
            assert section_exists(source, section), f"{paper} has no section {section}: {text}"
        for first, last in re.findall(r"eq\. (\d+)(?:-(\d+))?", text):
            for number in range(int(first), int(last or first) + 1):
                assert f"({number})" in source, f"{paper} has no equation {number}: {text}"


def documented(key: str, page: str) -> bool:
    """``key`` is named on the page, or falls in a range like `x_bin0` .. `x_bin4`."""
    if f"`{key}`" in page:
        return True
    ranged = re.fullmatch(r"(.*\D)(\d+)", key)
    if not ranged:
        return False
    stem, index = ranged.group(1), int(ranged.group(2))
    for low, high in re.findall(rf"`{re.escape(stem)}(\d+)` \.\. `{re.escape(stem)}(\d+)`", page):
        if int(low) <= index <= int(high):
            return True
    return False


def suite_score_keys() -> dict[str, set[str]]:
    """The keys of each suite's ``scores`` object, produced by its scoring functions."""
    import anyio

    from pytest_budget.awareness import ProbeRecord, parse_estimate, score_probes
    from pytest_budget.planning import (
        OracleToolAgent,
        generate_queries,
        run_episode,
        score_episodes,
    )
    from pytest_budget.triage import Baseline, Item, parse_plan, score_plan
    from pytest_budget.triage._resolve import summarize_resolve

    items = [Item(id="a", text="1 + 1"), Item(id="b", text="?", unsolvable=True)]
    truth = {"a": Baseline(solved=True, tokens=10), "b": Baseline(solved=False, tokens=10)}
    plan = parse_plan('{"plan": [{"id": "a", "tokens": 10}]}', ["a", "b"])
    triage = score_plan(plan, items, truth, 10, seed=1).as_scores()
    resolve = summarize_resolve([10], [8], [True], [True]).as_scores()
    estimate = parse_estimate("<answer>[3, 5]</answer>")
    probe = ProbeRecord("r", k=1, T=2, used=5, total=9, budget=10, success=True,
                        feasible=True, estimate=estimate)  # fmt: skip
    awareness = score_probes([probe])
    query = generate_queries("dining", 1)[0]
    episode = anyio.run(run_episode, query, 1, "static", 0, OracleToolAgent())
    planning = score_episodes([episode])
    from pytest_budget.awareness.online import reference_online_agent, run_online_cell

    online = anyio.run(
        lambda: run_online_cell(
            "sokoban-6x6", reference_online_agent("linear-visible", 1), n=2, seed=1
        )
    ).scores
    return {"triage": set(triage), "triage-resolve": set(resolve),
            "awareness": set(awareness), "planning": set(planning),
            "awareness-online": set(online)}  # fmt: skip


def test_every_score_key_is_on_its_metrics_page() -> None:
    for suite, keys in suite_score_keys().items():
        assert keys, suite
        page = read(DOCS / "reference" / METRIC_PAGES[suite])
        missing = sorted(key for key in keys if not documented(key, page))
        assert not missing, f"{suite} scores not in docs/reference/{METRIC_PAGES[suite]}: {missing}"


# --------------------------------------------------------------------------- links

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def test_relative_links_point_to_files_and_headings() -> None:
    broken = []
    for path in markdown_files():
        for target in LINK.findall(prose(read(path))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            goal = (path.parent / file_part).resolve() if file_part else path
            if not goal.exists():
                broken.append(f"{rel(path)}: {target} (no such file)")
            elif anchor and (goal.suffix != ".md" or anchor not in anchors(goal)):
                broken.append(f"{rel(path)}: {target} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_slugs_follow_github() -> None:
    assert slug("Why eta can be negative and what happens at alpha = 1") == (
        "why-eta-can-be-negative-and-what-happens-at-alpha--1"
    )
    assert slug("Every key of a cell's `scores`") == "every-key-of-a-cells-scores"
    assert slug("Feasibility (BAGEN §3.3, eq. 2 and 3; §5.3)") == (
        "feasibility-bagen-33-eq-2-and-3-53"
    )
    assert slug("Coding-agent logs: mini-swe-agent and OpenAI chat") == (
        "coding-agent-logs-mini-swe-agent-and-openai-chat"
    )


# --------------------------------------------------------------------------- examples


def json_values(text: str) -> list[Any]:
    """Every JSON value in ``text``, one after another (a JSON file, JSONL, or a stream)."""
    decoder = json.JSONDecoder()
    values, index = [], 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            return values
        value, index = decoder.raw_decode(text, index)
        values.append(value)


def test_example_files_parse_and_are_run_by_a_test() -> None:
    tests = "".join(read(path) for path in sorted(TESTS.glob("test_docs_*.py")))
    index = read(DOCS / "index.md")
    files = sorted(p for p in EXAMPLES.iterdir() if p.is_file())
    assert len(files) >= 17
    for path in files:
        text = read(path)
        if path.suffix == ".py":
            compile(text, str(path), "exec")
        elif path.suffix == ".jsonl":
            for line in text.splitlines():
                assert line.strip(), f"{path.name}: blank line"
                json.loads(line)
        elif path.suffix == ".json":
            json.loads(text)
        else:
            pytest.fail(f"{path.name}: unknown example kind")
        assert f'"{path.name}"' in tests, f"no test in tests/test_docs_*.py runs {path.name}"
        assert f"(examples/{path.name})" in index, f"docs/index.md does not list {path.name}"


def test_json_blocks_parse() -> None:
    for path in markdown_files():
        for block in blocks(path):
            if block.lang in ("json", "jsonl") and not (block.marker or "").startswith("fragment"):
                assert json_values(block.body), f"{block.page}:{block.line}: empty"


# --------------------------------------------------------------------------- commands


def command_pages() -> list[Path]:
    wanted = ("tutorial", "how-to", "explanation")
    return [
        p
        for p in markdown_files()
        if p.parent.name in wanted or p.name in ("index.md", "README.md")
    ]


def shell_commands(block: Block) -> Iterator[str]:
    """The ``pytest`` commands of a bash block (or of a GitHub Actions ``run:`` step)."""
    text = block.body.replace("\\\n", " ")
    if block.lang == "yaml":
        folded = re.compile(r"run: >\n((?: {8,}\S.*\n)+)")  # a folded step: one command
        text = folded.sub(lambda m: "run: " + " ".join(m.group(1).split()) + "\n", text)
        text = "\n".join(line.split("run: ", 1)[1] for line in text.splitlines() if "run: " in line)
    for line in text.splitlines():
        for part in line.split("&&"):
            part = part.strip()
            if part.startswith("pytest ") and "..." not in part:
                yield part


#: Pages whose commands need a project of their own: their tests build it and run them.
OWN_PROJECT_PAGES = {
    "add-a-suite.md",  # tests/test_docs_add_a_suite.py writes the page's files and runs them
}


def documented_commands() -> list[tuple[str, str]]:
    found = []
    for path in command_pages():
        if path.name in OWN_PROJECT_PAGES:
            continue
        for block in blocks(path):
            if block.lang in ("bash", "sh", "console", "yaml"):
                found += [(f"{block.page}:{block.line}", cmd) for cmd in shell_commands(block)]
        for span in re.findall(r"`(pytest [^`]+)`", FENCE.sub("", read(path))):
            span = " ".join(span.split())
            if "..." not in span:
                found.append((rel(path), span))
    return found


COMMANDS = list(dict.fromkeys(documented_commands()))
#: Stand-ins for a user's own files that the docs name (their format, our content).
STAND_INS = {"--budget-rollouts": "rollouts_example.jsonl", "--budget-pool": "pool_example.jsonl",
             "--budget-queries": "queries_example.json"}  # fmt: skip
# Files in the published log formats (tests/data/logs/README.md) for the flags that read them.
LOG_DATA = Path(__file__).parent / "data" / "logs"
LOG_STAND_INS = {
    "--budget-swe-report": LOG_DATA / "openai__gpt-5.2.gpt52_instant.json",
    "--budget-logged-estimates": LOG_DATA / "sokoban_api_eval_estimation.json",
}


def prepare(pytester: pytest.Pytester, args: list[str]) -> None:
    for path in EXAMPLES.iterdir():
        shutil.copy(path, pytester.path / path.name)
    for arg in args:
        flag, _, value = arg.partition("=")
        if flag in STAND_INS and not (pytester.path / value).exists():
            (pytester.path / value).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(EXAMPLES / STAND_INS[flag], pytester.path / value)
        if flag in LOG_STAND_INS and not (pytester.path / value).exists():
            shutil.copy(LOG_STAND_INS[flag], pytester.path / value)


def test_documented_commands_are_found() -> None:
    pages = {where.split(":")[0] for where, _ in COMMANDS}
    assert {"tutorial/first-run.md", "how-to/replay-logged-rollouts.md", "README.md"} <= pages
    assert len(COMMANDS) >= 50


def test_documented_commands_are_accepted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct command is parsed by pytest with the plugin, and configured (option
    values checked, files loaded and validated) unless it needs a service of its own: a
    model endpoint or a retrieval server, which are parsed and checked without contacting
    them. One directory, holding the example files, serves every command."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-docs-test")
    first_seen = {command: where for where, command in reversed(COMMANDS)}
    # --assert=plain: no scan of every installed distribution's files for modules to
    # rewrite (~30% of a configure here); parsing and configuring never assert.
    quick = (*FAST, "-p", "no:benchmark", "--assert=plain")
    failures = []
    for command, where in first_seen.items():
        args = shlex.split(command, comments=True)[1:]
        prepare(pytester, args)
        service = r"--budget-(agent=\S*(openai|anthropic):|search-url=)"
        try:
            if any(re.match(service, arg) for arg in args):
                config = pytester.parseconfig(*quick, *args)
                options = parse_options(
                    config.getoption,
                    config.getini,
                    rootdir=config.rootpath,
                    invocation_dir=pytester.path,
                )
                assert options.agents or options.of(AwarenessOptions).search_url
            else:
                config = pytester.parseconfigure(*quick, *args)
                assert config.getoption("budget_suite") or "--budget-suite" not in command
        except (Exception, SystemExit) as exc:  # a usage error is a SystemExit or UsageError
            failures.append(f"{where}: {command}: {type(exc).__name__}: {exc}")
    assert not failures, "documented commands the plugin refuses:\n" + "\n".join(failures)


# --------------------------------------------------------------------------- ini blocks


def test_ini_and_toml_blocks_configure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ini/toml block of the docs is a valid configuration with registered keys."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")  # a role agent needs a key to exist
    registered = set(re.findall(r"^\s+(budget_[a-z0-9_]+) \(", help_text(pytester), re.M))
    checked = 0
    for path in markdown_files():
        for block in blocks(path):
            if block.lang not in ("ini", "toml"):
                continue
            keys = set(re.findall(r"^(budget_\w+)\s*=", block.body, re.M))
            assert keys <= registered, f"{block.page}:{block.line}: unknown {keys - registered}"
            for name in ("pytest.ini", "pyproject.toml"):
                (pytester.path / name).unlink(missing_ok=True)
            target = "pytest.ini" if block.lang == "ini" else "pyproject.toml"
            (pytester.path / target).write_text(block.body, encoding="utf-8")
            config = pytester.parseconfigure(*FAST)
            for key in keys:
                assert config.getini(key), f"{block.page}:{block.line}: {key} not read"
            checked += 1
    assert checked >= 8


# --------------------------------------------------------------------------- python blocks


def python_pages() -> list[Path]:
    pages = sorted((DOCS / "tutorial").glob("*.md")) + sorted((DOCS / "how-to").glob("*.md"))
    return [p for p in pages if rel(p) not in ELSEWHERE]


def imports(tree: ast.Module) -> set[tuple[str, str]]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found |= {(node.module or "", alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(alias.name, "") for alias in node.names}
    return found


def part_of(block: str, example: str) -> bool:
    """The block's lines appear in the example in order, and its imports are the example's."""
    tree = ast.parse(block)
    import_lines = {
        n
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    if not imports(tree) <= imports(ast.parse(example)):
        return False
    wanted = [
        line.strip()
        for number, line in enumerate(block.splitlines(), 1)
        if line.strip() and number not in import_lines
    ]
    lines = iter(line.strip() for line in example.splitlines())
    return all(any(line == have for have in lines) for line in wanted)


ALL_TESTS = "\n".join(read(path) for path in sorted(TESTS.glob("test_*.py")))


def test_python_blocks_of_tutorials_and_how_tos_are_run() -> None:
    """Each Python block is part of a docs/examples file, run by a named test, or a marked
    fragment; each bash block with a Python command names the test that runs it."""
    examples = {p.name: read(p) for p in EXAMPLES.glob("*.py")}
    tests = {
        node.name: ast.get_source_segment(text, node) or ""
        for path in sorted(TESTS.glob("test_docs_*.py"))
        for text in [read(path)]
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef)
    }
    unclassified = []
    for path in python_pages():
        for block in blocks(path):
            where = f"{block.page}:{block.line}"
            marker = block.marker or ""
            # a skip reason may name a test file; the other markers name test functions
            named = [] if marker.startswith("skip") else re.findall(r"\btest_\w+", marker)
            if block.lang == "bash":
                # tests/test_docs_run.py runs every bash block; one it skips names the test
                # that runs it instead (checked there)
                for name in named:
                    assert name in tests or f"def {name}(" in ALL_TESTS, where
                continue
            if block.lang != "python":
                continue
            code = textwrap.dedent(block.body)  # a snippet from inside a function is indented
            compile(code, where, "exec")
            if marker.startswith("fragment"):
                assert re.match(r"fragment: \S", marker), f"{where}: a fragment needs a reason"
            elif marker.startswith("file ") or marker == "python":
                continue  # saved or run as the page says, by tests/test_docs_run.py
            elif marker:
                assert marker in tests, f"{where}: no test named {marker}"
                assert block.page.split("/")[-1] in tests[marker], (
                    f"{where}: {marker} does not read {block.page}"
                )
            elif not any(part_of(code, text) for text in examples.values()):
                unclassified.append(where)
    assert not unclassified, (
        "Python blocks neither in a docs/examples file nor marked, or bash blocks running "
        "Python without a marker "
        "<!-- docs-test: TEST_NAME --> or <!-- docs-test: fragment: REASON -->: "
        f"{unclassified}"
    )


def test_part_of_needs_order_and_imports() -> None:
    example = "import os\nfrom a import b, c\n\nx = 1\n\ny = 2\n"
    assert part_of("from a import c\nx = 1\ny = 2\n", example)
    assert not part_of("y = 2\nx = 1\n", example)  # order
    assert not part_of("from a import d\nx = 1\n", example)  # an import the example lacks
    assert not part_of("x = 3\n", example)


# --------------------------------------------------------------------------- tutorials


def page_blocks(page: str) -> list[Block]:
    return blocks(DOCS / page)


def output_after(page: str, block: Block) -> list[str]:
    """The lines of the ```text block that follows ``block``."""
    found = page_blocks(page)
    later = [b for b in found if b.line > block.line and b.lang == "text"]
    return later[0].body.splitlines()


def pytest_args(block: Block, index: int = 0) -> list[str]:
    return shlex.split(list(shell_commands(block))[index], comments=True)[1:]


def bash_block(page: str, needle: str) -> Block:
    (found,) = [b for b in page_blocks(page) if b.lang == "bash" and needle in b.body]
    return found


def table_lines(lines: list[str]) -> list[str]:
    """The rows, header and summary lines of a shown score table (not elisions)."""
    return [line for line in lines if line.strip() and not line.startswith(("...", "="))]


def python_snippet(block: Block) -> str:
    """The code of ``python -c "..."`` in a bash block."""
    tail = block.body[block.body.index("python -c") :]
    return shlex.split(tail)[2]


def run_snippet(pytester: pytest.Pytester, code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=pytester.path, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_ten_line_agent_of_the_first_run_tutorial(pytester: pytest.Pytester) -> None:
    """first-run.md, step 6, and the README: the ten-line planner, as shown, scored."""
    page = "tutorial/first-run.md"
    example = read(EXAMPLES / "conftest_ten_line_agent_example.py")
    code = example.split('"""', 2)[2].lstrip("\n")  # the file without its docstring
    (shown,) = [b for b in page_blocks(page) if b.lang == "python"]
    assert shown.body == code
    lines = [
        line for line in code.splitlines() if line.strip() and not line.strip().startswith("#")
    ]
    assert len(lines) == 10
    readme = next(b for b in blocks(ROOT / "README.md") if b.lang == "python")
    assert ast.dump(ast.parse(readme.body)) == ast.dump(ast.parse(code))  # the same program

    pytester.makeconftest(example)
    command = bash_block(page, "--budget-gate=off")
    result = run(pytester, *pytest_args(command), "--budget-report=report.json")
    result.assert_outcomes(passed=4)
    rows = table_lines(output_after(page, command))
    assert len(rows) == 7 and set(rows) <= set(result.outlines)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cell = next(c for c in report["cells"] if c["cell"] == "arith-u0-a0.5-A")
    assert cell["agent"] == "my-planner" and cell["budget"] == 3884
    assert cell["planned_ids"] == [f"arith-00{i}" for i in range(5)]
    scores = cell["scores"]
    assert (scores["v_u"], scores["v_e"], scores["v_oracle"]) == (4.0, 2.0, 20.0)
    assert scores["v_random"] == pytest.approx(12.08)
    assert scores["eta_u"] == pytest.approx((4 - 12.08) / (20 - 12.08))
    text = " ".join(read(DOCS / page).split())
    assert "eta_u = (4 - 12.08) / (20 - 12.08) = -1.020" in text
    assert "3884 // 30 = 129 tokens" in text and 3884 // 30 == 129


FIRST_AGENT = "tutorial/first-agent.md"


def test_first_agent_tutorial_fixture_and_hook(pytester: pytest.Pytester) -> None:
    """first-agent.md, steps 1-2: the fixture planner, the missing baseline, the hook."""
    example = read(EXAMPLES / "conftest_planner_example.py")
    pytester.makeconftest(example)
    command = bash_block(FIRST_AGENT, "pytest --budget-suite=triage --budget-gate=off\n")
    result = run(pytester, *pytest_args(command))
    result.assert_outcomes(passed=16)
    rows = table_lines(output_after(FIRST_AGENT, command))
    assert len(rows) == 5 and set(rows) <= set(result.outlines)
    # the score table's rows (the score-against-spend table's row starts with the agent)
    table = [
        line
        for line in result.outlines
        if "shortest-first" in line and not line.startswith("shortest-first")
    ]
    assert len(table) == 16

    gated = run(pytester, "--budget-suite=triage")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    assert " 16 no baseline in " in gated.outlines[-1]
    shown = next(b for b in page_blocks(FIRST_AGENT) if "no stored baseline" in b.body).body
    expected = shown.strip().replace(".../", f"{pytester.path}/")
    # The commands carry the run's own words: FAST and pytester's --basetemp here (a
    # user's plain run has neither).
    printed = [
        re.sub(r" --basetemp=\S+", "", line).replace(
            " -p no:hypothesispytest -p no:unraisableexception", ""
        )
        for line in gated.outlines
    ]
    assert expected in printed

    # Step 2: the fixture at the bottom replaced by the hook, `import pytest` dropped.
    hook = [b for b in page_blocks(FIRST_AGENT) if b.lang == "python"][1]
    assert hook.marker == "test_first_agent_tutorial_fixture_and_hook"
    head = example[: example.index("@pytest.fixture")].replace("import pytest\n", "")
    pytester.makeconftest(head + hook.body)
    hooked = run(pytester, *pytest_args(command))
    hooked.assert_outcomes(passed=16)
    assert [
        line
        for line in hooked.outlines
        if "shortest-first" in line and not line.startswith("shortest-first")
    ] == table


def test_first_agent_tutorial_raw_text(pytester: pytest.Pytester) -> None:
    """first-agent.md, step 3: raw model text, repaired, and the repairs in the report."""
    pytester.makeconftest(read(EXAMPLES / "conftest_hook_planner_example.py"))
    command = bash_block(FIRST_AGENT, "--budget-report=report.json")
    result = run(pytester, *pytest_args(command))
    result.assert_outcomes(passed=4)
    rows = table_lines(output_after(FIRST_AGENT, command))
    assert len(rows) == 2 and set(rows) <= set(result.outlines)
    snippet = bash_block(FIRST_AGENT, "python -c")
    assert run_snippet(pytester, python_snippet(snippet)) == output_after(FIRST_AGENT, snippet)


def test_converting_your_own_logs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replay-logged-rollouts.md, step 2: the conversion script on logs in its layout."""
    page = "how-to/replay-logged-rollouts.md"
    (script,) = [b for b in page_blocks(page) if b.marker == "test_converting_your_own_logs"]
    runs = pytester.path / "runs"
    runs.mkdir()

    def call(prompt: int, completion: int, n: int) -> dict[str, Any]:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        return {"usage": usage, "request": f"step {n}?", "response": f"did {n}"}

    # Each prompt re-sends the history: fresh input = prompt - (previous prompt + completion).
    (runs / "a.json").write_text(json.dumps({"task_id": "a", "resolved": True, "calls": [
        call(300, 50, 1), call(420, 40, 2), call(520, 60, 3)]}), encoding="utf-8")  # fmt: skip
    (runs / "b.json").write_text(json.dumps({"task_id": "b", "resolved": False, "calls": [
        call(900, 700, 1), call(1700, 900, 2)]}), encoding="utf-8")  # fmt: skip
    monkeypatch.chdir(pytester.path)
    exec(compile(script.body, page, "exec"), {})
    lines = (pytester.path / "logs.jsonl").read_text(encoding="utf-8").splitlines()
    rollouts = [json.loads(line) for line in lines]
    assert [[t["usage"]["tokens"] for t in r["turns"]] for r in rollouts] == [
        [300 + 50, (420 - 350) + 40, (520 - 460) + 60], [900 + 700, (1700 - 1600) + 900],
    ]  # fmt: skip
    assert rollouts[0]["turns"][1] == {"usage": {"tokens": 110}, "observation": "step 2?",
                                       "action": "did 2"}  # fmt: skip
    command = bash_block(page, "--budget-rollouts=logs.jsonl")
    result = run(pytester, *pytest_args(command), "--budget-report=report.json")
    result.assert_outcomes(passed=6)  # the six reference estimators on env coder-v3
    result.stdout.fnmatch_lines(["coder-v3: 2 rollouts by logged, 1 succeeded, 1 feasible*"])
