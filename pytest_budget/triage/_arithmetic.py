"""Multi-step exact arithmetic as triage problems, with a reference solver and estimator.

Items are nested expressions over positive integers with ``+ - * /`` (2 to 14 operations,
operands of 1-4 digits) whose exact value is an integer or a reduced fraction.  The
reference solver works them out step by step the way a careful person would on paper
(partial products, long division, Euclid for reductions), so its output grows with the
size of the numbers, and it has a working memory: it gives up when an intermediate number
grows too long or the expression needs too many steps.  Unsolvable look-alikes contain an
undefined quantity or divide by a sub-expression that evaluates to zero.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from dataclasses import dataclass
from fractions import Fraction

from pytest_budget.triage._solutions import Estimate, capped_solution
from pytest_budget.triage._types import Item, Problem, Solution

__all__ = [
    "MAX_DIGITS",
    "MAX_STEPS",
    "ArithmeticSolver",
    "Expr",
    "Num",
    "Op",
    "Var",
    "estimate",
    "find_expression",
    "format_value",
    "generate",
    "generate_unsolvable",
    "parse_expression",
    "render",
]

#: The solver loses track of any intermediate number longer than this many digits.
MAX_DIGITS = 9
#: ... and of any expression that needs more operations than this.
MAX_STEPS = 12

_INSTRUCTION = (
    "Work out the exact value of the expression below. Give the result as an integer, "
    "or as a fraction p/q in lowest terms if it is not a whole number."
)
_MARKER = "Expression:"

# ---------------------------------------------------------------------------
# Expression trees


@dataclass(frozen=True)
class Num:
    """An integer literal."""

    value: int


@dataclass(frozen=True)
class Var:
    """A named quantity (only unsolvable items have one)."""

    name: str


@dataclass(frozen=True)
class Op:
    """A binary operation ``left op right`` with ``op`` one of ``+ - * /``."""

    op: str
    left: Expr
    right: Expr


Expr = Num | Var | Op


def render(node: Expr, *, top: bool = True) -> str:
    """Infix text with every inner operation bracketed: ``((37 * 4) - 19) / 6``."""
    if isinstance(node, Num):
        return str(node.value) if node.value >= 0 else f"({node.value})"
    if isinstance(node, Var):
        return node.name
    text = f"{render(node.left, top=False)} {node.op} {render(node.right, top=False)}"
    return text if top else f"({text})"


def _evaluate(node: Expr, env: dict[str, Fraction] | None = None) -> Fraction:
    """Exact value (raises ZeroDivisionError / KeyError for undefined expressions)."""
    if isinstance(node, Num):
        return Fraction(node.value)
    if isinstance(node, Var):
        return (env or {})[node.name]
    return _apply(node.op, _evaluate(node.left, env), _evaluate(node.right, env))


def _apply(op: str, left: Fraction, right: Fraction) -> Fraction:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    return left / right


def _count_ops(node: Expr) -> int:
    return 1 + _count_ops(node.left) + _count_ops(node.right) if isinstance(node, Op) else 0


def format_value(value: Fraction) -> str:
    """``"7"``, ``"-7"`` or ``"43/2"`` (always reduced, sign on the numerator)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


# ---------------------------------------------------------------------------
# Parsing (used by the solver and the estimator; tolerant of user-written spacing)

# "\u00d7" and "\u00f7" are the multiplication and division signs some people type.
_LEX = re.compile("\\s*(?:(\\d+)|([A-Za-z]\\w*)|([-+*/\u00d7\u00f7()]))")
_OPS = {"\u00d7": "*", "\u00f7": "/"}
_MAX_TOKENS = 400  # longer input is not a problem for this solver (and would nest too deep)


def parse_expression(text: str) -> Expr:
    """Parse infix arithmetic with the usual precedence; ``ValueError`` if malformed."""
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _LEX.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"unexpected character {text[pos]!r} in expression")
        tokens.append(next(group for group in match.groups() if group is not None))
        pos = match.end()
    if len(tokens) > _MAX_TOKENS:
        raise ValueError(f"expression has more than {_MAX_TOKENS} symbols")
    tokens = [_OPS.get(token, token) for token in tokens]
    node, rest = _parse_sum(tokens, 0)
    if rest != len(tokens):
        raise ValueError(f"unexpected {tokens[rest]!r} in expression")
    return node


