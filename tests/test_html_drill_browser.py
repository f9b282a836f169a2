"""The drill-down in a real headless Chromium: from a score to the samples behind it.

One real run of the awareness suite with an estimator (a fixture override in the run's
conftest) whose replies are partly malformed, carry markup meant to run
(``<script>``, an ``onerror`` handler) and credentials (an ``Authorization`` header, the
``OPENAI_API_KEY`` value of the run's environment).  Its ``--budget-html`` page is opened
from ``file://`` with the network cut off; the test filters a cell's probes to
``invalid``, opens one and reads its raw output, checks that the markup stayed text and
never ran, and that no credential reached the page or the JSON report.  The session's
shared run of every suite (tests/html_runs.py) checks the layout: every score table fits
the window and its header sticks to the top while the table scrolls.

Driven like ``test_html_browser.py``: Playwright with Debian's chromium
(``executable_path``), no browser download; without either the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.html_runs import SEED_42, shared_run
from tests.test_html_browser import _keep, _playwright, _Visit

ENV_KEY = "sk-envkey-0123456789abcdefXYZ"
HEADER_TOKEN = "sk-hdr-abcdefghijklmnop0123"
XSS = '<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">'

CONFTEST = f"""
import pytest


class HostileEstimator:
    name = "hostile"

    def estimate(self, probe):
        if probe.k % 2 == 1:
            # malformed (no answer tag), with markup and credentials in it
            return ({("I cannot answer " + XSS + " Authorization: Bearer " + HEADER_TOKEN)!r}
                    + " key={ENV_KEY} " + probe.rollout_id)
        return "<think>ok</think><answer>[0, 4000]</answer>"


@pytest.fixture
def budget_estimator():
    return HostileEstimator()
