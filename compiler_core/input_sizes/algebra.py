"""Sizes as polynomials in the model's dim names: `seq`, `4*batch`, `past + seq`.

An exported model computes its reshape targets from its input's dims (Shape, Gather, Mul,
Concat), so the size of one axis of one tensor is a polynomial in the input dims: products for
merged axes (batch·heads), sums for concatenations (past + new tokens), quotients by constants
for split axes (hidden / heads).  Keeping these sizes as polynomials is what lets a constant
inside the model (a Reshape target [5, batch*heads, 16]) be read as an equation on the input
dims (seq·batch·64 = 5·batch·4·16, so seq = 5).  Coefficients are exact fractions; every
symbol stands for a positive size.
"""

from __future__ import annotations

import ast
from fractions import Fraction
from functools import lru_cache
from math import gcd
from typing import Iterable, Mapping

Monomial = tuple[tuple[str, int], ...]   # (symbol, power) pairs, sorted; () is the constant
OPAQUE_PREFIX = "?"                      # symbols for sizes nothing names (not input dims)


class Poly:
    """An immutable polynomial with Fraction coefficients over positive size symbols."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, Fraction] | None = None):
        self.terms: dict[Monomial, Fraction] = {m: Fraction(c) for m, c in (terms or {}).items()
                                                 if c}
        self._hash: int | None = None

    @staticmethod
    def const(value: int | Fraction) -> "Poly":
        if type(value) is int:
            return _int_const(value)
        return Poly({(): Fraction(value)})

    @staticmethod
    def symbol(name: str) -> "Poly":
        return Poly({((name, 1),): Fraction(1)})

    # -- reading ------------------------------------------------------------------------------
    @property
    def value(self) -> Fraction | None:
        """The number this polynomial is, when it holds no symbol."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def as_int(self) -> int | None:
        value = self.value
        return int(value) if value is not None and value.denominator == 1 else None

    def symbols(self) -> set[str]:
        return {name for monomial in self.terms for name, _ in monomial}

    def evaluate(self, sizes: Mapping[str, int | Fraction]) -> Fraction | None:
        """The number for these sizes, or None if a symbol has none."""
        total = Fraction(0)
        for monomial, coefficient in self.terms.items():
            term = coefficient
            for name, power in monomial:
                if name not in sizes:
                    return None
                term *= Fraction(sizes[name]) ** power
            total += term
        return total

    def substitute(self, values: Mapping[str, "Poly"]) -> "Poly":
        """This polynomial with each symbol in ``values`` replaced by its polynomial."""
        if not values or not self.symbols() & values.keys():
            return self
        total = Poly()
        for monomial, coefficient in self.terms.items():
            term = Poly.const(coefficient)
            for name, power in monomial:
                factor = values.get(name, Poly.symbol(name))
                for _ in range(power):
                    term = term * factor
            total = total + term
        return total

    def linear_in(self, name: str) -> tuple["Poly", "Poly"] | None:
        """(a, b) with self = a·name + b, where a is a number and b holds no ``name``; None
        when ``name`` appears otherwise (a power, or multiplied by another symbol)."""
        a, rest = Fraction(0), {}
        for monomial, coefficient in self.terms.items():
            powers = dict(monomial)
            if name not in powers:
                rest[monomial] = coefficient
            elif monomial == ((name, 1),):
                a = coefficient
            else:
                return None
        return (Poly.const(a), Poly(rest)) if a else None

    def without_common_factor(self) -> "Poly":
        """Divided by the symbols every term shares and by the coefficients' common factor —
        the same equation ``self = 0`` once each symbol is known to be positive."""
        if not self.terms:
            return self
        shared = None
        for monomial in self.terms:
            powers = dict(monomial)
            shared = powers if shared is None else {n: min(p, powers[n])
                                                    for n, p in shared.items() if n in powers}
        numerators = [c.numerator for c in self.terms.values()]
        denominators = [c.denominator for c in self.terms.values()]
        scale = Fraction(_lcm(denominators), _gcd(numerators))
        terms = {}
        for monomial, coefficient in self.terms.items():
            left = tuple((n, p - shared.get(n, 0)) for n, p in monomial
                         if p - shared.get(n, 0) > 0)
            terms[left] = coefficient * scale
        return Poly(terms)

    # -- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other: "Poly | int") -> "Poly":
        other = _poly(other)
        terms = dict(self.terms)
        for monomial, coefficient in other.terms.items():
            terms[monomial] = terms.get(monomial, Fraction(0)) + coefficient
        return Poly(terms)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: "Poly | int") -> "Poly":
        return self + (-_poly(other))

    def __rsub__(self, other: "Poly | int") -> "Poly":
        return _poly(other) - self

    def __mul__(self, other: "Poly | int") -> "Poly":
        other = _poly(other)
        terms: dict[Monomial, Fraction] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                monomial = _multiply(m1, m2)
                terms[monomial] = terms.get(monomial, Fraction(0)) + c1 * c2
        return Poly(terms)

    __rmul__ = __mul__

    def divided_by(self, other: "Poly") -> "Poly | None":
        """self / other when it is a polynomial (other a number or a single term), else None."""
        if len(other.terms) != 1:
            return None
        (divisor, coefficient), = other.terms.items()
        powers = dict(divisor)
        terms = {}
        for monomial, c in self.terms.items():
            mine = dict(monomial)
            if any(mine.get(n, 0) < p for n, p in powers.items()):
                return None
            left = tuple((n, p - powers.get(n, 0)) for n, p in monomial
                         if p - powers.get(n, 0) > 0)
            terms[left] = c / coefficient
        return Poly(terms)

    # -- identity and text --------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if self is other:   # the usual case: shapes share their dims' objects (``Walk.ir_shape``)
            return True
        if isinstance(other, int):
            other = Poly.const(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for monomial, coefficient in sorted(self.terms.items(), key=_term_order):
            factors = [name if power == 1 else f"{name}^{power}" for name, power in monomial]
            if not factors:
                parts.append(str(coefficient))
            elif coefficient == 1:
                parts.append("*".join(factors))
            elif coefficient == -1:
                parts.append("-" + "*".join(factors))
            else:
                text = str(coefficient) if coefficient.denominator == 1 else f"({coefficient})"
                parts.append(f"{text}*" + "*".join(factors))
        return " + ".join(parts).replace("+ -", "- ")

    __repr__ = __str__


@lru_cache(maxsize=4096)
def _int_const(value: int) -> Poly:
    """An integer as a polynomial, made once: a graph's shapes repeat the same few sizes
    thousands of times, and a Poly never changes."""
    return Poly({(): Fraction(value)})


def product(polys: Iterable[Poly]) -> Poly:
    total = Poly.const(1)
    for poly in polys:
        total = total * poly
    return total


def is_opaque(name: str) -> bool:
    return name.startswith(OPAQUE_PREFIX)


def _poly(value: "Poly | int | Fraction") -> Poly:
    return value if isinstance(value, Poly) else Poly.const(value)


def _multiply(m1: Monomial, m2: Monomial) -> Monomial:
    powers = dict(m1)
    for name, power in m2:
        powers[name] = powers.get(name, 0) + power
    return tuple(sorted(powers.items()))


def _term_order(item: tuple[Monomial, Fraction]) -> tuple:
    monomial = item[0]
    return (not monomial, monomial)   # symbols first, the constant last


def _gcd(numbers: list[int]) -> int:
    result = 0
    for number in numbers:
        result = gcd(result, number)
    return result or 1


def _lcm(numbers: list[int]) -> int:
    result = 1
    for number in numbers:
        result = result * number // gcd(result, number)
    return result


def parse_dim(text: str) -> Poly:
    """A dim name as a polynomial: 'seq' is a symbol, and the expressions exporters write
    ('4*batch', 's0 + s1') are read as such; anything else is one symbol named by the text."""
    try:
        return _from_expression(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError):
        return Poly.symbol(text)


def _from_expression(node: ast.AST) -> Poly:
    if isinstance(node, ast.Name):
        return Poly.symbol(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Poly.const(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _from_expression(node.left), _from_expression(node.right)
        result = _OPERATORS[type(node.op)](left, right)
        if result is not None:
            return result
    raise ValueError("not a polynomial")


_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a.divided_by(b),
              ast.FloorDiv: lambda a, b: a.divided_by(b)}
