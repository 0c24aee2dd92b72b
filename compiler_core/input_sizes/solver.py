"""Sizes for a model's free input dims that satisfy the equations its structure implies.

The user's bindings come first.  Then each equation is simplified (known sizes substituted,
shared positive factors divided out) and, when it is linear in one of its symbols, solved for
it: `seq·batch·64 = 5·batch·4·16` gives seq = 5; `total = past + seq` makes total follow the
others.  Unknown intermediate sizes are eliminated before input dims.  The dims no equation
fixes get small defaults (batch 2, sequence 8, image 32), within any bound the model sets.
An equation a binding contradicts is kept as a conflict: the run will tell who is right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product as combinations

from .algebra import Poly, is_opaque
from .walk import Bound, Equation, InputDim, SizeFacts

MAX_ROUNDS = 50          # substitution rounds (each one solves at least one symbol)
SEQUENCE_WORDS = ("seq", "len", "token", "time")
ADJUSTMENTS = (1, 2, 4, 8, 16, 3, 5, 6, 12, 32, 64)  # factors tried when a derived size is
                                                     # not a whole number


@dataclass
class SizePlan:
    """A size for every free input dim, and why each size that is not a default was chosen."""

    sizes: dict[str, int]
    dims: list[InputDim]
    reasons: dict[str, str] = field(default_factory=dict)    # symbol -> why, when not default
    conflicts: list[str] = field(default_factory=list)       # equations that cannot hold
    bindings: dict[str, int] = field(default_factory=dict)
    origin: str = "the model's structure"   # where the plan came from, for reports

    def input_shape(self, name: str, shape: tuple) -> tuple[int, ...]:
        """The concrete shape of graph input ``name`` whose declared shape is ``shape``."""
        sizes = {(d.input, d.axis): self.sizes[d.symbol] for d in self.dims}
        return tuple(dim if isinstance(dim, int) else sizes.get((name, axis), 1)
                     for axis, dim in enumerate(shape))

    @property
    def found(self) -> dict[str, int]:
        """The sizes the model's structure fixed (neither bound by the user nor defaults)."""
        return {s: self.sizes[s] for s in self.reasons}

    def describe(self) -> str:
        """`seq=5 (Reshape ... at '/attn/Reshape_4'), batch=2`: for reports."""
        return ", ".join(f"{s}={v}" + (f" ({self.reasons[s]})" if s in self.reasons else "")
                         for s, v in self.sizes.items())


def solve(facts: SizeFacts, bindings: dict[str, int] | None = None) -> SizePlan:
    """The plan: bindings, then what the equations fix, then defaults for the rest."""
    bindings = {s: v for s, v in (bindings or {}).items()}
    symbols = facts.symbols
    known: dict[str, Poly] = {s: Poly.const(v) for s, v in bindings.items() if s in symbols}
    why: dict[str, Equation] = {}
    conflicts: list[str] = []
    pending = list(facts.equations)
    for _ in range(MAX_ROUNDS):
        pending, solved = _solve_round(pending, known, why, conflicts, symbols)
        if not solved:
            break
    defaults = _defaults(facts, known)
    sizes = _evaluate(symbols, known, defaults, facts.bounds)
    plan = SizePlan(sizes, facts.dims, bindings=dict(bindings))
    for symbol in symbols:
        if symbol in why and symbol not in bindings:
            plan.reasons[symbol] = _reason(known[symbol], why[symbol])
    plan.conflicts = conflicts + [_unmet(e) for e in pending if not _holds(e, sizes)]
    plan.conflicts += [f"{b.what} (node {b.node!r})" for b in facts.bounds
                       if (b.size.evaluate(sizes) or 0) > b.limit]
    return plan


def _solve_round(pending: list[Equation], known: dict[str, Poly], why: dict[str, Equation],
                 conflicts: list[str], symbols: list[str]) -> tuple[list[Equation], bool]:
    """One pass over the pending equations; those still open, and whether any was solved."""
    still, solved = [], False
    for equation in pending:
        poly = equation.difference.substitute(known).without_common_factor()
        if poly.value == 0:
            continue
        if poly.value is not None:
            conflicts.append(_unmet(equation))
            continue
        chosen = _pick_symbol(poly, symbols)
        if chosen is None:
            still.append(equation)
            continue
        symbol, (a, b) = chosen
        value = (-b).divided_by(a)
        number = value.value
        if number is not None and (number.denominator != 1 or number < 1):
            conflicts.append(f"{_unmet(equation)}: it needs {symbol} = {number}")
            continue
        for other in known:
            known[other] = known[other].substitute({symbol: value})
        known[symbol] = value
        why[symbol] = equation
        solved = True
    return still, solved


