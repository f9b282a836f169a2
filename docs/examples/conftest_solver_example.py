"""Your own solver for Phase 0 and the re-solve cells, through the ``pytest_budget_solver`` hook.

Copy this file to ``conftest.py`` in your project's rootdir, add a Phase 0 cache to your
ini file (``budget_cache_dir = .budget-cache``) and run::

    pytest --budget-suite=triage --budget-gate=off

``fake_complete`` stands in for your model client so the example runs offline: it lets the
built-in reference solver write the answer.  Replace it with a real call and return the
output-token count your provider reports.
"""

from pytest_budget import count_tokens
from pytest_budget.triage import Problem, ReferenceSolver, render_resolve_banner

_REFERENCE = ReferenceSolver()


def fake_complete(problem: Problem, prompt: str, max_tokens: int | None) -> str:
    return _REFERENCE.solve(problem, max_tokens).text


class MySolver:
    # Part of the Phase 0 cache key: change it when the model or its settings change.
    name = "my-solver-v1"

    def solve(self, problem: Problem, max_tokens: int | None = None):
        prompt = problem.text
        if problem.stated_tokens is not None:  # only in the --budget-resolve cells
            prompt = render_resolve_banner(problem.stated_tokens) + "\n\n" + prompt
        text = fake_complete(problem, prompt, max_tokens)
        # A mapping with the provider's usage; the answer is read from the text
        # (<answer>...</answer>, \boxed{...} or a last "Answer: ..." line).
        return {"text": text, "tokens": count_tokens(text)}


def pytest_budget_solver(config):
    return MySolver()
