"""onnxscript's verdicts as plain records: what the CLI prints, `--json` writes and the app shows.

Every onnxscript IR node is already mapped to the GraphLab node it stands for (a ``NodeRef``:
stable id for the panes, name for people), so the records are small, picklable (the app runs the
rules in a child process) and point at the graph the user sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..patterns import NodeRef

# onnxscript's MatchStatus names, as people read them
MATCHED = "matched"
CONDITION_FAILED = "condition failed"
REPLACEMENT_FAILED = "replacement failed"
NO_MATCH = "no match"


def _names(refs: tuple[NodeRef, ...]) -> list[str]:
    return [ref.name for ref in refs]


@dataclass(frozen=True)
class RuleSite:
    """One attempt of a rule at one node: onnxscript's status, reason and failure sources,
    with its IR nodes mapped to GraphLab's."""

    status: str                           # MATCHED, CONDITION_FAILED, ...
    root: NodeRef                         # the node the rule was tried at
    score: int                            # onnxscript's tracer score (MatchInfo.score)
    reason: str = ""                      # onnxscript's words, as it gave them
    nodes: tuple[NodeRef, ...] = ()       # matched (so far)
    failed_at: tuple[NodeRef, ...] = ()   # failure sources: nodes, and producers of values
    failed_values: tuple[str, ...] = ()   # failure sources that are values, by name
    blocking: tuple[NodeRef, ...] = ()    # consumers outside the match behind "other uses"
    where: str = ""                       # '' (the graph), or the function / body it lies in

    @property
    def matched(self) -> bool:
        return self.status == MATCHED

    def to_dict(self) -> dict:
        return {"status": self.status, "root": self.root.name, "score": self.score,
                "reason": self.reason, "nodes": _names(self.nodes),
                "failed_at": _names(self.failed_at), "failed_values": list(self.failed_values),
                "blocking": _names(self.blocking), "where": self.where}


@dataclass(frozen=True)
class RuleVerdict:
    """One rule over one graph: where it matched, where it came closest and why not."""

    name: str                                  # the rule's name (or 'rule N' without one)
    source: str                                # 'module:attribute[index]' it was found at
    matches: tuple[RuleSite, ...] = ()         # in graph order
    near_misses: tuple[RuleSite, ...] = ()     # best first (at most KEPT_NEAR_MISSES)
    near_miss_count: int = 0                   # all of them, kept or not
    reasons: tuple[tuple[str, int], ...] = ()  # near misses per reason, most frequent first
    at_node: RuleSite | None = None            # the attempt at the node asked about
    error: str | None = None                   # the rule raised: what, and where

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

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "verdict": self.verdict,
                "matches": [m.to_dict() for m in self.matches],
                "closest": [m.to_dict() for m in self.closest],
                "near_misses": [m.to_dict() for m in self.near_misses],
                "near_miss_count": self.near_miss_count,
                "reasons": [{"reason": r, "sites": n} for r, n in self.reasons],
                "at_node": None if self.at_node is None else self.at_node.to_dict(),
                "error": self.error}


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

    def to_dict(self) -> dict:
        return {"spec": self.spec, "onnxscript_version": self.onnxscript_version,
                "graph": self.graph, "node_count": self.node_count, "node": self.node,
                "rules": [r.to_dict() for r in self.rules], "notes": list(self.notes),
                "summary": {verdict: sum(r.verdict == verdict for r in self.rules)
                            for verdict in ("matched", "near miss", "no partial match",
                                            "raised")}}
