"""A time limit on matching, so a pattern typed into a shared server cannot hold it.

Most patterns match in linear time, but a user's pattern can be slow: thousands of
alternatives tested at every candidate site, or one attempt that grows exponentially
(commutative ops whose operands share names cannot be memoized, so every operand order is
tried at every level).  The matcher looks at the clock before each candidate site and every
few hundred node visits; past the deadline it raises ``MatchTimeout`` — a clean stop between
two steps, leaving the graph untouched (matching never mutates it), rather than a thread
killed midway.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from ..errors import GraphLabError

CHECK_EVERY = 256   # node visits between two looks at the clock (~ a few µs of matching)
T = TypeVar("T")


class MatchTimeout(GraphLabError):
    """Matching ran past its time limit."""


class MatchBudget:
    """A deadline for one explanation or search; pass it to ``match_all`` / ``explain``."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.pattern = ""       # the pattern at work (named in the message)
        self._countdown = CHECK_EVERY

    def step(self) -> None:
        """One node visited by the matcher."""
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = CHECK_EVERY
            self.check()

    def each(self, sites: Iterable[T]) -> Iterator[T]:
        """``sites`` one by one, looking at the clock before each (a pattern with many
        alternatives spends its time in the cheap tests of a site, not in node visits)."""
        for site in sites:
            self.check()
            yield site

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            where = f"pattern '{self.pattern}'" if self.pattern else "the pattern"
            raise MatchTimeout(
                f"matching stopped after {self.seconds:g} s: {where} was still being tried",
                where=self.pattern or None,
                hint="a pattern whose commutative ops (Add, Mul, ...) share names, or with "
                     "many alternatives, tries many operand orders at every node; give its "
                     "root a rarer op, bind fewer shared names, or run it with `graphlab "
                     "explain MODEL --patterns FILE`, which has no time limit")


def paced(budget: MatchBudget | None, sites: Iterable[T]) -> Iterable[T]:
    """``sites``, checked against ``budget`` one by one (as they are without a budget)."""
    return sites if budget is None else budget.each(sites)
