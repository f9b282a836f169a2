// How a awareness sample is drawn (registered on R; see pytest_budget/report/_html/drill_script.py).
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
