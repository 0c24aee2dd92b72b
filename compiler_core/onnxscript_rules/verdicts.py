"""Each rule's matcher run over a graph by onnxscript itself, its verdicts mapped to GraphLab.

The graph is exported as GraphLab writes any model (shapes and dtypes inferred, node names
kept) and read by onnx_ir.  Every rule then runs alone through onnxscript's own driver,
``RewriteRuleSet([rule]).apply_to_model(model, tracer=...)``: given a tracer, onnxscript tries
the rule at every node of the graph, of its model-local functions and control-flow bodies, and
changes nothing.  The tracer is onnxscript's ``MatchingTracer``, which onnxscript calls with
every attempt's ``MatchResult`` (reason, failure nodes and values, nodes matched so far); ours
keeps each attempt's last word (a match whose replacement then fails is logged twice) where
onnxscript's keeps only the best.  Attempts are ranked by the tracer's own score
(``MatchInfo.score``: nodes matched, plus 100 per status level), so "closest" is what
onnxscript's tracer would report.  A rule that raises is a verdict, never a crash.

Imports onnxscript: import this module only after ``loading.require_onnxscript()``.
"""

from __future__ import annotations

import traceback
from collections import Counter

from onnxscript import ir
from onnxscript.rewriter import MatchingTracer, MatchStatus, RewriteRuleSet
from onnxscript.rewriter._basics import MatchInfo   # the tracer's own record (there since 0.3)

from ..errors import GraphLabError
from ..ir import Graph
from ..ir.exporter import to_model_proto
from .loading import RuleCatalog, onnxscript_version, where_raised
from .node_map import NodeMap
from .records import (CONDITION_FAILED, MATCHED, NO_MATCH, REPLACEMENT_FAILED, RuleSite,
                      RulesReport, RuleVerdict)

KEPT_NEAR_MISSES = 40        # per rule; the count and the reasons cover all of them
OTHER_USES = "other uses"    # in onnxscript's reason when a matched value is read outside

_STATUS = {MatchStatus.SUCCESS: MATCHED, MatchStatus.CONDITION_FAILED: CONDITION_FAILED,
           MatchStatus.REPLACEMENT_FAILED: REPLACEMENT_FAILED, MatchStatus.NO_MATCH: NO_MATCH}


class AttemptTracer(MatchingTracer):
    """onnxscript's tracer, keeping the last logged attempt of every site that got anywhere
    (score > 0), and the attempt at one node of interest whatever its score."""

    def __init__(self, node_of_interest=None) -> None:
        super().__init__()
        self.attempts: dict[tuple[int, int], MatchInfo] = {}
        self.node_of_interest = node_of_interest
        self.at_node: MatchInfo | None = None

    def log(self, rule, container, node, match_result, status) -> None:
        info = MatchInfo(match_result, node, container, status)
        if info.score() > 0:
            self.attempts[(id(container), id(node))] = info
        if node is self.node_of_interest:
            self.at_node = info


def explain_catalog(graph: Graph, catalog: RuleCatalog, node: str | None = None) -> RulesReport:
    """Every rule of ``catalog`` over ``graph``; with ``node``, also each rule's attempt there."""
    if node is not None and graph.node_by_name(node) is None:
        raise GraphLabError(f"no node named {node!r} in the model",
                            hint="`graphlab show MODEL` lists the node names")
    proto = to_model_proto(graph)
    exported, verdicts = None, []
    for name, source, rule in catalog.entries():
        exported = exported or _Exported(graph, proto)
        verdict = _verdict(name, source, rule, exported, node)
        verdicts.append(verdict)
        if _may_have_changed(verdict, rule):
            exported = None
    return RulesReport(catalog.spec, onnxscript_version(), graph.name, len(graph.nodes),
                       tuple(verdicts), catalog.notes, node)


def _may_have_changed(verdict: RuleVerdict, rule) -> bool:
    """Whether the next rule needs a fresh export.  Even while tracing, onnxscript builds the
    replacement of every match, and the nodes it builds are registered as readers of the
    graph's values (so a later rule would find "other uses" that are not there); a rule that
    keeps the nodes it matches makes onnxscript remove unused nodes after the run; and a rule
    that raised may have left anything behind."""
    return (verdict.error is not None or not rule.remove_nodes or bool(verdict.matches)
            or any(s.status == REPLACEMENT_FAILED for s in verdict.near_misses))


class _Exported:
    """The graph as onnxscript reads it, and the map of its nodes back to GraphLab's."""

    def __init__(self, graph: Graph, proto) -> None:
        self.model = ir.serde.deserialize_model(proto)
        self.nodes = NodeMap(graph, self.model)
        self._by_name = {n.name: n for n in self.model.graph}

    def top_level(self, name: str | None):
        return None if name is None else self._by_name.get(name)


def _verdict(name: str, source: str, rule, exported: _Exported, node: str | None
             ) -> RuleVerdict:
    tracer = AttemptTracer(exported.top_level(node))
    try:
        RewriteRuleSet([rule]).apply_to_model(exported.model, tracer=tracer)
    except Exception as err:  # noqa: BLE001 - the user's rule: its failure is its verdict
        at = _node_being_tried(err)
        where = f" while trying node {exported.nodes.ref(at).name!r}" if at is not None else ""
        return RuleVerdict(name, source, error=f"{type(err).__name__}: {err}{where}"
                                               f"{where_raised(err)}")
    sites = [_site(info, exported.nodes) for info in tracer.attempts.values()]
    misses = sorted((s for s in sites if not s.matched), key=lambda s: -s.score)
    return RuleVerdict(
        name, source, matches=tuple(s for s in sites if s.matched),
        near_misses=tuple(misses[:KEPT_NEAR_MISSES]), near_miss_count=len(misses),
        reasons=tuple(Counter(s.reason for s in misses).most_common()),
        at_node=None if tracer.at_node is None else _site(tracer.at_node, exported.nodes))


def _site(info: MatchInfo, nodes: NodeMap) -> RuleSite:
    result = info.match_result
    failed, values = [], []
    for source in result.failure_nodes_and_values:
        if isinstance(source, ir.Node):
            failed.append(source)
        else:
            values.append(source.name or "(unnamed value)")
            if source.producer() is not None:
                failed.append(source.producer())
    reason = result.reason or ""
    blocking = _outside_readers(result.nodes, info.root_node) if OTHER_USES in reason else ()
    return RuleSite(_STATUS[info.status], nodes.ref(info.root_node), info.score(), reason,
                    nodes.refs(result.nodes), nodes.refs(failed), tuple(values),
                    nodes.refs(blocking), nodes.where(info.root_node))


def _outside_readers(matched, root) -> list:
    """The nodes outside the match reading a value the match computes before its root: what
    onnxscript's "other uses" does not name."""
    inside = set(matched)
    readers = []
    for node in matched:
        if node is root:
            continue
        for value in node.outputs:
            readers += [use.node if hasattr(use, "node") else use[0] for use in value.uses()]
    return [reader for reader in readers if reader not in inside]


def _node_being_tried(err: BaseException):
    """The IR node onnxscript was trying the rule at when it raised, from its driver's frame."""
    for frame, _ in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_name == "try_rewrite" and isinstance(frame.f_locals.get("node"),
                                                                ir.Node):
            return frame.f_locals["node"]
    return None

