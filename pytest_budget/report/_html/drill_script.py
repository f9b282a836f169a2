"""The page's one inline script: open a cell's samples, filter, sort, search, show one.

:data:`CORE_JS` loads a cell's block (see :mod:`pytest_budget.report._html.drill_data`), draws the
list (only the rows in view, so 5,000 rows scroll as fast as 50) and the controls.  How
one sample is drawn is up to its suite: :func:`sample_renderers` collects each cell kind's
script (:attr:`~pytest_budget._core.registry.CellKind.sample_script`, a file in the suite's
package), a JavaScript object ``{score: label, summary(s), detail(s, ctx)}`` registered on
``R``; a kind without one gets the generic key/value view.
Every text goes in with ``textContent``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_budget._core.registry import cell_kinds

__all__ = ["CORE_JS", "DRILL_CSS", "page_script", "sample_renderers"]

DRILL_CSS = """
button.samples, button.pair-open { font: inherit; font-size: 12px; padding: 1px 8px;
  border: 1px solid #9db4cc; background: #eef4fb; border-radius: 4px; cursor: pointer; }
button.samples:hover, button.pair-open:hover { background: #dbe8f6; }
tr.open td { background: #fff4cc !important; }
.drill { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; margin: 12px 0;
  background: #fcfdfe; }
.drill h4 { margin: 0 0 6px; font-size: 15px; }
.drill .controls { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin: 8px 0; }
.drill .controls input { min-width: 18rem; }
.drill .split { display: grid; grid-template-columns: minmax(22rem, 2fr) minmax(0, 3fr);
  gap: 14px; }
@media (max-width: 1000px) { .drill .split { grid-template-columns: 1fr; } }
.vlist { position: relative; height: 30rem; overflow: auto; border: 1px solid var(--line);
  border-radius: 4px; background: #fff; }
.vrow { position: absolute; left: 0; right: 0; height: 28px; line-height: 28px; padding: 0 8px;
  display: flex; gap: 8px; border-bottom: 1px solid #eef0f2; cursor: pointer; font-size: 13px;
  white-space: nowrap; overflow: hidden; }
.vrow:hover { background: #f1f6fc; } .vrow.sel { background: #dbe8f6; }
.vrow .sid { flex: 0 0 auto; max-width: 14rem; overflow: hidden; text-overflow: ellipsis;
  font-family: ui-monospace, monospace; }
.vrow .ssc { flex: 0 0 4rem; text-align: right; font-variant-numeric: tabular-nums; }
.vrow .ssum { flex: 1 1 auto; overflow: hidden; text-overflow: ellipsis; color: var(--muted); }
.tag { display: inline-block; padding: 0 6px; margin-right: 3px; border-radius: 3px;
  font-size: 11.5px; line-height: 18px; background: #e8ecf0; color: #33404d; }
.tag.bad { background: var(--worse-bg); color: var(--worse); }
.tag.good { background: var(--better-bg); color: var(--better); }
.sample-detail { min-height: 8rem; overflow-wrap: break-word; min-width: 0; }
.sample-detail pre, .pair-view pre { white-space: pre-wrap; word-break: break-word;
  background: var(--soft); padding: 8px 10px; border-radius: 4px; margin: 4px 0 10px;
  max-height: 26rem; overflow: auto; font-size: 12.5px; }
.sample-detail table, .pair-view table { margin: 4px 0 10px; width: 100%; }
.sample-detail th, .pair-view th { position: static; }
.sample-detail td, .pair-view td { white-space: normal; }
.paths { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.paths ol { margin: 4px 0; padding-left: 1.6rem; font-family: ui-monospace, monospace;
  font-size: 12.5px; }
.paths li.off { color: var(--worse); }
.pair-view > .side, .sample-detail { min-width: 0; overflow-x: auto; }
.pair-view { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 18px;
  margin: 10px 0;
  border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.pair-view[hidden] { display: none; }
"""

_JS = Path(__file__).with_name("js")


def _read(name: str) -> str:
    return (_JS / f"{name}.js").read_text(encoding="utf-8")


#: The core script (``js/core.js``).
CORE_JS = _read("core")


def sample_renderers() -> dict[str, str]:
    """The sample-drawing script of every cell kind that has one, by kind."""
    return {
        name: kind.sample_script.read_text(encoding="utf-8")
        for name, kind in cell_kinds().items()
        if kind.sample_script is not None
    }


def page_script() -> str:
    """The whole inline script (core first, then every renderer), in one scope."""
    body = CORE_JS + "".join(sample_renderers().values())
    # never "</" inside a script element (none in the source; this keeps it so)
    return "<script>(function(){" + body.replace("</", "<\\/") + "})();</script>"
