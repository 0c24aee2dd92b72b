"""Why a pattern did not match at a site: where it failed, what was expected, what was found.

A failure is only ever built in explain mode (fast matching returns False and builds nothing).
``path`` holds the steps from the site's root node down to the failing position, as
(matched node, input index) pairs, so it renders like XLA's explanations:
"Add ← input 0: Mul ← input 1: constant".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ..ir import Node
from ..records import record_field


@dataclass(frozen=True)
class Wanted:
    """What would have matched where a pattern failed, when that is one value the model could
    be given: a constant's (``what`` "tensor", ``target`` the value) or a node's attribute
    (``what`` "attribute", ``target`` the node, ``attribute`` its name).  ``value`` is JSON
    data.  Edits read it to offer the fix (``compiler_core.editing.suggestions``)."""

    what: str
    target: str
    value: Any
    attribute: str = record_field(default="", omit_empty=True)


@dataclass(eq=False)
class Failure:
    """One failed attempt: the position, expected vs found, and how far the match got."""

    path: tuple[tuple[Node, int], ...]
    label: str                 # what sits at the failing position: a pattern label or an op type
    subject: str               # 'Softmax input 0', 'ReduceMean', 'root': the start of the reason
    expected: str
    found: str
    failed_node: Node | None = None
    blocking_node: Node | None = None
    matched_nodes: tuple[Node, ...] = ()
    matched: int = 0           # pattern elements matched before the failure (for the score)
    extra_size: int = 0        # the OR branches being tried are this much bigger than the least
    alternatives: tuple["Failure", ...] = ()
    custom_reason: str | None = None
    part: tuple[str, ...] = ()  # the named parts of the pattern it failed in, outermost first
    wanted: Wanted | None = None   # the one value that would have matched here, when known
    score: float = field(default=0.0)

    @property
    def reason(self) -> str:
        """A short sentence that groups well across a model (no node names unless a consumer
        blocks the fusion: then naming it is the point)."""
        reason = self.custom_reason
        if reason is None:
            reason = f"{self.subject}: expected {self.expected}, found {self.found}"
        return f"{self.part_text}: {reason}" if self.part else reason

    @property
    def part_text(self) -> str:
        """The named part it failed in ("key › head split"), empty when the pattern names none."""
        return " › ".join(self.part)

    @property
    def path_text(self) -> str:
        if not self.path:
            return self.label
        parts = [self.path[0][0].op_type]
        for step, (_, index) in enumerate(self.path):
            following = self.path[step + 1][0].op_type if step + 1 < len(self.path) else self.label
            parts.append(f" ← input {index}: {following}")
        return "".join(parts)

    def leaves(self) -> Iterator["Failure"]:
        """Every OR branch's own failure, recursively (the failure itself when it has none)."""
        if not self.alternatives:
            yield self
            return
        for alternative in self.alternatives:
            yield from alternative.leaves()

    def with_alternatives(self, alternatives: tuple["Failure", ...]) -> "Failure":
        """A copy that also holds every OR branch's failure (field by field: ``replace`` runs
        the whole constructor again, which cost a fifth of an explained attempt)."""
        copy = object.__new__(Failure)
        copy.__dict__.update(self.__dict__)
        copy.alternatives = alternatives
        return copy

    def with_score(self, size: int) -> "Failure":
        """Scored against the pattern's size along the OR branches this attempt took (set in
        place: an attempt's failures are its own, and a score depends on the failure alone,
        so scoring one twice gives the same; copying every tree cost more than the match)."""
        stack = [self]
        while stack:
            failure = stack.pop()
            failure.score = score_of(failure.matched, size + failure.extra_size)
            stack.extend(failure.alternatives)
        return self

    def summary(self) -> dict:
        return {"path": self.path_text, "part": self.part_text, "expected": self.expected,
                "found": self.found, "reason": self.reason}


def score_of(matched: int, size: int) -> float:
    """Share of the pattern matched before the failure, kept below 1 (1 means a match)."""
    if size <= 0:
        return 0.0
    return round(min(matched / size, 0.99), 3)


def best_of(failures: list[Failure]) -> Failure:
    """The attempt that got furthest; among equals the smaller OR branch (it was closer to
    done), then the first (the pattern's written order)."""
    return max(failures, key=lambda f: (f.matched, -f.extra_size))
