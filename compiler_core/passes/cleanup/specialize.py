"""Specialization: compile for the input sizes the model will actually run at."""

from __future__ import annotations

from ...ir import Graph, infer_shapes
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass
from ..analyses.shape_facts import fold_shape_queries


@register_pass
class SpecializeDims(Pass):
    """Bind symbolic input dims (batch, seq, ...) to sizes, so shape arithmetic becomes constant.

    An exported model usually accepts any batch size or sequence length, so it computes shapes
    at run time: Shape, Gather, Concat, Reshape — often hundreds of nodes.  Deployed for one
    size (`batch=1,seq=128`), the model's dims are known, shape inference makes every shape
    static, and each Shape node is replaced by its value; constant folding then removes the
    arithmetic behind it.  The specialized model only accepts inputs of the bound sizes.
    """

    name = "specialize_dims"
    family = "folding"
    ensures = ("dims_bound",)

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        bound: dict[str, int] = {}
        for value in graph.inputs:
            if value.shape is None:
                continue
            shape = tuple(ctx.bindings.get(d, d) if isinstance(d, str) else d
                          for d in value.shape)
            if shape != value.shape:
                before = value.describe_type()
                bound.update({d: ctx.bindings[d] for d in value.shape if d in ctx.bindings})
                value.shape = shape
                result.notes.append(f"input {value.name}: {before} -> {value.describe_type()}")
        unused = sorted(set(ctx.bindings) - set(bound))
        if unused:
            dims = "dim" if len(unused) == 1 else "dims"
            result.notes.append(f"no input has the {dims} {', '.join(unused)}: not bound")
        if bound:
            _substitute_dims(graph, bound)
            infer_shapes(graph, refresh=True)
            result.rewrites += len(bound)
            result.notes.append("the model's input signature changed: it now accepts only "
                                "the bound sizes")
        else:
            result.notes.append("no dims were bound (give bindings such as batch=1,seq=128); "
                                "only shapes that are already static are folded")
        fold_shape_queries(graph, result)
        return result


def _substitute_dims(graph: Graph, bound: dict[str, int]) -> None:
    """A dim name stands for one size throughout the model: write the size wherever it appears.

    Shape inference recomputes most shapes from the inputs, but not those of ops it has no
    rules for (custom and ai.onnx.ml ops); substituting keeps theirs exact as well.
    """
    for value in graph.values.values():
        if value.shape is not None and any(isinstance(d, str) and d in bound
                                           for d in value.shape):
            value.shape = tuple(bound.get(d, d) if isinstance(d, str) else d
                                for d in value.shape)
