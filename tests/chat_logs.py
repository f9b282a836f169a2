"""A small OpenAI-style chat-transcript file (``--budget-rollouts``) for awareness runs that
need rollouts but no environment: every transcript has three assistant calls with usage."""

from __future__ import annotations

import json
from pathlib import Path


def write_chat_file(folder: Path, count: int = 3, failed: tuple[int, ...] = (1,)) -> str:
    """Write ``count`` transcripts to ``folder/chats.jsonl`` (those numbered in ``failed``
    unresolved) and return the option that replays them."""
    lines = []
    for i in range(count):
        messages: list[dict[str, object]] = [{"role": "user", "content": "fix it"}]
        for prompt in (100, 200, 300):
            usage = {"prompt_tokens": prompt, "completion_tokens": 10}
            messages.append({"role": "assistant", "content": "working", "usage": usage})
            messages.append({"role": "tool", "content": "ok"})
        lines.append(json.dumps({"id": f"t{i}", "messages": messages, "resolved": i not in failed}))
    (folder / "chats.jsonl").write_text("\n".join(lines) + "\n")
    return "--budget-rollouts=chats.jsonl"
