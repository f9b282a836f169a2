"""False-alarm rate and power of the planning gate for an agent that samples (issue 17, item 8).

The reference agents are deterministic, so the default run never moves; the risk is a
sampling agent.  This script plays one: at each turn it takes the ground truth's next call
with probability ``p`` and the greedy's choice otherwise.

**Exact episodes, vectorised reruns.**  Given its coin flips the agent is deterministic, and
a flip matters only on a turn where the two choices differ.  So for every query and scenario
the script enumerates the agent's possible episodes once (a depth-first walk over the flips
that matter, each a real ``run_episode`` with the suite's environment, blocker and pool),
with the probability of each.  A run of the agent is then one episode drawn per query from
that distribution, and everything the gate reads from a run - each query's numerator and
denominator of every gated score, the scores (sum / sum) and the bootstrap intervals (the
suite's resamples: 1,000, seed 42, the query as unit) - is an array operation on the drawn
episodes' values.  Thousands of runs per cell cost seconds.  Each cell is self-checked: a
few drawn runs are also scored by the suite's own code (``cell_summary``,
``per_query_parts``) and gated by :mod:`pytest_budget._stats.gating`'s functions, and every
decision must agree (mismatches are printed; there should be none).

**What is measured, per default cell** (six tasks x the five default scenarios) and queries
per task ``n`` - the issue's reading: a baseline is recorded once, later runs of the same
agent are gated against it:

1. ``B`` baselines (independent runs of the agent, ``--baselines``); for each,
2. ``R`` reruns of the same agent gated against it (``--reruns``): **false alarms**.  The
   per-cell rate is the mean over the ``B`` baselines (what a user can expect before
   recording); the worst single (cell, baseline) is reported too, since one unlucky
   baseline raises the rate of every later run gated against it;
3. ``P`` reruns of a *regressed* agent gated against it (``--power-reruns``): **power**.
   Two regressions, both by lowering ``p`` (the agent takes the greedy's call more often):
   ``emr`` until the expected EMR drops by 20 points, ``cost`` until the expected cost gap
   rises by 2 cost units.  A cell where even ``p = 0`` does not reach the regression is
   out of reach for it (the cost gap in most cells): its power is not defined, and the
   table says over how many cells each power is taken.

A cell *fails* when any of its five gated metrics fails, as in the suite.  Rules:
``tolerance``, ``ci``, ``overlap`` (new interval wholly on the worse side of the stored
interval) and ``paired@a`` (:func:`pytest_budget._stats.gating.compare_paired` at level ``a`` per
metric; a metric with too few changed queries for the test falls back to ``overlap``, as in
the suite).  Bonferroni-Holm over the five metrics at family level ``a`` fails a cell exactly
when ``paired@(a/5)`` does (Holm's first step is Bonferroni; any rejection fails the cell),
so those are rows of the same table.

The paired p-value is the suite's (:func:`pytest_budget._stats.paired.paired_p_value`: the same
20,000 fixed-seed swap patterns), computed for many runs at once by one matrix product.
Only metrics past their tolerance are tested, and a normal approximation screens the rest:
``z < 1.5`` (p far above 0.01) counts as not significant, ``z > 7`` as the smallest p.  A
sample of screened values is checked against the exact test (``screen mismatches``).
Run::

    nice -n 19 python benchmarks/bench_planning_gate.py --queries 200,400,600,800

The defaults, 50 baselines x 40 reruns (2,000 gated reruns per cell for the false alarms)
and 50 x 4 (200 per cell and regression for the power), resolve a cell's false-alarm rate
of 1% to about +-0.5 points and a power of 90% to about +-4 points (binomial, 95%); the
reruns that share a baseline are correlated, so the true uncertainty is somewhat larger.

Prints, per queries per task and rule: false alarms (mean over cells / worst cell / worst
single baseline), power per regression (mean / worst cell, over the cells where it is
reachable), the binomial 95% bounds of the worst cells, and the wall time.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import anyio
import numpy as np
import numpy.typing as npt

from pytest_budget._stats.bootstrap import (
    _sorted_quantile,
    bootstrap_seed,
    counts_from_indices,
    resample_indices,
)
from pytest_budget._stats.gated_metrics import MetricSpec, metric_specs
from pytest_budget._stats.gating import (
    PAIRED_ALPHA,
    compare,
    compare_ci,
    compare_overlap,
    compare_paired,
)
from pytest_budget._stats.paired import DRAWS, paired_p_value
from pytest_budget.planning import _env as env_module
from pytest_budget.planning._code_metrics import greedy_sums, score_sums
from pytest_budget.planning._costs import tool_costs as _tool_costs
from pytest_budget.planning._env import TravelEnv, greedy_pick
from pytest_budget.planning._episode import ReferenceView, ToolAgentObservation, run_episode
from pytest_budget.planning._episode_records import EpisodeRecord, Query
from pytest_budget.planning._evaluate import PlanningOutcome
from pytest_budget.planning._intervals import _columns, cell_summary
from pytest_budget.planning._metrics import greedy_scores, score_episodes
from pytest_budget.planning._options import DEFAULT_SCENARIOS, parse_scenarios
from pytest_budget.planning._per_query import PARTS, per_query_parts
from pytest_budget.planning._queries import generate_queries
from pytest_budget.planning._reference_agents import _ReferenceToolAgent
from pytest_budget.planning._tools import TASKS, Tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_arrays import Z_LOW, Runs, _ratio, decide

Array = npt.NDArray[np.float64]
GATED = tuple(PARTS["code"])  # emr, aned, cost_gap, uihr, itur: the suite's gated metrics
COLUMNS = PARTS["code"]
RESAMPLES, LEVEL, CI_SEED = 1000, 0.95, 42
DEFAULT_ALPHAS = "0.01,0.005,0.002,0.001,0.0005,0.0002,0.0001"

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
    _SOLVED.clear()  # one cell's queries at a time: bounded memory
    _COSTS.clear()


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


def enumerate_leaves(
    query: Query, scenario: Any, pool: Sequence[Query]
) -> list[tuple[tuple[int, ...], EpisodeRecord]]:
    """Every episode the agent can have on ``query`` (DFS over the flips that matter)."""
    leaves: list[tuple[tuple[int, ...], EpisodeRecord]] = []
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
        leaves.append((used, record))
        for i in range(len(prefix), len(used)):
            stack.append([*used[:i], 0])
    return leaves


@dataclass
class Cell:
    """A cell's possible episodes as arrays (``L`` leaves over ``n`` queries)."""

    cell_id: str
    n: int
    starts: npt.NDArray[np.int64]  # (n + 1,): query q's leaves are starts[q]:starts[q+1]
    ones: Array  # (L,): flips that took the ground truth
    flips: Array  # (L,): flips used
    num: Array  # (5, L): each leaf's numerator of every gated metric
    den: Array  # (5, L)
    records: list[EpisodeRecord]
    counts: Array  # (RESAMPLES, n): the suite's bootstrap resamples

    def probabilities(self, p: float) -> Array:
        return np.asarray(p**self.ones * (1 - p) ** (self.flips - self.ones))

    def draw(self, prob: Array, rng: np.random.Generator, size: int) -> npt.NDArray[np.int64]:
        """``size`` runs: one leaf index per query, drawn with the leaves' probabilities."""
        u = rng.random((size, self.n))
        out = np.empty((size, self.n), dtype=np.int64)
        for q in range(self.n):
            lo, hi = int(self.starts[q]), int(self.starts[q + 1])
            cum = np.cumsum(prob[lo:hi])
            pick = np.searchsorted(cum / cum[-1], u[:, q], side="right")
            out[:, q] = lo + np.minimum(pick, hi - lo - 1)
        return out

    def expected(self, prob: Array, metric: str) -> float:
        """The expected cell score (ratio of expected sums) under leaf probabilities."""
        k = GATED.index(metric)
        share = prob / np.repeat(np.add.reduceat(prob, self.starts[:-1]), np.diff(self.starts))
        den = float(share @ self.den[k])
        return float(share @ self.num[k]) / den if den else math.nan


