// The drill-down core (pytest_budget/report/_html/drill_script.py loads it; see there).
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
  const panel = h("div", {class: "drill", "data-cell": data.cell, "data-suite": data.suite, "data-total": String(data.total)},
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
