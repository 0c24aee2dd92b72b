"""Dead-code elimination."""

from __future__ import annotations

from ...ir import Graph
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass


@register_pass
class EliminateDeadCode(Pass):
    """Remove nodes whose results nobody reads, and weights no node uses.

    Other passes leave dead nodes behind (a folded BatchNorm's statistics, a constant-folded
    shape computation); ONNX ops have no side effects, so anything that does not reach a graph
    output can go.  One sweep in reverse execution order removes whole dead chains.
    """

    name = "dce"
    family = "cleanup"
    ensures = ("no_dead_nodes",)

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        removed = 0
        for node in reversed(graph.nodes):
            outputs = [v for v in node.outputs if v is not None]
            if any(v.uses or v.is_graph_output for v in outputs):
                continue
            graph.remove_node(node)
            removed += 1
        unused = [v for v in graph.initializers.values() if not v.uses and not v.is_graph_output]
        for value in unused:
            graph.remove_initializer(value)
        result = PassResult(rewrites=removed)
        if unused:
            result.notes.append(f"removed {plural(len(unused), 'unused initializer')}")
        return result