def build_cell(task: str, scenario: Any, n: int) -> Cell:
    cell_id = f"{task}-{scenario.id}"
    queries = generate_queries(task, n)
    starts, ones, flips, records = [0], [], [], []
    for query in queries:
        for used, record in enumerate_leaves(query, scenario, queries):
            ones.append(sum(used))
            flips.append(len(used))
            records.append(record)
        starts.append(len(records))
    cols = _columns(records)
    num = np.stack([cols[COLUMNS[m][0]] for m in GATED])
    den = np.stack([cols[COLUMNS[m][1]] for m in GATED])
    seed = bootstrap_seed(CI_SEED, "planning", cell_id)
    counts = counts_from_indices(resample_indices(n, RESAMPLES, seed), n).astype(np.float64)
    return Cell(
        cell_id,
        n,
        np.asarray(starts),
        np.asarray(ones, float),
        np.asarray(flips, float),
        num,
        den,
        records,
        counts,
    )


def runs_of(cell: Cell, leaves: npt.NDArray[np.int64]) -> Runs:
    num, den = cell.num[:, leaves], cell.den[:, leaves]
    scores = _ratio(num.sum(-1), den.sum(-1))
    ci = np.full((*scores.shape, 2), np.nan)
    tail = (1.0 - LEVEL) / 2.0
    for k in range(len(GATED)):
        table = _ratio(cell.counts @ num[k].T, cell.counts @ den[k].T).T  # (size, resamples)
        ordered = np.sort(table, axis=1)
        defined = np.isfinite(ordered).sum(axis=1)
        for side, q in enumerate((tail, 1.0 - tail)):
            bound = np.round(_sorted_quantile(ordered, defined, q), 9)
            ci[k, :, side] = np.where((defined > 0) & np.isfinite(scores[k]), bound, np.nan)
    return Runs(num, den, scores, ci)