def _parse_sum(tokens: list[str], i: int) -> tuple[Expr, int]:
    node, i = _parse_product(tokens, i)
    while i < len(tokens) and tokens[i] in "+-":
        right, j = _parse_product(tokens, i + 1)
        node, i = Op(tokens[i], node, right), j
    return node, i


def _parse_product(tokens: list[str], i: int) -> tuple[Expr, int]:
    node, i = _parse_atom(tokens, i)
    while i < len(tokens) and tokens[i] in "*/":
        right, j = _parse_atom(tokens, i + 1)
        node, i = Op(tokens[i], node, right), j
    return node, i


def _parse_atom(tokens: list[str], i: int) -> tuple[Expr, int]:
    if i >= len(tokens):
        raise ValueError("expression ends too early")
    token = tokens[i]
    if token == "-":
        inner, j = _parse_atom(tokens, i + 1)
        if isinstance(inner, Num):
            return Num(-inner.value), j
        return Op("*", Num(-1), inner), j
    if token == "(":
        inner, j = _parse_sum(tokens, i + 1)
        if j >= len(tokens) or tokens[j] != ")":
            raise ValueError("unbalanced brackets")
        return inner, j + 1
    if token.isdigit():
        return Num(int(token)), i + 1
    if token[0].isalpha():
        return Var(token), i + 1
    raise ValueError(f"unexpected {token!r} in expression")


_CANDIDATE = re.compile("-?[\\d(][\\d\\s+\\-*/\u00d7\u00f7()]*[\\d)]")


def find_expression(text: str) -> str | None:
    """The expression a problem asks about, or ``None`` if the text is not arithmetic.

    An ``Expression:`` line wins; otherwise the longest run of arithmetic characters
    with at least two operations that parses, if it makes up a good part of the text.
    """
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.casefold().startswith(_MARKER.casefold()):
            candidate = stripped[len(_MARKER) :].strip().rstrip(".?=").strip()
            try:
                parse_expression(candidate)
            except (ValueError, RecursionError):
                return None
            return candidate
    best: str | None = None
    for match in _CANDIDATE.finditer(text):
        candidate = match.group(0).strip()
        try:
            node = parse_expression(candidate)
        except (ValueError, RecursionError):
            continue
        if _count_ops(node) >= 2 and (best is None or len(candidate) > len(best)):
            best = candidate
    # Without the marker the expression must be the point of the text, not a date like
    # 12/05/2023 inside a long question.
    if best is None or len(best.replace(" ", "")) * 4 < len("".join(text.split())):
        return None
    return best


# ---------------------------------------------------------------------------
# Generation


def _rng(seed: int, *parts: object) -> random.Random:
    # sha256, never hash(): the same seed must give the same items in every process.
    key = "\x1f".join(str(part) for part in (seed, *parts))
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def _operand(rng: random.Random, max_digits: int) -> int:
    digits = rng.randint(1, max_digits)
    return rng.randint(max(1, 10 ** (digits - 1)), 10**digits - 1)


def _divisor_of(value: Fraction, rng: random.Random) -> int | None:
    """A divisor 2..9999 of an integer ``value`` (so the division comes out whole)."""
    if value.denominator != 1 or value == 0:
        return None
    n = abs(value.numerator)
    small = [d for d in range(2, min(n, 9999) + 1) if n % d == 0] if n < 10**6 else []
    if not small:
        # Large values: try a few candidates rather than scanning.
        small = [d for d in (2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 25) if n % d == 0]
    return rng.choice(small) if small else None


_LIMIT = Fraction(10**18)  # keep texts and answers readable


def _build(rng: random.Random, ops: int, max_digits: int) -> tuple[Expr, Fraction]:
    """A random tree with ``ops`` operations and its (defined, bounded) value."""
    if ops == 0:
        number = _operand(rng, max_digits)
        return Num(number), Fraction(number)
    left_ops = rng.randint(0, ops - 1)
    left, left_value = _build(rng, left_ops, max_digits)
    op = rng.choices("+-*/", weights=(3, 3, 3, 2))[0]
    if op == "/" and ops - 1 - left_ops == 0 and rng.random() < 0.75:
        divisor = _divisor_of(left_value, rng)
        if divisor is not None:
            return Op("/", left, Num(divisor)), left_value / divisor
    right, right_value = _build(rng, ops - 1 - left_ops, max_digits)
    if op == "/" and right_value == 0:
        op = "+"
    value = _apply(op, left_value, right_value)
    if abs(value.numerator) > _LIMIT or value.denominator > _LIMIT:
        op, value = "-", left_value - right_value  # tame runaway products
    return Op(op, left, right), value


