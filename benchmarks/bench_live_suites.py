"""Live suites against a local model server that answers after a fixed delay (issue 21).

    python benchmarks/bench_live_suites.py        # every suite, d 0.5 and 2, c 8 and 32
    python benchmarks/bench_live_suites.py --suites triage --delays 0.5 --concurrency 32
    python benchmarks/bench_live_suites.py --suites triage --inspect   # inspect_ai beside it

Each run is a real ``pytest --budget-suite=S --budget-agent=openai:m`` in a subprocess, from
an empty folder with a fresh cache, against :class:`tests.model_server.ModelServer` (an
OpenAI-compatible server on loopback, role-aware answers, planning turns that call a tool
four times and then answer, every POST answered after ``d`` seconds) with
``--budget-concurrency=c``, under ``-n 0`` and ``-n 2``.  N is the number of POSTs the
server received (identical requests of two cells are sent once, the other replays the
recording); the bound is max(N*d/c, S*d), S the fewest rounds of c calls that fit the
requests given which had to go one after another (:func:`request_forest`: a request whose
messages extend another's was sent after that one's answer - a planning episode's turns,
a rollout's actor turns; :func:`chain_rounds`).  N*d/c alone assumes every call could
overlap every other: with episodes of L turns, the last of them leave slots idle however
they are scheduled (at d = 2 s, c = 8, 30 episodes of ~4 POSTs: S*d ~ 1.2 N*d/c).  Each run
is sized (:func:`suite_args`) so that N*d/c is at least ``--min-bound`` seconds (30) with
enough episodes or rollouts for c calls in flight, since pytest's start-up (a few seconds,
more with xdist's workers) is a fixed cost.
Printed per run: wall time (the whole pytest process), split into start-up (to the first
request), wire (first request in to last answer out, at the server) and end (tables,
report); the bound; wall/bound and wire/bound; the most calls ever in flight.  Targets:
wall <= 1.25 x bound, N equal under -n 0 and -n 2.  ``--budget-concurrency`` is per
process: under ``-n 2`` each worker keeps up to c calls in flight (the bound still uses c).

Bytecode is cached (in a folder of the temp directory, warmed up before timing) as in an
installation, even where the machine sets PYTHONDONTWRITEBYTECODE, and hypothesis's pytest
plugin (a dev dependency whose terminal summary imports hypothesis, ~2 s) is disabled.

``--inspect`` runs the same triage-shaped workload (N single chat calls, N from the
triage run) with inspect_ai (``inspect eval`` of a task of N one-turn samples,
``--max-connections c``) against the same server; inspect_ai is an optional benchmark
dependency (``pip install inspect_ai``), never a runtime one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.model_server import ModelServer, role_answer  # noqa: E402

#: Start-up (xdist's workers, imports, collection) and the end (tables, report) are a few
#: fixed seconds; each run is sized so its bound N*d/c is at least this (--min-bound).
MIN_BOUND_S = 30.0
#: Awareness cells of a live run: one per environment, the model as actor and estimator.
AWARENESS_ENVS = "sokoban-6x6,sokoban-8x8,warehouse"


def suite_args(suite: str, delay: float, concurrency: int, min_bound: float) -> list[str]:
    """Options sizing ``suite``'s live run to about ``min_bound`` seconds of bound, with
    enough independent chains (episodes, rollouts) for ``concurrency`` calls in flight.

    Calls per unit, with :func:`bench_answer`'s replies: triage 3 Phase 0 calls per pool
    item (three bundled pools) plus 16 planner calls; planning about 120 calls per query
    (12 cells, turns of one episode in order); awareness (three environments, one cell
    each) about 99 per rollout of each environment (a rollout's actor turns in order, then
    its probes).
    """
    calls = min_bound * concurrency / delay
    if suite == "triage":
        return [f"--budget-pool-size={max(30, math.ceil((calls - 16) / 3))}"]
    if suite == "planning":
        queries = max(math.ceil(calls / 120), math.ceil(1.5 * concurrency / 12))
        return [f"--budget-query-count={queries}"]
    rollouts = max(math.ceil(calls / 99), math.ceil(concurrency / 3), 2)
    return [f"--budget-env={AWARENESS_ENVS}", f"--budget-rollout-count={rollouts}"]


class _Timed(ModelServer):
    """The model server, with the times of its first and last answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first: float | None = None
        self.last: float | None = None
        self._stamp = threading.Lock()

    def stamp(self) -> None:
        now = time.monotonic()
        with self._stamp:
            if self.first is None:
                self.first = now
            self.last = now


