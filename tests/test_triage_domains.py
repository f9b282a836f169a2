"""Bundled triage domains: generators, reference solvers and estimators.

Ground truth is recomputed independently: arithmetic answers with Python's ``ast`` and
``fractions.Fraction``, puzzle answers by the ``sokoban`` grader and an exhaustive search.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

from pytest_budget._core.tokens import count_tokens
from pytest_budget._environments import sokoban
from pytest_budget.triage import _arithmetic as arithmetic
from pytest_budget.triage import _puzzles as puzzles
from pytest_budget.triage._domains import (
    DOMAINS,
    Estimate,
    ReferenceSolver,
    estimate_any,
    get_domain,
)
from pytest_budget.triage._graders import extract_answer, grade
from pytest_budget.triage._types import Item, Problem, Solution

# ------------------------------------------------------------------ helpers


class _Undefined(Exception):
    pass


def ast_value(expression: str, env: dict[str, Fraction] | None = None) -> Fraction:
    """Exact value of an infix expression via Python's own parser (not the solver's)."""
    operators: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b,
    }

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.Name):
            if env is None or node.id not in env:
                raise _Undefined(node.id)
            return env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            return operators[type(node.op)](walk(node.left), walk(node.right))
        raise AssertionError(f"unexpected syntax {ast.dump(node)}")

    return walk(ast.parse(expression, mode="eval"))


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def expression_of(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("Expression:")]
    assert len(lines) == 1, text
    return lines[0].removeprefix("Expression:").strip()


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman rank correlation with average ranks for ties."""

    def ranks(values: list[float]) -> np.ndarray:
        array = np.asarray(values, dtype=float)
        order = array.argsort(kind="mergesort")
        result = np.empty(len(array))
        result[order] = np.arange(len(array), dtype=float)
        for value in np.unique(array):
            tied = array == value
            result[tied] = result[tied].mean()
        return result

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def baselines(items: tuple[Item, ...], solver: object) -> list[tuple[Solution, bool]]:
    out = []
    for entry in items:
        solution = solver.solve(entry.problem)  # type: ignore[attr-defined]
        out.append((solution, grade(entry, solution.answer)))
    return out


@pytest.fixture(scope="module")
def arith_pool() -> tuple[Item, ...]:
    return arithmetic.generate(40, 0) + arithmetic.generate(40, 1) + arithmetic.generate(40, 2)


@pytest.fixture(scope="module")
def arith_runs(arith_pool: tuple[Item, ...]) -> list[tuple[Solution, bool]]:
    return baselines(arith_pool, arithmetic.ArithmeticSolver())


@pytest.fixture(scope="module")
def puzzle_pool() -> tuple[Item, ...]:
    return puzzles.generate(45, 0) + puzzles.generate(45, 1)


@pytest.fixture(scope="module")
def puzzle_runs(puzzle_pool: tuple[Item, ...]) -> list[tuple[Solution, bool]]:
    return baselines(puzzle_pool, puzzles.SokobanSolver())


# ------------------------------------------------------------------ arithmetic items


def test_arith_items_shape(arith_pool: tuple[Item, ...]) -> None:
    items = arithmetic.generate(12, 3)
    assert [entry.id for entry in items] == [f"arith-{i:03d}" for i in range(12)]
    for entry in arith_pool:
        assert (entry.domain, entry.grader, entry.value, entry.unsolvable) == (
            "arith",
            "exact",
            1.0,
            False,
        )
        tree = ast.parse(expression_of(entry.text), mode="eval")
        operations = sum(isinstance(node, ast.BinOp) for node in ast.walk(tree))
        assert 2 <= operations <= 14
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                assert 1 <= node.value <= 9999


def test_arith_answers_match_an_independent_evaluation(arith_pool: tuple[Item, ...]) -> None:
    for entry in arith_pool:
        value = ast_value(expression_of(entry.text))
        # str(Fraction) is the reduced "p/q" (or "p") form the items promise.
        assert entry.answer == str(value), entry.text


def test_arith_generation_is_deterministic_per_seed() -> None:
    assert arithmetic.generate(20, 7) == arithmetic.generate(20, 7)
    assert arithmetic.generate(20, 7) != arithmetic.generate(20, 8)
    assert arithmetic.generate(5, 7) == arithmetic.generate(20, 7)[:5]
    assert arithmetic.generate_unsolvable(6, 7) == arithmetic.generate_unsolvable(6, 7)


