"""The HTML report in a real headless browser: Debian's chromium driven by Playwright.

Two real small runs (all three suites, two seeds) write their JSON reports; the first
also writes its page with ``--budget-html``, and ``budget-report render --compare`` puts
the two side by side.  Each page is opened from ``file://`` with the network cut off:
it must load without a console error, a page error or any request that is not the file
itself or an inline ``data:`` image; every figure must be a decoded image with a
rendered size; the score tables must be there.  Screenshots go to a temporary folder
(and to ``$PYTEST_BUDGET_SCREENSHOTS`` when set, for a person to look at).

Playwright is used with ``executable_path`` pointing at the system chromium, so no
browser is downloaded; ``.ci/run`` installs chromium with apt-get when it can.  Without
chromium or Playwright the tests skip and say which is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.html_runs import RUN_ARGS, SEED_42, run_env, shared_run

CHROMIUM = Path("/usr/bin/chromium")

EXPECTED_FIGURES = {
    "triage": ["triage-eta", "triage-alpha", "triage-detection"],
    "awareness": [
        "awareness-misses", "awareness-late", "awareness-earlystop", "awareness-width",
        "awareness-linear",
    ],
    "planning": ["planning-length", "planning-blocking", "planning-costgap", "planning-failures"],
}  # fmt: skip
ALL_FIGURES = [key for keys in EXPECTED_FIGURES.values() for key in keys]
#: Score against spend, one per suite section (the run page only; the comparison page has
#: the agents' moves as a table).
FRONTIER_FIGURES = [f"{suite}-frontier" for suite in EXPECTED_FIGURES]


#: Set by .ci/run, which installs chromium with apt-get while the tests start: the path of
#: a file it creates when apt-get is done (installed or not).
CHROMIUM_INSTALL_DONE = "BUDGET_CHROMIUM_INSTALL_DONE"
_CHROMIUM_INSTALL_WAIT = 900.0  # s: apt-get's own timeouts end it well before this


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip('Playwright is not installed: pip install -e ".[dev]"')
    if not CHROMIUM.exists() and not os.environ.get(CHROMIUM_INSTALL_DONE):
        _no_chromium()
    return sync_playwright


def wait_for_chromium() -> None:
    """Wait for .ci/run's apt-get of chromium when it is still going, then skip if chromium
    is still missing."""
    done = os.environ.get(CHROMIUM_INSTALL_DONE)
    if done and not CHROMIUM.exists():
        deadline = time.monotonic() + _CHROMIUM_INSTALL_WAIT
        while not Path(done).exists():
            if time.monotonic() > deadline:
                pytest.fail(f"chromium's install ({CHROMIUM_INSTALL_DONE}={done}) did not end")
            time.sleep(0.5)
    if not CHROMIUM.exists():
        _no_chromium()


def _no_chromium() -> None:
    pytest.skip(
        f"Debian's chromium is not installed at {CHROMIUM} "
        "(.ci/run installs it with: apt-get install -y --no-install-recommends chromium)"
    )


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real runs (seeds 42 and 7): the --budget-html page and the comparison page.

    The seed-42 run is the session's shared one (tests/html_runs.py; the drill-down tests
    read it too); the seed-7 run is made here, meanwhile.
    """
    _playwright()
    folder = tmp_path_factory.mktemp("browser-runs")
    seven = subprocess.Popen(
        [sys.executable, "-m", "pytest", *RUN_ARGS, "--budget-seed=7", "--budget-report=r7.json"],
        cwd=folder, env=run_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        shared = shared_run(tmp_path_factory, SEED_42)
    finally:
        output, _ = seven.communicate(timeout=600)
    assert seven.returncode == 0, f"seed 7 run failed:\n{output[-3000:]}"
    shutil.copy(shared / "r42.json", folder / "r42.json")
    shutil.copy(shared / "page.html", folder / "page.html")
    render = subprocess.run(
        [sys.executable, "-m", "pytest_budget", "report", "render", "r42.json", "r7.json",
         "-o", "compare.html", "--compare"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert render.returncode == 0, render.stderr
    return {"page": folder / "page.html", "compare": folder / "compare.html"}


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


class _Visit:
    """A page opened from disk with every non-local request blocked and recorded."""

    def __init__(self, browser: Any, path: Path, width: int) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 1000})
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.goto(path.as_uri(), wait_until="load")

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            route.abort()

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def figure_sizes(self) -> dict[str, list[dict[str, float]]]:
        """Per data-figure key: each image's decoded and rendered size."""
        sizes: dict[str, list[dict[str, float]]] = {}
        for figure in self.page.query_selector_all("figure.chart"):
            key = figure.get_attribute("data-figure") or ""
            image = figure.query_selector("img")
            entry = {"natural": 0.0, "width": 0.0, "height": 0.0, "top": 0.0, "left": 0.0}
            if image is not None:
                entry["natural"] = float(image.evaluate("i => i.complete ? i.naturalWidth : 0"))
                box = image.bounding_box() or {}
                entry.update(
                    {
                        k: float(box.get(k2, 0.0))
                        for k, k2 in (
                            ("width", "width"),
                            ("height", "height"),
                            ("top", "y"),
                            ("left", "x"),
                        )
                    }
                )
            sizes.setdefault(key, []).append(entry)
        return sizes

    def close(self) -> None:
        self.context.close()


def _keep(path: Path) -> None:
    """Copy a screenshot to $PYTEST_BUDGET_SCREENSHOTS when a person wants to look."""
    target = os.environ.get("PYTEST_BUDGET_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


# `pages` before `browser`: the runs are made while .ci/run may still install chromium.
def test_report_page_in_chromium(pages: dict[str, Path], browser: Any, screenshots: Path) -> None:
    visit = _Visit(browser, pages["page"], 1280)
    try:
        assert visit.problems == []
        assert visit.requests == [pages["page"].as_uri()]
        sizes = visit.figure_sizes()
        assert sorted(sizes) == sorted(ALL_FIGURES + FRONTIER_FIGURES)
        for key, (entry,) in sizes.items():
            assert entry["natural"] > 0, f"{key}: image not decoded"
            assert entry["width"] > 300 and entry["height"] > 150, (key, entry)
        assert visit.page.locator("figure.chart.missing").count() == 0
        tables = visit.page.locator("table.scores")
        assert tables.count() == 3
        for index in range(3):
            assert tables.nth(index).locator("tbody tr").count() > 0
            assert tables.nth(index).is_visible()
        sections = visit.page.locator("section.suite")
        assert [sections.nth(i).get_attribute("data-suite") for i in range(3)] == [
            "triage", "awareness", "planning",
        ]  # fmt: skip
        # the frontier table beside each frontier figure: every agent, a place each
        frontier = visit.page.locator("table.frontier")
        assert frontier.count() == 3
        for index in range(3):
            rows = frontier.nth(index).locator("tbody tr")
            assert rows.count() >= 2 and frontier.nth(index).is_visible()
            places = {rows.nth(i).get_attribute("data-place") for i in range(rows.count())}
            assert "frontier" in places
        triage_rows = frontier.nth(0).locator("tbody tr")
        marks = {
            triage_rows.nth(i).get_attribute("data-agent"): triage_rows.nth(i).get_attribute(
                "data-place"
            )
            for i in range(triage_rows.count())
        }
        # the oracle writes the shortest plans and scores best: it dominates the others
        assert marks["oracle"] == "frontier"
        assert {place for agent, place in marks.items() if agent != "oracle"} == {"dominated"}
        shot = screenshots / "report-frontier-triage.png"
        visit.page.locator("div.frontier").nth(0).screenshot(path=str(shot))
        _keep(shot)
        # in-page links work without a network
        visit.page.click("nav a[href='#planning']")
        assert visit.page.evaluate("location.hash") == "#planning"
        full = screenshots / "report-full.png"
        visit.page.screenshot(path=str(full), full_page=True)
        _keep(full)
        for key in ALL_FIGURES:
            shot = screenshots / f"report-{key}.png"
            visit.page.locator(f"figure[data-figure='{key}']").screenshot(path=str(shot))
            _keep(shot)
        first_table = screenshots / "report-table-triage.png"
        tables.nth(0).screenshot(path=str(first_table))
        _keep(first_table)
    finally:
        visit.close()


def test_comparison_page_in_chromium(
    browser: Any, pages: dict[str, Path], screenshots: Path
) -> None:
    visit = _Visit(browser, pages["compare"], 1800)
    try:
        assert visit.problems == []
        assert visit.requests == [pages["compare"].as_uri()]
        sizes = visit.figure_sizes()
        assert sorted(sizes) == sorted(ALL_FIGURES)
        for key, (base, new) in sizes.items():
            assert base["natural"] > 0 and new["natural"] > 0, key
            assert base["width"] > 200 and new["width"] > 200, key
            # side by side: same row, baseline on the left
            assert abs(base["top"] - new["top"]) < 1.0, (key, base, new)
            assert base["left"] + base["width"] <= new["left"], (key, base, new)
        assert visit.page.locator("table.compare").count() == 3
        # each agent's move on both axes, per suite
        moves = visit.page.locator("table.frontier-moves")
        assert moves.count() == 3 and moves.nth(0).locator("tbody tr").count() >= 2
        # two seeds give different scores: some deltas are marked each way
        assert visit.page.locator("table.compare td.better span.d").count() > 0
        assert visit.page.locator("table.compare td.worse span.d").count() > 0
        full = screenshots / "compare-full.png"
        visit.page.screenshot(path=str(full), full_page=True)
        _keep(full)
        table = screenshots / "compare-table-triage.png"
        visit.page.locator("table.compare").nth(0).screenshot(path=str(table))
        _keep(table)
        pair = screenshots / "compare-pair-triage-eta.png"
        visit.page.locator("div.pair").nth(0).screenshot(path=str(pair))
        _keep(pair)
    finally:
        visit.close()
