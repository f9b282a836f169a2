"""False alarms per *run* and power per suite of the default gate, for noisy agents (issue 30).

A user sees a red run, not a red cell.  This script plays the default run of all three
suites (every cell together) many times with agents that answer like an LLM at temperature
> 0, and gates every rerun against a recorded baseline with the shipped rule
(:mod:`pytest_budget._stats.run_gate`: per-unit changes, the sign-flip test with Hoeffding's bound,
half the run's 1% split over the gated (cell, metric) pairs, half over the pooled (cell
kind, metric) tests).

**Noise models** (an LLM at temperature > 0: the same prompt, another sample each run).
Planning and awareness, *item-response Bernoulli*: each unit (planning query, awareness
probe) has its own probability that the agent gets it right, fixed for the agent (its
policy), drawn once from Beta(0.5, 0.5); each run draws every unit's outcome afresh.
Sized from something real: the issue's gpt-4o-mini estimator on sokoban-6x6 hit 0.18 /
0.36 / 0.27 of its 11 probes in three repeats (sd 0.09, i.e. 11 * 0.09**2 = 0.089 of
run-to-run variance per probe); Beta(0.5, 0.5) averages 0.125, a little noisier (a harder
test for false alarms).  Triage, *plan flips*: the planner's policy has a modal plan, and
each run each item's decision leaves it with probability ``--triage-flip`` (default 0.10:
the two-point model whose per-unit variance f(1 - f) equals those repeats' 0.089; no live
triage planner was repeated).  The flip rate of the test suite's noisy planner (cheapest
first, each key scaled by exp(N(0, 0.5)), on 30 items of 100 to 2,000 tokens at half the
tokens' sum) is 0.22.

What each suite's units carry (per unit: numerator, denominator of the score):

* planning, per query: ``emr`` (exact match, 0/1 over 1), ``cost_gap`` (the query's own
  gap, 0.5 to 3 cost units when not exact, over 1), ``aned`` (0 when exact, else the
  query's own distance, over 1), ``uihr`` (its own Bernoulli, over 1), ``itur`` (invalid
  calls of the episode's calls);
* triage, per pool item of 30 (a third unsolvable): the earned value (0/1) over ``gap / n``
  for ``eta_u`` / ``eta_e`` (``gap = V_oracle - V_random``, 6 items' worth), minus it over
  ``V_oracle / n`` for the regrets, ``detection`` (an unsolvable item left out, over the
  unsolvable items), ``waste`` (tokens on an unsolvable item over all allocated tokens);
* awareness, per probe (half infeasible): the answered class (interval / impossible) drawn
  right with the probe's probability, ``macro_f1_all`` and ``fail_f1`` as ratio sums, and
  ``interval_score`` (S_k in [0, 1]: the probe's own mean plus noise, over the probes of
  successful rollouts) and ``invalid_rate`` (2% unreadable answers).

**Effects**: the issue's examples, planning EMR -0.10 (adjacent models in CostBench's
Table 4), triage ``eta_u`` -0.10, awareness ``macro_f1_all`` -0.05 and ``interval_score``
-0.05, and ``--multiples`` of them: what the gate detects at >= 90% power is read off the
rows.  A regression moves each unit's probability by the same logit shift, found by
bisection so the expected score drops by the effect.

**Sizes** (``--sizes``): ``default`` and ``paper`` as shipped (:mod:`pytest_budget._core.sizes`:
queries per task, rollouts per environment as a share of 128; planning cells padded to the
largest task's count), ``today`` the sizes before issue 30 (600 queries per task, 128
rollouts).  Triage is 16 cells of 30 items at every size.  Calls per run count the model
calls the evaluated roles make: planning 6 per query episode, awareness one estimator
call per probe, triage one planner call per cell.

**Sequential as wired** (``--designs wired``, what the suites run under
``--budget-sequential``, :mod:`pytest_budget._stats.sequential`): every planning and awareness cell
runs its own units in ``--looks`` batches (bounds on the cell's own size, as the suites
do) and stops on its own data (a metric regressed at its look's share of the cell's level;
every stated metric "no regression" from look 2; or its full size); the suite's pooled
test is the e-process over the units run, in canonical order, with ``lam`` matched to its
level (``--pooled mixture``: the previous design's half-normal mixture on unscaled changes, to
measure against).  Triage runs whole.  ``--futility-from`` and ``--futility-effect``
measure the futility stop's levers.  ``--designs wired --only none`` prints each suite's
share of its calls for an unchanged agent (the forecast's expected share).

**Sequential, run-level looks** (``--designs seq``; not what pytest runs: it needs every
cell's batch before any look): every cell runs its units in ``--looks`` equal batches;
after each batch the run's pooled tests (and the cells' own) are decided by
:class:`pytest_budget._stats.run_gate.SequentialRule` (alpha spent over the looks, a futility stop
when the data rule out the stated effect, at most 5% power spent on it).  A suite stops as
soon as one of its metrics is ``regressed`` or all are ``no regression``; calls are counted
for the batches run.  Triage plans each cell in one call, so it always runs whole.

Every run-level number is over ``--baselines`` x ``--reruns`` runs (each baseline a fresh
draw of the agent, as a user would record it).  Run::

    nice -n 10 python benchmarks/bench_gate_runs.py --sizes default,paper --multiples 1,1.5,2,3,5
    nice -n 10 python benchmarks/bench_gate_runs.py --sizes default --designs fixed,wired \
        --multiples 1,1.5,2,3,5 --baselines 40

Prints one row per size, design and agent, then the rows again as a Markdown table.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_budget._core.sizes import COSTBENCH_TEST_SPLIT, SIZES
from pytest_budget._stats import sequential
from pytest_budget._stats.run_gate import (
    RUN_ALPHA,
    SequentialRule,
    cell_alpha,
    pooled_alpha,
    unit_changes,
)
from pytest_budget._stats.sequential import STATED_EFFECTS, batch_bounds, log_e_path, pooled_lambda

Array = npt.NDArray[np.float64]
#: Per metric, the units' numerators and denominators.
Parts = dict[str, tuple[Array, Array]]

#: Per suite: the gated metrics and their direction (as the suites register them).
METRICS: dict[str, dict[str, str]] = {
    "planning": {
        "emr": "higher", "aned": "lower", "cost_gap": "lower", "uihr": "higher", "itur": "lower",
    },
    "triage": {
        "eta_u": "higher", "eta_e": "higher", "regret_u": "lower", "regret_e": "lower",
        "detection": "higher", "waste": "lower",
    },
    "awareness": {
        "macro_f1_all": "higher", "fail_f1": "higher", "interval_score": "higher",
        "invalid_rate": "lower",
    },
}  # fmt: skip
#: The stated effects (metric, change of the score, worse side), per suite.
EFFECTS: dict[str, list[tuple[str, float]]] = {
    "planning": [("emr", 0.10)],
    "triage": [("eta_u", 0.10)],
    "awareness": [("macro_f1_all", 0.05), ("interval_score", 0.05)],
}
#: Futility: the effect each metric's "no regression of the stated size" refers to (the
#: stated effect where one is stated, else 0.10).
FUTILITY = {metric: effect for effects in EFFECTS.values() for metric, effect in effects}
AWARE_PROBES = {
    "search": 322,
    "sokoban-6x6": 444,
    "sokoban-8x8": 584,
    "swe": 512,
    "warehouse": 1280,
}
PLANNING_CALLS_PER_QUERY = 6
#: Probability that a triage plan's decision on an item leaves the policy's modal decision
#: in one run (the plan-flip model, module docstring).
TRIAGE_FLIP = 0.10


@dataclass
class Suite:
    """One suite's cells: the units' fixed propensities and how a run turns into parts."""

    name: str
    cells: int
    units: int  # per cell
    calls_per_unit: float
    fixed_calls: float  # calls not split into batches (triage: one plan per cell)
    draw: Callable[[np.random.Generator, int, dict[str, float]], dict[str, tuple[Array, Array]]]
    real_units: int = 0  # all cells' units (awareness pads its environments to one width)
    real_mask: Array | None = None  # cells x units: 1 where a unit is real, 0 for padding

    def __post_init__(self) -> None:
        self.real_units = self.real_units or self.cells * self.units
        if self.real_mask is None:
            self.real_mask = np.ones((self.cells, self.units))


def _logit_shift(p: Array, shift: float) -> Array:
    with np.errstate(divide="ignore"):
        z = np.log(p) - np.log1p(-p)
    out: Array = 1.0 / (1.0 + np.exp(-(z + shift)))
    return out


def _shift_for(p: Array, drop: float, weight: Array | None = None) -> float:
    """The logit shift lowering the (weighted) mean of ``p`` by ``drop``."""
    w = np.ones_like(p) if weight is None else weight
    target = float((p * w).sum() / w.sum()) - drop
    lo, hi = -20.0, 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if float((_logit_shift(p, mid) * w).sum() / w.sum()) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def planning_suite(rng: np.random.Generator, counts: list[int]) -> Suite:
    """Planning's 30 cells (6 tasks x 5 scenarios), ``counts[t]`` queries per task ``t``;
    cells are padded to the largest count (pad units weigh nothing in any score)."""
    scenarios = 5
    cells, queries = len(counts) * scenarios, max(counts)
    real = np.zeros((cells, queries))
    for c in range(cells):
        real[c, : counts[c // scenarios]] = 1.0
    p = rng.beta(0.5, 0.5, (cells, queries))
    dist = rng.uniform(0.2, 0.9, (cells, queries))
    gap = rng.uniform(0.5, 3.0, (cells, queries))
    hit = rng.beta(0.5, 0.5, (cells, queries))
    steps = rng.integers(2, 9, (cells, queries)).astype(np.float64)
    bad = rng.beta(0.5, 4.0, (cells, queries))

    def draw(
        g: np.random.Generator, runs: int, effect: dict[str, float]
    ) -> dict[str, tuple[Array, Array]]:
        q = p if "emr" not in effect else _logit_shift(p, _shift_for(p, effect["emr"], real))
        shape = (runs, cells, queries)
        good = (g.random(shape) < q) * real
        one = np.ones(shape) * real
        calls = steps * one
        invalid = g.binomial(steps.astype(np.int64), bad, shape).astype(np.float64) * real
        return {
            "emr": (good, one),
            "aned": (np.where(good > 0, 0.0, dist) * real, one),
            "cost_gap": (np.where(good > 0, 0.0, gap) * real, one),
            "uihr": ((g.random(shape) < hit) * real, one),
            "itur": (invalid, calls),
        }

    return Suite(
        "planning", cells, queries, PLANNING_CALLS_PER_QUERY, 0.0, draw,
        real_units=int(real.sum()), real_mask=real,
    )  # fmt: skip


def triage_suite(rng: np.random.Generator, flip: float) -> Suite:
    """16 triage cells of 30 pool items, a third unsolvable.  The planner's policy has a
    modal plan (each solvable item in it with probability 0.6, each unsolvable one left
    out with probability 0.5, fixed for the agent); every run each item's decision leaves
    the modal one with probability ``flip`` (the plan-flip model, module docstring)."""
    cells, n = 16, 30
    unsolvable = np.zeros((cells, n))
    unsolvable[:, :10] = 1.0
    solvable = 1.0 - unsolvable
    planned = rng.random((cells, n)) < 0.6
    p = np.where(unsolvable > 0, 0.0, np.where(planned, 1.0 - flip, flip))
    keep_out = np.where(rng.random((cells, n)) < 0.5, 1.0 - flip, flip)
    tokens = rng.integers(100, 2000, (cells, n)).astype(np.float64)
    gap, oracle = 6.0, 12.0

    def draw(
        g: np.random.Generator, runs: int, effect: dict[str, float]
    ) -> dict[str, tuple[Array, Array]]:
        q = p
        if "eta_u" in effect:  # eta_u = (V - V_random) / gap: V drops by effect * gap
            drop = effect["eta_u"] * gap / float(solvable.sum(axis=1).mean())
            q = np.where(solvable > 0, _logit_shift(p, _shift_for(p, drop, solvable)), 0.0)
        shape = (runs, cells, n)
        earned_u = (g.random(shape) < q).astype(np.float64)  # a planned solvable item
        earned_e = earned_u * (g.random(shape) < 0.9)
        left_out = unsolvable * (g.random(shape) < keep_out)
        alloc = np.where(unsolvable * (1 - left_out) + earned_u > 0, tokens, 0.0)
        one = np.ones(shape)
        return {
            "eta_u": (earned_u, gap / n * one),
            "eta_e": (earned_e, gap / n * one),
            "regret_u": (-earned_u, oracle / n * one),
            "regret_e": (-earned_e, oracle / n * one),
            "detection": (left_out, unsolvable * one),
            "waste": (alloc * unsolvable, alloc),
        }

    return Suite("triage", cells, n, 0.0, 1.0, draw)


def awareness_suite(rng: np.random.Generator, scale: float) -> Suite:
    # One array over all environments' probes, padded to the largest (pad units are zeros).
    sizes = [max(8, round(v * scale)) for v in AWARE_PROBES.values()]
    cells, n = len(sizes), max(sizes)
    real = np.zeros((cells, n))
    for c, size in enumerate(sizes):
        real[c, :size] = 1.0
    feasible = (rng.random((cells, n)) < 0.5).astype(np.float64)
    p = rng.beta(0.5, 0.5, (cells, n))
    s_mean = rng.beta(1.0, 3.0, (cells, n))
    success = feasible * (rng.random((cells, n)) < 0.8)

    def draw(
        g: np.random.Generator, runs: int, effect: dict[str, float]
    ) -> dict[str, tuple[Array, Array]]:
        q = p
        if "macro_f1_all" in effect:  # the share of right classes drops by about the effect
            q = _logit_shift(p, _shift_for(p, effect["macro_f1_all"], real))
        shape = (runs, cells, n)
        right = g.random(shape) < q
        invalid = (g.random(shape) < 0.02) * real
        valid = real - invalid
        interval = valid * np.where(feasible > 0, right, ~right)
        impossible = valid - interval
        s_shift = effect.get("interval_score", 0.0)
        s_k = np.clip(s_mean - s_shift + g.normal(0.0, 0.15, shape), 0.0, 1.0) * interval * success
        one = np.ones(shape)
        return {
            "macro_f1_all": (2 * feasible * interval, interval + feasible * real),
            "macro_f1_all.2": (2 * (1 - feasible) * impossible, impossible + (1 - feasible) * real),
            "fail_f1": (2 * (1 - feasible) * impossible, impossible + (1 - feasible) * real),
            "interval_score": (s_k, success * real * one),
            "invalid_rate": (invalid, real * one),
        }

    return Suite("awareness", cells, n, 1.0, 0.0, draw, real_units=sum(sizes), real_mask=real)


def changes(
    stored: dict[str, tuple[Array, Array]],
    new: dict[str, tuple[Array, Array]],
    metric: str,
    direction: str,
    upto: int,
) -> Array:
    """Per run, cell and unit: :func:`unit_changes` on the first ``upto`` units, for arrays
    (runs x cells x units; the stored side broadcasts)."""
    names = [m for m in (metric, f"{metric}.2") if m in new]
    total: Array | None = None
    for name in names:
        sn, sd = (x[..., :upto] for x in stored[name])
        nn, nd = (x[..., :upto] for x in new[name])
        both = sd.sum(axis=-1, keepdims=True) + nd.sum(axis=-1, keepdims=True)
        ratio = np.where(
            both > 0,
            (sn.sum(-1, keepdims=True) + nn.sum(-1, keepdims=True)) / np.where(both > 0, both, 1),
            0.0,
        )
        part = np.where(
            both > 0, ((nn - sn) - ratio * (nd - sd)) / np.where(both > 0, both / 2, 1), 0.0
        )
        total = part if total is None else total + part
    assert total is not None
    sign = -1.0 if direction == "higher" else 1.0
    out: Array = sign * total / len(names)
    return out


@dataclass
class Outcome:
    red: npt.NDArray[np.bool_]  # per run
    calls: Array  # per run


def gate_suite(
    suite: Suite,
    stored: dict[str, tuple[Array, Array]],
    new: dict[str, tuple[Array, Array]],
    cell_level: float,
    pooled_level: float,
    looks: int,
) -> Outcome:
    """Red runs and calls of one suite under the fixed-size (``looks=1``) or sequential
    design."""
    runs = next(iter(new.values()))[0].shape[0]
    red = np.zeros(runs, dtype=np.bool_)
    done = np.zeros(runs, dtype=np.bool_)
    units_run = np.full(runs, suite.units, dtype=np.float64)
    batched = suite.calls_per_unit > 0 and looks > 1
    k_looks = looks if batched else 1
    for k in range(1, k_looks + 1):
        upto = math.ceil(suite.units * k / k_looks)
        all_clear = np.ones(runs, dtype=np.bool_)
        hit = np.zeros(runs, dtype=np.bool_)
        for metric, direction in METRICS[suite.name].items():
            pooled_rule = SequentialRule(k_looks, pooled_level, FUTILITY.get(metric, 0.10))
            cell_rule = SequentialRule(k_looks, cell_level, FUTILITY.get(metric, 0.10))
            d = changes(stored, new, metric, direction, upto)  # runs x cells x units
            s_cell, v_cell = d.sum(-1), (d * d).sum(-1)
            cell = np.stack(
                [cell_rule.decide_many(k, s_cell[:, c], v_cell[:, c]) for c in range(suite.cells)],
                1,
            )
            pooled = pooled_rule.decide_many(k, s_cell.sum(1), v_cell.sum(1), suite.cells)
            hit |= (pooled == 1) | (cell == 1).any(1)
            all_clear &= pooled == -1
        newly = ~done & (hit | all_clear | (k == k_looks))
        red |= ~done & hit
        units_run = np.where(newly, upto, units_run)
        done |= newly
    share = units_run / suite.units
    calls = share * suite.real_units * suite.calls_per_unit + suite.fixed_calls * suite.cells
    return Outcome(red, calls)


def gate_suite_wired(
    suite: Suite, stored: Parts, new: Parts, cell_level: float, pooled_level: float, looks: int
) -> Outcome:
    """Red runs and calls of one suite under the sequential gate *as wired* into the suites
    (:mod:`pytest_budget._stats.sequential`): every cell looks at its own batches only (bounds on
    its own units) and stops on its own data (any metric regressed, or every stated metric
    "no regression", or its maximum size); the suite's pooled test is the e-process over
    the units run, in canonical order (cell, batch), each batch's changes computed on its
    cell's prefix and scaled by the prefix's share of the cell (``batch_changes``)."""
    if suite.calls_per_unit == 0 or looks == 1:
        # Triage plans a cell in one call: it runs whole, and so its pooled test is the
        # sign-flip test (the suites send no batches for it).
        return gate_suite(suite, stored, new, cell_level, pooled_level, 1)
    runs = next(iter(new.values()))[0].shape[0]
    metrics = METRICS[suite.name]
    stated = [m for m in metrics if m in STATED_EFFECTS] or list(metrics)
    assert suite.real_mask is not None
    red = np.zeros(runs, dtype=np.bool_)
    calls = np.full(runs, suite.fixed_calls * suite.cells)
    pooled: dict[str, list[Array]] = {m: [] for m in metrics}  # per cell: runs x units
    predicted = {m: np.zeros(runs) for m in metrics}
    first = {m: np.zeros(runs) for m in metrics}
    for c in range(suite.cells):
        size = int(suite.real_mask[c].sum())
        bounds = batch_bounds(size, looks)
        k_looks = len(bounds)
        mine_s = {k: (v[0][c, :size], v[1][c, :size]) for k, v in stored.items()}
        mine_n = {k: (v[0][:, c, :size], v[1][:, c, :size]) for k, v in new.items()}
        done = np.zeros(runs, dtype=np.bool_)
        stop = np.full(runs, k_looks)
        parts: dict[str, list[Array]] = {m: [] for m in metrics}
        lo = 0
        for k, upto in enumerate(bounds, start=1):
            hit = np.zeros(runs, dtype=np.bool_)
            clear = np.ones(runs, dtype=np.bool_)
            for metric, direction in metrics.items():
                d = changes(mine_s, mine_n, metric, direction, upto)  # runs x units
                scale = 1.0 if POOLED[0] == "mixture" else upto / size
                parts[metric].append(d[:, lo:upto] * scale)
                rule = sequential.cell_rule(k_looks, cell_level, metric)
                decision = rule.decide_many(k, d.sum(-1), (d * d).sum(-1))
                hit |= decision == 1
                if metric in stated:
                    clear &= decision == -1
            newly = ~done & (hit | clear | (k == k_looks))
            red |= ~done & hit
            stop = np.where(newly, k, stop)
            done |= newly
            lo = upto
        for metric in metrics:
            ran = [p * (stop >= b)[:, None] for b, p in enumerate(parts[metric], start=1)]
            pooled[metric].append(np.concatenate(ran, axis=-1))
            head = parts[metric][0]
            predicted[metric] += (head * head).sum(-1) * size / bounds[0]
            first[metric] += (head * head).sum(-1)
        calls += np.array(bounds)[stop - 1] * suite.calls_per_unit
    threshold = math.log(1 / pooled_level)
    for metric in metrics:
        x = np.concatenate(pooled[metric], axis=-1)  # cell by cell, batch by batch
        if POOLED[0] == "mixture":  # the previous design's: rho = 0.1 x the first batches' squares
            rho = 0.1 * first[metric][:, None]
            log_e = mixture_log_e(np.cumsum(x, 1), np.cumsum(x * x, 1), rho)
        else:
            log_e = log_e_path(x, pooled_lambda(predicted[metric], pooled_level)[:, None])
        red |= (log_e > threshold).any(1) & (predicted[metric] > 0)
    return Outcome(red, calls)


#: The pooled e-process of ``--designs wired``: ``matched`` (shipped) or ``mixture``.
POOLED = ["matched"]


def mixture_log_e(s: Array, v: Array, rho: Array) -> Array:
    """The previous pooled e-process, kept to measure against: the half-normal mixture of
    ``exp(lam s - lam**2 v / 2)`` of precision ``rho`` (closed form), on unscaled changes."""
    w = v + np.maximum(rho, 1e-300)
    z = np.maximum(s, 0.0) / np.sqrt(w)
    phi = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    out: Array = math.log(2.0) + 0.5 * np.log(np.maximum(rho, 1e-300) / w) + z * z / 2
    return out + np.log(phi)


def clopper_upper(hits: int, trials: int) -> float:
    """One-sided 95% upper bound of a binomial rate (bisection on the binomial tail)."""
    if hits >= trials:
        return 1.0
    lo, hi = hits / trials, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        tail = sum(
            math.comb(trials, i) * mid**i * (1 - mid) ** (trials - i) for i in range(hits + 1)
        )
        if tail > 0.05:
            lo = mid
        else:
            hi = mid
    return hi


def self_check(rng: np.random.Generator, suite: Suite) -> None:
    """The array version of the per-unit changes equals :func:`unit_changes`."""
    stored = suite.draw(rng, 1, {})
    new = suite.draw(rng, 2, {})
    for metric, direction in METRICS[suite.name].items():
        d = changes(
            {k: (v[0][0], v[1][0]) for k, v in stored.items()}, new, metric, direction, suite.units
        )
        names = [m for m in (metric, f"{metric}.2") if m in new]
        for c in range(min(3, suite.cells)):
            ref = unit_changes(
                [(stored[m][0][0, c], stored[m][1][0, c]) for m in names],
                [
                    (new[m][0][1, c], new[m][1][0 if new[m][1].shape[0] == 1 else 1, c])
                    for m in names
                ],
                direction,  # type: ignore[arg-type]
            )
            if ref is not None and not np.allclose(ref, d[1, c]):
                raise SystemExit(f"self-check failed: {suite.name} {metric} cell {c}")


def size_counts(size: str) -> tuple[list[int], float]:
    """Planning queries per task (the six tasks) and awareness's share of 128 rollouts per
    environment, for a shipped size (:mod:`pytest_budget._core.sizes`) or ``today`` (before
    issue 30: 600 queries per task, 128 rollouts)."""
    if size == "today":
        return [600] * 6, 1.0
    run = SIZES[size]
    counts = [run.task_query_counts.get(t, run.query_count) for t in COSTBENCH_TEST_SPLIT]
    return counts, run.rollout_count / 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="default,paper", help="default, paper, today")
    parser.add_argument(
        "--triage-flip", type=float, default=TRIAGE_FLIP, help="plan-flip rate of a triage item"
    )
    parser.add_argument("--baselines", type=int, default=10)
    parser.add_argument("--reruns", type=int, default=30)
    parser.add_argument("--looks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=20_261_128)
    parser.add_argument(
        "--multiples", default="1,1.5,2,3", help="power also at these multiples of each effect"
    )
    parser.add_argument("--only", default="", help="regressed agents of these suites only")
    parser.add_argument(
        "--designs",
        default="fixed,wired",
        help="fixed; wired (the sequential gate as the suites run it: per-cell looks, pooled "
        "e-process); seq (run-level looks over every cell together: not what pytest runs)",
    )
    parser.add_argument(
        "--pooled",
        default="matched",
        choices=("matched", "mixture"),
        help="the wired design's pooled e-process: matched (lam matched to the level, "
        "shipped) or mixture (the previous design's half-normal mixture on unscaled changes)",
    )
    parser.add_argument(
        "--futility-from",
        type=int,
        default=sequential.FUTILITY_FROM,
        help="the first look that may stop a cell for futility (shipped: "
        f"{sequential.FUTILITY_FROM}; more than --looks: never)",
    )
    parser.add_argument(
        "--futility-effect",
        default="",
        metavar="METRIC=EFFECT,...",
        help="override stated effects of the futility stop (sequential.STATED_EFFECTS)",
    )
    args = parser.parse_args()
    POOLED[0] = args.pooled
    for item in filter(None, args.futility_effect.split(",")):
        metric, _, value = item.partition("=")
        sequential.STATED_EFFECTS[metric] = float(value)
    sequential.FUTILITY_FROM = args.futility_from
    rng = np.random.default_rng(args.seed)
    print(
        f"run level {RUN_ALPHA:g}; {args.baselines} baselines x {args.reruns} reruns = "
        f"{args.baselines * args.reruns} runs per row; sequential: {args.looks} looks"
    )
    header = (
        "size   design      agent                          red runs  95% upper  calls mean"
        "  calls max"
    )
    rows = ["| size | design | agent | red runs | 95% upper | calls mean | calls max |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for size in args.sizes.split(","):
        counts, scale = size_counts(size)
        suites = [
            planning_suite(rng, counts),
            triage_suite(rng, args.triage_flip),
            awareness_suite(rng, scale),
        ]
        for suite in suites:
            self_check(rng, suite)
        pairs = sum(s.cells * len(METRICS[s.name]) for s in suites)
        kinds = sum(len(METRICS[s.name]) for s in suites)
        cell_level, pooled_level = cell_alpha(pairs), pooled_alpha(kinds)
        units = ", ".join(f"{s.name} {s.cells}x{s.units}" for s in suites)
        print(f"\n[{size}] cells x units: {units}; {pairs} gated pairs "
              f"(cell level {cell_level:.2g}), "
              f"{kinds} pooled pairs (level {pooled_level:.2g})")  # fmt: skip
        print(header)
        agents: list[tuple[str, str | None, dict[str, float]]] = [("unchanged", None, {})]
        for name, effects in EFFECTS.items():
            if args.only and name not in args.only.split(","):
                continue
            for metric, effect in effects:
                for times in (float(x) for x in args.multiples.split(",")):
                    size_of = effect * times
                    agents.append((f"{name} {metric} -{size_of:g}", name, {metric: size_of}))
        designs = args.designs.split(",")
        for design in designs:
            looks = 1 if design == "fixed" else args.looks
            gate = gate_suite_wired if design == "wired" else gate_suite
            for label, target, effect in agents:
                started = time.perf_counter()
                per_suite: dict[str, list[float]] = {}  # each suite's share of its calls
                reds: list[npt.NDArray[np.bool_]] = []
                calls: list[Array] = []
                for _ in range(args.baselines):
                    red = np.zeros(args.reruns, dtype=np.bool_)
                    total = np.zeros(args.reruns)
                    for suite in suites:
                        stored = suite.draw(rng, 1, {})
                        stored = {k: (v[0][0], v[1][0]) for k, v in stored.items()}
                        new = suite.draw(rng, args.reruns, effect if suite.name == target else {})
                        out = gate(suite, stored, new, cell_level, pooled_level, looks)
                        if target is None or suite.name == target:
                            red |= out.red
                        total += out.calls
                        per_suite.setdefault(suite.name, []).append(
                            float(out.calls.mean())
                            / (
                                suite.real_units * suite.calls_per_unit
                                + suite.fixed_calls * suite.cells
                            )
                        )
                    reds.append(red)
                    calls.append(total)
                all_red = np.concatenate(reds)
                all_calls = np.concatenate(calls)
                hits, n = int(all_red.sum()), all_red.size
                bound = f"{clopper_upper(hits, n):9.2%}" if target is None else " " * 9
                print(
                    f"{size:6} {design:11} {label:30} {hits / n:8.1%}  {bound}  "
                    f"{all_calls.mean():10,.0f}  {all_calls.max():9,.0f}"
                    f"   ({time.perf_counter() - started:.1f} s)"
                )
                if target is None:
                    shares = ", ".join(f"{k} {np.mean(v):.3f}" for k, v in per_suite.items())
                    print(f"{'':19}mean share of each suite's calls: {shares}")
                rows.append(
                    f"| {size} | {design} | {label} | {hits / n:.1%} | {bound.strip()} | "
                    f"{all_calls.mean():,.0f} | {all_calls.max():,.0f} |"
                )
    print("\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
