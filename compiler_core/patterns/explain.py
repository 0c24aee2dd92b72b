"""'Why didn't it match?': per-pattern reports of matches and ranked, grouped near misses.

A site is a node where the pattern's root op matches (or the node a user names).  Every site
that does not match is re-run in explain mode, so the cost of explanations is paid only here,
never by ``match_all``.  The report is the one record the CLI (``--json``) and the app share.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..ir import Graph, Node
from .budget import MatchBudget, paced
from .failure import Failure
from .language import Pattern
from .matcher import CompiledPattern, Match, NodeIndex, attempt, compile_pattern, match_all
from .records import NearMissRecord, NodeRef, PatternRecord, rank_groups
from .score_bound import ScoreBound


ROOT_ONLY = 1  # pattern elements matched when only the root's op type matched


@dataclass
class NearMiss:
    """A site where the pattern almost matched, and why it did not."""

    site: Node
    failure: Failure

    @property
    def score(self) -> float:
        return self.failure.score

    @property
    def reason(self) -> str:
        return self.failure.reason

    def alternatives(self) -> list[Failure]:
        """Every OR branch's own failure, best first (empty when the pattern has no OR)."""
        if not self.failure.alternatives:
            return []
        distinct = {(f.path_text, f.reason): f for f in reversed(list(self.failure.leaves()))}
        return sorted(reversed(distinct.values()), key=lambda f: -f.score)

    def record(self) -> NearMissRecord:
        f = self.failure
        return NearMissRecord(NodeRef.of(self.site), f.score, f.path_text, f.expected, f.found,
                              f.reason, NodeRef.of(f.blocking_node),
                              tuple(NodeRef.of(n) for n in f.matched_nodes),
                              NodeRef.of(f.failed_node),
                              tuple(a.summary() for a in self.alternatives()), f.part_text,
                              f.wanted)


@dataclass
class PatternReport:
    """One pattern over one graph: its matches and its near misses, best first."""

    name: str
    description: str
    matches: list[Match]
    near_misses: list[NearMiss] = field(default_factory=list)

    @property
    def reasons(self) -> dict[str, int]:
        """Near misses per reason, most frequent first."""
        return dict(Counter(m.reason for m in self.near_misses).most_common())

    def grouped(self) -> list[tuple[str, list[NearMiss]]]:
        """Near misses grouped by reason, the strongest group first (its best score, then
        how many sites)."""
        return rank_groups(self.near_misses)

    def record(self) -> PatternRecord:
        """The report without live nodes: what snapshots keep and the app reads."""
        return PatternRecord(self.name, self.description,
                             tuple(m.record() for m in self.matches),
                             tuple(m.record() for m in self.near_misses))


def explain(graph: Graph, patterns: Iterable[Pattern], node: Node | str | None = None, *,
            all_sites: bool = False, budget: MatchBudget | None = None,
            rooted: bool | None = None, floor: float | None = None) -> list[PatternReport]:
    """Report every pattern on ``graph`` (the passes' own: ``passes.framework.rulebook``).

    Without ``node``: all matches, and a near miss for every site whose root op matches and
    where more than the root matched — its inputs come from the op types the pattern wants
    (``all_sites`` also keeps sites that failed right at the root: every Add is a root-only
    site of matmul_add).  An anchored pattern reports one near miss per occurrence of its
    anchor shape that no match covers (attention: every Softmax between two MatMuls), and
    other near misses only with ``all_sites``.  With
    ``node``: only what concerns that node — the match that contains it, or the failed sites
    whose attempt reached it (a Conv whose BN fusion was blocked), or else, for patterns asked
    for by name (``rooted``: default, when ``patterns`` is given), the attempt rooted at the
    node itself.  A ``budget`` limits the time of the
    whole call (``MatchTimeout`` names the pattern at work when it runs out).  With ``floor``,
    only near misses scoring at least that are kept, and a site whose attempt cannot reach it
    (``score_bound``) is not tried.
    """
    index = NodeIndex.of(graph)
    target = _resolve_node(graph, node)
    reports = []
    for pattern in patterns:
        compiled = compile_pattern(pattern)
        if budget is not None:
            budget.pattern = compiled.name
        matches = match_all(graph, pattern, index=index, budget=budget)
        covered = {n.id for m in matches for n in m.nodes}
        tested = target is None and not all_sites   # sites the early tests judge
        sites = [n for n in compiled.sites(index, compiled.prefilter_ops if tested else None)
                 if n.id not in covered]
        if target is not None:
            matches = [m for m in matches if target in m.nodes]
            sites = [] if matches else sites
        if tested:   # the rest fail at the root
            prefilter, reaches = compiled.prefilter, compiled.reaches
            sites = [n for n in paced(budget, sites)
                     if (prefilter is None or prefilter(n)) and (reaches is None or reaches(n))]
        if floor is not None and target is None and pattern.anchor is None:
            bound = ScoreBound(compiled.pattern, compiled.root_output)
            sites = [n for n in sites if bound.reaches(n, floor)]
        misses = []
        for site in paced(budget, sites):
            failure = attempt(compiled, site, explain=True, claimed=covered, budget=budget)
            if not isinstance(failure, Failure):
                continue
            if (_concerns(failure, target) if target is not None
                    else all_sites or failure.matched > ROOT_ONLY):
                misses.append(NearMiss(site, failure))
        if pattern.anchor is not None:
            misses = _anchored_misses(compiled, pattern.anchor, covered, misses, index,
                                      all_sites)
            if target is not None:
                misses = [m for m in misses if _concerns(m.failure, target)]
        if target is not None and not matches and not misses and (
                patterns is not None if rooted is None else rooted):
            failure = attempt(compiled, target, explain=True, claimed=covered, budget=budget)
            if isinstance(failure, Failure):
                misses.append(NearMiss(target, failure))
        if floor is not None:
            misses = [m for m in misses if m.score >= floor]
        misses.sort(key=lambda m: -m.score)
        reports.append(PatternReport(compiled.name, pattern.describe(), matches, misses))
    return reports


