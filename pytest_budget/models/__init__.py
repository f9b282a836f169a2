"""Model layer: async HTTP chat clients (OpenAI-compatible, Anthropic) and token usage.

Groundwork for LLM-backed agents (the generic :class:`~pytest_budget.models._llm_agent.LLMAgent`;
each suite's adapters live in its own package).  Nothing here imports pytest or a suite
(``tests/test_import_graph.py``).
"""

from __future__ import annotations

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
