"""False-alarm rate and power of the planning gate for an agent that samples (issue 17, item 8).

The reference agents are deterministic, so the default run never moves; the risk is a
sampling agent.  This script plays one: at each turn it takes the ground truth's next call
with probability ``p`` and the greedy's choice otherwise.

**Exact and fast.**  Given its coin flips the agent is deterministic, and a flip matters only
on a turn where the two choices differ.  So for every query and scenario the script
enumerates the agent's possible episodes once (a depth-first walk over the flips that
matter, each episode a real ``run_episode`` with the suite's environment, blocker and
pool), with the probability of each.  A rerun with another sampling seed then draws one
episode per query from that distribution - the same distribution as running the agent
again - and scores the cell exactly as the suite does (``cell_summary``: scores and
bootstrap intervals, 1,000 resamples, seed 42).  No episode is played twice.

For every default cell (six tasks x the five default scenarios) and queries per task ``n``:

1. a baseline run (sampling seed 0) is recorded, scores and intervals;
2. ``R`` reruns of the same agent (seeds 1..R) are gated against it: **false alarms**;
3. ``R`` reruns of a *regressed* agent are gated against it: **power**.  Two regressions:
   ``emr`` (``p`` lowered, per cell, until the expected EMR drops by 20 points) and
   ``cost`` (``p`` lowered until the expected cost gap rises by 2 cost units); cells where
   no ``p`` reaches a regression are reported and skipped for it.

Gate rules measured: ``tolerance`` (new point vs stored point, per-metric tolerances),
``ci`` (new interval wholly on the worse side of the stored point), ``overlap`` (new
interval wholly on the worse side of the stored interval) and ``paired`` (the planning
default: past the tolerance and a paired randomization test on the same queries below
``alpha``, :func:`pytest_budget.gating.compare_paired`).  For ``paired`` the script keeps
each rerun's smallest p-value, so it also reports the rates at other levels (``--alphas``).
Run::

    python benchmarks/bench_planning_gate.py --queries 200 --reruns 500 --rules paired
    python benchmarks/bench_planning_gate.py --queries 200 --reruns 20

Prints, per rule: the mean and worst per-cell false-alarm rate, and the mean and worst
power for each regression, with the wall time; then the same as a Markdown table.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import anyio

from pytest_budget.gating import PAIRED_ALPHA, compare, compare_ci, compare_overlap
from pytest_budget.metrics import metric_specs
from pytest_budget.options import DEFAULT_SCENARIOS, parse_scenarios
from pytest_budget.paired import differing_units, paired_p_value
from pytest_budget.planning import env as env_module
from pytest_budget.planning.agents import _ReferenceToolAgent
from pytest_budget.planning.code_metrics import greedy_sums, score_sums
from pytest_budget.planning.costs import tool_costs as _tool_costs
from pytest_budget.planning.env import TravelEnv, greedy_pick
from pytest_budget.planning.episode import (
    ReferenceView,
    ToolAgentObservation,
    run_episode,
)
from pytest_budget.planning.evaluate import PlanningOutcome
from pytest_budget.planning.intervals import _columns, cell_summary
from pytest_budget.planning.metrics import greedy_scores, score_episodes
from pytest_budget.planning.per_query import PARTS
from pytest_budget.planning.queries import generate_queries
from pytest_budget.planning.records import EpisodeRecord, Query
from pytest_budget.planning.tools import TASKS, Tool

RULES = ("tolerance", "ci", "overlap", "paired")

_SOLVE = TravelEnv.solve
_SOLVED: dict[tuple[object, ...], tuple[list[str], float] | None] = {}


def _memo_solve(
    self: TravelEnv,
    start: frozenset[str] | None = None,
    *,
    exclude: Any = (),
    use_bans: bool = True,
) -> tuple[list[str], float] | None:
    """``TravelEnv.solve`` remembered (a pure function of tools, costs, bans and start): the
    many episodes of one query re-solve the same states.  Benchmark only."""
    start = self.initial_state if start is None else start
    key = (
        self.task,
        self.refinement_level,
        self._fingerprint(),
        start,
        frozenset(exclude),
        use_bans,
    )
    if key not in _SOLVED:
        _SOLVED[key] = _SOLVE(self, start, exclude=exclude, use_bans=use_bans)
    found = _SOLVED[key]
    return None if found is None else (list(found[0]), found[1])


class FlipAgent(_ReferenceToolAgent):
    """Ground truth's next call on flip 1, the greedy's on flip 0; a turn where both agree
    uses no flip.  Flips past ``prefix`` are 1 and recorded in ``used``."""

    name: ClassVar[str] = "sampling"
    wants_optimal_next: ClassVar[bool] = True

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = list(prefix)
        self.used: list[int] = []

    def choose(self, observation: ToolAgentObservation, view: ReferenceView) -> Tool | None:
        tools = [t for t in view.tools if t.name not in view.banned]
        greedy = greedy_pick(tools, view.costs, view.held, view.previous_output)
        best = next((t for t in view.tools if t.name == view.optimal_next), None)
        if best is None or greedy is None or best.name == greedy.name:
            return best or greedy
        flip = self.prefix[len(self.used)] if len(self.used) < len(self.prefix) else 1
        self.used.append(flip)
        return best if flip else greedy


@dataclass(frozen=True)
class Leaf:
    """One possible episode: its flips (1 = ground truth) and the record."""

    flips: tuple[int, ...]
    record: EpisodeRecord
    sums: dict[str, float]
    #: Per gated metric, this episode's (numerator, denominator) (the paired gate's values).
    parts: dict[str, tuple[float, float]]

    def probability(self, p: float) -> float:
        ones = sum(self.flips)
        return float(p**ones * (1 - p) ** (len(self.flips) - ones))


def enumerate_leaves(query: Query, scenario: Any, pool: Sequence[Query]) -> list[Leaf]:
    """Every episode the agent can have on ``query`` (DFS over the flips that matter)."""
    leaves: list[Leaf] = []
    stack: list[list[int]] = [[]]
    while stack:
        prefix = stack.pop()
        agent = FlipAgent(prefix)

        async def play(agent: FlipAgent = agent) -> EpisodeRecord:
            return await run_episode(
                query, scenario.level, scenario.mode, scenario.blocks, agent, pool=pool
            )

        record = anyio.run(play)
        used = tuple(agent.used)
        cols = _columns([record])
        parts = {m: (float(cols[a][0]), float(cols[b][0])) for m, (a, b) in PARTS["code"].items()}
        leaves.append(Leaf(used, record, score_sums([record]), parts))
        for i in range(len(prefix), len(used)):
            stack.append([*used[:i], 0])
    return leaves


def draw(leaves: Sequence[Leaf], weights: Sequence[float], rng: random.Random) -> Leaf:
    return rng.choices(leaves, weights=weights)[0]


def run_fields(chosen: list[Leaf], cell_id: str, intervals: bool) -> dict[str, Any]:
    """A run's snapshot fields (``scores``, ``ci``) plus its per-query ``parts``; without
    ``intervals`` the scores come from the parts (sum / sum, what the suite stores)."""
    parts = {
        m: ([leaf.parts[m][0] for leaf in chosen], [leaf.parts[m][1] for leaf in chosen])
        for m in PARTS["code"]
    }
    if intervals:
        out = fields([leaf.record for leaf in chosen], cell_id)
    else:
        out = {"scores": {m: sum(n) / sum(d) if sum(d) else None for m, (n, d) in parts.items()}}
    out["parts"] = parts
    return out


def paired_min_p(base: dict[str, Any], new: dict[str, Any], specs: Any) -> float:
    """The smallest p-value over the metrics the paired rule tests (those past their
    tolerance); 0 when the new run lost a metric, 1 when none is tested.  The rule fails at
    level ``alpha`` exactly when this is below ``alpha``."""
    best = 1.0
    for spec in specs:
        before, after = base["scores"].get(spec.name), new["scores"].get(spec.name)
        if before is None:
            continue
        if after is None:
            return 0.0
        if spec.fails(before, after):
            kept, got = base["parts"][spec.name], new["parts"][spec.name]
            if 2.0 ** -differing_units(kept, got) >= PAIRED_ALPHA:
                # The gate would ask the overlap rule here (too few queries changed):
                # counted, so the table says whether that ever happened.
                FALLBACKS[0] += 1
                continue
            p = paired_p_value(kept, got, spec.direction)
            best = min(best, 1.0 if p is None else p)
    return best


#: Reruns in which a metric past its tolerance had too few changed queries for the test.
FALLBACKS = [0]


def fields(episodes: list[EpisodeRecord], cell_id: str) -> dict[str, Any]:
    outcome = PlanningOutcome(
        "sampling",
        score_episodes(episodes),
        greedy_scores(episodes),
        episodes,
        pool=score_sums(episodes),
        greedy_pool=greedy_sums(episodes),
    )
    summary = cell_summary([outcome], seed=42, cell_id=cell_id, level=0.95, resamples=1000)
    return summary.snapshot_fields()


def fails(rule: str, base: dict[str, Any], new: dict[str, Any], specs: Any) -> bool:
    if rule == "paired":
        return paired_min_p(base, new, specs) < PAIRED_ALPHA
    if rule == "tolerance":
        return bool(compare(base["scores"], new["scores"], specs))
    if rule == "ci":
        return bool(compare_ci(base["scores"], new["scores"], new.get("ci", {}), specs))
    return bool(
        compare_overlap(base["scores"], new["scores"], new.get("ci", {}), base.get("ci"), specs)
    )


def expected(per_query: list[tuple[list[Leaf], list[float]]], metric: str) -> float | None:
    """The cell's expected score under the leaf weights (ratio of expected sums)."""
    sums = dict.fromkeys(("em_p", "n_p", "cost_diff_c", "n_c"), 0.0)
    for leaves, weights in per_query:
        total = sum(weights)
        for leaf, w in zip(leaves, weights, strict=True):
            for k in sums:
                sums[k] += w / total * leaf.sums[k]
    if metric == "emr":
        return sums["em_p"] / sums["n_p"] if sums["n_p"] else None
    return sums["cost_diff_c"] / sums["n_c"] if sums["n_c"] else None


