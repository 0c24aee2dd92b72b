"""Rules: a pattern, its extra checks and its rewrite in one object; one pass runs any set.

A ``Rule`` keeps what to find (its own pattern: no name joins it to a pattern kept
elsewhere), what else must hold and what to make together (like onnxscript's RewriteRule), and
knows where it is written, so a node it makes can say which line of code made it (like
tinygrad's viewer).  A ``RuleSet`` (name, family, rules, what it does) turns itself into a
``RewritePass``, which does everything the rules share: matching, the pattern report, declines
with reasons (once per site), refusing a fusion that would create a cycle.  A new fusion is one
module with its rules and their rule set, registered with ``register_pass``.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from ...ir import Graph, Node, Value
from ...patterns import (Failure, Match, MatchRecord, NearMiss, NodeRef, Pattern, PatternReport,
                        match_all)
from .base import Pass, PassContext, PassResult
from .pattern_pass import DECLINE_SCORE, pattern_report
from .rewrite import fuse_nodes, outside_reader, replace_by_op

CYCLE = "fusing would create a cycle: a value leaves the matched ops and comes back"
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the directory holding compiler_core

Outcome = Node | str | Failure | None


class Rule(ABC):
    """One rewrite: ``pattern`` says what to find, ``check`` what else must hold, ``rewrite``
    what to make.  The class docstring says what the rule does and why.

    ``name`` is recorded in the provenance of the nodes the rule makes and in its declines,
    and names the pattern's reports unless the pattern has a title of its own.  ``pattern()``
    builds the rule's own pattern; its docstring says what it matches, why, and what it binds.
    ``check`` and ``rewrite`` return the node made, a reason (str) to decline, a ``Failure``
    to decline in the matcher's words (it also becomes a near miss of the pattern's report),
    or None when the match is not for this rule after all (nothing is recorded).
    """

    name: ClassVar[str] = ""
    declines: ClassVar[bool] = True   # near misses that got half-way are declined rewrites
    reported: ClassVar[bool] = True   # False: match quietly (a fallback another rule explains)

    @abstractmethod
    def pattern(self) -> Pattern:
        """What the rule finds (called once per rule: `named_pattern` keeps it)."""

    def named_pattern(self) -> Pattern:
        """The pattern under the name its reports carry: its own title, else the rule's name.
        Made once per rule (patterns never change), so it is compiled once and two passes
        that judge it on an unchanged graph share the report (``pattern_pass.ReportCache``)."""
        made = self.__dict__.get("_named_pattern")
        if made is None:
            pattern = self.pattern()
            made = self._named_pattern = pattern if pattern.title else pattern.named(self.name)
        return made

    def pattern_doc(self) -> str:
        """What the pattern matches, why it matters, and its bindings (``pattern``'s docstring)."""
        return inspect.getdoc(type(self).pattern) or ""

    def check(self, match: Match) -> str | Failure | None:
        """Why this match must not be rewritten, beyond what the pattern says (None: go on)."""
        return None

    def site(self, match: Match) -> Node:
        """The node a decline of this match is recorded at."""
        return match.root

    @abstractmethod
    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Outcome:
        """Rewrite one match in place."""

    def fuse(self, graph: Graph, ctx: PassContext, nodes: Sequence[Node], op_type: str,
             attrs: dict | None = None, operands: Sequence[Value | None] | None = None,
             results: Sequence[Value] | None = None) -> Node | str:
        """``nodes`` as one fused node made by this rule, or why not (a cycle)."""
        fused = fuse_nodes(graph, ctx, nodes, op_type, self.name, attrs, operands,
                           self.source(), results)
        return CYCLE if fused is None else fused

    def replace(self, graph: Graph, ctx: PassContext, nodes: Sequence[Node], op_type: str,
                inputs: Sequence[Value | None], attrs: dict | None = None,
                name: str | None = None) -> Node:
        """``nodes`` replaced by one standard ``op_type`` node made by this rule."""
        return replace_by_op(graph, ctx, nodes, op_type, self.name, inputs, attrs, name,
                             self.source())

    def outside_reader_failure(self, match: Match, nodes: Sequence[Node],
                               results: Sequence[Value]) -> Failure | None:
        """A near miss, in the matcher's words, when a member of ``nodes`` other than the
        producers of ``results`` is read outside the set (fusing it would change what the
        reader sees); None when nothing blocks.  For patterns that let intermediates be read
        outside (run-time shape arithmetic reads them) and absorb those readers first."""
        blocked = outside_reader(nodes, results)
        if blocked is None:
            return None
        node, reader, who = blocked
        size = len(match.nodes)  # the whole structure matched
        return Failure((), node.op_type, node.op_type, "output used only inside the match",
                       f"also used by {who}", failed_node=node, blocking_node=reader,
                       matched_nodes=tuple(match.nodes), matched=size,
                       custom_reason=f"{node.op_type} output "
                       + (f"has another consumer ({who})" if reader else "is a graph output")
                       ).with_score(size)

    @classmethod
    def source(cls) -> str:
        """Where the rule is written, "compiler_core/passes/x.py:42"."""
        return _source_of(cls)


@functools.cache
def _source_of(cls: type) -> str:
    path = Path(inspect.getsourcefile(cls)).resolve()
    # A scan for the class statement; inspect.getsourcelines parses the whole module, which
    # costs milliseconds a rule in every fresh process (the CLI, the app's builders).
    statement = re.compile(rf"\s*class\s+{cls.__name__}\b")
    line = next((number for number, text in enumerate(linecache.getlines(str(path)), 1)
                 if statement.match(text)), None) or inspect.getsourcelines(cls)[1]
    return f"{_shown_path(path)}:{line}"


def _shown_path(path: Path) -> str:
    """GraphLab's own rules relative to the package's home (the same wherever it is
    installed); a user's rule (a plugin file) relative to the working directory, or whole."""
    for base in (_PACKAGE_ROOT, Path.cwd().resolve()):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


Note = Callable[[Graph, list[Node]], "str | None"]


@dataclass(frozen=True)
class RuleSet:
    """Rules run in order as one pass: the pass's ``name`` and ``family``, its ``rules``, and
    ``doc``, what it does and why (its first paragraph is the pass's description in `graphlab
    passes` and the app).  ``note``, when given, says in a sentence what a run made (asked
    only when it made something); ``fixed_point`` reruns the pass until a run rewrites
    nothing.  ``as_pass()`` makes it a pipeline entry, and ``register_pass(rule_set)`` a pass
    known by its name."""

    name: str
    family: str
    rules: tuple[Rule, ...]
    doc: str
    note: Note | None = None
    fixed_point: bool = False

    def as_pass(self) -> "RewritePass":
        return RewritePass(self)


class RewritePass(Pass):
    """The pass a rule set turns into: its rules run in order, each on the graph the previous
    ones left."""

    def __init__(self, rule_set: RuleSet):
        self.rule_set = rule_set
        self.name, self.family, self.rules = rule_set.name, rule_set.family, rule_set.rules
        self.fixed_point = rule_set.fixed_point

    def description(self) -> str:
        return " ".join(inspect.cleandoc(self.rule_set.doc).split("\n\n", 1)[0].split())

    def patterns(self) -> list[Pattern]:
        return [rule.named_pattern() for rule in self.rules if rule.reported]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        made: list[Node] = []
        for rule in self.rules:
            made += _apply(rule, graph, ctx, result)
        result.rewrites = len(made)
        note = self.rule_set.note(graph, made) if made and self.rule_set.note else None
        if note:
            result.notes.append(note)
        return result


def _apply(rule: Rule, graph: Graph, ctx: PassContext, result: PassResult) -> list[Node]:
    """Rewrite every match of ``rule``; record its report and its declines in ``result``."""
    pattern = rule.named_pattern()  # reports and near-miss declines carry its name
    if rule.reported:
        report = pattern_report(graph, pattern, ctx, declines=rule.declines)
    else:
        report = PatternReport(rule.name, "", match_all(graph, pattern))
    if rule.declines:
        for miss in report.near_misses:
            if miss.score >= DECLINE_SCORE:
                result.decline(miss.site, report.name, miss.reason,
                               miss.failure.blocking_node, miss.failure.matched_nodes)
    made: list[Node] = []
    made_by: dict[int, Node] = {}
    refused: dict[int, NearMiss] = {}
    for index, match in enumerate(report.matches):
        taken = _taken(graph, match, made)
        if taken is not None:   # an earlier rewrite of this pass took part of it
            result.decline(rule.site(match), rule.name, taken, nodes=match.nodes)
            continue
        with ctx.working_on(match.root):  # a rule that raises is reported at its site
            outcome = rule.check(match) or rule.rewrite(graph, ctx, match)
        if isinstance(outcome, Node):
            made.append(outcome)
            made_by[index] = outcome
        elif outcome is not None:
            blocking = None
            if isinstance(outcome, Failure):
                refused[index] = NearMiss(match.root, outcome)
                blocking = outcome.blocking_node
            result.decline(rule.site(match), rule.name, getattr(outcome, "reason", outcome),
                           blocking, match.nodes)
    if rule.reported:
        kept = [i for i in range(len(report.matches)) if i not in refused]
        if refused:  # a match refused in the matcher's words is a near miss, not a match
            report = replace(
                report, matches=[m for i, m in enumerate(report.matches) if i not in refused],
                near_misses=sorted([*refused.values(), *report.near_misses],
                                   key=lambda m: -m.score))
        if not ctx.all_near_misses:   # judged for the declines only: nobody reads them
            report = replace(report, near_misses=[])
        record = report.record()
        result.pattern_reports.append(replace(record, matches=tuple(
            _with_rewrite(m, made_by.get(i)) for m, i in zip(record.matches, kept))))
    return made


def _taken(graph: Graph, match: Match, made: list[Node]) -> str | None:
    """Why ``match`` can no longer be rewritten: a node of it is gone, taken by a node this
    rule made a moment ago (None: every node is still there)."""
    gone = next((n for n in match.nodes if graph.node_by_id(n.id) is not n), None)
    if gone is None:
        return None
    taker = next((m for m in made if m.provenance is not None
                  and gone.id in (*m.provenance.replaced_ids, *m.provenance.sources)), None)
    by = f" by {taker.op_type} '{taker.name}'" if taker is not None else ""
    return (f"{gone.op_type} '{gone.name}' of this match was already rewritten{by} "
            f"(the matches overlap)")


def _with_rewrite(record: MatchRecord, made: Node | None) -> MatchRecord:
    """The match's record with the node its rewrite made and the nodes it replaced beyond
    the match (named from the fused body, which keeps them)."""
    if made is None:
        return record
    matched = {n.id for n in record.nodes}
    replaced = made.provenance.replaced_ids if made.provenance is not None else ()
    body = made.body

    def ref(node_id: int) -> NodeRef:
        inner = body.node_by_id(node_id) if body is not None else None
        return NodeRef(node_id, inner.name if inner is not None else f"#{node_id}")

    return replace(record, made=NodeRef.of(made),
                   taken_along=tuple(ref(i) for i in replaced if i not in matched))

