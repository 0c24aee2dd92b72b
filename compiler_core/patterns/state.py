"""The mutable state of one match attempt, with cheap undo for OR branches and operand swaps.

Everything an attempt binds goes on a trail, so backtracking is "truncate to a mark".  In fast
mode (``explain`` False) nothing but the match itself is recorded; in explain mode every
rejection leaves a Failure in ``last``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir import Node
from .failure import Failure

if TYPE_CHECKING:
    from .budget import MatchBudget
    from .language import Pattern

Path = tuple[tuple[Node, int], ...]


class MatchState:
    __slots__ = ("explain", "claimed", "bindings", "nodes", "node_owner", "memo", "trail",
                 "matched", "extra_size", "deferred", "fail_memo", "last", "budget", "parts")

    def __init__(self, explain: bool, claimed: set[int] | None,
                 budget: "MatchBudget | None" = None):
        self.explain = explain
        self.claimed = claimed
        self.budget = budget    # a time limit, counted per node visited (None: no limit)
        self.bindings: dict[str, Any] = {}
        self.nodes: list[tuple[Node, "Pattern", Path | None]] = []
        self.node_owner: dict[int, "Pattern"] = {}
        self.memo: dict[int, Any] = {}        # shared sub-pattern id -> the node/value it matched
        self.trail: list[tuple[dict, Any]] = []
        self.matched = 0
        self.extra_size = 0  # how much bigger the OR branches taken are than the smallest ones
        # (element, check, value, path, the named parts it sits in)
        self.deferred: list[tuple["Pattern", Any, Any, Path | None, tuple[str, ...]]] = []
        self.fail_memo: dict[tuple[int, int], Failure | None] = {}
        self.last: Failure | None = None
        self.parts: list[tuple[str, bool]] = []  # named parts being matched: (name, group)

    # -- undo ---------------------------------------------------------------------------------
    def mark(self) -> tuple[int, int, int, int, int]:
        return len(self.nodes), len(self.trail), self.matched, len(self.deferred), self.extra_size

    def reset(self, mark: tuple[int, int, int, int, int]) -> None:
        n_nodes, n_trail, matched, n_deferred, self.extra_size = mark
        for node, _, _ in self.nodes[n_nodes:]:
            del self.node_owner[node.id]
        del self.nodes[n_nodes:]
        trail = self.trail
        while len(trail) > n_trail:
            table, key = trail.pop()
            del table[key]
        self.matched = matched
        del self.deferred[n_deferred:]

    def remember(self, table: dict, key: Any, value: Any) -> None:
        table[key] = value
        self.trail.append((table, key))

    def part_chain(self) -> tuple[str, ...]:
        """The part a failure here is in: the groups around it and the innermost stage
        ("key", "rotary"); an outer stage is not named (the scores are not "in" the head
        merge because the pattern reaches them through it)."""
        if not self.parts:
            return ()
        chain = [name for name, group in self.parts if group]
        if not self.parts[-1][1]:
            chain.append(self.parts[-1][0])
        return tuple(chain)

    # -- recording ----------------------------------------------------------------------------
    def add_node(self, node: Node, pattern: "Pattern", path: Path | None) -> None:
        self.nodes.append((node, pattern, path))
        self.node_owner[node.id] = pattern

    def fail(self, path: Path | None, label: str, subject: str, expected: str, found: str,
             failed_node: Node | None, **extra: Any) -> bool:
        """Record why the attempt failed here and return False.  Explain mode only: callers
        write ``return st.explain and st.fail(...)`` so fast matching never builds the texts."""
        if "part" not in extra:
            extra["part"] = self.part_chain()
        self.last = Failure(path or (), label, subject, expected, found, failed_node,
                            matched_nodes=tuple([n for n, _, _ in self.nodes]),
                            matched=self.matched, extra_size=self.extra_size, **extra)
        return False


def input_subject(path: Path | None) -> str:
    """'Softmax input 0' for a value-level failure, 'root' at the site itself."""
    if not path:
        return "root"
    node, index = path[-1]
    return f"{node.op_type} input {index}"


def parent_node(path: Path | None) -> Node | None:
    return path[-1][0] if path else None