def search(per_query: list[list[Leaf]], weigh: Any, metric: str, target: float) -> float | None:
    """The smallest knob in [0, 1] whose expected ``metric`` moves by ``target`` (bisection)."""
    base = expected([(ls, weigh(ls, 0.0)) for ls in per_query], metric)
    top = expected([(ls, weigh(ls, 1.0)) for ls in per_query], metric)
    if base is None or top is None or abs(top - base) < abs(target):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(14):
        mid = (lo + hi) / 2
        value = expected([(ls, weigh(ls, mid)) for ls in per_query], metric)
        if value is not None and (value - base) * (1 if target > 0 else -1) >= abs(target):
            hi = mid
        else:
            lo = mid
    return hi


def _at_p(leaves: list[Leaf], x: float) -> list[float]:
    return [leaf.probability(x) for leaf in leaves]


def measure_cell(
    task: str,
    scenario: Any,
    n_queries: int,
    p: float,
    reruns: int,
    specs: Any,
    rules: Sequence[str] = RULES,
) -> dict[str, Any]:
    """One cell's false-alarm rate and powers per rule (``None``: regression unreachable),
    and the paired rule's smallest p-value of every rerun (``p_values``)."""
    cell_id = f"{task}-{scenario.id}"
    queries = generate_queries(task, n_queries)
    per_query = [enumerate_leaves(q, scenario, queries) for q in queries]
    intervals = any(rule != "paired" for rule in rules)

    def sample(weights: list[list[float]], seed: int) -> dict[str, Any]:
        rng = random.Random(f"{cell_id}:{seed}")
        chosen = [draw(ls, w, rng) for ls, w in zip(per_query, weights, strict=True)]
        return run_fields(chosen, cell_id, intervals)

    good = [_at_p(ls, p) for ls in per_query]
    base = sample(good, 0)
    regressed: dict[str, list[list[float]] | None] = {}
    for kind, metric, target in (("emr", "emr", -0.2), ("cost", "cost_gap", 2.0)):
        # Lower p (x = the share taken off) until the expected metric moves by the target.
        x = search(per_query, lambda ls, x: _at_p(ls, p * (1 - x)), metric, target)
        regressed[kind] = None if x is None else [_at_p(ls, p * (1 - x)) for ls in per_query]
    alarms = dict.fromkeys(rules, 0.0)
    power = {k: None if w is None else dict.fromkeys(rules, 0.0) for k, w in regressed.items()}
    p_values: dict[str, list[float]] = {"alarm": [], "emr": [], "cost": []}
    for seed in range(1, reruns + 1):
        new = sample(good, seed)
        p_values["alarm"].append(paired_min_p(base, new, specs))
        for rule in rules:
            alarms[rule] += fails(rule, base, new, specs) / reruns
        for kind, weights in regressed.items():
            rates = power[kind]
            if weights is None or rates is None:
                continue
            worse = sample(weights, seed)
            p_values[kind].append(paired_min_p(base, worse, specs))
            for rule in rules:
                rates[rule] += fails(rule, base, worse, specs) / reruns
    episodes = sum(len(ls) for ls in per_query)
    return {
        "fallbacks": FALLBACKS[0],
        "cell": cell_id,
        "alarms": alarms,
        "power": power,
        "p_values": p_values,
        "episodes": episodes,
    }


