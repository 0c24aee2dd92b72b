"""Patterns over GraphLab graphs: a small language, a fast matcher, and explanations.

Write a pattern::

    from compiler_core.patterns import op, any_value, const
    x = any_value().bind("x")
    bias_relu = op("Relu", op("Add", op("MatMul", x, const().bind("w")), const().bind("b")))

Find it: ``match_all(graph, pattern)`` (non-overlapping ``Match`` objects with ``nodes`` and
``bindings``), ``match_at(graph, pattern, node)``.  Ask why not: ``explain_at`` for one site,
``explain(graph, patterns, node)`` for reports of matches and near misses grouped by reason.
The passes' patterns belong to their rules (``compiler_core.passes.framework.rulebook`` lists
them by name); ``library`` keeps the sub-patterns several rules share.
"""

from .budget import MatchBudget, MatchTimeout
from .checks import Predicate, one_of, predicate
from .explain import NearMiss, PatternReport, explain
from .failure import Failure
from .from_graph import pattern_from_nodes
from .language import (Pattern, any_of, any_value, const, graph_input, op, optional,
                       variadic)
from .matcher import Match, NodeIndex, explain_at, match_all, match_at
from .records import STRONG_SCORE, MatchRecord, NearMissRecord, NodeRef, PatternRecord

__all__ = [
    "Failure", "Match", "MatchBudget", "MatchRecord", "MatchTimeout", "NearMiss", "NearMissRecord", "NodeIndex", "NodeRef",
    "Pattern", "PatternRecord", "PatternReport", "Predicate", "STRONG_SCORE",
    "any_of", "any_value", "const", "explain", "explain_at", "graph_input", "match_all",
    "match_at", "one_of", "op", "optional", "pattern_from_nodes", "predicate", "variadic",
]
