"""What a live run will cost, said before the first paid call (issue 21, item 4).

A forecast is a list of :class:`RoleForecast` rows, one per suite, role and model: how many
calls the run will make, their input tokens (counted on the prompts the run will send, with
the reference tokenizer :func:`~pytest_budget._core.tokens.count_tokens`) and their output tokens,
each as an *expected* figure and a *worst case*, priced with the run's price table.

How the figures are made (the same rules are printed and written to the report):

* **Input tokens, expected**: the reference-token count of every message's text, plus the
  JSON of the tools offered.  Real tokenizers split finer than the reference one, so the
  **worst case** pads it by :data:`PROMPT_PAD` (the runtime's spend-cap reservation uses the
  same pad).
* **Output tokens, worst case**: every call writes its whole ``max_tokens`` cap.
  **Expected**: each role's declared ``output_tokens``
  (:class:`~pytest_budget._core.registry.Role`: a typical reply length, never more than
  the cap).
* **Multi-turn roles** (the planning tool agent, an awareness actor) cannot know their
  turns in advance: the worst case runs every episode to its turn cap, the expected case to
  the role's declared ``turns``; every turn re-sends the conversation so far, which grows by the
  turn's output plus :data:`TOOL_RESULT_TOKENS` of tool result or observation.  An awareness
  actor that is a model is estimated from the reference actor's rollouts of the same
  environment (their turns and observations; the estimator's probes likewise), with every
  rollout running to the environment's turn cap as the worst case.  Rows made this way carry
  ``exact=False`` and say so.
* **Recorded calls** (the record cache) are free: a single-shot request whose answer is
  already recorded is counted in ``recorded`` and left out of the calls, tokens and USD.

Nothing here imports pytest; the suites' rows are built by
:mod:`pytest_budget._plugin.forecast_hooks`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_budget._core.registry import role as registered_role
from pytest_budget._core.tokens import count_tokens
from pytest_budget.models._prices import PriceTable
from pytest_budget.models._usage import TokenUsage

__all__ = [
    "PROMPT_PAD",
    "TOOL_RESULT_TOKENS",
    "Forecast",
    "RoleForecast",
    "expected_output_tokens",
    "expected_turns",
    "multi_turn_tokens",
    "prompt_tokens",
]

#: Worst-case padding of reference-token prompt counts (as the runtime's reservations).
PROMPT_PAD = 1.5


def expected_output_tokens(role: str, cap: int) -> int:
    """The expected reply length of ``role`` (its declared ``output_tokens``), at most ``cap``."""
    declared = registered_role(role)
    typical = declared.output_tokens if declared is not None else None
    return min(cap, cap if typical is None else typical)


def expected_turns(role: str, max_turns: int) -> int:
    """The expected turns of one episode of ``role`` (its declared ``turns``), at most
    ``max_turns``."""
    declared = registered_role(role)
    typical = declared.turns if declared is not None else None
    return min(max_turns, max_turns if typical is None else typical)


#: Tokens a tool result or a new observation adds to the conversation per turn.
TOOL_RESULT_TOKENS = 200


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                value = block.get("text") or block.get("content")
                parts.append(_text(value) if value is not None else "")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else str(content)


@functools.lru_cache(maxsize=1 << 16)
def _message_tokens(text: str) -> int:
    # The probes of one rollout re-send its earlier turns as the same messages: each text
    # is counted once (the dry run's main cost was counting them again).
    return count_tokens(text)


def prompt_tokens(messages: Iterable[Mapping[str, Any]], tools: object = None) -> int:
    """Reference tokens of one request: every message's text, plus the tools' JSON."""
    total = sum(_message_tokens(_text(message.get("content"))) for message in messages)
    if tools:
        total += count_tokens(json.dumps(tools, sort_keys=True, default=str))
    return total


def multi_turn_tokens(first_prompt: int, turns: int, per_turn_growth: int) -> int:
    """Input tokens of ``turns`` turns that each re-send the conversation: the first prompt,
    then ``per_turn_growth`` more per earlier turn (``sum(first + k * growth, k < turns)``)."""
    return turns * first_prompt + per_turn_growth * turns * (turns - 1) // 2


@dataclass
class RoleForecast:
    """The calls of one role of one suite with one model (see the module doc)."""

    suite: str
    role: str
    model: str  # "provider:model"
    calls: int = 0
    calls_worst: int = 0
    input_tokens: int = 0
    input_worst: int = 0
    output_tokens: int = 0
    output_worst: int = 0
    recorded: int = 0
    exact: bool = True
    assumptions: list[str] = field(default_factory=list)

    def add_call(self, prompt: int, cap: int) -> None:
        """One single-shot call with a ``prompt`` of reference tokens and a ``cap``."""
        self.calls += 1
        self.calls_worst += 1
        self.input_tokens += prompt
        self.input_worst += math.ceil(prompt * PROMPT_PAD)
        self.output_tokens += expected_output_tokens(self.role, cap)
        self.output_worst += cap

    def add_episode(self, first_prompt: int, cap: int, max_turns: int) -> None:
        """One multi-turn episode (see the module doc for the assumptions)."""
        self.exact = False
        expected_out = expected_output_tokens(self.role, cap)
        turns = expected_turns(self.role, max_turns)
        self.calls += turns
        self.calls_worst += max_turns
        self.input_tokens += multi_turn_tokens(
            first_prompt, turns, expected_out + TOOL_RESULT_TOKENS
        )
        self.input_worst += math.ceil(
            multi_turn_tokens(first_prompt, max_turns, cap + TOOL_RESULT_TOKENS) * PROMPT_PAD
        )
        self.output_tokens += turns * expected_out
        self.output_worst += max_turns * cap

    def add_estimated(self, prompts: Sequence[int], cap: int, worst_calls: int) -> None:
        """Calls whose count is only estimated: ``prompts`` (reference tokens) are the
        expected calls; the worst case is ``worst_calls`` calls of the largest prompt, each
        writing its whole ``cap``."""
        self.exact = False
        worst_calls = max(worst_calls, len(prompts))
        self.calls += len(prompts)
        self.calls_worst += worst_calls
        self.input_tokens += sum(prompts)
        self.input_worst += math.ceil(worst_calls * max(prompts, default=0) * PROMPT_PAD)
        self.output_tokens += len(prompts) * expected_output_tokens(self.role, cap)
        self.output_worst += worst_calls * cap

    def usd(self, prices: PriceTable) -> tuple[float | None, float | None]:
        """(expected, worst case) USD at the price table's rates; None without a price."""
        price = prices.lookup(*_split(self.model))
        if price is None:
            return None, None
        expected = TokenUsage(input=self.input_tokens, output=self.output_tokens, reported=True)
        worst = TokenUsage(input=self.input_worst, output=self.output_worst, reported=True)
        return price.cost(expected), price.cost(worst)