_COSTS: dict[tuple[object, ...], dict[str, float]] = {}


def _memo_costs(tools: Any, seed_q: int, refinement_level: int, **kwargs: Any) -> dict[str, float]:
    """``tool_costs`` remembered (pure): every episode of a query draws the same prices."""
    tools = tuple(tools)
    key = (tuple(t.name for t in tools), seed_q, refinement_level, tuple(sorted(kwargs.items())))
    if key not in _COSTS:
        _COSTS[key] = _tool_costs(tools, seed_q, refinement_level, **kwargs)
    return dict(_COSTS[key])


def _patch() -> None:
    """Benchmark-only memos of pure functions (same results, fewer recomputations)."""
    TravelEnv.solve = _memo_solve  # type: ignore[method-assign]
    setattr(env_module, "tool_costs", _memo_costs)  # noqa: B010
    FALLBACKS[0] = 0
    _SOLVED.clear()  # one cell's queries at a time: bounded memory
    _COSTS.clear()


def _cell_job(job: tuple[str, Any], **kwargs: Any) -> dict[str, Any]:
    _patch()
    return measure_cell(job[0], job[1], **kwargs)


def measure(
    reruns: int,
    n_queries: int,
    p: float,
    workers: int = 2,
    rules: Sequence[str] = RULES,
    alphas: Sequence[float] = (),
) -> dict[str, Any]:
    """Every default cell measured; ``alphas`` adds rows ``paired@alpha`` (from the
    reruns' smallest p-values)."""
    specs = metric_specs("planning")
    jobs = [(task, scenario) for task in TASKS for scenario in parse_scenarios(DEFAULT_SCENARIOS)]
    work = functools.partial(
        _cell_job, n_queries=n_queries, p=p, reruns=reruns, specs=specs, rules=tuple(rules)
    )
    with multiprocessing.Pool(workers) as pool:
        cells = pool.map(work, jobs, chunksize=1)
    rows = list(rules)
    for alpha in alphas:
        row = f"paired@{alpha:g}"
        rows.append(row)
        for c in cells:
            c["alarms"][row] = sum(v < alpha for v in c["p_values"]["alarm"]) / reruns
            for kind in ("emr", "cost"):
                if c["power"][kind] is not None:
                    c["power"][kind][row] = sum(v < alpha for v in c["p_values"][kind]) / reruns
    alarms = {rule: [c["alarms"][rule] for c in cells] for rule in rows}
    power = {
        kind: {rule: [c["power"][kind][rule] for c in cells if c["power"][kind]] for rule in rows}
        for kind in ("emr", "cost")
    }
    skipped = [f"{c['cell']} ({k})" for c in cells for k in ("emr", "cost") if not c["power"][k]]
    worst = {rule: max(cells, key=lambda c: c["alarms"][rule])["cell"] for rule in rows}
    weakest = {
        (kind, rule): min(
            (c for c in cells if c["power"][kind]), key=lambda c: c["power"][kind][rule]
        )["cell"]
        for kind in ("emr", "cost")
        for rule in rows
    }
    return {
        "rows": rows,
        "alarms": alarms,
        "power": power,
        "skipped": skipped,
        "worst": worst,
        "weakest": weakest,
        "episodes": sum(c["episodes"] for c in cells),
        "fallbacks": sum(c["fallbacks"] for c in cells),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reruns", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200, help="queries per task")
    parser.add_argument("--p", type=float, default=0.8, help="the agent's P(ground truth)")
    parser.add_argument("--workers", type=int, default=2, help="processes (cells in parallel)")
    parser.add_argument(
        "--rules", default=",".join(RULES), help=f"comma list of {', '.join(RULES)}"
    )
    parser.add_argument(
        "--alphas",
        default="0.01,0.005,0.002,0.0005",
        help="extra levels of the paired rule to report (its default is "
        f"{PAIRED_ALPHA:g}); empty for none",
    )
    args = parser.parse_args()
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        parser.error(f"--rules: unknown {', '.join(unknown)}; choose from {', '.join(RULES)}")
    alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    start = time.perf_counter()
    out = measure(args.reruns, args.queries, args.p, args.workers, rules, alphas)
    took = time.perf_counter() - start
    print(
        f"queries/task={args.queries} reruns={args.reruns} p={args.p} cells=30 "
        f"distinct episodes played={out['episodes']} ({took:.0f} s)"
    )
    table = [
        "| gate | false alarms, mean / worst cell | power, EMR -20 pts, mean / worst | "
        "power, cost gap +2, mean / worst |",
        "|---|---|---|---|",
    ]
    for rule in out["rows"]:
        fa = out["alarms"][rule]
        label = f"paired@{PAIRED_ALPHA:g} (default)" if rule == "paired" else rule
        line = (
            f"  gate={label:24s} false alarms per cell: mean {sum(fa) / len(fa):.4f}, "
            f"worst {max(fa):.4f} ({out['worst'][rule]})"
        )
        cells = [f"{sum(fa) / len(fa):.4f} / {max(fa):.3f}"]
        for kind in ("emr", "cost"):
            pw = out["power"][kind][rule]
            if pw:
                weakest = out["weakest"][(kind, rule)]
                line += (
                    f"; power ({kind}) mean {sum(pw) / len(pw):.3f}, "
                    f"worst {min(pw):.3f} ({weakest})"
                )
                cells.append(f"{sum(pw) / len(pw):.3f} / {min(pw):.3f}")
            else:
                cells.append("-")
        print(line)
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    print(
        f"  paired: {out['fallbacks']} metric checks had too few changed queries for the test "
        "(the gate then uses the overlap rule; counted as passing here)"
    )
    for note in out["skipped"]:
        print(f"  regression out of reach, skipped: {note}")
    print()
    print("\n".join(table))


if __name__ == "__main__":
    main()