"""

AWARENESS_ARGS = (
    "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-q", "--budget-gate=off", "--budget-suite=awareness",
    "--budget-env=sokoban-6x6", "--budget-rollout-count=6", "--budget-report=r.json",
    "--budget-html=page.html",
)  # fmt: skip


def _run(folder: Path, args: tuple[str, ...]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["OPENAI_API_KEY"] = ENV_KEY
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _playwright()
    folder = tmp_path_factory.mktemp("drill")
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    _run(folder, AWARENESS_ARGS)
    return folder


def test_filter_to_invalid_probes_and_read_one(
    browser: Any, hostile_run: Path, tmp_path: Path
) -> None:
    page_path = hostile_run / "page.html"
    visit = _Visit(browser, page_path, 1400)
    page = visit.page
    try:
        button = page.locator("section[data-suite=awareness] button.samples")
        assert button.count() == 1  # one cell: sokoban-6x6 / hostile
        button.click()
        panel = page.locator(".drill")
        panel.locator(".vrow").first.wait_for()
        shot = tmp_path / "drill-opened.png"
        panel.screenshot(path=str(shot))
        _keep(shot)
        # every probe is listed (the list draws only the rows in view)
        total = int(panel.get_attribute("data-total") or 0)
        outcome = panel.locator("select.outcome")
        options = outcome.locator("option").all_text_contents()
        invalid = next(text for text in options if text.startswith("invalid ("))
        count = int(invalid.split("(")[1].rstrip(")"))
        assert 0 < count < total
        outcome.select_option("invalid")
        assert panel.locator(".shown").text_content() == f"{count} shown"
        rows = panel.locator(".vrow")
        assert all("invalid" in rows.nth(i).text_content() for i in range(min(rows.count(), 8)))
        rows.first.click()
        raw = panel.locator(".sample-detail .raw pre")
        raw.wait_for()
        text = raw.text_content() or ""
        assert text.startswith("I cannot answer <script>window.__xss = 1</script>")
        assert "onerror" in text  # shown as text ...
        assert page.evaluate("window.__xss") is None  # ... never run
        assert page.locator(".sample-detail script, .sample-detail img").count() == 0
        detail = panel.locator(".sample-detail").text_content() or ""
        assert "invalid becausemissing <answer>...</answer> tag" in detail
        shot = tmp_path / "drill-invalid-probe.png"
        panel.screenshot(path=str(shot))
        _keep(shot)
        # sort by score, then search
        outcome.select_option("")
        panel.locator("select.sort").select_option("desc")
        first = panel.locator(".vrow").first.locator(".ssc").text_content()
        assert first is not None and first != "\u2013"
        panel.locator("input.search").fill("#3")
        page.wait_for_function(
            f"document.querySelector('.drill .shown').textContent !== '{total} shown'"
        )
        ids = [panel.locator(".vrow .sid").nth(i).text_content() for i in range(2)]
        assert all(i and i.endswith("#3") for i in ids), ids
        assert visit.problems == []
        assert visit.requests == [page_path.as_uri()]
    finally:
        visit.close()


def test_no_credential_reaches_the_page_or_the_report(hostile_run: Path) -> None:
    from pytest_budget.report._html.drill_data import unpack

    page = (hostile_run / "page.html").read_text(encoding="utf-8")
    report = (hostile_run / "r.json").read_text(encoding="utf-8")
    blocks = [unpack(text) for text in re.findall(r'class="sample-block" id="\w+">([^<]*)<', page)]
    assert len(blocks) == 2  # the cell's probes and its rollout prefixes
    texts = [str(block) for block in blocks]
    assert any("Authorization: Bearer ***" in text for text in texts)
    for text in [page, report, *texts]:
        assert ENV_KEY not in text and HEADER_TOKEN not in text
    # the markup is in the data as text (escaped by JSON), never as page markup
    assert "<script>window.__xss" not in page
    assert any("<script>window.__xss" in text for text in texts)


@pytest.fixture(scope="module")
def all_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _playwright()
    folder = tmp_path_factory.mktemp("drill-all")
    # the session's shared run of every suite (the one test_html_browser.py opens)
    shared = shared_run(tmp_path_factory, SEED_42)
    shutil.copy(shared / "r42.json", folder / "all.json")
    shutil.copy(shared / "page.html", folder / "all.html")
    # The "new run": the same run with two planning episodes regressed by known amounts
    # (another seed would draw other queries, which the page rightly does not compare).
    from pytest_budget.report._document import load_report_json

    report = load_report_json(folder / "all.json")  # samples decoded
    planning = [c for c in report["cells"] if c["suite"] == "planning"]
    episodes = [s for s in planning[-1]["samples"] if s["score"] is not None][:2]
    for episode, drop in zip(episodes, (0.7, 0.2), strict=True):
        episode["score"] = round(episode["score"] - drop, 6)
        episode["tags"] = ["wrong answer"]
    (folder / "all7.json").write_text(json.dumps(report), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_budget", "report", "render", "all.json", "all7.json",
         "-o", "compare.html", "--compare"],
        cwd=folder, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


def test_tables_fit_the_window_with_sticky_headers(browser: Any, all_run: Path) -> None:
    visit = _Visit(browser, all_run / "all.html", 1280)
    page = visit.page
    try:
        width = page.evaluate("document.documentElement.clientWidth")
        tables = page.locator("table.scores")
        assert tables.count() == 3
        for index in range(3):
            box = tables.nth(index).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
        # the planning table's last column is on screen (it was cut off in a 34rem box)
        planning = page.locator("section[data-suite=planning] table.scores")
        last = planning.locator("thead th").last
        last_box = last.bounding_box()
        assert last_box is not None and last_box["x"] + last_box["width"] <= width + 0.5
        assert planning.evaluate("t => getComputedStyle(t.parentElement).overflowY") == "visible"
        # scrolled into the middle of the table, its header sits at the window's top
        assert planning.locator("tbody tr").count() == 32  # 2 tasks x 4 scenarios x 4 agents
        page.set_viewport_size({"width": 1280, "height": 300})  # room to scroll past the top
        planning.evaluate("t => window.scrollTo(0, t.getBoundingClientRect().top + scrollY + 150)")
        head = planning.locator("thead th").first.bounding_box()
        assert head is not None and abs(head["y"]) < 1.0
        # every suite opens its samples: triage items, planning episodes
        for suite, needle in (("triage", "regime U"), ("planning", "ground-truth path")):
            section = page.locator(f"section[data-suite={suite}]")
            section.locator("button.samples").first.click()
            section.locator(".drill .vrow").first.click()
            assert needle in (section.locator(".sample-detail").text_content() or "")
        assert visit.problems == []
    finally:
        visit.close()


def test_compare_shows_the_samples_that_changed_most_side_by_side(
    browser: Any, all_run: Path, tmp_path: Path
) -> None:
    visit = _Visit(browser, all_run / "compare.html", 1600)
    page = visit.page
    try:
        section = page.locator("section[data-suite=planning]")
        rows = section.locator("table.changed tbody tr")
        assert rows.count() == 2
        assert rows.locator("td:nth-child(7)").all_text_contents() == ["-0.700", "-0.200"]
        # the other suites' samples are unchanged, and said so
        assert "No sample of a matched cell changed" in (
            page.locator("section[data-suite=triage]").text_content() or ""
        )
        rows.first.locator("button.pair-open").click()
        view = section.locator(".pair-view")
        view.wait_for()
        sides = view.locator(".side")
        assert sides.count() == 2
        heads = sides.locator("h4").all_text_contents()
        assert heads[0].startswith("baseline: ") and heads[1].startswith("new run: ")
        assert "ground-truth path" in (sides.nth(1).text_content() or "")
        assert "wrong answer" in heads[1] and "wrong answer" not in heads[0]
        boxes = [sides.nth(i).bounding_box() for i in range(2)]
        assert boxes[0] and boxes[1] and boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"]
        shot = tmp_path / "compare-changed-pair.png"
        view.screenshot(path=str(shot))
        _keep(shot)
        assert visit.problems == []
    finally:
        visit.close()
