"""Pattern reports of a pass, read for the patterns panel and for highlighting the graph.

A pass that matches patterns reports them in its snapshot.  For a pass that reports none, the
panel shows what every pattern of the library finds in the graph the pass was given
(``compiler_core.patterns.explain``), so "why did this not fuse?" always has an answer.
Reports are records whose nodes carry their ids, which is what the panes speak.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from compiler_core.ir import Graph
from compiler_core.patterns import MatchRecord, NearMissRecord, NodeRef, PatternRecord, explain

from .workbench import Workspace


@dataclass
class PatternFocus:
    """What a clicked match or near miss points at."""

    kind: str                       # 'match' or 'miss'
    pattern: str
    item: MatchRecord | NearMissRecord
    matched: list[int] = field(default_factory=list)
    failed: int | None = None
    blocking: int | None = None
    reveal: bool = True             # open the groups holding it (False: mark the groups)


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
    reports: list[PatternRecord]
    from_pass: bool     # False: the library's view of the graph before the pass


def step_reports(ws: Workspace, step: int) -> StepReports:
    snapshot = ws.result.snapshots[step]
    if snapshot.pattern_reports:
        return StepReports(snapshot.pattern_reports, True)
    return StepReports(_library_reports(ws, step, ws.result.graph_before(step)), False)


def _library_reports(ws: Workspace, key: int, graph: Graph) -> list[PatternRecord]:
    cached = ws.derived.get(("patterns", key))
    if cached is None:
        cached = [r.record() for r in explain(graph)]
        ws.derived[("patterns", key)] = cached
    return cached


def resolve_focus(ws: Workspace, step: int, highlight: str) -> PatternFocus | None:
    parsed = parse_highlight(highlight)
    if parsed is None:
        return None
    kind, report_index, item_index = parsed
    return focus_of(step_reports(ws, step).reports, kind, report_index, item_index)


def focus_of(reports: list[PatternRecord] | tuple[PatternRecord, ...], kind: str,
             report_index: int, item_index: int) -> PatternFocus | None:
    """Item ``item_index`` (a match or a near miss) of report ``report_index``, as a focus;
    None when there is no such item."""
    if report_index >= len(reports):
        return None
    report = reports[report_index]
    items = report.matches if kind == "match" else report.near_misses
    if item_index >= len(items):
        return None
    item = items[item_index]
    if kind == "match":
        return PatternFocus(kind, report.name, item, [n.id for n in item.nodes])
    return PatternFocus(kind, report.name, item, [n.id for n in item.matched_nodes],
                        _id(item.failed_node), _id(item.blocking_node))


def _id(ref: NodeRef | None) -> int | None:
    return None if ref is None else ref.id


def reasons_across_model(ws: Workspace) -> list[tuple[str, int, list[str]]]:
    """Near misses of the input model and of every pass's own reports, grouped by reason:
    (reason, count, patterns), most frequent first."""
    reports = _library_reports(ws, -1, ws.result.initial)
    reports = reports + [r for s in ws.result.snapshots for r in s.pattern_reports]
    counts: Counter[str] = Counter()
    patterns: dict[str, set[str]] = {}
    for report in reports:
        for reason, count in report.reasons.items():
            counts[reason] += count
            patterns.setdefault(reason, set()).add(report.name)
    return [(reason, count, sorted(patterns[reason])) for reason, count in counts.most_common()]

