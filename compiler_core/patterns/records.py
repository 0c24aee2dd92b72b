"""Pattern reports as plain records: what a snapshot keeps, the app reads and `--json` prints.

A ``PatternReport`` holds live ``Match``/``NearMiss`` objects that point into the graph the
pattern ran on; a snapshot must not keep that graph alive, and the app's builder processes
pickle their results.  A record keeps each node as a ``NodeRef`` (stable id for the panes, name
for people) and the bindings already in JSON form, so it is small, immutable and picklable, and
nothing downstream has to map names back to ids.  ``to_dict`` is the JSON edge.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..ir import Node


@dataclass(frozen=True)
class NodeRef:
    """A node as records name it: its stable id and its name at the time."""

    id: int
    name: str

    @classmethod
    def of(cls, node: Node | None) -> "NodeRef | None":
        return None if node is None else cls(node.id, node.name)


def _name(ref: NodeRef | None) -> str | None:
    return None if ref is None else ref.name


@dataclass(frozen=True)
class MatchRecord:
    """One match: the nodes the pattern covers; when a pass rewrote it, the node it made and
    the nodes the rewrite replaced beyond the match (``taken_along``: e.g. the projections an
    attention fusion takes inside), so the match's count and the fused node's agree."""

    root: NodeRef
    nodes: tuple[NodeRef, ...]
    bindings: dict[str, Any] = field(default_factory=dict)  # JSON-ready (names, numbers)
    made: NodeRef | None = None
    taken_along: tuple[NodeRef, ...] = ()

    def to_dict(self) -> dict:
        record = {"nodes": [n.name for n in self.nodes], "bindings": dict(self.bindings),
                  "root": self.root.name}
        if self.made is not None:
            record["made"] = self.made.name
            record["taken_along"] = [n.name for n in self.taken_along]
        return record


@dataclass(frozen=True)
class NearMissRecord:
    site: NodeRef
    score: float
    path: str
    expected: str
    found: str
    reason: str
    blocking_node: NodeRef | None = None
    matched_nodes: tuple[NodeRef, ...] = ()
    failed_node: NodeRef | None = None
    alternatives: tuple[dict, ...] = ()  # each OR branch: path, part, expected, found, reason
    part: str = ""  # the named part of the pattern that failed ("key › head split")

    def to_dict(self) -> dict:
        return {"site": self.site.name, "score": self.score, "path": self.path, "part": self.part,
                "expected": self.expected, "found": self.found, "reason": self.reason,
                "blocking_node": _name(self.blocking_node),
                "matched_nodes": [n.name for n in self.matched_nodes],
                "failed_node": _name(self.failed_node),
                "alternatives": [dict(a) for a in self.alternatives]}


STRONG_SCORE = 0.5  # a near miss that matched at least this share of its pattern is strong


def rank_groups(misses) -> list[tuple[str, list]]:
    """Near misses grouped by reason, the strongest group first (its best score, then how
    many sites): one site that got nine tenths of the way outranks eight that failed at the
    second op."""
    groups: dict[str, list] = {}
    for miss in misses:
        groups.setdefault(miss.reason, []).append(miss)
    return sorted(groups.items(),
                  key=lambda item: (-round(max(m.score for m in item[1]), 6), -len(item[1])))


@dataclass(frozen=True)
class PatternRecord:
    """One pattern over one graph: matches and near misses (best first)."""

    name: str
    description: str
    matches: tuple[MatchRecord, ...] = ()
    near_misses: tuple[NearMissRecord, ...] = ()

    @property
    def reasons(self) -> dict[str, int]:
        """Near misses per reason, most frequent first."""
        return dict(Counter(m.reason for m in self.near_misses).most_common())

    @property
    def strong_misses(self) -> tuple[NearMissRecord, ...]:
        """Near misses that matched at least ``STRONG_SCORE`` of the pattern, best first."""
        return tuple(m for m in self.near_misses if m.score >= STRONG_SCORE)

    @property
    def weak_misses(self) -> tuple[NearMissRecord, ...]:
        """The others (failed near the root: mostly other code that starts alike)."""
        return tuple(m for m in self.near_misses if m.score < STRONG_SCORE)

    def grouped(self) -> list[tuple[str, list[NearMissRecord]]]:
        """Near misses grouped by reason, the strongest group first."""
        return rank_groups(self.near_misses)

    def __repr__(self) -> str:
        top = next(iter(self.reasons), None)
        return (f"<PatternRecord {self.name}: {len(self.matches)} matches, "
                f"{len(self.near_misses)} near misses" + (f"; most often: {top}" if top else "")
                + ">")

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description,
                "matches": [m.to_dict() for m in self.matches],
                "near_misses": [m.to_dict() for m in self.near_misses],
                "reasons": self.reasons}