def _suite_decisions(
    cell: Cell, base: npt.NDArray[np.int64], run: npt.NDArray[np.int64], specs: Sequence[MetricSpec]
) -> tuple[dict[str, bool], Runs]:
    """The suite's own code on real records: scores, intervals, per-query values, gates."""

    def fields(leaves: npt.NDArray[np.int64]) -> tuple[dict[str, Any], Any]:
        episodes = [cell.records[i] for i in leaves]
        outcome = PlanningOutcome(
            "sampling",
            score_episodes(episodes),
            greedy_scores(episodes),
            episodes,
            pool=score_sums(episodes),
            greedy_pool=greedy_sums(episodes),
        )
        summary = cell_summary(
            [outcome], seed=CI_SEED, cell_id=cell.cell_id, level=LEVEL, resamples=RESAMPLES
        )
        return summary.snapshot_fields(), per_query_parts([outcome])

    (old, old_parts), (new, new_parts) = fields(base), fields(run)
    fallback = functools.partial(_overlap_one, old, new)
    paired = compare_paired(
        old["scores"],
        new["scores"],
        old_parts,
        new_parts,
        specs,
        alpha=PAIRED_ALPHA,
        fallback=fallback,
        fallback_name="overlap",
    )
    got = {
        "tolerance": bool(compare(old["scores"], new["scores"], specs)),
        "ci": bool(compare_ci(old["scores"], new["scores"], new["ci"], specs)),
        "overlap": bool(_overlap_all(old, new, specs)),
        f"paired@{PAIRED_ALPHA:g}": bool(paired),
    }
    scores = np.asarray(
        [[new["scores"][m] if new["scores"][m] is not None else np.nan] for m in GATED], dtype=float
    )
    return got, Runs(np.empty(0), np.empty(0), scores, np.empty(0))


def _overlap_all(
    old: dict[str, Any], new: dict[str, Any], specs: Sequence[MetricSpec]
) -> list[Any]:
    return compare_overlap(old["scores"], new["scores"], new["ci"], old["ci"], specs)


