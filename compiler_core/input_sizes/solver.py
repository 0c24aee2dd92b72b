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
SEQUENCE_WORDS = ("seq", "len", "token", "time", "past", "cache")
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
        sizes = {(d.input, d.axis): d.size.evaluate(self.sizes) for d in self.dims}
        return tuple(dim if isinstance(dim, int) else int(sizes.get((name, axis)) or 1)
                     for axis, dim in enumerate(shape))

    @property
    def found(self) -> dict[str, int]:
        """The sizes the model's structure fixed (neither bound by the user nor defaults)."""
        return {s: self.sizes[s] for s in self.reasons}

    def describe(self) -> str:
        """`seq=5 (fixed by node ...), batch=2`, then the dims written as expressions
        (`attention_mask[1] = past + 1 = 9`): for reports."""
        text = ", ".join(f"{s}={v}" + (f" ({self.reasons[s]})" if s in self.reasons else "")
                         for s, v in self.sizes.items())
        expressions = [f"{d.input}[{d.axis}] = {d.name} = {d.size.evaluate(self.sizes)}"
                       for d in self.dims if d.size != Poly.symbol(d.name)]
        return "; ".join([text] + expressions)


def solve(facts: SizeFacts, bindings: dict[str, int] | None = None,
          preferred: dict[str, int] | None = None) -> SizePlan:
    """The plan: bindings, then what the equations fix, then for the rest the ``preferred``
    sizes (a caller's own choice, e.g. representative ones) or small defaults."""
    bindings = dict(bindings or {})
    symbols = facts.symbols
    known: dict[str, Poly] = {s: Poly.const(v) for s, v in bindings.items() if s in symbols}
    why: dict[str, Equation] = {}
    conflicts: list[str] = []
    pending = list(facts.equations)
    for _ in range(MAX_ROUNDS):
        pending, solved = _solve_round(pending, known, why, conflicts, symbols)
        if not solved:
            break
    preferred = preferred or {}
    free = {s: preferred.get(s) or default_size(dim) for s, dim in _first_dims(facts).items()
            if s not in known}
    moved: dict[str, Bound] = {}
    sizes = _assign(symbols, {s: known[s] for s in symbols if s in known}, free, facts.bounds,
                    moved)
    plan = SizePlan(sizes, facts.dims, bindings=bindings)
    for symbol in symbols:
        if symbol in why and symbol not in bindings:
            plan.reasons[symbol] = _reason(known[symbol], why[symbol])
        elif symbol in moved:
            plan.reasons[symbol] = (f"set so that a bound holds at node "
                                    f"{moved[symbol].node!r}: {moved[symbol].what}")
    plan.conflicts = conflicts + [_unmet(e) for e in pending if not _holds(e, sizes)]
    plan.conflicts += [f"{b.what} (node {b.node!r})" for b in facts.bounds
                       if (b.excess.evaluate(sizes) or 0) > 0]
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


def _first_dims(facts: SizeFacts) -> dict[str, InputDim]:
    """For each symbol, the input dim that best says what it is: the one it names alone
    ('past' rather than 'past + 1'), else the first written with it."""
    alone = {d.name: d for d in facts.dims if d.size == Poly.symbol(d.name)}
    return {s: alone.get(s) or next(d for d in facts.dims if s in d.size.symbols())
            for s in facts.symbols}


def default_size(dim: InputDim) -> int:
    """Batch 2, sequence 8, spatial dims of an image 32, other named dims 8 (2 on the first
    axis, usually a batch); a dim nobody named 1."""
    if not dim.named:
        return 1
    lowered = dim.name.lower()
    if "batch" in lowered:
        return 2
    if any(word in lowered for word in SEQUENCE_WORDS):
        return 8
    if dim.axis == 0 and dim.rank > 1:
        return 2
    if dim.rank == 4 and dim.axis >= 2:
        return 32  # large enough for a few strided convs
    return 8


def _assign(symbols: list[str], derived: dict[str, Poly], free: dict[str, int],
            bounds: list[Bound], moved: dict[str, Bound]) -> dict[str, int]:
    """Every symbol's size: free ones scaled until the derived ones are whole numbers, then
    moved until the bounds hold (as far as moving them can; ``moved`` says which, why)."""
    free = _whole(symbols, derived, free)
    sizes = _sizes(symbols, derived, free, force=True)
    for _ in range(MAX_ROUNDS):
        broken = next((b for b in bounds if (b.excess.evaluate(sizes) or 0) > 0), None)
        symbol = broken and _loosen(broken, derived, free, sizes)
        if not symbol:
            break
        moved[symbol] = broken
        sizes = _sizes(symbols, derived, free, force=True)
    return sizes


def _whole(symbols: list[str], derived: dict[str, Poly], free: dict[str, int]
           ) -> dict[str, int]:
    """``free`` with the (at most two) sizes the derived ones depend on multiplied by small
    factors until every derived size is a positive whole number; unchanged if none works."""
    scaled = [s for s in free if any(s in p.symbols() for p in derived.values())]
    if len(scaled) > 2:
        return free
    for factors in combinations(ADJUSTMENTS, repeat=len(scaled)):
        trial = {**free, **{s: free[s] * f for s, f in zip(scaled, factors)}}
        if _sizes(symbols, derived, trial) is not None:
            return trial
    return free


def _loosen(bound: Bound, derived: dict[str, Poly], free: dict[str, int],
            sizes: dict[str, int]) -> str | None:
    """Move one free size so the broken ``bound`` holds: raise one on its limit's side, else
    lower one on its size's side.  The size moved, or None when no free size can move."""
    excess = bound.excess.substitute(derived)
    amount = excess.evaluate(sizes)
    movable = [(s, excess.linear_in(s)) for s in sorted(excess.symbols()) if s in free]
    movable = [(s, ab[0].value) for s, ab in movable if ab is not None]
    for symbol, slope in sorted(movable, key=lambda item: item[1] > 0):
        step = -(-amount // abs(slope))   # ceil
        if slope < 0:
            free[symbol] += int(step)
            return symbol
        if free[symbol] - step >= 1:
            free[symbol] -= int(step)
            return symbol
    return None


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