def _split(label: str) -> tuple[str, str]:
    provider, _, model = label.partition(":")
    return provider, model


def _money(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.4f}"


def _sum(values: Iterable[float | None]) -> float | None:
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return total


@dataclass
class Forecast:
    """Every row of a run's forecast, priced."""

    rows: list[RoleForecast]
    prices: PriceTable
    notes: list[str] = field(default_factory=list)
    size: str = ""  # the run size in force (--budget-size)

    def usd(self) -> tuple[float | None, float | None]:
        """The run's (expected, worst case) USD; None when some row has no price."""
        pairs = [row.usd(self.prices) for row in self.rows if row.calls_worst]
        return _sum(p[0] for p in pairs), _sum(p[1] for p in pairs)

    def totals(self) -> dict[str, int]:
        keys = ("calls", "calls_worst", "input_tokens", "input_worst", "output_tokens")
        totals = {key: sum(getattr(row, key) for row in self.rows) for key in keys}
        totals["output_worst"] = sum(row.output_worst for row in self.rows)
        totals["recorded"] = sum(row.recorded for row in self.rows)
        return totals

    def as_dict(self) -> dict[str, Any]:
        expected, worst = self.usd()
        rows = []
        for row in self.rows:
            row_expected, row_worst = row.usd(self.prices)
            rows.append(
                {
                    **asdict(row),
                    "usd": row_expected,
                    "usd_worst": row_worst,
                    "price_source": self.prices.source(*_split(row.model)),
                }
            )
        return {
            "rows": rows,
            **self.totals(),
            "usd": None if expected is None else round(expected, 6),
            "usd_worst": None if worst is None else round(worst, 6),
            "exact": all(row.exact for row in self.rows),
            "size": self.size,
            "notes": list(self.notes),
            "rules": RULES,
        }

    def lines(self) -> list[str]:
        """The terminal block: the size, one line per suite and role, the total, the
        assumptions."""
        out = [_size_line(self.size)] if self.size else []
        for row in self.rows:
            expected, worst = row.usd(self.prices)
            calls = f"{row.calls:,}" if row.exact else f"~{row.calls:,}..{row.calls_worst:,}"
            out.append(
                f"{row.suite} {row.role} ({row.model}): {calls} calls, input "
                f"{row.input_tokens:,}..{row.input_worst:,} tokens, output "
                f"{row.output_tokens:,}..{row.output_worst:,} tokens, "
                f"{_money(expected)}..{_money(worst)}"
                + (f" ({row.recorded:,} more recorded: free)" if row.recorded else "")
            )
        expected, worst = self.usd()
        totals = self.totals()
        out.append(
            f"total: {totals['calls']:,}..{totals['calls_worst']:,} live calls, "
            f"{_money(expected)} expected, {_money(worst)} worst case"
        )
        out.extend(self.price_lines())
        for row in self.rows:
            for assumption in row.assumptions:
                out.append(f"  {row.suite} {row.role}: {assumption}")
        out.extend(f"  {note}" for note in self.notes)
        out.append(f"  {RULES}")
        return out

    def price_lines(self) -> list[str]:
        """Where each model's price comes from; for a model with none, how to price it."""
        out = []
        for label in dict.fromkeys(row.model for row in self.rows):
            source = self.prices.source(*_split(label))
            if source is None:
                from pytest_budget.models._prices import price_hint

                out.append(price_hint(label))
            else:
                out.append(f"prices: {label} from {source}")
        return out

    def after_run(self, spent_usd: float | None, calls: int, input_tokens: int,
                  output_tokens: int) -> list[str]:  # fmt: skip
        """The forecast beside what the run spent (end-of-run terminal lines)."""
        expected, worst = self.usd()
        totals = self.totals()
        spent = "unknown" if spent_usd is None else f"${spent_usd:,.4f}"
        return [
            f"forecast: {totals['calls']:,}..{totals['calls_worst']:,} calls, input "
            f"{totals['input_tokens']:,}..{totals['input_worst']:,}, output "
            f"{totals['output_tokens']:,}..{totals['output_worst']:,} tokens, "
            f"{_money(expected)}..{_money(worst)}",
            f"actual:   {calls:,} calls, input {input_tokens:,}, output {output_tokens:,} "
            f"tokens, {spent}",
        ]


def _size_line(name: str) -> str:
    from pytest_budget._core.sizes import SIZES

    size = SIZES.get(name)
    why = f" ({size.why})" if size is not None and size.why else ""
    other = ", ".join(f"--budget-size={n}" for n in SIZES if n != name)
    return f"size: {name}{why}; other sizes: {other}"


#: The forecast's rules in one line (printed and in the report).
RULES = (
    "expected..worst case: input = reference tokens of the prompts to be sent (worst x"
    f"{PROMPT_PAD:g}); output = a typical reply per role (worst: every call's max_tokens); "
    "calls already recorded cost nothing and are left out"
)