def _overlap_one(old: dict[str, Any], new: dict[str, Any], spec: MetricSpec) -> list[Any]:
    return _overlap_all(old, new, (spec,))


def measure_cell(
    job: tuple[str, Any],
    n: int,
    p: float,
    baselines: int,
    reruns: int,
    alphas: Sequence[float],
    checks: int,
    power_reruns: int = 0,
) -> dict[str, Any]:
    """One cell: per baseline and rule, the false-alarm rate and the powers."""
    _patch()
    specs = metric_specs("planning")
    started = time.perf_counter()
    cell = build_cell(job[0], job[1], n)
    rng = np.random.default_rng([n, *cell.cell_id.encode()])
    good = cell.probabilities(p)
    regressed: dict[str, Array | None] = {}
    for kind, metric, target in (("emr", "emr", -0.2), ("cost", "cost_gap", 2.0)):
        regressed[kind] = _regressed(cell, p, metric, target)
    out: dict[str, Any] = {"cell": cell.cell_id, "n": n, "leaves": len(cell.records)}
    out["reachable"] = {k: w is not None for k, w in regressed.items()}
    rates: dict[str, dict[str, list[float]]] = {k: {} for k in ("alarm", "emr", "cost")}
    screened: list[tuple[Runs, Runs, tuple[int, int, float]]] = []
    mismatches = 0
    base_leaves = cell.draw(good, rng, baselines)
    bases = runs_of(cell, base_leaves)
    for kind, prob in (("alarm", good), ("emr", regressed["emr"]), ("cost", regressed["cost"])):
        if prob is None:
            continue
        each = reruns if kind == "alarm" else power_reruns or reruns
        owner = np.repeat(np.arange(baselines), each)  # rerun i is gated against owner[i]
        base = bases.take(owner)
        leaves = cell.draw(prob, rng, len(owner))
        new = runs_of(cell, leaves)
        fails, skipped, p_values = decide(base, new, specs, alphas)
        for rule, row in fails.items():
            rates[kind][rule] = [float(v) for v in row.reshape(baselines, each).mean(axis=1)]
        picked = random.Random(kind).sample(skipped, min(20, len(skipped)))
        screened += [(base, new, item) for item in picked]
        for j in range(min(checks, each)):
            got, suite = _suite_decisions(cell, base_leaves[owner[j]], leaves[j], specs)
            same_scores = np.allclose(suite.scores[:, 0], new.scores[:, j], equal_nan=True)
            mismatches += (not same_scores) + sum(
                got[r] != bool(fails[r][j]) for r in got if r in fails
            )
            mismatches += _p_mismatches(base, new, j, p_values, skipped, specs)
    out["rates"] = rates
    out["mismatches"] = mismatches
    out["screen"] = _check_screen(screened, specs, alphas)
    out["seconds"] = time.perf_counter() - started
    print(f"  {cell.cell_id} n={n}: {out['seconds']:.0f} s", file=sys.stderr, flush=True)
    return out


def _p_mismatches(
    base: Runs,
    new: Runs,
    j: int,
    p: Array,
    skipped: list[tuple[int, int, float]],
    specs: Sequence[MetricSpec],
) -> int:
    """Run ``j``'s computed p-values that differ from :func:`paired_p_value`'s."""
    screened = {(k, i) for k, i, _ in skipped}
    bad = 0
    for k, spec in enumerate(specs):
        if p[k, j] == 1.0 and (k, j) not in screened:
            continue  # not past the tolerance: not tested
        if (k, j) in screened:
            continue
        kept = (base.num[k, j], base.den[k, j])
        true = paired_p_value(kept, (new.num[k, j], new.den[k, j]), spec.direction) or 1.0
        bad += not math.isclose(true, p[k, j], rel_tol=1e-9)
    return bad