def _text(expression: str, note: str = "") -> str:
    return f"{_INSTRUCTION}\n{_MARKER} {expression}" + (f"\n{note}" if note else "")


def generate(n: int, seed: int) -> tuple[Item, ...]:
    """``n`` arithmetic items ``arith-000``... with exact answers, deterministic per seed."""
    items = []
    for index in range(n):
        rng = _rng(seed, "arith", index)
        ops = rng.randint(2, 14)
        max_digits = rng.choice((1, 2, 2, 3, 3, 4))
        node, value = _build(rng, ops, max_digits)
        items.append(
            Item(
                id=f"arith-{index:03d}",
                text=_text(render(node)),
                value=1.0,
                answer=format_value(value),
                grader="exact",
                domain="arith",
            )
        )
    return tuple(items)


_UNDEFINED_NOTES = (
    "Here {v} is the number the examiner has in mind.",
    "Here {v} is the number of coins in the teacher's left pocket.",
    "Here {v} is the page number the reader will turn to next.",
    "Here {v} is a whole number chosen by whoever set this question.",
    "Here {v} is the number of birds on the roof this morning.",
)


def _replace_leaf(node: Expr, rng: random.Random, new: Expr) -> Expr:
    if not isinstance(node, Op):
        return new
    if rng.random() < 0.5:
        return Op(node.op, _replace_leaf(node.left, rng, new), node.right)
    return Op(node.op, node.left, _replace_leaf(node.right, rng, new))


def _undefined_item(rng: random.Random) -> tuple[Expr, str]:
    """An expression whose value genuinely depends on an unspecified variable."""
    name = rng.choice("kmnt")
    while True:
        node, _ = _build(rng, rng.randint(2, 8), rng.choice((1, 2, 3)))
        node = _replace_leaf(node, rng, Var(name))
        try:
            # Degree-one rational in the variable: two different values prove dependence.
            first = _evaluate(node, {name: Fraction(7919)})
            second = _evaluate(node, {name: Fraction(104729)})
        except ZeroDivisionError:
            continue
        if first != second:
            return node, rng.choice(_UNDEFINED_NOTES).format(v=name)


def _zero_divisor(rng: random.Random) -> Expr:
    """A bracketed sub-expression of + - * that evaluates to exactly zero."""
    while True:
        inner, value = _build(rng, rng.randint(1, 3), rng.choice((1, 2)))
        if "/" in render(inner) or value == 0:
            continue
        number = int(value)
        return Op("-", inner, Num(number)) if number > 0 else Op("+", inner, Num(-number))


def generate_unsolvable(n: int, seed: int) -> tuple[Item, ...]:
    """``n`` look-alike items ``arith-u000``... that have no numeric answer.

    Half contain a quantity the text never pins down; half divide by a sub-expression
    that is exactly zero.  Neither says so.
    """
    items = []
    for index in range(n):
        rng = _rng(seed, "arith-unsolvable", index)
        if index % 2 == 0:
            node, note = _undefined_item(rng)
        else:
            numerator, _ = _build(rng, rng.randint(0, 3), rng.choice((1, 2, 3)))
            outer, _ = _build(rng, rng.randint(1, 6), rng.choice((1, 2, 3)))
            node, note = _replace_leaf(outer, rng, Op("/", numerator, _zero_divisor(rng))), ""
        items.append(
            Item(
                id=f"arith-u{index:03d}",
                text=_text(render(node), note),
                value=1.0,
                answer=None,
                grader="exact",
                unsolvable=True,
                domain="arith",
            )
        )
    return tuple(items)


# ---------------------------------------------------------------------------
# The reference solver


class _LostTrack(Exception):
    """The solver's working memory overflowed or the expression cannot be evaluated."""


def _check(*numbers: int) -> None:
    for number in numbers:
        if len(str(abs(number))) > MAX_DIGITS:
            raise _LostTrack(
                f"{abs(number)} has {len(str(abs(number)))} digits, more than I can carry safely."
            )


def _paren(value: Fraction) -> str:
    text = format_value(value)
    return f"({text})" if value.denominator != 1 or value < 0 else text


