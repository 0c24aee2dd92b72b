"""Pattern reports of a pass, read for the patterns panel and for highlighting the graph.

A pass that matches patterns reports them in its snapshot.  For a pass that reports none, the
panel shows what every pattern of the library finds in the graph the pass was given
(``compiler_core.patterns.explain``), so "why did this not fuse?" always has an answer.
Reports name nodes; the panes speak node ids, so names are resolved in the graph before the
pass first (and in the graph after it for nodes the pass kept).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from compiler_core.ir import Graph
from compiler_core.patterns import explain

from .workbench import Workspace


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


@dataclass
class StepReports:
    reports: list[dict]
    from_pass: bool     # False: the library's view of the graph before the pass


def step_reports(ws: Workspace, step: int) -> StepReports:
    snapshot = ws.result.snapshots[step]
    if snapshot.pattern_reports:
        return StepReports(snapshot.pattern_reports, True)
    return StepReports(_library_reports(ws, step, ws.result.graph_before(step)), False)


def _library_reports(ws: Workspace, key: int, graph: Graph) -> list[dict]:
    cached = ws.derived.get(("patterns", key))
    if cached is None:
        cached = [r.to_dict() for r in explain(graph)]
        ws.derived[("patterns", key)] = cached
    return cached


def resolve_focus(ws: Workspace, step: int, highlight: str) -> PatternFocus | None:
    parsed = parse_highlight(highlight)
    if parsed is None:
        return None
    kind, report_index, item_index = parsed
    reports = step_reports(ws, step).reports
    if report_index >= len(reports):
        return None
    report = reports[report_index]
    items = report.get("matches" if kind == "match" else "near_misses", [])
    if item_index >= len(items):
        return None
    item = items[item_index]
    lookup = _NameLookup(*ws.graphs_of_step(step))
    if kind == "match":
        return PatternFocus(kind, report.get("name", ""), item, lookup.ids(item.get("nodes", [])))
    return PatternFocus(kind, report.get("name", ""), item,
                        lookup.ids(item.get("matched_nodes", [])),
                        lookup.id(item.get("failed_node")), lookup.id(item.get("blocking_node")))


def reasons_across_model(ws: Workspace) -> list[tuple[str, int, list[str]]]:
    """Near misses of the input model and of every pass's own reports, grouped by reason:
    (reason, count, patterns), most frequent first."""
    reports = _library_reports(ws, -1, ws.result.initial)
    reports = reports + [r for s in ws.result.snapshots for r in s.pattern_reports]
    counts: Counter[str] = Counter()
    patterns: dict[str, set[str]] = {}
    for report in reports:
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
