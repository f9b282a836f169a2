"""The page's one inline script: open a cell's samples, filter, sort, search, show one.

:data:`CORE_JS` loads a cell's block (see :mod:`pytest_budget.html.samples`), draws the
list (only the rows in view, so 5,000 rows scroll as fast as 50) and the controls.  How
one sample is drawn is up to its suite: :data:`SAMPLE_RENDERERS` maps a suite name to a
JavaScript object ``{score: label, summary(s), detail(s, ctx)}`` registered on
``R``; a suite without one gets the generic key/value view.  A new suite (or figure
module) adds its entry here.  Every text goes in with ``textContent``.
"""

from __future__ import annotations

__all__ = ["CORE_JS", "DRILL_CSS", "SAMPLE_RENDERERS", "page_script"]

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
.drill .split { display: grid; grid-template-columns: minmax(22rem, 2fr) 3fr; gap: 14px; }
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
.pair-view { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; margin: 10px 0;
  border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.pair-view[hidden] { display: none; }
"""

CORE_JS = r"""
"use strict";
const R = {};
const BAD = new Set(["invalid", "error", "miss", "false abort", "wrong answer", "over budget",
  "missed failure", "truncated", "unreached", "unsolvable planned", "phase 0 cut"]);
const GOOD = new Set(["hit", "exact", "earned", "correct abort"]);
const cache = new Map();
function block(id) {
  if (!cache.has(id)) {
    cache.set(id, (async () => {
      const el = document.getElementById(id);
      const bin = atob(el.textContent.trim());
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return JSON.parse(await new Response(stream).text());
    })());
  }
  return cache.get(id);
}
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null) continue;
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) { if (k != null) e.append(k instanceof Node ? k : String(k)); }
  return e;
}
function fmt(v) {
  if (v == null) return "\u2013";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return v.map(fmt).join(", ");
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => (k ? k + " " : "") + fmt(x)).join(", ");
  return String(v);
}
function kv(rows) {
  const t = h("table", {class: "kv"});
  for (const [k, v] of rows) { if (v !== undefined) t.append(h("tr", {}, h("th", {}, k), h("td", {}, fmt(v)))); }
  return t;
}
function pre(label, text, cls) {
  if (text == null || text === "") return null;
  return h("div", {class: cls || null}, h("strong", {}, label), h("pre", {}, String(text)));
}
function fold(label, node, open) {
  const d = h("details", {}, h("summary", {}, label), node);
  if (open) d.open = true;
  return d;
}
function tags(s) {
  const span = h("span", {class: "tags"});
  for (const t of s.tags || []) span.append(h("span", {class: "tag" + (BAD.has(t) ? " bad" : GOOD.has(t) ? " good" : "")}, t));
  return span;
}
function table(head, rows) {
  const t = h("table", {class: "scores"}, h("thead", {}, h("tr", {}, ...head.map(x => h("th", {}, x)))));
  const b = h("tbody");
  for (const r of rows) b.append(h("tr", {}, ...r.map(x => x instanceof Node ? h("td", {}, x) : h("td", {}, fmt(x)))));
  t.append(b);
  return t;
}
const GENERIC = {
  score: "score",
  summary: s => Object.keys(s).filter(k => !["id", "score", "tags"].includes(k)).slice(0, 3).map(k => k + "=" + fmt(s[k])).join(" "),
  detail: s => kv(Object.entries(s).filter(([k]) => k !== "tags").map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v) : v])),
};
function renderer(suite) { return R[suite] || GENERIC; }
function cmpScore(dir) {
  return (a, b) => {
    const x = a.s.score, y = b.s.score;
    if (x == null && y == null) return a.i - b.i;
    if (x == null) return 1; if (y == null) return -1;
    return dir * (x - y) || a.i - b.i;
  };
}
function openPanel(section, button, data, ctx) {
  const old = section.querySelector(".drill");
  if (old) old.remove();
  section.querySelectorAll("tr.open").forEach(r => r.classList.remove("open"));
  button.closest("tr").classList.add("open");
  const rend = renderer(data.suite);
  const all = data.samples.map((s, i) => ({s, i, text: null}));
  const counts = new Map();
  for (const {s} of all) for (const t of s.tags || []) counts.set(t, (counts.get(t) || 0) + 1);
  const outcome = h("select", {class: "outcome", "aria-label": "outcome"}, h("option", {value: ""}, `all outcomes (${all.length})`));
  for (const [t, n] of [...counts].sort((a, b) => b[1] - a[1])) outcome.append(h("option", {value: t}, `${t} (${n})`));
  const sort = h("select", {class: "sort", "aria-label": "sort"},
    h("option", {value: "run"}, "run order"),
    h("option", {value: "asc"}, `${rend.score} low \u2192 high`),
    h("option", {value: "desc"}, `${rend.score} high \u2192 low`));
  const search = h("input", {type: "search", class: "search", placeholder: "search the samples' text", "aria-label": "search"});
  const shown = h("span", {class: "shown"});
  const close = h("button", {type: "button", class: "close"}, "close");
  const list = h("div", {class: "vlist", tabindex: "0"});
  const space = h("div", {class: "vspace"});
  list.append(space);
  const detail = h("div", {class: "sample-detail"}, h("p", {class: "sub"}, "Click a sample to see it."));
  const panel = h("div", {class: "drill", "data-cell": data.cell, "data-suite": data.suite},
    h("h4", {}, `Samples of ${data.cell} / ${data.agent}: ${data.total}`), close);
  if (data.left_out) {
    panel.append(h("p", {class: "note cap"}, `Showing ${data.samples.length} of ${data.total} samples ` +
      `(the cap is ${data.cap} per cell; samples with a failure tag first). The other ${data.left_out} ` +
      `are in the JSON report${data.report_path ? " " + data.report_path : ""} (cells[].samples); ` +
      "render with budget-report render --sample-cap=N to show more."));
  }
  if (data.plan_raw != null) panel.append(fold("the planner's reply (the plan these items follow)", h("pre", {}, data.plan_raw)));
  panel.append(h("div", {class: "controls"}, outcome, sort, search, shown));
  panel.append(h("div", {class: "split"}, list, detail));
  const anchor = section.querySelector(".table-wrap");
  anchor.after(panel);
  const ROW = 28;
  let view = all, selected = -1;
  function draw() {
    const top = list.scrollTop, height = list.clientHeight || 480;
    const first = Math.max(0, Math.floor(top / ROW) - 5), last = Math.min(view.length, Math.ceil((top + height) / ROW) + 5);
    space.style.height = (view.length * ROW) + "px";
    space.replaceChildren();
    for (let n = first; n < last; n++) {
      const {s, i} = view[n];
      const sc = s.score == null ? "\u2013" : Number(s.score).toFixed(3);
      const row = h("div", {class: "vrow" + (i === selected ? " sel" : ""), "data-index": String(i), style: `top:${n * ROW}px`},
        h("span", {class: "sid"}, s.id), tags(s), h("span", {class: "ssc"}, sc), h("span", {class: "ssum"}, rend.summary(s, ctx)));
      space.append(row);
    }
  }
  function apply() {
    const tag = outcome.value, q = search.value.trim().toLowerCase();
    view = all.filter(x => !tag || (x.s.tags || []).includes(tag));
    if (q) view = view.filter(x => (x.text ??= JSON.stringify(x.s).toLowerCase()).includes(q));
    if (sort.value !== "run") view = [...view].sort(cmpScore(sort.value === "asc" ? 1 : -1));
    shown.textContent = `${view.length} shown`;
    list.scrollTop = 0;
    draw();
  }
  function show(i) {
    selected = i;
    const s = data.samples[i];
    detail.replaceChildren(h("h4", {}, s.id, " ", tags(s)), rend.detail(s, ctx));
    draw();
  }
  list.addEventListener("scroll", () => requestAnimationFrame(draw));
  list.addEventListener("click", ev => { const r = ev.target.closest(".vrow"); if (r) show(Number(r.dataset.index)); });
  outcome.addEventListener("change", apply);
  sort.addEventListener("change", apply);
  let timer = 0;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 120); });
  close.addEventListener("click", () => { panel.remove(); button.closest("tr").classList.remove("open"); });
  apply();
  panel.scrollIntoView({block: "nearest"});
}
async function openCell(button) {
  const data = await block(button.dataset.block);
  const ctx = {rollouts: data.rollouts ? await block(data.rollouts) : null, cell: data};
  openPanel(button.closest("section"), button, data, ctx);
}
async function openPair(button) {
  const entries = await block(button.dataset.block);
  const entry = entries[Number(button.dataset.pair)];
  const view = button.closest("section").querySelector(".pair-view");
  const rend = renderer(entry.suite);
  const side = (label, s, prefix) => h("div", {class: "side"}, h("h4", {}, `${label}: ${s.id} `, tags(s)),
    rend.detail(s, {rollouts: prefix ? {[s.rollout]: prefix} : null, cell: entry}));
  view.replaceChildren(side("baseline", entry.base, entry.base_prefix), side("new run", entry.new, entry.new_prefix));
  view.hidden = false;
  view.scrollIntoView({block: "nearest"});
}
document.addEventListener("click", ev => {
  const b = ev.target.closest("button.samples");
  if (b) { openCell(b).catch(err => console.error(err)); return; }
  const p = ev.target.closest("button.pair-open");
  if (p) openPair(p).catch(err => console.error(err));
});
"""

_TRIAGE = r"""
R.triage = {
  score: "earned (U)",
  summary: s => `c=${fmt(s.cost)} a=${fmt(s.allocation)} U: ${s.u || "\u2013"} \u00b7 E: ${s.e || "\u2013"}`,
  detail: s => h("div", {},
    kv([["value v_i", s.value], ["Phase 0 cost c_i", s.cost], ["solved in Phase 0", s.solved],
        ["injected unsolvable", s.unsolvable], ["the oracle takes it", s.oracle],
        ["plan position", s.position], ["allocation a_i", s.allocation],
        ["regime U", s.u], ["budget left before it (U)", s.u_remaining],
        ["regime E", s.e], ["budget left before it (E)", s.e_remaining],
        ["value earned (U)", s.score], ["domain", s.domain]]),
    pre("problem", s.text), pre("expected answer", s.expected),
    pre("solver's answer", s.solver_answer),
    s.solver_output ? fold("solver's output (Phase 0)", h("pre", {}, s.solver_output)) : null),
};
"""

_AWARENESS = r"""
R.awareness = {
  score: "S_k",
  summary: s => `k=${s.k}/${s.T} R=${fmt(s.remaining)} \u2192 ${s.parsed}`,
  detail: (s, ctx) => {
    const ro = ctx && ctx.rollouts ? ctx.rollouts[s.rollout] : null;
    let prefix = null;
    if (ro) {
      const turns = h("div", {class: "turns"});
      ro.turns.slice(0, s.k).forEach((t, n) => {
        turns.append(h("strong", {}, `turn ${n + 1} (usage ${fmt(t.usage)})`));
        if (t.observation) turns.append(h("pre", {}, "shown: " + t.observation));
        if (t.action) turns.append(h("pre", {}, "did: " + t.action));
      });
      prefix = fold(`replayed prefix: turns 1..${s.k} of ${s.T}`, turns, false);
    }
    return h("div", {},
      kv([["rollout", s.rollout], ["turn k", `${s.k} of ${s.T}`], ["used C_k", s.used],
          ["budget", s.budget], ["truth: remaining R_k", s.remaining], ["truth: feasible", s.feasible],
          ["rollout succeeded", s.success], ["parsed answer", s.parsed], ["invalid because", s.reason],
          ["error", s.error], ["S_k", s.score], ["RL reward", s.reward]]),
      pre("estimator's raw output", s.raw, "raw"), prefix);
  },
};
"""

_PLANNING = r"""
R.planning = {
  score: "1 \u2212 NED",
  summary: s => `${s.calls.length} calls, cost ${fmt(s.agent_cost)} vs ${fmt(s.gt_cost)}, answer ${s.answer ?? "\u2013"}`,
  detail: s => {
    const gt = new Set(s.gt_path);
    const path = (label, names, mark) => h("div", {}, h("strong", {}, label),
      h("ol", {}, ...names.map(n => h("li", {class: mark && !gt.has(n) ? "off" : null}, n))));
    return h("div", {},
      pre("query", s.query),
      kv([["final answer", s.answer], ["expected", s.expected], ["correct", s.correct],
          ["reached the goal", s.reached_goal], ["stopped at the step limit", s.steps_exhausted],
          ["blocking events applied / dropped", `${s.blocks_applied} / ${s.blocks_dropped}`],
          ["blocks fired at turns", s.block_steps], ["cost (agent / ground truth)", `${fmt(s.agent_cost)} / ${fmt(s.gt_cost)}`],
          ["normalised edit distance", s.ned], ["exact match", s.exact], ["left out of path metrics", s.excluded],
          ["error", s.error]]),
      h("div", {class: "paths"}, path("ground-truth path", s.gt_path, false), path("agent's path", s.agent_path, true)),
      h("strong", {}, "tool calls"),
      table(["step", "tool", "arguments", "cost", "result", "segment", "flags"], s.calls.map(c => [
        c.step, c.name, c.arguments, c.cost, c.ok ? (c.output || "ok") : (c.error || "failed"), c.segment,
        [c.repeated ? "repeated" : "", c.after_goal ? "after goal" : "", c.executed ? "" : "not run"].filter(Boolean).join(", ")])),
      h("strong", {}, "segments (blocking events)"),
      table(["segment", "from step", "event", "optimal path(s)", "optimal cost", "greedy path"], s.segments.map(g => [
        g.index, g.start_step, g.event || "start", g.optimal_paths.map(p => p.join(" \u2192 ")).join(" | "),
        g.optimal_cost, g.greedy_path.join(" \u2192 ")])),
      s.notes && s.notes.length ? pre("notes", s.notes.join("\n")) : null);
  },
};
"""

#: JavaScript per suite (see the module docstring); add an entry for a new suite.
SAMPLE_RENDERERS: dict[str, str] = {
    "triage": _TRIAGE,
    "awareness": _AWARENESS,
    "planning": _PLANNING,
}


def page_script() -> str:
    """The whole inline script (core first, then every renderer), in one scope."""
    body = CORE_JS + "".join(SAMPLE_RENDERERS.values())
    # never "</" inside a script element (none in the source; this keeps it so)
    return "<script>(function(){" + body.replace("</", "<\\/") + "})();</script>"
