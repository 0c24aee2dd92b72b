"""Other sizes worth trying when the planned ones do not run.

The plan can be wrong where the walk could not see (a size computed by an op it has no rule
for, or data-dependent).  What else the model suggests, most telling first: the plain
defaults (in case an equation was misread), the sizes the file itself states (onnx's
inference, the exporter's value_info), and each free dim set to a number the model's Reshape
and Expand targets hold or its bounds allow, then 1 — one dim at a time, then two.
"""

from __future__ import annotations

from itertools import combinations

from .solver import SizePlan, solve
from .walk import SizeFacts

MAX_CANDIDATES = 24
MAX_VALUES = 6      # numbers tried per dim


def candidate_plans(facts: SizeFacts, plan: SizePlan,
                    bindings: dict[str, int] | None = None) -> list[SizePlan]:
    """Plans to try after ``plan``, distinct and in order, at most ``MAX_CANDIDATES``."""
    bindings = dict(bindings or {})
    seen = {_key(plan)}
    found: list[SizePlan] = []

    def add(candidate: SizePlan, why: str) -> None:
        if _key(candidate) not in seen and len(found) < MAX_CANDIDATES:
            seen.add(_key(candidate))
            candidate.origin = why
            candidate.bindings = dict(bindings)   # the user's: the tried size is no binding
            found.append(candidate)

    plain = SizeFacts(facts.dims, [], facts.bounds)
    add(solve(plain, bindings), "the defaults")
    if facts.hints:
        stated = SizeFacts(facts.dims, facts.equations + facts.hints, facts.bounds)
        add(solve(stated, bindings), "the sizes the file states")
        add(solve(SizeFacts(facts.dims, facts.hints, facts.bounds), bindings),
            "the sizes the file states")
    free = [s for s in facts.symbols if s not in bindings]
    values = _values(facts)
    for symbol in free:
        for value in values:
            add(solve(facts, {**bindings, symbol: value}), f"{symbol}={value}")
    for first, second in combinations(free, 2):
        for value in values:
            add(solve(facts, {**bindings, first: value, second: value}),
                f"{first}={second}={value}")
    return found


def _values(facts: SizeFacts) -> list[int]:
    """Numbers the model suggests as sizes: its targets' and bounds', small ones first; 1."""
    numbers = set(facts.target_sizes) | {b.limit.as_int() for b in facts.bounds}
    numbers |= {h.right.as_int() for h in facts.hints if h.right.as_int()}
    ordered = sorted(n for n in numbers if n and n > 1)[:MAX_VALUES - 1]
    return ordered + [1]


def _key(plan: SizePlan) -> tuple:
    return tuple(sorted(plan.sizes.items()))
