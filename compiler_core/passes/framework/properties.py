"""Graph properties a pass may require or ensure, each with the check that decides it.

A pass declares ``requires``/``ensures`` by name; the PassManager's check mode (tests) runs the
checks before and after the pass, so a declaration is a tested promise, not a comment.  A check
returns the names of the nodes (or values) that break the property — empty when it holds — so a
violation says where.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...ir import Graph
from .base import PassContext


@dataclass(frozen=True)
class GraphProperty:
    name: str
    description: str
    violations: Callable[[Graph, PassContext], list[str]]


def _dead_nodes(graph: Graph, ctx: PassContext) -> list[str]:
    """Nodes no graph output depends on, and weights nobody reads (ONNX ops have no effects)."""
    dead = [n.name for n in graph.nodes
            if not any(v.uses or v.is_graph_output for v in n.outputs if v is not None)]
    return dead + [v.name for v in graph.initializers.values()
                   if not v.uses and not v.is_graph_output]


def _bound_dims_left(graph: Graph, ctx: PassContext) -> list[str]:
    """Values whose shape still names a dim the user gave a size for."""
    return [v.name for v in graph.values.values()
            if v.shape is not None and any(isinstance(d, str) and d in ctx.bindings
                                           for d in v.shape)]


def _removable_identities(graph: Graph, ctx: PassContext) -> list[str]:
    """Identity nodes whose readers could read the input instead without renaming an output."""
    return [n.name for n in graph.nodes_of_type("Identity")
            if n.inputs[0] is not None and graph.can_replace_uses(n.outputs[0], n.inputs[0])]


PROPERTIES: dict[str, GraphProperty] = {p.name: p for p in (
    GraphProperty("no_dead_nodes", "every node feeds a graph output and every weight is read",
                  _dead_nodes),
    GraphProperty("dims_bound", "no shape still names a dim the user bound to a size",
                  _bound_dims_left),
    GraphProperty("no_removable_identity", "no Identity is left that could be bypassed",
                  _removable_identities),
)}


def unknown_properties(names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name not in PROPERTIES]


def violations(name: str, graph: Graph, ctx: PassContext) -> list[str]:
    """Where ``graph`` breaks the property called ``name`` (empty: it holds)."""
    return PROPERTIES[name].violations(graph, ctx)
