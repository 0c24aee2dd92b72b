"""onnxscript's verdicts as plain records: what the CLI prints, `--json` writes and the app shows.

Every onnxscript IR node is already mapped to the GraphLab node it stands for (a ``NodeRef``:
stable id for the panes, name for people), so the records are small, picklable (the app runs the
rules in a child process) and point at the graph the user sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..patterns import NodeRef
from ..records import name_of, names, record_field

# onnxscript's MatchStatus names, as people read them
MATCHED = "matched"
CONDITION_FAILED = "condition failed"
REPLACEMENT_FAILED = "replacement failed"
NO_MATCH = "no match"


@dataclass(frozen=True)
class RuleSite:
    """One attempt of a rule at one node: onnxscript's status, reason and failure sources,
    with its IR nodes mapped to GraphLab's."""

    status: str                           # MATCHED, CONDITION_FAILED, ...
    # the node the rule was tried at
    root: NodeRef = record_field(convert=name_of)
    score: int                            # onnxscript's tracer score (MatchInfo.score)
    reason: str = ""                      # onnxscript's words, as it gave them
    # matched (so far)
    nodes: tuple[NodeRef, ...] = record_field(convert=names, default=())
    # failure sources: nodes, and producers of values
    failed_at: tuple[NodeRef, ...] = record_field(convert=names, default=())
    failed_values: tuple[str, ...] = ()   # failure sources that are values, by name
    # consumers outside the match behind "other uses"
    blocking: tuple[NodeRef, ...] = record_field(convert=names, default=())
    where: str = ""                       # '' (the graph), or the function / body it lies in

    @property
    def matched(self) -> bool:
        return self.status == MATCHED


def _reason_counts(reasons: tuple[tuple[str, int], ...]) -> list[dict]:
    return [{"reason": reason, "sites": sites} for reason, sites in reasons]


@dataclass(frozen=True)
class RuleVerdict:
    """One rule over one graph: where it matched, where it came closest and why not."""

    name: str                                  # the rule's name (or 'rule N' without one)
    source: str                                # 'module:attribute[index]' it was found at
    matches: tuple[RuleSite, ...] = ()         # in graph order
    near_misses: tuple[RuleSite, ...] = ()     # best first (at most KEPT_NEAR_MISSES)
    near_miss_count: int = 0                   # all of them, kept or not
    # near misses per reason, most frequent first
    reasons: tuple[tuple[str, int], ...] = record_field(convert=_reason_counts, default=())
    at_node: RuleSite | None = None            # the attempt at the node asked about
    error: str | None = None                   # the rule raised: what, and where

    json_derived = ("verdict", "closest")
    json_order = ("name", "source", "verdict", "matches", "closest")

    @property
    def closest(self) -> tuple[RuleSite, ...]:
        """The best partial matches (all of equal, top score), as onnxscript's tracer ranks."""
        if not self.near_misses:
            return ()
        top = self.near_misses[0].score
        return tuple(site for site in self.near_misses if site.score == top)

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "raised"
        if self.matches:
            return "matched"
        return "near miss" if self.near_misses else "no partial match"


@dataclass(frozen=True)
class RulesReport:
    """Every rule of one MODULE[:NAME] over one graph."""

    spec: str
    onnxscript_version: str
    graph: str
    node_count: int
    rules: tuple[RuleVerdict, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)   # e.g. submodules that failed to load
    node: str | None = None                                  # the node asked about, if any

    json_derived = ("summary",)
    json_order = ("spec", "onnxscript_version", "graph", "node_count", "node")

    @property
    def summary(self) -> dict[str, int]:
        """How many rules got each verdict."""
        return {verdict: sum(r.verdict == verdict for r in self.rules)
                for verdict in ("matched", "near miss", "no partial match", "raised")}
