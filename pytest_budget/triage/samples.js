// How a triage sample is drawn (registered on R; see pytest_budget/report/_html/drill_script.py).
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
    pre("problem", s.text), pre("expected answer", s.expected)),
};
