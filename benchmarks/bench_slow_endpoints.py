"""Time to the first error against a hanging and a trickling model endpoint (issue 20 item 4).

    python benchmarks/bench_slow_endpoints.py [--timeout 60] [--calls 20]

Real loopback servers (tests/slow_server.py): ``hang`` never answers a POST, ``trickle``
starts a 200 answer and sends one byte every 5 s.  ``--calls`` calls go through the model
runtime with the run's defaults (5 retries, 300 s retry cap, 8 in flight) and
``--budget-model-timeout`` = ``--timeout``.  Prints, per server: seconds to the first
failed call, seconds until every call failed, and the POSTs the server received.  Before
the total deadline a trickling server never timed out, and each call of a hanging one
cost up to 6 attempts x the timeout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_budget.models._client import ModelCallError, OpenAIChatClient
from pytest_budget.models._loop import run_on_worker_loop
from pytest_budget.models._retry import RetryPolicy
from pytest_budget.models._runtime import ModelRuntime, RuntimeConfig
from tests.slow_server import SlowServer


def measure(mode: str, timeout: float, calls: int) -> tuple[float, float, int, str]:
    runtime = ModelRuntime(RuntimeConfig(concurrency=8, retry=RetryPolicy(6, 300.0)))
    failures: list[float] = []
    with SlowServer(mode, every_s=5.0) as server:
        model = runtime.wrap(OpenAIChatClient("m", server.url, timeout=timeout))
        started = time.monotonic()

        async def one(index: int) -> None:
            try:
                await model.complete([{"role": "user", "content": str(index)}], max_tokens=5)
            except ModelCallError:
                failures.append(time.monotonic() - started)

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for index in range(calls):
                    group.start_soon(one, index)

        run_on_worker_loop(main)
        posts = server.posts
    return min(failures), max(failures), posts, runtime.endpoint_down() or "(not down)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="--budget-model-timeout")
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    for mode in ("hang", "trickle"):
        first, last, posts, down = measure(mode, args.timeout, args.calls)
        print(
            f"{mode:8} first error {first:7.2f} s  all {args.calls} failed {last:7.2f} s  "
            f"POSTs {posts:3d}  {down[:90]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
