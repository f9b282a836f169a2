"""Live suites against a local model server that answers after a fixed delay (issue 21).

    python benchmarks/bench_live_suites.py        # every suite, d 0.5 and 2, c 8 and 32
    python benchmarks/bench_live_suites.py --suites triage --delays 0.5 --concurrency 32
    python benchmarks/bench_live_suites.py --suites triage --inspect   # inspect_ai beside it

Each run is a real ``pytest --budget-suite=S --budget-agent=openai:m`` in a subprocess, from
an empty folder with a fresh cache, against :class:`tests.model_server.ModelServer` (an
OpenAI-compatible server on loopback, role-aware answers, every POST answered after ``d``
seconds) with ``--budget-concurrency=c``, under ``-n 0`` and ``-n 2``.  N is the number of
POSTs the server received.  Printed per run: wall time (the whole pytest process, start-up
and collection included), the wire span (first request in to last answer out, at the
server), the bound N*d/c and both ratios.  Targets: wall <= 1.25 x bound, N equal under
-n 0 and -n 2.

``--inspect`` runs the same triage-shaped workload (N single chat calls, N from the
triage run) with inspect_ai (``inspect eval`` of a task of N one-turn samples,
``--max-connections c``) against the same server; inspect_ai is an optional benchmark
dependency (``pip install inspect_ai``), never a runtime one.
"""

from __future__ import annotations

import argparse
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

#: Options that keep each suite's live run to some hundred calls (triage: the default grid).
SUITE_ARGS: dict[str, list[str]] = {
    "triage": [],
    "planning": ["--budget-query-count=4"],
    "awareness": ["--budget-env=sokoban-6x6", "--budget-rollout-count=8"],
}


class _Timed(ModelServer):
    """The model server, with the time of the first request and of the last answer."""

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
        server.stamp()  # the request arrived
        return bench_answer(body)

    return answer


def run_suite(suite: str, delay: float, concurrency: int, workers: int) -> dict[str, float]:
    server = _Timed(latency=delay)
    server.answer = _answer(server)
    with server, tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench-live-") as folder:
        command = [
            sys.executable, "-m", "pytest", f"--budget-suite={suite}",
            "--budget-agent=openai:m", f"--budget-base-url={server.url}",
            f"--budget-concurrency={concurrency}", "--budget-gate=off", "-q",
            "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            f"--budget-cache-dir={folder}/cache",
            "-n", str(workers), *SUITE_ARGS[suite],
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


def _row(
    server: _Timed, delay: float, concurrency: int, started: float, ended: float
) -> dict[str, float]:
    calls = len(server.requests)
    first = server.first or started
    last = (server.last or ended) + delay
    return {
        "calls": calls,
        "wall": ended - started,
        "span": last - first if calls else 0.0,
        "lead": first - started,  # start-up: process start to the first request
        "tail": ended - last,  # last answer to process exit (tables, report)
        "bound": calls * delay / concurrency,
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
        f"{row['lead']:4.1f}, wire {row['span']:6.1f}, end {row['tail']:4.1f})  bound "
        f"{row['bound']:6.1f} s  wall/bound {row['wall'] / bound:5.2f}  "
        f"wire/bound {row['span'] / bound:5.2f}  most in flight {row['in_flight']:3d}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="triage,planning,awareness")
    parser.add_argument("--delays", default="0.5,2")
    parser.add_argument("--concurrency", default="8,32")
    parser.add_argument("--workers", default="0,2")
    parser.add_argument("--inspect", action="store_true", help="inspect_ai on triage's N")
    args = parser.parse_args()
    for suite in args.suites.split(","):
        for delay in (float(d) for d in args.delays.split(",")):
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                calls: dict[int, int] = {}
                for workers in (int(n) for n in args.workers.split(",")):
                    row = run_suite(suite, delay, concurrency, workers)
                    calls[workers] = int(row["calls"])
                    print(_line(f"{suite} d={delay:g} c={concurrency} -n {workers}", row))
                    sys.stdout.flush()
                if len(set(calls.values())) > 1:
                    print(f"  !! N differs between worker counts: {calls}")
                if args.inspect and suite == "triage":
                    row = run_inspect(next(iter(calls.values())), delay, concurrency)
                    label = f"inspect_ai d={delay:g} c={concurrency}"
                    print(_line(label, row) if row else f"{label}: inspect_ai not installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
