"""Pattern reports as plain records: what a snapshot keeps, the app reads and `--json` prints.

A ``PatternReport`` holds live ``Match``/``NearMiss`` objects that point into the graph the
pattern ran on; a snapshot must not keep that graph alive, and the app's builder processes
pickle their results.  A record keeps each node as a ``NodeRef`` (stable id for the panes, name
for people) and the bindings already in JSON form, so it is small, immutable and picklable, and
nothing downstream has to map names back to ids.  ``records.to_json`` is the JSON edge:
nodes are written by name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..ir import Node
from ..records import OMIT, name_of, names, record_field
from .failure import Wanted


@dataclass(frozen=True)
class NodeRef:
    """A node as records name it: its stable id and its name at the time."""

    id: int
    name: str

    @classmethod
    def of(cls, node: Node | None) -> "NodeRef | None":
        return None if node is None else cls(node.id, node.name)


@dataclass(frozen=True)
class MatchRecord:
    """One match: the nodes the pattern covers; when a pass rewrote it, the node it made and
    the nodes the rewrite replaced beyond the match (``taken_along``: e.g. the projections an
    attention fusion takes inside), so the match's count and the fused node's agree."""

    root: NodeRef = record_field(convert=name_of)
    nodes: tuple[NodeRef, ...] = record_field(convert=names)
    bindings: dict[str, Any] = field(default_factory=dict)  # JSON-ready (names, numbers)
    made: NodeRef | None = record_field(convert=name_of, omit_none=True, default=None)
    taken_along: tuple[NodeRef, ...] = record_field(omit=True, default=())

    json_derived = (("taken_along", "taken_along_names"),)
    json_order = ("nodes", "bindings", "root")

    @property
    def taken_along_names(self):
        """What a rewrite took along, by name; only a rewritten match says (OMIT otherwise)."""
        return OMIT if self.made is None else names(self.taken_along)


@dataclass(frozen=True)
class NearMissRecord:
    site: NodeRef = record_field(convert=name_of)
    score: float
    path: str
    expected: str
    found: str
    reason: str
    blocking_node: NodeRef | None = record_field(convert=name_of, default=None)
    matched_nodes: tuple[NodeRef, ...] = record_field(convert=names, default=())
    failed_node: NodeRef | None = record_field(convert=name_of, default=None)
    alternatives: tuple[dict, ...] = ()  # each OR branch: path, part, expected, found, reason
    part: str = ""  # the named part of the pattern that failed ("key › head split")
    wanted: Wanted | None = record_field(default=None, omit_none=True)   # the value that fits

    json_order = ("site", "score", "path", "part")


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

    json_derived = ("reasons",)

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
