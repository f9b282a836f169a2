"""Every agent-output parser on 10 MB of hostile text (issue 20 item 3: under 1 s each).

    python benchmarks/bench_parsers_10mb.py [--mb 10] [--timeout 60]

Each parser runs on each input in a child process with a timeout, so a quadratic parser
shows as ``>TIMEOUT`` instead of running for hours.  The inputs are the patterns that were
quadratic (unclosed repeated ``<answer>``/``<think>`` tags, ``<answer>x`` plus whitespace,
unclosed ``\\boxed{``, long runs of spaces) and plain text.  Prints one row per parser: the
worst time over the inputs and which input it was.  Parsers that cannot be imported on
this branch are listed as skipped.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

#: name -> (import line, call expression on ``text``)
PARSERS: dict[str, tuple[str, str]] = {
    "triage.graders.extract_answer": (
        "from pytest_budget.triage._graders import extract_answer as f",
        "f(text)",
    ),
    "triage.graders.parse_number": (
        "from pytest_budget.triage._graders import parse_number as f",
        "f(text)",
    ),
    "triage.graders.parse_moves": (
        "from pytest_budget.triage._graders import parse_moves as f",
        "f(text)",
    ),
    "triage.plan_parser.parse_plan": (
        "from pytest_budget.triage._plan_parser import parse_plan as f",
        "f(text, ['q1', 'q2'])",
    ),
    "triage.llm.extract_solver_answer": (
        "from pytest_budget.triage._llm import extract_solver_answer as f",
        "f(text, 'arith')",
    ),
    "planning.episode.parse_reply": (
        "from pytest_budget.planning._episode import parse_reply as f",
        "f(text)",
    ),
    "awareness.answers.parse_estimate": (
        "from pytest_budget.awareness._replay.answers import parse_estimate as f",
        "f(text)",
    ),
    "awareness.evaluate.parse_answer": (
        "from pytest_budget.awareness._evaluate import parse_answer as f",
        "f(text, ('tokens',), 'bagen')",
    ),
    "awareness.sokoban_env.parse_reply": (
        "from pytest_budget.awareness.sokoban._env import parse_reply as f",
        "f(text)",
    ),
    "awareness.warehouse.parse_action": (
        "from pytest_budget.awareness.warehouse import parse_action as f",
        "f(text)",
    ),
    "awareness.search_env.parse_action": (
        "from pytest_budget.awareness.search._env import parse_action as f",
        "f(text)",
    ),
}

#: name -> expression building the input from ``n`` characters
INPUTS: dict[str, str] = {
    "unclosed <answer>": "'<answer>' * (n // 8)",
    "<answer>x + spaces": "'<answer>x' + ' ' * n",
    "unclosed <think>": "'<think>' * (n // 7)",
    "unclosed \\\\boxed{": "'\\\\boxed{' * (n // 7)",
    "spaces": "' ' * n",
    "answer + spaces": "'answer' + ' ' * n",
    "closed pairs": "'<answer>1</answer>' * (n // 18)",
    "plain words": "'lorem ipsum ' * (n // 12)",
}

CHILD = """
import sys, time
{import_line}
n = {n}
text = {build}
start = time.perf_counter()
try:
    {call}
except Exception as exc:
    print("raised", type(exc).__name__, file=sys.stderr)
print(time.perf_counter() - start)
"""


def run(import_line: str, call: str, build: str, n: int, timeout: float) -> float | None:
    code = textwrap.dedent(CHILD).format(import_line=import_line, n=n, build=build, call=call)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="input size in MB (default 10)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per parse")
    args = parser.parse_args()
    n = int(args.mb * 1_000_000)
    worst_overall = 0.0
    print(f"{'parser':40} {'worst s':>9}  input")
    for name, (import_line, call) in PARSERS.items():
        probe = subprocess.run([sys.executable, "-c", import_line], capture_output=True)
        if probe.returncode != 0:
            print(f"{name:40} {'skipped':>9}  (not importable on this branch)")
            continue
        worst, worst_input = 0.0, ""
        for label, build in INPUTS.items():
            seconds = run(import_line, call, build, n, args.timeout)
            if seconds is None:
                worst, worst_input = float("inf"), label
                break
            if seconds >= worst:
                worst, worst_input = seconds, label
        shown = f">{args.timeout:g}" if worst == float("inf") else f"{worst:.3f}"
        print(f"{name:40} {shown:>9}  {worst_input}")
        worst_overall = max(worst_overall, worst)
    print(f"worst over all parsers: {worst_overall:.3f} s ({args.mb:g} MB inputs)")
    return 0 if worst_overall < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
