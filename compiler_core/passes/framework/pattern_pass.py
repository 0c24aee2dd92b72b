"""Running a pattern inside a pass, and recording what it saw.

The pattern's report (matches and near misses) goes into the PassResult as a record, so the
app shows per pass what matched and what almost did.  Rewrite passes are rule sets
(``rules.RuleSet``); a pass that uses a pattern only to find candidates, not to rewrite them,
calls ``find_matches``.
"""

from __future__ import annotations

from ...ir import Graph
from ...patterns import Match, Pattern, PatternReport, explain, match_all
from .base import PassContext, PassResult


def pattern_report(graph: Graph, pattern: Pattern, ctx: PassContext) -> PatternReport:
    """The pattern's matches in ``graph``; its near misses too when ``ctx.explain`` is on (they
    cost a re-run of every failed site, so a pipeline run without explanations skips them)."""
    if not ctx.explain:
        return PatternReport(pattern.title or "pattern", pattern.describe(),
                             match_all(graph, pattern))
    return explain(graph, [pattern])[0]


def find_matches(graph: Graph, pattern: Pattern, ctx: PassContext,
                 result: PassResult) -> list[Match]:
    """The matches of ``pattern`` as candidates, its report kept in ``result``; near misses
    stay in the report and are not declines (this pass never meant to rewrite them)."""
    report = pattern_report(graph, pattern, ctx)
    result.pattern_reports.append(report.record())
    return report.matches
