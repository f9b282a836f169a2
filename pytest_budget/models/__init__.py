"""Model layer: async HTTP chat clients (OpenAI-compatible, Anthropic) and token usage.

Groundwork for LLM-backed agents (the generic :class:`~pytest_budget.models._llm_agent.LLMAgent`;
each suite's adapters live in its own package).  Nothing here imports pytest or a suite
(``tests/test_import_graph.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_budget._core.lazy_exports import lazy_exports

# Resolved on first use (see pytest_budget._core.lazy_exports): an offline run imports
# models._loop (the reference planners run on the worker loop) and must not pay for httpx,
# its CLI's click and rich, and httpcore (~0.2 s a process, every xdist worker included).
if TYPE_CHECKING:
    from pytest_budget.models._client import (
        ANTHROPIC_VERSION,
        AnthropicChatClient,
        ChatClient,
        ChatResult,
        ModelCallError,
        OpenAIChatClient,
        ToolCall,
        ToolSpec,
    )
    from pytest_budget.models._usage import TokenUsage, from_anthropic, from_openai

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicChatClient",
    "ChatClient",
    "ChatResult",
    "ModelCallError",
    "OpenAIChatClient",
    "TokenUsage",
    "ToolCall",
    "ToolSpec",
    "from_anthropic",
    "from_openai",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
