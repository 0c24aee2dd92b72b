"""onnxscript's rewrite rules judged by onnxscript itself, on GraphLab's graphs.

``explain_rules(graph, "onnxscript.rewriter.ort_fusions")`` loads the rules a spec names
(``loading``), runs each rule's matcher with onnxscript's tracer over the graph as GraphLab
exports it (``verdicts``), and maps onnxscript's IR nodes back to GraphLab's (``node_map``):
per rule, where it matched, where it came closest, why it failed and at which node
(``records``).  ``isolated`` does the same in a child process with a time limit, for the app.

onnxscript is an optional dependency: nothing here imports it until rules are asked for, and
its absence is a message saying how to install it.
"""

from __future__ import annotations

from ..ir import Graph
from .loading import (INSTALL_HINT, RuleCatalog, RulesLoadError, load_rules,
                      require_onnxscript)
from .records import RuleSite, RulesReport, RuleVerdict


def explain_rules(graph: Graph, rules: str | RuleCatalog, node: str | None = None
                  ) -> RulesReport:
    """The verdict of every rule ``rules`` names (a MODULE[:NAME] spec, or a loaded catalog)
    over ``graph``; with ``node``, also each rule's attempt at that node."""
    require_onnxscript()
    from .verdicts import explain_catalog

    catalog = load_rules(rules) if isinstance(rules, str) else rules
    return explain_catalog(graph, catalog, node)


__all__ = ["INSTALL_HINT", "RuleCatalog", "RuleSite", "RuleVerdict", "RulesLoadError",
           "RulesReport", "explain_rules", "load_rules", "require_onnxscript"]
