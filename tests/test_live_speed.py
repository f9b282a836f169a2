"""What keeps a live triage run at its latency bound (issue 21), pinned without timing.

* the ranked limiter serves earlier cells' calls first (their tests wait first);
* a cell's plan-free bootstrap tables, computed ahead on the background thread, are the
  ones its summary would compute (and the summary uses them);
* sokoban reverse play with its per-call tables visits what the plain search visits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import numpy as np
import pytest

from pytest_budget._environments import sokoban
from pytest_budget._environments.sokoban_board import _OPPOSITE, _Board, _board
from pytest_budget.fixtures.cells import in_background
from pytest_budget.models._loop import (
    CALL_RANK,
    close_worker_loop,
    ranked_limiter,
    run_on_worker_loop,
    shared_limiter,
)
from pytest_budget.triage import _intervals as intervals
from pytest_budget.triage._evaluate import CellOutcome, score_plan
from pytest_budget.triage._intervals import cell_summary, warm_shared
from pytest_budget.triage._types import Baseline, Item, Plan, PlanEntry, PlanStatus


@pytest.fixture(autouse=True)
def fresh_loop() -> Iterator[None]:
    close_worker_loop()
    yield
    close_worker_loop()


# -- the ranked limiter --------------------------------------------------------------------


def test_free_tokens_go_to_the_lowest_rank_then_in_order_of_arrival() -> None:
    served: list[str] = []

    async def main() -> None:
        limiter = ranked_limiter(1)
        await limiter.acquire()

        async def waiter(rank: int, name: str) -> None:
            CALL_RANK.set(rank)
            async with limiter:
                served.append(name)
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            for rank, name in [(5, "a"), (1, "b"), (3, "c"), (1, "d"), (-1, "e"), (5, "f")]:
                group.start_soon(waiter, rank, name)
                await anyio.sleep(0.005)  # arrival order as listed
            limiter.release()

    anyio.run(main)
    assert served == ["e", "b", "d", "c", "a", "f"]


def test_a_cancelled_waiter_leaves_the_queue_and_its_token_is_not_lost() -> None:
    async def main() -> tuple[list[str], float]:
        limiter = ranked_limiter(1)
        served: list[str] = []
        await limiter.acquire()

        async def waiter(rank: int, name: str, scope: anyio.CancelScope) -> None:
            CALL_RANK.set(rank)
            with scope:
                async with limiter:
                    served.append(name)

        doomed, kept = anyio.CancelScope(), anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(waiter, 0, "cancelled", doomed)
            group.start_soon(waiter, 7, "late", kept)
            await anyio.sleep(0.01)
            doomed.cancel()  # the first in line gives up while waiting
            await anyio.sleep(0.01)
            limiter.release()
        return served, limiter.available_tokens

    served, free = anyio.run(main)
    assert served == ["late"] and free == 1


def test_the_shared_limiter_of_the_worker_loop_is_ranked() -> None:
    async def probe() -> bool:
        limiter = shared_limiter(4)
        return type(limiter._wait_queue).__name__ == "_RankedWaiters"  # type: ignore[attr-defined]

    assert run_on_worker_loop(probe) is True


# -- bootstrap tables ahead ----------------------------------------------------------------


def _cell(n: int, seed: int) -> tuple[list[Item], dict[str, Baseline], Plan]:
    rng = np.random.default_rng(seed)
    items = [Item(id=f"i{k}", text=f"q{k}", value=float(rng.integers(1, 4))) for k in range(n)]
    baselines = {
        item.id: Baseline(solved=bool(rng.random() < 0.7), tokens=int(rng.integers(1, 900)))
        for item in items
    }
    order = rng.permutation(n)[: n // 2]
    plan = Plan(
        entries=tuple(PlanEntry(id=f"i{k}", tokens=int(rng.integers(1, 900))) for k in order),
        status=PlanStatus.OK,
    )
    return items, baselines, plan


def _summary(items: list[Item], baselines: dict[str, Baseline], plan: Plan, cache: Any) -> Any:
    budget = int(0.5 * sum(b.tokens for b in baselines.values()))
    scores = score_plan(plan, items, baselines, budget, seed=0)
    outcome = CellOutcome(budget=budget, plan=plan, scores=scores)
    return cell_summary(
        [outcome], items, baselines, 0.5, seed=3, cell_id="c", level=0.95, resamples=300,
        cache=cache,
    )  # fmt: skip


def test_tables_computed_ahead_are_the_ones_the_summary_would_compute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items, baselines, plan = _cell(40, 1)
    alone = _summary(items, baselines, plan, {})
    cache: dict[str, Any] = {}
    warm_shared(items, baselines, 0.5, seed=3, cell_id="c", resamples=300, cache=cache)
    assert len(cache) == 1 and isinstance(next(iter(cache.values())), tuple)

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the summary computed V_random again")

    monkeypatch.setattr(intervals, "_random_values", fail)
    warmed = _summary(items, baselines, plan, cache)
    assert warmed.report_fields() == alone.report_fields()
    assert warmed.snapshot_fields() == alone.snapshot_fields()


def test_a_summary_waits_for_tables_being_computed_on_the_background_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items, baselines, plan = _cell(60, 2)
    alone = _summary(items, baselines, plan, {})
    started, release = threading.Event(), threading.Event()
    real = intervals._random_values

    def slow(*args: Any, **kwargs: Any) -> Any:
        started.set()
        assert release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(intervals, "_random_values", slow)
    cache: dict[str, Any] = {}
    in_background(
        lambda: warm_shared(items, baselines, 0.5, seed=3, cell_id="c", resamples=300, cache=cache)
    )
    assert started.wait(10)
    threading.Timer(0.2, release.set).start()
    monkeypatch.setattr(intervals, "_random_values", real)  # the summary's own would be real
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(intervals, "_random_values", counted)
    warmed = _summary(items, baselines, plan, cache)  # blocks on the pending entry
    assert calls == []
    assert warmed.snapshot_fields() == alone.snapshot_fields()


# -- sokoban reverse play ------------------------------------------------------------------


def _plain_reverse_play(
    board: _Board, player: int, targets: tuple[int, ...], search_depth: int, max_states: int
) -> tuple[int, int, tuple[int, ...]]:
    """The search as it was written first (no tables): the reference."""
    nbr = board.neighbours
    width = board.width
    ncells = board.width * board.height
    target_set = frozenset(targets)
    target_rc = [divmod(t, width) for t in targets]
    visited: set[int] = set()
    best_score, best_player, best_boxes = -1, player, targets
    stack: list[tuple[int, tuple[int, ...], int, int, int]] = [
        (player, targets, 0, -1, search_depth)
    ]
    while stack:
        pos, boxes, swaps, last, ttl = stack.pop()
        ttl -= 1
        if ttl <= 0:
            continue
        if len(visited) >= max_states:
            break
        key = pos
        for b in sorted(boxes):
            key = key * ncells + b
        if key in visited:
            continue
        visited.add(key)
        if pos in target_set or any(b in target_set for b in boxes):
            score = 0
        else:
            displacement = 0
            for b, (tr, tc) in zip(boxes, target_rc, strict=True):
                br, bc = divmod(b, width)
                displacement += abs(br - tr) + abs(bc - tc)
            score = swaps * displacement
        if score > best_score:
            best_score, best_player, best_boxes = score, pos, boxes
        children: list[tuple[int, tuple[int, ...], int, int, int]] = []
        for a in range(4):
            nxt = nbr[pos][a]
            if nxt < 0 or nxt in boxes:
                continue
            behind = nbr[pos][_OPPOSITE[a]]
            if behind >= 0 and behind in boxes:
                i = boxes.index(behind)
                pulled = (*boxes[:i], pos, *boxes[i + 1 :])
                children.append((nxt, pulled, swaps + (i != last), i, ttl))
            else:
                children.append((nxt, boxes, swaps, last, ttl))
        stack.extend(reversed(children))
    return best_score, best_player, best_boxes


@pytest.mark.parametrize("boxes", [1, 2, 3])
def test_reverse_play_with_tables_equals_the_plain_search(boxes: int) -> None:
    rng = np.random.default_rng(boxes)
    compared = 0
    for _ in range(60):
        width, height = int(rng.integers(5, 11)), int(rng.integers(5, 11))
        walls = frozenset(
            (r, c)
            for r in range(height)
            for c in range(width)
            if r in (0, height - 1) or c in (0, width - 1) or rng.random() < 0.2
        )
        floor = [(r, c) for r in range(height) for c in range(width) if (r, c) not in walls]
        if len(floor) <= boxes + 1:
            continue
        picks = rng.permutation(len(floor))[: boxes + 1]
        player, *targets = (floor[int(k)] for k in picks)
        board = _board(width, height, walls, frozenset(targets))
        args = (
            board,
            board.index(player),
            tuple(board.index(t) for t in targets),
            int(rng.integers(5, 40)),
            int(rng.choice([50, 5_000, 300_000])),
        )
        assert sokoban._reverse_play(*args) == _plain_reverse_play(*args)
        compared += 1
    assert compared >= 40


# -- pools generated once per live run ----------------------------------------------------


def test_xdist_workers_load_the_pools_the_controller_generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_budget._run.session import BudgetSession
    from pytest_budget.fixtures import triage as fixtures
    from pytest_budget.triage import _pools as pools

    def session() -> Any:
        runtime = SimpleNamespace(ledger_path=str(tmp_path / "runs" / "r1.json"))
        triage = SimpleNamespace(pools=(), pool_size=7)
        options = SimpleNamespace(seed=4, of=lambda kind: triage)
        return BudgetSession(options, model_runtime_config=runtime)  # type: ignore[arg-type]

    controller = session()
    made = fixtures._base_pools(controller)
    injected = fixtures.TriageGroundTruth.pool(SimpleNamespace(  # type: ignore[arg-type]
        session=controller, options=controller.options, pools=lambda: made
    ), "arith", 0.5)  # fmt: skip
    fixtures.export_pools(controller)
    assert (tmp_path / "runs" / "r1-pools.pickle").is_file()

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker generated a pool again")

    monkeypatch.setattr(pools, "bundled_pools", never)
    monkeypatch.setattr(pools, "unsolvable_supply", never)
    worker = session()
    assert fixtures._base_pools(worker) == made
    assert worker.state_of(fixtures.TriageRunState).injected[("arith", 0.5)] == injected
    # Without a run folder (an offline run) nothing is written or read.
    offline = BudgetSession(controller.options)
    fixtures.export_pools(offline)
    monkeypatch.undo()
    assert fixtures._base_pools(offline) == made
