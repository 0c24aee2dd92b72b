"""Running a library pattern inside a pass, and recording what it saw.

A pattern-based pass asks ``find_matches`` for the sites to rewrite.  The pattern's report
(matches and near misses, as ``PatternReport.to_dict()``) goes into the PassResult, so the app
shows per pass what matched and what almost did.  A near miss that got at least half-way
through the pattern is a rewrite the pass would have made but for one thing — a second
consumer, a wrong axis, a non-constant bias — so it is also recorded as a Decline with the
pattern's reason.  Sites that fail right after their first op are not declines, just other code.
"""

from __future__ import annotations

from ..ir import Graph
from ..patterns import Match, Pattern, PatternReport, explain, get_pattern, match_all
from .base import Decline, PassContext, PassResult

DECLINE_SCORE = 0.5  # share of the pattern a near miss matched to count as a declined rewrite


def find_matches(graph: Graph, pattern: str | Pattern, ctx: PassContext, result: PassResult,
                 *, declines: bool = True) -> list[Match]:
    """The matches of ``pattern`` in ``graph``, with its report and declines put in ``result``.

    The rule named in declines is the pattern's name; ``declines=False`` keeps near misses in
    the report only (a pass that uses the pattern to find candidates, not to rewrite them).
    Near misses are only computed when ``ctx.explain`` is on; otherwise the report lists the
    matches alone.
    """
    if isinstance(pattern, str):
        pattern = get_pattern(pattern)
    if not ctx.explain:
        matches = match_all(graph, pattern)
        report = PatternReport(pattern.title or "pattern", pattern.describe(), matches)
        result.pattern_reports.append(report.to_dict())
        return matches
    report = explain(graph, [pattern])[0]
    result.pattern_reports.append(report.to_dict())
    for miss in report.near_misses if declines else ():
        if miss.score >= DECLINE_SCORE:
            decline(result, miss.site.name, report.name, miss.reason)
    return report.matches


def decline(result: PassResult, site: str, rule: str, reason: str) -> None:
    """Record a declined rewrite once per site and rule."""
    if not any(d.site == site and d.rule == rule for d in result.declined):
        result.declined.append(Decline(site, rule, reason))
