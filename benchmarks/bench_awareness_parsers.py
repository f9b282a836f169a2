"""Every text parser under ``pytest_budget/awareness/`` on 10 MB of hostile output.

    python benchmarks/bench_awareness_parsers.py            # table of seconds per case
    python benchmarks/bench_awareness_parsers.py 125000     # another size (bytes)

The cases are the quadratic ones found by the hardening campaign (issue 20, item 3):
repeated unclosed ``<answer>`` and ``<think>`` tags and ``<answer>x`` followed by
whitespace, plus a few more of the same family (``a:[`` repeated, letters without a colon,
one unclosed code fence, a 10 MB digit run).  Regular expressions such as
``<answer>(.*?)</answer>`` with ``findall`` rescan to the end of the text from every
unclosed tag: 125 KB took 12-26 s before ``tags.py``.  Every parser must handle each case
in well under a second; the script exits 1 if one takes longer than ``LIMIT_S``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from pytest_budget.awareness._replay.answers import (
    WAREHOUSE_DIMENSIONS,
    parse_bagen,
    parse_rl,
    parse_strict,
)
from pytest_budget.awareness.search._env import parse_action as search_action
from pytest_budget.awareness.sokoban._env import parse_reply as sokoban_reply
from pytest_budget.awareness.warehouse import ActionError
from pytest_budget.awareness.warehouse import parse_action as warehouse_action

LIMIT_S = 1.0


def _cases(size: int) -> dict[str, str]:
    def fill(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return {
        "unclosed <answer> x N": fill("<answer>"),
        "unclosed <think> x N": fill("<think>"),
        "<answer>x + blanks": "<answer>x" + " " * (size - 9),
        "<answer>```x + blanks": "<answer>```" + " " * (size - 12) + "x",
        "<answer> + a:[ x N": "<answer>" + fill("a:[") + "</answer>",
        "<answer> + letters": "<answer>" + fill("a") + "</answer>",
        "<answer> + digit run": "<answer>" + fill("9") + "</answer>",
        "<think><answer> x N": fill("<think><answer>"),
    }


def _warehouse(text: str) -> object:
    try:
        return warehouse_action(text)
    except ActionError as exc:
        return exc


PARSERS: dict[str, Callable[[str], object]] = {
    "estimate bagen": parse_bagen,
    "estimate bagen warehouse": lambda t: parse_bagen(t, dimensions=WAREHOUSE_DIMENSIONS),
    "estimate strict": parse_strict,
    "estimate strict warehouse": lambda t: parse_strict(t, dimensions=WAREHOUSE_DIMENSIONS),
    "estimate rl": parse_rl,
    "sokoban action": sokoban_reply,
    "search action": search_action,
    "warehouse action": _warehouse,
}


def main(size: int) -> int:
    worst = 0.0
    print(f"{'parser':<26} {'case':<24} {'seconds':>8}")
    for name, parse in PARSERS.items():
        for case, text in _cases(size).items():
            start = time.perf_counter()
            parse(text)
            took = time.perf_counter() - start
            worst = max(worst, took)
            print(f"{name:<26} {case:<24} {took:8.3f}")
    print(f"worst: {worst:.3f} s on {size:,} characters (limit {LIMIT_S} s)")
    return 0 if worst < LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000))