def _fingerprint(items: tuple[Item, ...]) -> str:
    payload = json.dumps([[entry.id, entry.text, entry.answer] for entry in items])
    return hashlib.sha256(payload.encode()).hexdigest()


def test_generation_is_identical_in_a_fresh_interpreter() -> None:
    code = (
        "import hashlib, json\n"
        "from pytest_budget.triage import arithmetic, puzzles\n"
        "for items in (arithmetic.generate(15, 11), arithmetic.generate_unsolvable(6, 11),\n"
        "              puzzles.generate(9, 11), puzzles.generate_unsolvable(4, 11)):\n"
        "    payload = json.dumps([[i.id, i.text, i.answer] for i in items])\n"
        "    print(hashlib.sha256(payload.encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # a different salt must not matter
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    expected = [
        _fingerprint(arithmetic.generate(15, 11)),
        _fingerprint(arithmetic.generate_unsolvable(6, 11)),
        _fingerprint(puzzles.generate(9, 11)),
        _fingerprint(puzzles.generate_unsolvable(4, 11)),
    ]
    assert result.stdout.split() == expected


# ------------------------------------------------------------------ arithmetic solver


def test_arith_solver_is_right_whenever_it_answers(
    arith_pool: tuple[Item, ...], arith_runs: list[tuple[Solution, bool]]
) -> None:
    for entry, (solution, solved) in zip(arith_pool, arith_runs, strict=True):
        assert solution.tokens == count_tokens(solution.text)
        if solution.answer is None:
            assert solution.text.endswith("I cannot finish this reliably.")
            assert not solved
        else:
            assert Fraction(solution.answer) == ast_value(expression_of(entry.text))
            assert solution.text.splitlines()[-1] == f"Answer: {solution.answer}"
            assert extract_answer(solution.text) == solution.answer
            assert solved


def test_arith_cost_spread_and_failure_share(arith_runs: list[tuple[Solution, bool]]) -> None:
    costs = [solution.tokens for solution, _ in arith_runs]
    failures = sum(not solved for _, solved in arith_runs) / len(arith_runs)
    summary = f"costs {min(costs)}..{max(costs)}, failure share {failures:.2f}"
    print(summary)
    assert min(costs) <= 60 and max(costs) >= 500, summary
    assert 0.15 <= failures <= 0.35, summary
    solved_costs = [solution.tokens for solution, solved in arith_runs if solved]
    assert max(solved_costs) >= 400, summary  # expensive items are not all failures


def test_arith_solver_shows_its_work_for_a_known_item() -> None:
    text = "Work it out.\nExpression: ((37 * 4) - 19) / 6"
    solution = arithmetic.ArithmeticSolver().solve(Problem(id="x", text=text))
    assert solution.answer == "43/2"
    lines = solution.text.splitlines()
    assert lines[2] == "Step 1: 37 * 4 = 148"
    assert lines[3] == "Step 2: 148 - 19 = 129"
    assert lines[4].startswith("Step 3: 129 / 6: gcd(129, 6): 129 = 21 * 6 + 3")
    assert lines[-1] == "Answer: 43/2"


def test_arith_solver_writes_partial_products_and_long_division() -> None:
    solver = arithmetic.ArithmeticSolver()
    product = solver.solve(Problem(id="x", text="Expression: (372 * 45) + 1 - 1"))
    assert "372 * 5 + 372 * 40 = 1860 + 14880 = 16740" in product.text
    assert product.answer == "16740"
    quotient = solver.solve(Problem(id="x", text="Expression: (16740 / 45) + 0 * 1"))
    assert "167 / 45 = 3 r 32; 324 / 45 = 7 r 9; 90 / 45 = 2 r 0" in quotient.text
    assert quotient.answer == "372"
    # Bigger operands cost more tokens.
    small = solver.solve(Problem(id="x", text="Expression: (12 * 13) + 1 - 1"))
    big = solver.solve(Problem(id="x", text="Expression: (1234 * 5678) + 1 - 1"))
    assert big.tokens > small.tokens


def test_arith_solver_reads_plain_expressions_with_precedence() -> None:
    solver = arithmetic.ArithmeticSolver()
    assert solver.solve(Problem(id="x", text="What is 2 + 3 * 4 - 6 / 3?")).answer == "12"
    assert solver.solve(Problem(id="x", text="Compute -(2 - 9) * 3 + 1.")).answer == "22"


def test_arith_solver_gives_up_beyond_its_working_memory() -> None:
    solver = arithmetic.ArithmeticSolver()
    huge = solver.solve(Problem(id="x", text="Expression: (9999 * 9999) * (9999 * 9999)"))
    assert huge.answer is None
    assert "digits, more than I can carry" in huge.text
    long_sum = " + ".join(["1"] * (arithmetic.MAX_STEPS + 2))
    long = solver.solve(Problem(id="x", text=f"Expression: {long_sum}"))
    assert long.answer is None
    assert f"Step {arithmetic.MAX_STEPS}:" in long.text
    assert f"Step {arithmetic.MAX_STEPS + 1}:" not in long.text


def test_arith_solver_refuses_non_arithmetic() -> None:
    solution = arithmetic.ArithmeticSolver().solve(Problem(id="x", text="Name a prime city."))
    assert solution.answer is None
    assert solution.tokens == count_tokens(solution.text) < 15


def test_arith_truncation_under_a_token_cap(arith_runs: list[tuple[Solution, bool]]) -> None:
    solver = arithmetic.ArithmeticSolver()
    problem = Problem(id="x", text="Expression: ((372 * 45) - 19) / 6")
    full = solver.solve(problem)
    assert full.answer is not None
    assert solver.solve(problem, max_tokens=full.tokens) == full
    assert solver.solve(problem, max_tokens=full.tokens + 50) == full
    for cap in (full.tokens - 1, full.tokens // 2, 3, 1):
        cut = solver.solve(problem, max_tokens=cap)
        assert cut.answer is None
        assert cut.tokens == count_tokens(cut.text) == cap
        assert full.text.startswith(cut.text)
        # Whole tokens only: the kept tokens are exactly the first ``cap`` of the full text.
        assert _tokens(cut.text) == _tokens(full.text)[:cap]
    assert solver.solve(problem, max_tokens=0) == Solution(text="", tokens=0, answer=None)


# ------------------------------------------------------------------ unsolvable arithmetic


def test_arith_unsolvable_items_have_no_answer_and_look_ordinary() -> None:
    items = arithmetic.generate_unsolvable(30, 4)
    assert [entry.id for entry in items] == [f"arith-u{i:03d}" for i in range(30)]
    kinds = {"variable": 0, "zero": 0}
    for entry in items:
        assert entry.unsolvable and entry.answer is None and entry.domain == "arith"
        assert not re.search(r"unsolvable|undefined|impossible|zero", entry.text, re.I)
        expression = expression_of(entry.text)
        try:
            ast_value(expression)
        except ZeroDivisionError:
            kinds["zero"] += 1
            continue
        except _Undefined as missing:
            # The value must really depend on the unnamed quantity.
            name = str(missing)
            assert f"Here {name} is" in entry.text
            values = set()
            for guess in (Fraction(3), Fraction(11), Fraction(101)):
                try:
                    values.add(ast_value(expression, {name: guess}))
                except ZeroDivisionError:
                    values.add(None)  # type: ignore[arg-type]
            assert len(values) > 1
            kinds["variable"] += 1
            continue
        raise AssertionError(f"{entry.id} has a value: {entry.text}")
    assert kinds["variable"] >= 10 and kinds["zero"] >= 10


def test_arith_unsolvable_items_are_never_solved() -> None:
    solver = arithmetic.ArithmeticSolver()
    for entry in arithmetic.generate_unsolvable(20, 5):
        solution = solver.solve(entry.problem)
        assert solution.answer is None
        assert solution.text.endswith("I cannot finish this reliably.")
        assert not grade(entry, "0") and not grade(entry, "undefined")


# ------------------------------------------------------------------ puzzles


def test_puzzle_items_shape_and_grid(puzzle_pool: tuple[Item, ...]) -> None:
    assert [entry.id for entry in puzzles.generate(4, 9)] == [f"sokoban-{i:03d}" for i in range(4)]
    sizes = set()
    for entry in puzzle_pool:
        assert (entry.domain, entry.grader, entry.answer, entry.unsolvable) == (
            "sokoban",
            "sokoban",
            None,
            False,
        )
        level = sokoban.parse_level(puzzles.grid_from_text(entry.text))
        assert sokoban.render(level) == puzzles.grid_from_text(entry.text)
        assert not level.solved
        sizes.add((level.width, level.height, len(level.boxes)))
    assert sizes == set(puzzles.SIZES)


def test_puzzle_generation_is_deterministic_per_seed() -> None:
    assert puzzles.generate(10, 3) == puzzles.generate(10, 3)
    assert puzzles.generate(10, 3) != puzzles.generate(10, 4)
    assert puzzles.generate_unsolvable(5, 3) == puzzles.generate_unsolvable(5, 3)


def test_puzzle_solver_answers_are_accepted_by_the_grader(
    puzzle_pool: tuple[Item, ...], puzzle_runs: list[tuple[Solution, bool]]
) -> None:
    for entry, (solution, solved) in zip(puzzle_pool, puzzle_runs, strict=True):
        assert solution.tokens == count_tokens(solution.text)
        if solution.answer is not None:
            assert solved, entry.text
            assert extract_answer(solution.text) == solution.answer
        else:
            assert not solved
            assert solution.text.endswith("I cannot solve this puzzle.")


def test_puzzle_solver_fails_exactly_on_the_hardest(
    puzzle_pool: tuple[Item, ...], puzzle_runs: list[tuple[Solution, bool]]
) -> None:
    limit = puzzles.SokobanSolver().max_states
    effort = [
        sokoban.solve(puzzles.level_from_text(entry.text), max_states=10**6).expanded
        for entry in puzzle_pool
    ]
    solved = [ok for _, ok in puzzle_runs]
    failures = solved.count(False) / len(solved)
    print(f"sokoban failure share {failures:.2f}")
    assert 0.15 <= failures <= 0.35
    # A search budget: the failures are precisely the puzzles needing the most search.
    assert max(e for e, ok in zip(effort, solved, strict=True) if ok) <= limit
    assert min(e for e, ok in zip(effort, solved, strict=True) if not ok) > limit


def test_puzzle_costs_grow_with_solution_length(
    puzzle_runs: list[tuple[Solution, bool]],
) -> None:
    pairs = [
        (len(solution.answer.split()), solution.tokens)
        for solution, _ in puzzle_runs
        if solution.answer
    ]
    lengths, costs = zip(*pairs, strict=True)
    assert spearman(list(lengths), list(costs)) > 0.9
    assert max(costs) >= 2 * min(costs)


def test_puzzle_truncation_under_a_token_cap(
    puzzle_pool: tuple[Item, ...], puzzle_runs: list[tuple[Solution, bool]]
) -> None:
    solver = puzzles.SokobanSolver()
    index = next(i for i, (solution, _) in enumerate(puzzle_runs) if solution.answer)
    problem, full = puzzle_pool[index].problem, puzzle_runs[index][0]
    assert solver.solve(problem, max_tokens=full.tokens) == full
    cut = solver.solve(problem, max_tokens=full.tokens - 1)
    assert cut.answer is None and cut.tokens == full.tokens - 1
    assert full.text.startswith(cut.text)
    assert not grade(puzzle_pool[index], cut.answer)


def test_puzzle_unsolvable_items_fail_and_look_ordinary() -> None:
    items = puzzles.generate_unsolvable(15, 2)
    assert [entry.id for entry in items] == [f"sokoban-u{i:03d}" for i in range(15)]
    solver = puzzles.SokobanSolver()
    for entry in items:
        assert entry.unsolvable and entry.answer is None and entry.grader == "sokoban"
        assert "unsolvable" not in entry.text.casefold()
        level = puzzles.level_from_text(entry.text)
        proof = sokoban.solve(level, max_states=10**6)
        assert proof.moves is None and proof.exhausted
        solution = solver.solve(entry.problem)
        assert solution.answer is None
        assert not grade(entry, "Up Down Left Right")
        assert puzzles.estimate(entry.problem).p_solve < 0.1


# ------------------------------------------------------------------ estimators


def test_arith_estimator_tracks_true_cost(
    arith_pool: tuple[Item, ...], arith_runs: list[tuple[Solution, bool]]
) -> None:
    estimates = [arithmetic.estimate(entry.problem) for entry in arith_pool]
    rho = spearman([e.tokens for e in estimates], [s.tokens for s, _ in arith_runs])
    solved_p = np.mean([e.p_solve for e, (_, ok) in zip(estimates, arith_runs, strict=True) if ok])
    failed_p = np.mean(
        [e.p_solve for e, (_, ok) in zip(estimates, arith_runs, strict=True) if not ok]
    )
    print(f"arith estimator: Spearman rho {rho:.2f}; mean p_solve {solved_p:.2f} vs {failed_p:.2f}")
    assert 0.4 < rho < 0.99  # informative, yet not a disguised solver run
    assert solved_p > failed_p + 0.3


def test_puzzle_estimator_tracks_true_cost(
    puzzle_pool: tuple[Item, ...], puzzle_runs: list[tuple[Solution, bool]]
) -> None:
    estimates = [puzzles.estimate(entry.problem) for entry in puzzle_pool]
    rho = spearman([e.tokens for e in estimates], [s.tokens for s, _ in puzzle_runs])
    solved_p = np.mean([e.p_solve for e, (_, ok) in zip(estimates, puzzle_runs, strict=True) if ok])
    failed_p = np.mean(
        [e.p_solve for e, (_, ok) in zip(estimates, puzzle_runs, strict=True) if not ok]
    )
    print(
        f"sokoban estimator: Spearman rho {rho:.2f}; mean p_solve {solved_p:.2f} vs {failed_p:.2f}"
    )
    assert 0.4 < rho < 0.99
    assert solved_p > failed_p + 0.2


def test_arith_estimator_flags_undefined_quantities() -> None:
    items = arithmetic.generate_unsolvable(10, 1)
    with_letters = [e for e in items if re.search(r"Here [a-z] is", e.text)]
    assert with_letters
    assert all(arithmetic.estimate(e.problem).p_solve < 0.1 for e in with_letters)


# ------------------------------------------------------------------ registry and dispatch


def test_domain_registry() -> None:
    assert sorted(DOMAINS) == ["arith", "sokoban"]
    assert len(DOMAINS) == 2
    arith = get_domain("arith")
    assert arith.name == "arith"
    assert arith.generate(3, 0) == arithmetic.generate(3, 0)
    assert arith.solver().name == "reference-arith"
    assert get_domain("sokoban").solver().name == "reference-sokoban"
    assert isinstance(get_domain("sokoban").estimate(puzzles.generate(1, 0)[0].problem), Estimate)
    with pytest.raises(ValueError) as info:
        get_domain("chess")
    assert str(info.value) == "unknown domain 'chess'; built-in domains: arith, sokoban"


def test_reference_solver_dispatches_by_domain_and_by_text() -> None:
    solver = ReferenceSolver()
    assert solver.name == "reference"
    arith_item = arithmetic.generate(1, 0)[0]
    puzzle_item = puzzles.generate(1, 0)[0]
    for entry, inner in (
        (arith_item, arithmetic.ArithmeticSolver()),
        (puzzle_item, puzzles.SokobanSolver()),
    ):
        expected = inner.solve(entry.problem)
        assert solver.solve(entry.problem) == expected
        anonymous = Problem(id=entry.id, text=entry.text)  # no domain: read the text
        assert solver.solve(anonymous) == expected
        foreign = Problem(id=entry.id, text=entry.text, domain="mine")
        assert solver.solve(foreign) == expected
        assert solver.solve(entry.problem, max_tokens=5).tokens == 5


def test_reference_solver_declines_other_problems() -> None:
    for text in (
        "Which gas do plants absorb? (A) O2 (B) CO2",
        "Born on 12/05/1990 in a long question about dates and places.",
    ):
        solution = ReferenceSolver().solve(Problem(id="q", text=text))
        assert solution == Solution(
            text="I cannot solve this kind of problem.", tokens=8, answer=None
        )


def test_estimate_any() -> None:
    arith_item = arithmetic.generate(1, 0)[0]
    assert estimate_any(Problem(id="a", text=arith_item.text)) == arithmetic.estimate(
        arith_item.problem
    )
    puzzle_item = puzzles.generate(1, 0)[0]
    assert estimate_any(puzzle_item.problem) == puzzles.estimate(puzzle_item.problem)
    generic = estimate_any(Problem(id="q", text="word " * 40, domain="trivia"))
    assert generic == Estimate(tokens=160, p_solve=0.5)
    assert estimate_any(Problem(id="q", text="Hi?")) == Estimate(tokens=50, p_solve=0.5)