def _multiply_work(a: int, b: int) -> tuple[str, int]:
    """``a * b`` written out: directly for a one-digit factor, else as partial products."""
    product = a * b
    _check(product)
    x, y = max(abs(a), abs(b)), min(abs(a), abs(b))
    if y < 10:
        return f"{_int(a)} * {_int(b)} = {product}", product
    partials = []
    for place, digit in enumerate(reversed(str(y))):
        if digit != "0":
            partials.append((x, int(digit) * 10**place, x * int(digit) * 10**place))
    terms = " + ".join(f"{x} * {factor}" for x, factor, _ in partials)
    sums = " + ".join(str(part) for _, _, part in partials)
    sign = "" if product >= 0 else "; the signs differ, so the product is negative"
    return f"{_int(a)} * {_int(b)} = {terms} = {sums} = {abs(product)}{sign}", product


def _long_division(a: int, b: int) -> str:
    """``a / b`` for ``b`` dividing ``a``: at once when small, else digit by digit."""
    x, y = abs(a), abs(b)
    if x < 100 and y < 10:
        return f"{_int(a)} / {_int(b)} = {a // b}"
    parts: list[str] = []
    remainder = 0
    for digit in str(x):
        remainder = remainder * 10 + int(digit)
        if remainder >= y or parts:
            parts.append(f"{remainder} / {y} = {remainder // y} r {remainder % y}")
            remainder %= y
    sign = "" if (a < 0) == (b < 0) else ", with a minus sign"
    return f"{_int(a)} / {_int(b)}: " + "; ".join(parts) + f"; so {a // b}{sign}"


def _euclid(a: int, b: int) -> tuple[str, int]:
    """Euclid's algorithm written out; returns the working and gcd(|a|, |b|)."""
    x, y = max(abs(a), abs(b)), min(abs(a), abs(b))
    lines = []
    while y:
        lines.append(f"{x} = {x // y} * {y} + {x % y}")
        x, y = y, x % y
    return f"gcd({abs(a)}, {abs(b)}): " + "; ".join(lines) + f"; gcd {x}", x


def _int(number: int) -> str:
    return f"({number})" if number < 0 else str(number)


def _reduce(numerator: int, denominator: int) -> tuple[str, Fraction]:
    """``numerator / denominator`` in lowest terms, written out (long division or gcd)."""
    _check(numerator, denominator)
    if denominator < 0:
        numerator, denominator = -numerator, -denominator
    value = Fraction(numerator, denominator)
    if numerator % denominator == 0:
        return _long_division(numerator, denominator), value
    work, g = _euclid(numerator, denominator)
    if g == 1:
        return f"{work}, so {format_value(value)} is already in lowest terms", value
    return f"{work}, so {numerator}/{denominator} = {format_value(value)}", value


def _step(op: str, a: Fraction, b: Fraction) -> tuple[str, Fraction]:
    """One operation on two exact values, written out; raises _LostTrack when stuck."""
    head = f"{_paren(a)} {op} {_paren(b)}"
    if op == "/" and b == 0:
        raise _LostTrack(f"{head} divides by zero, so the expression is undefined.")
    if a.denominator == 1 and b.denominator == 1:
        x, y = a.numerator, b.numerator
        if op == "*":
            work, product = _multiply_work(x, y)
            return work, Fraction(product)
        if op == "/":
            work, value = _reduce(x, y)
            return (work if x % y == 0 else f"{head}: {work}"), value  # long division has a head
        result = x + y if op == "+" else x - y
        _check(result)
        return f"{head} = {result}", Fraction(result)
    # Fractions: multiply across (dividing = multiplying by 1/b), or a common denominator.
    if op == "/":
        b = 1 / b
        op, head = "*", f"{head} = {_paren(a)} * {_paren(b)}"
    p, q, r, s = a.numerator, a.denominator, b.numerator, b.denominator
    if op == "*":
        top_work, top = _multiply_work(p, r)
        bottom_work, bottom = _multiply_work(q, s)
        reduce_work, value = _reduce(top, bottom)
        return f"{head}: top {top_work}; bottom {bottom_work}; {reduce_work}", value
    left_work, left = _multiply_work(p, s)
    right_work, right = _multiply_work(r, q)
    bottom_work, bottom = _multiply_work(q, s)
    top = left + right if op == "+" else left - right
    _check(top)
    reduce_work, value = _reduce(top, bottom)
    return (
        f"{head}: over a common denominator, {left_work}; {right_work}; {bottom_work}; "
        f"top {left} {op} {right} = {top}; {reduce_work}"
    ), value


