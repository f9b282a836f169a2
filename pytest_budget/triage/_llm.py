"""The triage suite's LLM agents: the planner and the solver on a chat model.

Each sends one chat call per role call: a short system message
(:data:`~pytest_budget.triage._prompts.PLANNER_SYSTEM`,
:func:`~pytest_budget.triage._prompts.solver_system`) and the prompt the suite already wrote
(the planner prompt, the problem text).  The planner returns the raw text; the solver the
raw text, the answer read from it and the output tokens the provider reported.  The suite's
parsers and graders judge them.

Token caps: the solver's ``max_tokens`` argument (the suite's hard cap) is the call's cap,
else the setting; a re-solve keeps the baseline's cap (TRIAGE App. C.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_budget._core.textscan import remove_tag_blocks
from pytest_budget._core.tokens import count_tokens
from pytest_budget.models._llm_agent import TRUNCATED_FINISH_REASONS, LLMAgent
from pytest_budget.triage._domains import recognise_domain
from pytest_budget.triage._graders import extract_answer, parse_moves
from pytest_budget.triage._prompts import (
    PLANNER_SYSTEM,
    render_plan_prompt,
    render_resolve_banner,
    solver_prompt_digest,
    solver_system,
)
from pytest_budget.triage._types import Solution

__all__ = [
    "LLM_ROLES",
    "LLMPlanner",
    "LLMSolver",
    "ModelSolution",
    "PlanText",
    "extract_solver_answer",
]

#: The triage planner and solver get 16,384 tokens a call: reasoning models spend thousands
#: of tokens thinking before they answer, and a lower cap cuts them off mid-thought (counted
#: as truncated, never scored as a measured cost); it is also the output limit of common
#: non-reasoning models (gpt-4o-mini).  Lower it with the ``max_tokens`` setting for models
#: whose limit is lower.
_TRIAGE_MAX_TOKENS = 16_384


class PlanText(str):
    """A planner's raw reply (a ``str``) with the provider's finish reason attached."""

    finish_reason: str | None

    def __new__(cls, text: str, *, finish_reason: str | None = None) -> PlanText:
        value = super().__new__(cls, text)
        value.finish_reason = finish_reason
        return value

    @property
    def truncated(self) -> bool:
        """The reply was cut at ``max_tokens`` (finish reason ``length`` or equivalent)."""
        return self.finish_reason in TRUNCATED_FINISH_REASONS


@dataclass(frozen=True)
class ModelSolution(Solution):
    """A :class:`~pytest_budget.triage.Solution` from a model, with where ``tokens`` came from.

    ``tokens`` is the output-token count the provider reported; when the server reported no
    usage it is the reference tokenizer's count of the text and ``tokens_reported`` is False.
    ``finish_reason`` is the provider's own; a reply cut at the cap has no ``answer``.
    """

    tokens_reported: bool = True
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason in TRUNCATED_FINISH_REASONS


_THINK_TAGS = ("think", "thinking", "reasoning")
_LEADING_NUMBER = re.compile(
    r"^[+-]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)(?:\s*/\s*[+-]?\d+(?:,\d{3})*)?(?!\w)"
)
_MOVE_WORD = re.compile(r"\b(up|down|left|right)\b", re.IGNORECASE)


def extract_solver_answer(text: str, domain: str | None) -> str | None:
    """The final answer of a solver reply, read for its domain (None when it states none).

    Reasoning blocks (``<think>`` etc.) are skipped, then
    :func:`~pytest_budget.triage._graders.extract_answer` finds the last ``<answer>`` tag,
    ``\\boxed{}`` or ``Answer:`` line.  For ``arith`` the value is the part after a last
    ``=`` and, when it starts with a number or fraction, that number (``"7/2 (3.5)"`` ->
    ``"7/2"``).  For ``sokoban`` an answer that is not a plain move list keeps its move words
    in order (``"1. Up 2. Left"`` -> ``"Up Left"``).  Graders judge the result.
    """
    answer = extract_answer(remove_tag_blocks(text, _THINK_TAGS, "\n"))
    if answer is None:
        return None
    if domain == "arith":
        value = answer.rsplit("=", 1)[-1].strip().strip("$").strip()
        match = _LEADING_NUMBER.match(value)
        if match:
            value = re.sub(r"\s+", "", match.group(0))
        return value or None
    if domain == "sokoban" and parse_moves(answer) is None:
        words = _MOVE_WORD.findall(answer)
        if words:
            return " ".join(word.capitalize() for word in words)
    return answer


class LLMPlanner(LLMAgent):
    """Triage planner: sends the suite's planning prompt and returns the model's raw text."""

    role: ClassVar[str] = "planner"
    default_max_tokens: ClassVar[int] = _TRIAGE_MAX_TOKENS

    def messages(self, request: Any) -> list[dict[str, Any]]:
        prompt = getattr(request, "prompt", "")
        if not isinstance(prompt, str) or not prompt:
            prompt = render_plan_prompt(
                request.items, request.budget, variant=getattr(request, "variant", "A") or "A"
            )
        return [
            {"role": "system", "content": PLANNER_SYSTEM},
            {"role": "user", "content": prompt},
        ]

    async def plan(self, request: Any) -> PlanText:
        result = await self._complete(self.messages(request), self.max_tokens)
        return PlanText(result.text, finish_reason=result.raw_finish_reason)


class LLMSolver(LLMAgent):
    """Triage solver: one call per problem; output tokens as the provider reported them.

    ``max_tokens`` (a hard cap passed by the suite) is the call's cap, else the setting.  A
    re-solve (``problem.stated_tokens`` set) prepends the allocation banner
    (:func:`~pytest_budget.triage._prompts.render_resolve_banner`) to the problem and keeps
    the baseline run's API-level ``max_tokens`` (TRIAGE App. C.1): the allocation is stated,
    never enforced, so compliance (output tokens <= a_i) is the model's own doing.
    """

    role: ClassVar[str] = "solver"
    default_max_tokens: ClassVar[int] = _TRIAGE_MAX_TOKENS

    def messages(self, problem: Any, domain: str | None) -> list[dict[str, Any]]:
        text = str(problem.text).strip()
        stated = getattr(problem, "stated_tokens", None)
        if isinstance(stated, int) and not isinstance(stated, bool):
            text = f"{render_resolve_banner(stated)}\n\n{text}"
        return [
            {"role": "system", "content": solver_system(domain)},
            {"role": "user", "content": text},
        ]

    def cache_identity(self) -> dict[str, Any]:
        """What can change this solver's answers, for the Phase 0 cache key."""
        client = getattr(self.model, "client", self.model)
        base_url = getattr(client, "base_url", None)
        return {
            "provider": getattr(client, "provider", None),
            "model": getattr(client, "model", None),
            "base_url": base_url if isinstance(base_url, str) else None,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "prompt": solver_prompt_digest(),
        }

    def call_cap(self, problem: Any, max_tokens: int | None) -> int:
        # A stated allocation never changes the cap: the re-solve keeps the baseline's.
        return self.max_tokens if max_tokens is None else max_tokens

    async def solve(self, problem: Any, max_tokens: int | None = None) -> ModelSolution:
        domain = recognise_domain(problem)
        cap = self.call_cap(problem, max_tokens)
        if cap < 1:  # nothing may be written: no call
            return ModelSolution(text="", tokens=0, answer=None, tokens_reported=False)
        result = await self._complete(self.messages(problem, domain), cap)
        text = result.text
        reported = result.usage.reported
        tokens = result.usage.output if reported else count_tokens(text)
        finish = result.raw_finish_reason
        answer = None if finish in TRUNCATED_FINISH_REASONS else extract_solver_answer(text, domain)
        return ModelSolution(
            text=text,
            tokens=tokens,
            answer=answer,
            tokens_reported=reported,
            finish_reason=finish,
        )


#: The roles the triage suite's LLM agents fill (read by :mod:`pytest_budget._run.model_agents`).
LLM_ROLES: dict[str, type[LLMAgent]] = {"planner": LLMPlanner, "solver": LLMSolver}