def _regressed(cell: Cell, p: float, metric: str, target: float) -> Array | None:
    """Leaf probabilities of the agent with ``p`` lowered (bisection on the share taken
    off) until its expected ``metric`` moves by ``target``; ``None`` when out of reach."""
    base = cell.expected(cell.probabilities(p), metric)
    top = cell.expected(cell.probabilities(0.0), metric)
    if not (math.isfinite(base) and math.isfinite(top)) or abs(top - base) < abs(target):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        value = cell.expected(cell.probabilities(p * (1 - mid)), metric)
        if math.isfinite(value) and (value - base) * (1 if target > 0 else -1) >= abs(target):
            hi = mid
        else:
            lo = mid
    return cell.probabilities(p * (1 - hi))


def _check_screen(
    items: list[tuple[Runs, Runs, tuple[int, int, float]]],
    specs: Sequence[MetricSpec],
    alphas: Sequence[float],
) -> list[int]:
    """[checked, mismatched]: screened p-values recomputed by the exact test; a mismatch
    is a level in ``alphas`` on which the screen's decision differs."""
    bad = 0
    for base, new, (k, j, z) in items:
        kept = (base.num[k, j], base.den[k, j])
        true = paired_p_value(kept, (new.num[k, j], new.den[k, j]), specs[k].direction) or 1.0
        guess = 1.0 if z < Z_LOW else 1 / (1 + DRAWS)
        bad += any((true < a) != (guess < a) for a in alphas)
    return [len(items), bad]


def clopper_pearson(hits: int, trials: int, side: str) -> float:
    """The one-sided 97.5% Clopper-Pearson bound of a binomial rate (bisection on the CDF)."""

    def cdf(k: int, q: float) -> float:  # P(X <= k), X ~ Bin(trials, q)
        if q <= 0:
            return 1.0
        if q >= 1:
            return 1.0 if k >= trials else 0.0
        logs = [
            math.lgamma(trials + 1)
            - math.lgamma(i + 1)
            - math.lgamma(trials - i + 1)
            + i * math.log(q)
            + (trials - i) * math.log1p(-q)
            for i in range(k + 1)
        ]
        top = max(logs)
        return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))

    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if side == "upper":  # smallest q with P(X <= hits) <= 0.025
            lo, hi = (lo, mid) if cdf(hits, mid) <= 0.025 else (mid, hi)
        else:  # largest q with P(X >= hits) <= 0.025
            lo, hi = (lo, mid) if hits == 0 or 1 - cdf(hits - 1, mid) > 0.025 else (mid, hi)
    return hi if side == "upper" else lo


