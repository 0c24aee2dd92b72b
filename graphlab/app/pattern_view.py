"""The selected pass's patterns, read for the patterns panel and for highlighting the graph.

A pass's tab shows the rules that pass runs, judged on the graph it receives (the left pane),
with what it did with each match — rewritten, or declined and why — and every rewrite it
declined, each naming the node that refused it when one did
(``compiler_core.passes.framework.judged``: the records `graphlab explain` prints).  A pass that runs no
pattern says so; the pattern editor finds any pattern in the graph it receives.  Records carry
node ids, which is what the panes speak.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from compiler_core.passes.framework.base import Decline
from compiler_core.passes.framework.judged import PassVerdict, judge_pass
from compiler_core.patterns import MatchRecord, NearMissRecord, NodeRef, PatternRecord

from .highlight import DECLINE, MATCH, PATTERNS, Highlight
from .workbench import Workspace


@dataclass
class PatternFocus:
    """What a clicked match, near miss or decline points at."""

    kind: str                       # 'match', 'miss' or 'decline'
    pattern: str                    # the pattern's name (a decline: its rule's)
    item: MatchRecord | NearMissRecord | Decline | None
    matched: list[int] = field(default_factory=list)
    failed: int | None = None
    blocking: int | None = None
    reveal: bool = True             # open the groups holding it (False: mark the groups)


def pass_verdict(ws: Workspace, step: int, pipeline: str = "") -> PassVerdict:
    """Pass ``step``'s own patterns judged on the graph it receives, and its declines
    (cached with the workspace)."""
    key = ("verdict", step, pipeline)
    cached = ws.derived.get(key)
    if cached is None:
        cached = judge_pass(ws.result, step, pipeline or "the pipeline")
        ws.derived[key] = cached
    return cached


def resolve_focus(ws: Workspace, step: int, highlight: Highlight | None) -> PatternFocus | None:
    """The Patterns tab's clicked item, as what the panes light."""
    if highlight is None or highlight.source != PATTERNS:
        return None
    verdict = pass_verdict(ws, step)
    if highlight.kind == DECLINE:
        declines = verdict.every_decline
        if not 0 <= highlight.item < len(declines):
            return None
        return decline_focus(declines[highlight.item])
    return focus_of([p.report for p in verdict.patterns], highlight.kind, highlight.report,
                    highlight.item)


def decline_focus(decline: Decline) -> PatternFocus:
    """A decline lights what the rewrite would have taken, its site as the failed node, and
    the node that refused it as the blocking consumer."""
    matched = [n.id for n in decline.nodes if n.id != decline.node_id]
    return PatternFocus(DECLINE, decline.rule, decline, matched, decline.node_id,
                        _id(decline.blocking))


def focus_of(reports: list[PatternRecord] | tuple[PatternRecord, ...], kind: str,
             report_index: int, item_index: int) -> PatternFocus | None:
    """Item ``item_index`` (a match or a near miss) of report ``report_index``, as a focus;
    None when there is no such item."""
    if not 0 <= report_index < len(reports):
        return None
    report = reports[report_index]
    items = report.matches if kind == MATCH else report.near_misses
    if not 0 <= item_index < len(items):
        return None
    item = items[item_index]
    if kind == MATCH:
        return PatternFocus(kind, report.name, item, [n.id for n in item.nodes])
    return PatternFocus(kind, report.name, item, [n.id for n in item.matched_nodes],
                        _id(item.failed_node), _id(item.blocking_node))


def _id(ref: NodeRef | None) -> int | None:
    return None if ref is None else ref.id


def reasons_across_model(ws: Workspace) -> list[tuple[str, int, list[str]]]:
    """Near misses of every pass's own patterns (each on the graph its pass received), grouped
    by reason: (reason, count, patterns), most frequent first."""
    counts: Counter[str] = Counter()
    patterns: dict[str, set[str]] = {}
    for snapshot in ws.result.snapshots:
        for report in snapshot.pattern_reports:
            for reason, count in report.reasons.items():
                counts[reason] += count
                patterns.setdefault(reason, set()).add(report.name)
    return [(reason, count, sorted(patterns[reason])) for reason, count in counts.most_common()]