class ArithmeticSolver:
    """Reference solver for arithmetic items: honest, step by step, with a limited memory."""

    name = "reference-arith"

    def solve(self, problem: Problem, max_tokens: int | None = None) -> Solution:
        expression = find_expression(problem.text)
        if expression is None:
            return capped_solution("I do not see an expression to evaluate.", None, max_tokens)
        node = parse_expression(expression)
        lines = [
            f"Expression: {render(node)}",
            "I work from the innermost brackets outward, one operation per step.",
        ]
        try:
            value = self._walk(node, lines)
        except _LostTrack as stuck:
            lines.append(str(stuck))
            lines.append("I cannot finish this reliably.")
            return capped_solution("\n".join(lines), None, max_tokens)
        answer = format_value(value)
        lines.append(f"Answer: {answer}")
        return capped_solution("\n".join(lines), answer, max_tokens)

    def _walk(self, node: Expr, lines: list[str]) -> Fraction:
        if isinstance(node, Num):
            return Fraction(node.value)
        if isinstance(node, Var):
            raise _LostTrack(
                f"The expression uses {node.name}, and the problem never gives {node.name} "
                "a value, so I cannot evaluate it."
            )
        left = self._walk(node.left, lines)
        right = self._walk(node.right, lines)
        done = sum(1 for line in lines if line.startswith("Step "))
        if done >= MAX_STEPS:
            raise _LostTrack(
                f"That is {done} operations so far with more to come; "
                "I can no longer keep all the partial results straight."
            )
        work, value = _step(node.op, left, right)
        lines.append(f"Step {done + 1}: {work}")
        return value


# ---------------------------------------------------------------------------
# The estimator


def _digits_guess(node: Expr) -> int:
    """Rough digit count of a sub-expression's value, from its shape alone."""
    if isinstance(node, Num):
        return len(str(abs(node.value)))
    if isinstance(node, Var):
        return 1
    left, right = _digits_guess(node.left), _digits_guess(node.right)
    if node.op == "*":
        return left + right
    if node.op == "/":
        return max(1, left - right + 1)
    return max(left, right)


def _heavy_digits(node: Expr) -> tuple[int, int]:
    """(digits fed into * and /, largest guessed intermediate) over the tree."""
    if not isinstance(node, Op):
        return 0, _digits_guess(node)
    left_heavy, left_max = _heavy_digits(node.left)
    right_heavy, right_max = _heavy_digits(node.right)
    heavy = left_heavy + right_heavy
    if node.op in "*/":
        heavy += _digits_guess(node.left) + _digits_guess(node.right)
    return heavy, max(left_max, right_max, _digits_guess(node))


def estimate(problem: Problem) -> Estimate:
    """Cost and success odds from the expression's shape alone (never evaluates it).

    Cost grows with the number of operations and with the digits of the numbers that get
    multiplied or divided; the odds fall when the expression is long or its products look
    too big to carry, and are near zero when a letter appears that may be undefined.
    """
    text = problem.text
    # Planners estimate the same items in many cells of a run (a 10 MB text is not kept).
    return _estimate_known(text) if len(text) <= 4_000 else _estimate_text(text)


def _estimate_text(text: str) -> Estimate:
    expression = find_expression(text)
    if expression is None:
        return Estimate(tokens=20, p_solve=0.05)
    node = parse_expression(expression)
    ops = _count_ops(node)
    heavy, biggest = _heavy_digits(node)
    tokens = 25 + 10 * ops + 4 * heavy
    if any(isinstance(leaf, Var) for leaf in _leaves(node)):
        return Estimate(tokens=tokens, p_solve=0.05)
    p_solve = 0.9 if ops <= MAX_STEPS else 0.1
    if biggest > MAX_DIGITS:
        p_solve *= 0.3
    return Estimate(tokens=tokens, p_solve=p_solve)


_estimate_known = functools.lru_cache(maxsize=2048)(_estimate_text)


def _leaves(node: Expr) -> list[Expr]:
    if isinstance(node, Op):
        return _leaves(node.left) + _leaves(node.right)
    return [node]
