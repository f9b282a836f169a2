"""Token usage as a provider reports it, normalised to one shape.

Both parsers read only what the provider's ``usage`` block says.  A response without a usage
block (many local servers omit it) gives ``TokenUsage(reported=False)`` with every count at
zero: the report must say "not reported", never show invented numbers.

The counts mean the same thing whatever the provider:

* ``input``: every prompt token the call processed, *including* tokens read from or written to
  a prompt cache.  (OpenAI's ``prompt_tokens`` already includes ``cached_tokens``; Anthropic's
  ``input_tokens`` excludes ``cache_read_input_tokens`` and ``cache_creation_input_tokens``,
  so :func:`from_anthropic` adds them.)
* ``output``: every generated token, *including* reasoning tokens (OpenAI's
  ``completion_tokens`` already includes ``reasoning_tokens``; Anthropic bills thinking as
  ``output_tokens`` and reports no separate count, so ``reasoning`` is 0 there).
* ``reasoning``, ``cached_read``, ``cached_write``: subsets of ``output`` / ``input`` kept
  apart because prices differ.  ``input - cached_read - cached_write`` is
  :attr:`TokenUsage.uncached_input`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_budget._core.budget import Usage

__all__ = ["TokenUsage", "from_anthropic", "from_openai"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one model call consumed, as reported by the provider (see the module doc)."""

    input: int = 0
    output: int = 0
    reasoning: int = 0
    cached_read: int = 0
    cached_write: int = 0
    reported: bool = False

    @property
    def total(self) -> int:
        """``input + output`` (cached and reasoning tokens are already inside those)."""
        return self.input + self.output

    @property
    def uncached_input(self) -> int:
        """Prompt tokens neither read from nor written to a cache."""
        return max(0, self.input - self.cached_read - self.cached_write)

    def to_usage(self) -> Usage:
        """The :class:`~pytest_budget._core.budget.Usage` to charge: ``tokens = input + output``.

        Cached prompt tokens count in full and reasoning tokens count as output, so a token
        cap bounds everything the model processed; their (lower or higher) price is the
        business of a cost table, not of the token dimension.  An unreported call charges
        zero tokens: callers should record that usage was missing rather than guess.
        """
        return Usage(tokens=self.total)


def _count(block: Mapping[str, Any] | None, key: str) -> int | None:
    """A non-negative integer count at ``block[key]``, or None when absent or malformed."""
    if block is None:
        return None
    value = block.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _sub(block: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = block.get(key)
    return value if isinstance(value, Mapping) else None


def from_openai(usage_json: object) -> TokenUsage:
    """Parse a Chat Completions ``usage`` block (``None`` or a malformed block: unreported).

    Needs ``prompt_tokens`` and ``completion_tokens``; reads
    ``completion_tokens_details.reasoning_tokens`` and ``prompt_tokens_details.cached_tokens``
    when present.  OpenAI reports no cache-write count, so ``cached_write`` is 0.
    """
    if not isinstance(usage_json, Mapping):
        return TokenUsage()
    prompt = _count(usage_json, "prompt_tokens")
    completion = _count(usage_json, "completion_tokens")
    if prompt is None or completion is None:
        return TokenUsage()
    reasoning = _count(_sub(usage_json, "completion_tokens_details"), "reasoning_tokens") or 0
    cached = _count(_sub(usage_json, "prompt_tokens_details"), "cached_tokens") or 0
    return TokenUsage(
        input=prompt,
        output=completion,
        reasoning=min(reasoning, completion),
        cached_read=min(cached, prompt),
        cached_write=0,
        reported=True,
    )


def from_anthropic(usage_json: object) -> TokenUsage:
    """Parse a Messages API ``usage`` block (``None`` or a malformed block: unreported).

    Needs ``input_tokens`` and ``output_tokens``; ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens`` are *not* part of ``input_tokens``, so they are added to
    :attr:`TokenUsage.input` (and kept apart as ``cached_read`` / ``cached_write``).
    """
    if not isinstance(usage_json, Mapping):
        return TokenUsage()
    fresh = _count(usage_json, "input_tokens")
    output = _count(usage_json, "output_tokens")
    if fresh is None or output is None:
        return TokenUsage()
    read = _count(usage_json, "cache_read_input_tokens") or 0
    write = _count(usage_json, "cache_creation_input_tokens") or 0
    return TokenUsage(
        input=fresh + read + write,
        output=output,
        reasoning=0,
        cached_read=read,
        cached_write=write,
        reported=True,
    )
