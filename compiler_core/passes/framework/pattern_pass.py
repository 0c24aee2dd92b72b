"""Running a pattern inside a pass, and recording what it saw.

The pattern's report (matches and near misses) goes into the PassResult as a record, so the
app shows per pass what matched and what almost did.  Rewrite passes are rule sets
(``rules.RuleSet``); a pass that uses a pattern only to find candidates, not to rewrite them,
calls ``find_matches``.  A report is made once per pattern while nobody changes the graph
(``ReportCache``): fold_norm_affine and recognize_layernorm both judge the LayerNorm pattern,
and on a graph the first leaves as it was, the second reads the first's report.  Near misses
cost a re-run of every failed site in explain mode: a run that shows only the declines
(``PassContext.all_near_misses`` off) judges them only for the rules that decline, and only at
sites whose attempt can get as far as a decline (``DECLINE_SCORE``).
"""

from __future__ import annotations

from typing import Callable

from ...ir import Graph
from ...patterns import Match, Pattern, PatternReport, explain, match_all
from .base import PassContext, PassResult

DECLINE_SCORE = 0.5  # share of the pattern a near miss matched to count as a declined rewrite

# Which near misses a report holds: none, those a rule turns into declines, or all of them.
NO_NEAR_MISSES, DECLINED_NEAR_MISSES, ALL_NEAR_MISSES = 0, 1, 2


class ReportCache:
    """Reports of patterns on one graph, kept while it does not change.

    The PassManager ``watch``es the graph each pass starts from, with a test that says whether
    it is still as it was (its write guard has not fired), and ``forget``s every report after
    a pass that changed it.  A pattern is known by identity: a rule gives the same pattern
    object every time (``Rule.named_pattern``)."""

    def __init__(self):
        self._graph: Graph | None = None
        self._unchanged: Callable[[], bool] = lambda: False
        # pattern id -> (pattern, its report, which near misses the report holds)
        self._reports: dict[int, tuple[Pattern, PatternReport, int]] = {}

    def watch(self, graph: Graph, unchanged: Callable[[], bool]) -> None:
        if graph is not self._graph:
            self.forget()
        self._graph, self._unchanged = graph, unchanged

    def forget(self) -> None:
        self._reports.clear()

    def report(self, graph: Graph, pattern: Pattern, near_misses: int) -> PatternReport:
        """The report of ``pattern`` on ``graph`` (with the near misses asked for), made once
        while the graph is unchanged."""
        kept = graph is self._graph and self._unchanged()
        found = self._reports.get(id(pattern)) if kept else None
        if found is not None and found[0] is pattern and found[2] >= near_misses:
            return found[1]
        report = _report(graph, pattern, near_misses)
        if kept:
            self._reports[id(pattern)] = (pattern, report, near_misses)
        return report


def pattern_report(graph: Graph, pattern: Pattern, ctx: PassContext, *,
                   declines: bool = False) -> PatternReport:
    """The pattern's matches in ``graph``; its near misses too when ``ctx.explain`` is on and
    someone reads them: every report's (``ctx.all_near_misses``), or ``declines``, a rule's
    that turns them into declined rewrites (then only those that score as one).  They cost a
    re-run of every failed site."""
    near_misses = NO_NEAR_MISSES
    if ctx.explain and ctx.all_near_misses:
        near_misses = ALL_NEAR_MISSES
    elif ctx.explain and declines:
        near_misses = DECLINED_NEAR_MISSES
    if ctx.reports is not None:
        return ctx.reports.report(graph, pattern, near_misses)
    return _report(graph, pattern, near_misses)


def _report(graph: Graph, pattern: Pattern, near_misses: int) -> PatternReport:
    if near_misses != NO_NEAR_MISSES:
        floor = DECLINE_SCORE if near_misses == DECLINED_NEAR_MISSES else None
        return explain(graph, [pattern], floor=floor)[0]
    return PatternReport(pattern.title or "pattern", pattern.describe(), match_all(graph, pattern))


def find_matches(graph: Graph, pattern: Pattern, ctx: PassContext,
                 result: PassResult) -> list[Match]:
    """The matches of ``pattern`` as candidates, its report kept in ``result``; near misses
    stay in the report and are not declines (this pass never meant to rewrite them)."""
    report = pattern_report(graph, pattern, ctx)
    result.pattern_reports.append(report.record())
    return report.matches