def summarise(
    cells: list[dict[str, Any]], baselines: int, reruns: int, power_reruns: int
) -> list[dict[str, Any]]:
    rules = list(cells[0]["rates"]["alarm"])
    rows = []
    trials = baselines * reruns
    for rule in rules:
        fa = {c["cell"]: float(np.mean(c["rates"]["alarm"][rule])) for c in cells}
        single = max((max(c["rates"]["alarm"][rule]), c["cell"]) for c in cells)
        worst = max(fa, key=lambda k: fa[k])
        row: dict[str, Any] = {
            "rule": rule,
            "fa_mean": float(np.mean(list(fa.values()))),
            "fa_worst": fa[worst],
            "fa_worst_cell": worst,
            "fa_worst_upper": clopper_pearson(round(fa[worst] * trials), trials, "upper"),
            "fa_single_baseline": single[0],
            "fa_single_cell": single[1],
        }
        for kind in ("emr", "cost"):
            pw = {
                c["cell"]: float(np.mean(c["rates"][kind][rule]))
                for c in cells
                if c["reachable"][kind]
            }
            if not pw:
                continue
            weakest = min(pw, key=lambda k: pw[k])
            row[kind] = {
                "mean": float(np.mean(list(pw.values()))),
                "worst": pw[weakest],
                "worst_cell": weakest,
                "worst_lower": clopper_pearson(
                    round(pw[weakest] * baselines * power_reruns), baselines * power_reruns, "lower"
                ),
                "cells": len(pw),
            }
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", default="200", help="queries per task, comma list")
    parser.add_argument("--baselines", type=int, default=50, help="baselines per cell")
    parser.add_argument("--reruns", type=int, default=40, help="reruns per baseline")
    parser.add_argument(
        "--power-reruns", type=int, default=4, help="reruns of each regressed agent per baseline"
    )
    parser.add_argument("--p", type=float, default=0.8, help="the agent's P(ground truth)")
    parser.add_argument("--workers", type=int, default=2, help="processes (cells in parallel)")
    parser.add_argument("--alphas", default=DEFAULT_ALPHAS, help="levels of the paired rule")
    parser.add_argument(
        "--checks",
        type=int,
        default=3,
        help="runs per cell and kind also gated by the suite's own code",
    )
    parser.add_argument("--cells", default="", help="comma list of cell ids (default: all 30)")
    parser.add_argument("--json", default="", help="write the per-cell rates to this file")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    if PAIRED_ALPHA not in alphas:
        alphas.append(PAIRED_ALPHA)
    jobs = [(task, s) for task in TASKS for s in parse_scenarios(DEFAULT_SCENARIOS)]
    if args.cells:
        wanted = {c.strip() for c in args.cells.split(",")}
        jobs = [j for j in jobs if f"{j[0]}-{j[1].id}" in wanted]
    report: dict[str, Any] = {"args": vars(args), "queries": {}}
    for n in [int(q) for q in args.queries.split(",")]:
        start = time.perf_counter()
        work = functools.partial(
            measure_cell,
            n=n,
            p=args.p,
            baselines=args.baselines,
            reruns=args.reruns,
            alphas=alphas,
            checks=args.checks,
            power_reruns=args.power_reruns,
        )
        with multiprocessing.Pool(args.workers) as pool:
            cells = pool.map(work, jobs, chunksize=1)
        took = time.perf_counter() - start
        rows = summarise(cells, args.baselines, args.reruns, args.power_reruns)
        screen = np.sum([c["screen"] for c in cells], axis=0)
        report["queries"][n] = {"rows": rows, "cells": cells, "seconds": took}
        unreachable = [c["cell"] for c in cells if not c["reachable"]["cost"]]
        print(
            f"\nqueries/task={n} baselines={args.baselines} reruns={args.reruns} "
            f"power reruns={args.power_reruns} p={args.p} "
            f"cells={len(cells)} episodes={sum(c['leaves'] for c in cells)} ({took:.0f} s); "
            f"self-check mismatches {sum(c['mismatches'] for c in cells)}; screen mismatches "
            f"{screen[1]} of {screen[0]} checked; "
            f"cost +2 out of reach in {len(unreachable)} cells; "
            f"EMR -20 out of reach in {sum(not c['reachable']['emr'] for c in cells)}"
        )
        print(
            "| rule | false alarms: mean / worst cell (95% upper) / worst single baseline | "
            "power EMR -20: mean / worst (95% lower) | power cost +2: mean / worst (95% lower) |"
        )
        print("|---|---|---|---|")
        for r in rows:
            cols = [
                f"{r['fa_mean']:.4f} / {r['fa_worst']:.4f} ({r['fa_worst_upper']:.4f}) / "
                f"{r['fa_single_baseline']:.3f}"
            ]
            for kind in ("emr", "cost"):
                k = r.get(kind)
                cols.append(
                    "-"
                    if k is None
                    else f"{k['mean']:.3f} / {k['worst']:.3f} ({k['worst_lower']:.3f}) "
                    f"[{k['cells']} cells]"
                )
            print(f"| {r['rule']} | " + " | ".join(cols) + " |")
        for r in rows:
            print(
                f"  {r['rule']}: worst FA {r['fa_worst_cell']}, single {r['fa_single_cell']}; "
                + "; ".join(f"weakest {k} {r[k]['worst_cell']}" for k in ("emr", "cost") if k in r)
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, default=str)


if __name__ == "__main__":
    main()
