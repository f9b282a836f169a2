"""Model calls at scale: N awareness probes against a local server that answers after d.

    python benchmarks/bench_model_runtime.py                    # N=2000, d=50 ms, c=64
    python benchmarks/bench_model_runtime.py --n 500 --delay 0.1 --concurrency 16

The server (an OpenAI-compatible asyncio server with keep-alive) runs in its own process,
so its work does not share the client's interpreter lock.  The client
is the real path of a user's run: ``LLMEstimator`` over the model runtime (record/replay
cassette, ledger, retries, concurrency limit) over ``OpenAIChatClient``, driven by
``run_awareness_cell`` (probe prompts, parsing, scoring).  Three figures:

* **live**: wall time of N probes against the bound N*d/c (target: within 15%), and the
  client's CPU per call (target: under 1 ms): this process's CPU time (``getrusage``,
  user + system, every thread: the worker loop's and the caller's) over the live cell; the
  server runs in a process of its own (``multiprocessing`` spawn), so none of its CPU is
  counted;
* **replay**: the same N probes answered from the recordings just made, with no server:
  the harness's own cost per call (look-up, parse, score, ledger), target well under 1 ms;
* **bare**: N probes through the same path with an in-process estimator (no HTTP, no
  runtime), to show what the runtime and HTTP add;
* **floor**: the same N requests from a minimal asyncio client (c connections, a request
  written and its answer read, nothing else): what the server, the timers and loopback
  cost on their own, the best any client can do here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from pytest_budget.awareness._evaluate import run_awareness_cell
from pytest_budget.awareness._llm import LLMEstimator
from pytest_budget.awareness._replay.rollouts import Rollout, Turn
from pytest_budget.models._loop import run_on_worker_loop
from pytest_budget.models._provider import build_chat_client
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig

_REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "<answer>[100, 900]</answer>"},
        }
    ],
    "usage": {"prompt_tokens": 200, "completion_tokens": 9, "total_tokens": 209},
}


def _serve(delay: float, ready: Any, port: Any) -> None:
    """An asyncio HTTP/1.1 server with keep-alive: every POST is answered after ``delay``.

    One event loop and no per-connection threads, like the servers that host models
    (uvicorn, vLLM), so the two cores go to the client rather than to thread switching.
    """
    body = json.dumps(_REPLY).encode()
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                await asyncio.sleep(delay)
                writer.write(response)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port.value = server.sockets[0].getsockname()[1]
        ready.set()
        await server.serve_forever()

    asyncio.run(main())


def _rollouts(n_probes: int) -> list[Rollout]:
    # Rollouts of 11 turns (10 probes each) with distinct usage, so every prompt differs.
    rollouts = []
    for i in range(max(1, n_probes // 10)):
        turns = tuple(Turn({"tokens": float(100 + i + 7 * k)}) for k in range(11))
        rollouts.append(Rollout(f"r{i}", "bench", {"tokens": 5000.0}, i % 3 != 0, turns))
    return rollouts


async def _floor(port: int, n: int, concurrency: int) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 1500}]})
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
    ).encode()

    async def connection(calls: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(calls):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            json.loads(await reader.readexactly(length))
        writer.close()
        await writer.wait_closed()

    share, extra = divmod(n, concurrency)
    await asyncio.gather(*(connection(share + (i < extra)) for i in range(concurrency)))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cell(rollouts: list[Rollout], estimator: object, concurrency: int) -> tuple[float, float, Any]:
    started, cpu = time.perf_counter(), _cpu_s()
    # As the suites do: one connection scope per cell, so calls reuse keep-alive connections.
    outcome = run_on_worker_loop(
        lambda: run_awareness_cell(rollouts, estimator, limiter=anyio.CapacityLimiter(concurrency)),
    )
    return time.perf_counter() - started, _cpu_s() - cpu, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="probes (default 2000)")
    parser.add_argument("--delay", type=float, default=0.05, help="server delay, s")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--cache-root", default=".", help="folder for the recordings (default: current folder)"
    )
    args = parser.parse_args()
    rollouts = _rollouts(args.n)
    n = sum(len(r.turns) - 1 for r in rollouts)
    # The first event loop of a process imports anyio's asyncio backend (20 to 50 ms here);
    # a run pays that once, not per cell or per call, so it is paid before the clock starts.
    anyio.run(anyio.sleep, 0)

    context = multiprocessing.get_context("spawn")
    ready, port = context.Event(), context.Value("i", 0)
    server = context.Process(target=_serve, args=(args.delay, ready, port), daemon=True)
    server.start()
    ready.wait(10)
    url = f"http://127.0.0.1:{port.value}/v1"
    # The recordings go where a run puts them, under the project (.pytest_cache), not in
    # /tmp: on this machine a file created in /tmp costs 20 times more than in /work.
    with tempfile.TemporaryDirectory(dir=args.cache_root, prefix=".bench-cache-") as tmp:
        config = RuntimeConfig(
            cache_dir=str(Path(tmp) / "models"),
            ledger_path=str(Path(tmp) / "ledger.json"),
            concurrency=args.concurrency,
        )

        def estimator() -> LLMEstimator:
            runtime = ModelRuntime(config)
            return LLMEstimator(runtime.wrap(build_chat_client("openai", "m", base_url=url)))

        live_s, live_cpu, live = _cell(rollouts, estimator(), args.concurrency)
        started, cpu = time.perf_counter(), _cpu_s()
        asyncio.run(_floor(port.value, n, args.concurrency))
        floor_s, floor_cpu = time.perf_counter() - started, _cpu_s() - cpu
        server.terminate()
        server.join(5)
        replay_s, _, replay = _cell(rollouts, estimator(), args.concurrency)

    class Bare:
        name = "bare"
        run_inline = True

        def estimate(self, probe: object) -> str:
            return "<answer>[100, 900]</answer>"

    bare_s, _, _ = _cell(rollouts, Bare(), args.concurrency)
    bound = n * args.delay / args.concurrency
    assert live.n_errors == 0 and replay.n_errors == 0, (live.first_error, replay.first_error)
    assert live.scores == replay.scores
    print(f"probes {n}, delay {args.delay * 1000:g} ms, concurrency {args.concurrency}")
    print(f"live:   {live_s:.3f} s, bound N*d/c {bound:.3f} s, ratio {live_s / bound:.3f}")
    print(
        f"        client CPU {live_cpu / n * 1000:.3f} ms per call (this process's user + "
        "system time, all threads; the server is another process)"
    )
    print(f"replay: {replay_s:.3f} s, {replay_s / n * 1000:.3f} ms per probe (no server)")
    print(f"bare:   {bare_s:.3f} s, {bare_s / n * 1000:.3f} ms per probe (no HTTP, no runtime)")
    print(
        f"floor:  {floor_s:.3f} s, ratio {floor_s / bound:.3f}, CPU "
        f"{floor_cpu / n * 1000:.3f} ms per call (bare asyncio client, same server)"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
