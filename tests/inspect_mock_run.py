"""Writes real inspect_ai logs offline (shared/facts/logs.md §4.7): three samples, three
model calls each, inspect's mockllm with usage on every output (so nothing is downloaded).
Run as ``python tests/inspect_mock_run.py LOG_DIR``; used by tests/test_awareness_logs.py."""

from __future__ import annotations

import sys
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import solver


@solver
def three_turns() -> Any:
    async def solve(state: Any, generate: Any) -> Any:
        for k in range(3):
            state = await generate(state)
            if k < 2:
                state.messages.append(ChatMessageUser(content=f"obs {k + 1}: go on"))
        return state

    return solve


def reply(messages: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    calls = sum(m.role == "assistant" for m in messages)
    answer = {"2+2?": "4", "3+3?": "6", "5+5?": "11"}[messages[0].text]  # sample 3 is wrong
    out = ModelOutput.from_content(
        "mockllm/model", f"step {calls + 1}" if calls < 2 else f"ANSWER: {answer}"
    )
    out.usage = ModelUsage(
        input_tokens=100 + 40 * calls,
        output_tokens=12,
        total_tokens=112 + 40 * calls,
        reasoning_tokens=5,
        input_tokens_cache_read=80 if calls else None,
    )
    return out


def main(log_dir: str) -> None:
    task = Task(
        dataset=[
            Sample(id=i + 1, input=q, target=t)
            for i, (q, t) in enumerate([("2+2?", "4"), ("3+3?", "6"), ("5+5?", "10")])
        ],
        solver=three_turns(),
        scorer=match(),
    )
    model = get_model("mockllm/model", custom_outputs=reply)
    for fmt in ("eval", "json"):
        eval(task, model=model, log_dir=f"{log_dir}/{fmt}", log_format=fmt, display="none")


if __name__ == "__main__":
    main(sys.argv[1])