#: Tool calls a planning episode makes before it answers (CostBench episodes are multi-turn:
#: the turns of one episode are sequential, so the bound needs episodes enough in flight).
PLANNING_TOOL_TURNS = 4


def bench_answer(body: dict[str, Any]) -> str | dict[str, Any]:
    """The role's scripted reply; a planning turn (a request with tools) calls the first tool
    until the episode has made :data:`PLANNING_TOOL_TURNS` calls, then answers."""
    tools = body.get("tools")
    if tools:
        made = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
        if made < PLANNING_TOOL_TURNS:
            name = tools[0]["function"]["name"]
            call = {"id": f"call_{made}", "type": "function",
                    "function": {"name": name, "arguments": "{}"}}  # fmt: skip
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return "<answer>00000</answer>"
    return role_answer(body)


def _answer(server: _Timed) -> Any:
    def answer(body: dict[str, Any]) -> str | dict[str, Any]:
        server.stamp()  # an answer (the server has slept d since the request came)
        return bench_answer(body)

    return answer


def run_suite(
    suite: str, delay: float, concurrency: int, workers: int, args: list[str]
) -> dict[str, float]:
    server = _Timed(latency=delay)
    server.answer = _answer(server)
    with server, tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench-live-") as folder:
        command = [
            sys.executable, "-m", "pytest", f"--budget-suite={suite}",
            "--budget-agent=openai:m", f"--budget-base-url={server.url}",
            f"--budget-concurrency={concurrency}", "--budget-gate=off", "-q",
            "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            f"--budget-cache-dir={folder}/cache",
            "-n", str(workers), *args,
        ]  # fmt: skip
        env = {**_env(), "OPENAI_API_KEY": "", "PYTEST_ADDOPTS": ""}
        started = time.monotonic()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        ended = time.monotonic()
        if done.returncode not in (0, 1):
            print(done.stdout[-3000:], done.stderr[-3000:])
            raise SystemExit(f"pytest exited {done.returncode}")
    return _row(server, delay, concurrency, started, ended)


def _env() -> dict[str, str]:
    """The environment of a timed run: bytecode cached (in a folder of its own, not the
    source tree), as in a user's installation; a machine that sets
    PYTHONDONTWRITEBYTECODE would otherwise compile every module in every process."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "bench-live-suites-pycache")
    return env


def request_forest(requests: list[dict[str, Any]]) -> list[int]:
    """Each request's parent (-1: none): the request whose messages are the longest proper
    prefix of its own.  A request whose message list extends another's (that request's
    messages, its answer, then tool results or a new user turn) could only be made after
    that one was answered: a planning episode's turns form a chain, a rollout's probes
    branch off its actor turns.  POSTs only: a turn replayed from another cell's identical
    request waits for nothing, so its successor hangs from the last POST before it."""
    keys = [
        [json.dumps(messages[:end], sort_keys=True) for end in range(1, len(messages) + 1)]
        for messages in (body.get("messages") or [] for body in requests)
    ]
    index: dict[str, int] = {}
    for i, own in enumerate(keys):
        if own:
            index.setdefault(own[-1], i)
    parents = []
    for own in keys:
        found = (index.get(key) for key in reversed(own[:-1]))
        parents.append(next((j for j in found if j is not None), -1))
    return parents


def chain_rounds(parents: list[int], concurrency: int) -> tuple[int, int]:
    """(L, S): the longest chain of requests one after another, and the fewest rounds of
    ``concurrency`` calls that fit them all (each call one round, a request only after its
    parent): the highest-level-first schedule, optimal for chains and trees of unit jobs
    (Hu, 1961; run on the reversed forest).  S*d is what any scheduler needs with answers
    that take d; N*d/c ignores that an episode's turns cannot overlap."""
    depth = [0] * len(parents)
    for i in sorted(range(len(parents)), key=lambda i: _ancestors(parents, i)):
        depth[i] = 1 + (depth[parents[i]] if parents[i] >= 0 else 0)
    children = [0] * len(parents)
    for parent in parents:
        if parent >= 0:
            children[parent] += 1
    ready = [i for i in range(len(parents)) if children[i] == 0]
    rounds = 0
    while ready:
        ready.sort(key=lambda i: -depth[i])
        now, ready = ready[:concurrency], ready[concurrency:]
        rounds += 1
        for i in now:
            parent = parents[i]
            if parent >= 0:
                children[parent] -= 1
                if children[parent] == 0:
                    ready.append(parent)
    return max(depth, default=0), rounds


def _ancestors(parents: list[int], i: int) -> int:
    count = 0
    while parents[i] >= 0:
        i = parents[i]
        count += 1
    return count


