"""Pattern reports of a pass, read for the patterns panel and for highlighting the graph.

A report (``compiler_core.patterns`` ``Report.to_dict()``) names nodes; the panes speak node
ids.  Matches and near misses are found on the graph the pass was given, so names resolve
there first (and in the graph after the pass for nodes the pass kept).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from compiler_core.ir import Graph
from compiler_core.passes import PipelineResult, Snapshot


@dataclass
class PatternFocus:
    """What a clicked match or near miss points at."""

    kind: str                       # 'match' or 'miss'
    pattern: str
    item: dict
    matched: list[int] = field(default_factory=list)
    failed: int | None = None
    blocking: int | None = None


def parse_highlight(text: str) -> tuple[str, int, int] | None:
    """'miss:0:2' -> ('miss', 0, 2); None for anything else."""
    parts = (text or "").split(":")
    if len(parts) != 3 or parts[0] not in ("match", "miss"):
        return None
    try:
        return parts[0], int(parts[1]), int(parts[2])
    except ValueError:
        return None


def resolve_focus(snapshot: Snapshot, before: Graph, highlight: str) -> PatternFocus | None:
    parsed = parse_highlight(highlight)
    if parsed is None:
        return None
    kind, report_index, item_index = parsed
    reports = snapshot.pattern_reports
    if report_index >= len(reports):
        return None
    report = reports[report_index]
    items = report.get("matches" if kind == "match" else "near_misses", [])
    if item_index >= len(items):
        return None
    item = items[item_index]
    lookup = _NameLookup(before, snapshot.graph)
    if kind == "match":
        return PatternFocus(kind, report.get("name", ""), item, lookup.ids(item.get("nodes", [])))
    return PatternFocus(kind, report.get("name", ""), item,
                        lookup.ids(item.get("matched_nodes", [])),
                        lookup.id(item.get("failed_node")), lookup.id(item.get("blocking_node")))


def reasons_across_pipeline(result: PipelineResult) -> list[tuple[str, int, list[str]]]:
    """Near misses of every pass grouped by reason: (reason, count, patterns), most first."""
    counts: Counter[str] = Counter()
    patterns: dict[str, set[str]] = {}
    for snapshot in result.snapshots:
        for report in snapshot.pattern_reports:
            for reason, count in report.get("reasons", {}).items():
                counts[reason] += count
                patterns.setdefault(reason, set()).add(report.get("name", ""))
    return [(reason, count, sorted(patterns[reason])) for reason, count in counts.most_common()]


class _NameLookup:
    def __init__(self, *graphs: Graph):
        self.graphs = graphs

    def id(self, name: str | None) -> int | None:
        if not name:
            return None
        for graph in self.graphs:
            node = graph.node_by_name(name)
            if node is not None:
                return node.id
        return None

    def ids(self, names: list[str]) -> list[int]:
        return [i for i in (self.id(n) for n in names) if i is not None]