def _pick_symbol(poly: Poly, symbols: list[str]) -> tuple[str, tuple[Poly, Poly]] | None:
    """The symbol to solve ``poly = 0`` for: one it is linear in — alone if possible, else an
    unknown intermediate size, else the input dim declared last (earlier ones stay free)."""
    linear = {s: poly.linear_in(s) for s in poly.symbols()}
    linear = {s: ab for s, ab in linear.items() if ab is not None}
    if not linear:
        return None
    order = {s: i for i, s in enumerate(symbols)}

    def rank(symbol: str) -> tuple:
        a, b = linear[symbol]
        return (b.value is None, not is_opaque(symbol), abs(a.value) != 1,
                -order.get(symbol, -1))
    best = min(linear, key=rank)
    return best, linear[best]


def _defaults(facts: SizeFacts, known: dict[str, Poly]) -> dict[str, int]:
    """A small size for every symbol nothing fixed, within the model's bounds."""
    defaults: dict[str, int] = {}
    for dim in facts.dims:
        if dim.symbol not in known and dim.symbol not in defaults:
            defaults[dim.symbol] = default_size(dim)
    for bound in facts.bounds:
        names = bound.size.symbols()
        if len(names) == 1 and bound.size.linear_in(next(iter(names))) is not None:
            name = next(iter(names))
            if name in defaults and (bound.size.evaluate(defaults) or 0) > bound.limit:
                a, b = bound.size.linear_in(name)
                defaults[name] = max(1, int((bound.limit - b.value) // a.value))
    return defaults


def default_size(dim: InputDim) -> int:
    """Batch 2, sequence 8, spatial dims of an image 32, other named dims 8 (2 on the first
    axis, usually a batch); a dim nobody named 1."""
    if not dim.named:
        return 1
    lowered = dim.symbol.lower()
    if "batch" in lowered:
        return 2
    if any(word in lowered for word in SEQUENCE_WORDS):
        return 8
    if dim.axis == 0 and dim.rank > 1:
        return 2
    if dim.rank == 4 and dim.axis >= 2:
        return 32  # large enough for a few strided convs
    return 8


def _evaluate(symbols: list[str], known: dict[str, Poly], defaults: dict[str, int],
              bounds: list[Bound]) -> dict[str, int]:
    """Every input dim's size; free sizes are scaled when a derived one is not whole."""
    derived = {s: known[s] for s in symbols if s in known}
    free = [s for s in defaults if any(s in p.symbols() for p in derived.values())]
    for factors in combinations(ADJUSTMENTS, repeat=len(free)) if len(free) <= 2 else [()]:
        trial = dict(defaults)
        trial.update({s: defaults[s] * f for s, f in zip(free, factors)})
        sizes = _sizes(symbols, derived, trial)
        if sizes is not None and all((b.size.evaluate(sizes) or 0) <= b.limit for b in bounds):
            return sizes
    return _sizes(symbols, derived, defaults, force=True)


def _sizes(symbols: list[str], derived: dict[str, Poly], free: dict[str, int],
           force: bool = False) -> dict[str, int] | None:
    sizes = {}
    for symbol in symbols:
        if symbol in derived:
            value = derived[symbol].evaluate(free)
            if value is None or value.denominator != 1 or value < 1:
                if not force:
                    return None
                value = Fraction(max(1, round(value or 1)))
            sizes[symbol] = int(value)
        else:
            sizes[symbol] = free.get(symbol, 1)
    return sizes


def _holds(equation: Equation, sizes: dict[str, int]) -> bool:
    value = equation.difference.evaluate(sizes)
    return value is None or value == 0   # an unknown intermediate size: nothing to say


def _unmet(equation: Equation) -> str:
    return f"{equation.what} (node {equation.node!r}: {equation.left} = {equation.right})"


def _reason(value: Poly, equation: Equation) -> str:
    formula = "" if value.value is not None else f"= {value}, "
    return f"{formula}fixed by node {equation.node!r}: {equation.what}"