def _row(
    server: _Timed, delay: float, concurrency: int, started: float, ended: float
) -> dict[str, float]:
    calls = len(server.requests)
    chain, rounds = chain_rounds(request_forest(server.requests), concurrency)
    # Stamped as each answer is made, after the delay: the first request came d earlier.
    first = (server.first - delay) if server.first is not None else started
    last = server.last or ended
    return {
        "calls": calls,
        "wall": ended - started,
        "span": last - first if calls else 0.0,
        "lead": first - started,  # start-up: process start to the first request
        "tail": ended - last,  # last answer to process exit (tables, report)
        "flat": calls * delay / concurrency,
        "bound": max(calls * delay / concurrency, rounds * delay),
        "chain": chain,
        "rounds": rounds,
        "in_flight": server.max_in_flight,
    }


_INSPECT_TASK = textwrap.dedent(
    """
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate

    @task
    def calls(n: int = 10):
        samples = [Sample(input=f"Problem {i}: what is {i} + {i}?", target=str(2 * i))
                   for i in range(n)]
        return Task(dataset=samples, solver=generate(), scorer=None)
    """
)


def run_inspect(calls: int, delay: float, concurrency: int) -> dict[str, float] | None:
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent))
    if inspect is None:
        return None
    server = _Timed(latency=delay)
    server.answer = _answer(server)
    with server, tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench-inspect-") as folder:
        (Path(folder) / "calls.py").write_text(_INSPECT_TASK)
        env = {**_env(), "OPENAI_API_KEY": "none", "OPENAI_BASE_URL": server.url}
        command = [
            inspect, "eval", "calls.py", "--model", "openai/m", "-T", f"n={calls}",
            "--max-connections", str(concurrency), "--log-dir", f"{folder}/logs",
            "--display", "none", "--no-log-samples", "-M", "responses_api=false",
        ]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        ended = time.monotonic()
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return None
    return _row(server, delay, concurrency, started, ended)


def _line(label: str, row: dict[str, float]) -> str:
    bound = row["bound"] or float("nan")
    return (
        f"{label:30} N {row['calls']:5d}  wall {row['wall']:6.1f} s (start-up "
        f"{row['lead']:4.1f}, wire {row['span']:6.1f}, end {row['tail']:4.1f})  N*d/c "
        f"{row['flat']:6.1f} s, chain {row['chain']:2d}, rounds {row['rounds']:4d}: bound "
        f"{row['bound']:6.1f} s  wall/bound {row['wall'] / bound:5.2f}  "
        f"wire/bound {row['span'] / bound:5.2f}  most in flight {row['in_flight']:3d}"
    )


def warm_up(suites: list[str], inspect: bool) -> None:
    """Compile every module once (into the bytecode folder of :func:`_env`), untimed."""
    env = {**_env(), "PYTEST_ADDOPTS": ""}
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench-live-") as folder:
        for suite in suites:
            command = [sys.executable, "-m", "pytest", f"--budget-suite={suite}", "--co", "-q",
                       "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]  # fmt: skip
            subprocess.run(command, cwd=folder, env=env, capture_output=True)
        if inspect:
            code = "import inspect_ai, inspect_ai.model, openai"
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="triage,planning,awareness")
    parser.add_argument("--delays", default="0.5,2")
    parser.add_argument("--concurrency", default="8,32")
    parser.add_argument("--workers", default="0,2")
    parser.add_argument("--min-bound", type=float, default=MIN_BOUND_S, help="seconds")
    parser.add_argument("--inspect", action="store_true", help="inspect_ai on triage's N")
    args = parser.parse_args()
    suites = args.suites.split(",")
    warm_up(suites, args.inspect)
    for suite in suites:
        for delay in (float(d) for d in args.delays.split(",")):
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                options = suite_args(suite, delay, concurrency, args.min_bound)
                print(f"{suite} d={delay:g} c={concurrency}: {' '.join(options)}")
                calls: dict[int, int] = {}
                for workers in (int(n) for n in args.workers.split(",")):
                    row = run_suite(suite, delay, concurrency, workers, options)
                    calls[workers] = int(row["calls"])
                    print(_line(f"  pytest-budget -n {workers}", row))
                    sys.stdout.flush()
                if len(set(calls.values())) > 1:
                    print(f"  !! N differs between worker counts: {calls}")
                if args.inspect and suite == "triage":
                    found = run_inspect(next(iter(calls.values())), delay, concurrency)
                    label = "  inspect_ai"
                    print(_line(label, found) if found else f"{label}: not installed")
                    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
