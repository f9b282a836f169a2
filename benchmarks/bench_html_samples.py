"""How fast the drill-down page opens in Chromium, with the default run and with 50,000 samples.

    python benchmarks/bench_html_samples.py                  # runs the default suite first
    python benchmarks/bench_html_samples.py --report r.json  # reuse a run's JSON report

1. The default offline run, ``pytest --budget-suite=all --budget-report=... --budget-html=...``
   (reference agents, every cell's samples recorded): its page size, JSON report size and
   sample count.
2. A 50,000-sample report built from that run's cells (copies under new cell ids until
   the samples add up to exactly 50,000; every cell keeps its real samples), rendered with
   ``budget-report render``.
3. Each page opened in Debian's Chromium with Playwright (``executable_path``, no browser
   download, network cut off), ``REPEATS`` times: time from navigation to the ``load``
   event, then the time to open the largest cell's samples (click to the first row drawn),
   to filter it to one outcome and to search its text.

Prints one table; exits 1 when a 50,000-sample page takes 2 s or more to load (median).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
TARGET = 50_000
REPEATS = 5
LIMIT_S = 2.0


def _default_run(folder: Path) -> Path:
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--budget-suite=all",
        "--budget-gate=off", "--budget-report=default.json", "--budget-html=default.html",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True)
    print(f"default run: {time.perf_counter() - started:.1f} s ({' '.join(command[2:])})")
    return folder / "default.json"


def _scaled(report: dict[str, Any], target: int) -> dict[str, Any]:
    cells = [c for c in report["cells"] if isinstance(c.get("samples"), list) and c["samples"]]
    out: list[dict[str, Any]] = []
    total, copy_index = 0, 0
    while total < target:
        copy_index += 1
        for cell in cells:
            if total >= target:
                break
            clone = copy.deepcopy(cell)
            clone["cell"] = f"{cell['cell']}-copy{copy_index}"
            clone["nodeid"] = f"{cell['nodeid']}-copy{copy_index}"
            clone["samples"] = clone["samples"][: target - total]
            total += len(clone["samples"])
            out.append(clone)
    scaled = dict(report)
    scaled["cells"] = out
    scaled["summary"] = dict(report["summary"], cells=len(out))
    return scaled


def _measure(page_path: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    loads, opens, filters, searches = [], [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        for _ in range(REPEATS):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(("file:", "data:"))
                    else route.abort()
                ),
            )
            page = context.new_page()
            started = time.perf_counter()
            page.goto(page_path.as_uri(), wait_until="load")
            loads.append(time.perf_counter() - started)
            buttons = page.locator("button.samples")
            counts = [int((t or "0").replace(",", "")) for t in buttons.all_text_contents()]
            biggest = buttons.nth(counts.index(max(counts)))
            started = time.perf_counter()
            biggest.click()
            page.locator(".drill .vrow").first.wait_for()
            opens.append(time.perf_counter() - started)
            outcome = page.locator(".drill select.outcome")
            values = outcome.locator("option").evaluate_all("o => o.map(x => x.value)")
            started = time.perf_counter()
            outcome.select_option(values[-1])
            page.locator(".drill .vrow").first.wait_for()
            filters.append(time.perf_counter() - started)
            outcome.select_option("")
            started = time.perf_counter()
            page.locator(".drill input.search").fill("#2")
            page.wait_for_function(
                "document.querySelector('.drill .shown').textContent !== "
                "document.querySelector('.drill select.outcome option').textContent"
                ".replace(/^all outcomes \\((\\d+)\\)$/, '$1 shown')"
            )
            searches.append(time.perf_counter() - started)
            context.close()
        browser.close()
    return {
        "load": statistics.median(loads),
        "load_max": max(loads),
        "open": statistics.median(opens),
        "filter": statistics.median(filters),
        "search": statistics.median(searches),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = args.report or _default_run(folder)
        report = json.loads(source.read_text(encoding="utf-8"))
        default_page = folder / "default-render.html"
        scaled_report = folder / "scaled.json"
        scaled_report.write_text(json.dumps(_scaled(report, TARGET)), encoding="utf-8")
        rows = []
        for label, json_path, page in (
            ("default run", source, default_page),
            (f"{TARGET:,} samples", scaled_report, folder / "scaled.html"),
        ):
            document = json.loads(json_path.read_text(encoding="utf-8"))
            samples = sum(len(c.get("samples") or []) for c in document["cells"])
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pytest_budget", "report", "render", str(json_path),
                 "-o", str(page)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            render_s = time.perf_counter() - started
            timing = _measure(page)
            sizes = (json_path.stat().st_size / 1e6, page.stat().st_size / 1e6)
            rows.append((label, len(document["cells"]), samples, sizes, render_s, timing))
    print(
        f"{'page':<16} {'cells':>5} {'samples':>8} {'JSON MB':>8} {'page MB':>8} {'render s':>8} "
        f"{'load s':>7} {'(max)':>6} {'open s':>7} {'filter s':>8} {'search s':>8}"
    )
    for label, cells, samples, (json_mb, page_mb), render_s, t in rows:
        print(
            f"{label:<16} {cells:>5} {samples:>8} {json_mb:>8.1f} "
            f"{page_mb:>8.1f} {render_s:>8.1f} {t['load']:>7.2f} {t['load_max']:>6.2f} "
            f"{t['open']:>7.2f} {t['filter']:>8.2f} {t['search']:>8.2f}"
        )
    return 0 if rows[-1][-1]["load"] < LIMIT_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