def _anchored_misses(compiled: CompiledPattern, anchor: tuple[Pattern, int], covered: set[int],
                     found: list[NearMiss], index: NodeIndex, all_sites: bool) -> list[NearMiss]:
    """One near miss per occurrence of the anchor shape that no match covers: the site's own
    near miss when it reached the occurrence, else the best attempt rooted at most ``reach``
    consumers below it, or, when no node there has the root's op type, a failure saying so.
    Near misses that reach no occurrence are other code that starts like the pattern: kept
    only with ``all_sites``."""
    shape, reach = anchor
    occurrences = [o for o in match_all(index.graph, shape, index=index)
                   if not any(n.id in covered for n in o.nodes)]
    in_occurrence = {n.id for o in occurrences for n in o.nodes}
    misses = [m for m in found if all_sites or any(
        n.id in in_occurrence for n in (m.site, *m.failure.matched_nodes))]
    seen = {n.id for m in misses for n in (m.site, *m.failure.matched_nodes)}
    for occurrence in occurrences:
        if any(n.id in seen for n in occurrence.nodes):
            continue
        best: NearMiss | None = None
        for root in _below(occurrence.root, reach, compiled.root_ops):
            failure = attempt(compiled, root, explain=True, claimed=covered)
            if isinstance(failure, Failure) and (best is None or failure.score > best.score):
                best = NearMiss(root, failure)
        if best is None:
            best = NearMiss(occurrence.root, _no_root_below(compiled, occurrence, reach))
        seen.update(n.id for n in (best.site, *best.failure.matched_nodes, *occurrence.nodes))
        misses.append(best)
    return misses


def _below(node: Node, reach: int, root_ops: frozenset[str] | None) -> list[Node]:
    """``node`` and the nodes at most ``reach`` consumers below it that could be a root,
    nearest first."""
    found, frontier, seen = [], [node], {node.id}
    for _ in range(reach + 1):
        found += [n for n in frontier if root_ops is None or n.op_type in root_ops]
        frontier = [u for n in frontier for v in n.outputs if v is not None
                    for u in v.users() if u.id not in seen and not seen.add(u.id)]
    return found


def _no_root_below(compiled: CompiledPattern, occurrence: Match, reach: int) -> Failure:
    node = occurrence.root
    readers = sorted({u.op_type for v in node.outputs if v is not None for u in v.users()})
    root = " or ".join(sorted(compiled.root_ops or ()))
    return Failure((), node.op_type, "root", f"{root} at most {reach} consumers below "
                   f"{node.op_type} '{node.name}'", "consumers " + (", ".join(readers) or "none"),
                   failed_node=node, matched_nodes=tuple(occurrence.nodes),
                   matched=len(occurrence.nodes)).with_score(compiled.size)


def _concerns(failure: Failure, node: Node) -> bool:
    return any(node is f.failed_node or node is f.blocking_node or node in f.matched_nodes
               for f in (failure, *failure.leaves()))


def _resolve_node(graph: Graph, node: Node | str | None) -> Node | None:
    if node is None or isinstance(node, Node):
        return node
    found = graph.node_by_name(node)
    if found is None:
        raise KeyError(f"no node named {node!r} in the graph")
    return found
