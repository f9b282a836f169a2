// How a planning sample is drawn (registered on R; see pytest_budget/report/_html/drill_script.py).
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
