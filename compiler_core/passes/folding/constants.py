"""Constant folding: compute at compile time whatever does not depend on the model's inputs."""

from __future__ import annotations

from ...ir import Graph, Node, infer_shapes
from ...ir.lazy_tensors import values_of
from ...ir.subgraphs import subgraph_attributes
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import make_initializer, produces_graph_output, replace_with_constants
from ..analyses.evaluate import EvaluationError, evaluate, predicted_bytes
from ..framework.rewrite import sweep_by_op
from ..framework.pass_registry import register_pass
from ..analyses.shape_facts import SHAPE_QUERIES, fold_shape_query

# Never folded: random ops (folding would freeze one draw), and DequantizeLinear, whose
# quantized weight is how a QDQ model tells a backend to run the layer in int8.
NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli", "Dropout", "DequantizeLinear"}
NUMERIC_KINDS = "biuf"  # numpy kinds the evaluator handles: bool, int, unsigned, float


@register_pass
class FoldConstants(Pass):
    """Compute at compile time every node whose inputs are all constants.

    A node that reads only weights and constants computes the same result on every run, so the
    compiler runs it once and stores the result as a weight (an initializer); Constant nodes
    become initializers too.  Shape and Size of tensors whose dims are known are answered the
    same way, even though the tensor itself is not constant.  Results larger than the folding
    limit are declined (folding must never balloon the model), and random ops are never folded.
    """

    name = "fold_constants"
    family = "folding"
    fixed_point = True

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        queries = (_shape_query, _fold)
        result = sweep_by_op(graph, ctx, {"Constant": (_constant_to_initializer,),
                                          **dict.fromkeys(SHAPE_QUERIES, queries)},
                             otherwise=(_fold,))
        if result.rewrites:
            infer_shapes(graph)  # folded shapes make more shapes static for the next round
        return result


def _constant_to_initializer(graph: Graph, ctx: PassContext, node: Node,
                             result: PassResult) -> None:
    array = node.constant_attr_data()   # a weight stored in the file stays unread
    output = node.outputs[0]
    if array is None or not output.uses:
        return
    if output.is_graph_output:
        result.decline(node, "constant_to_initializer", (
            f"{output.name!r} is a graph output; an initializer cannot take its name"))
        return
    graph.remove_node(node)
    make_initializer(graph, output, array)
    result.rewrites += 1


def _shape_query(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> bool:
    """Shape or Size of a tensor whose dims are known, answered (True: it was one); also a
    Gather or Slice of such a Shape (``SHAPE_QUERIES``: the ops it answers)."""
    return fold_shape_query(graph, node, result)


def _foldable(node: Node) -> bool:
    """Every input a numeric constant (asked first: nearly every node fails there, at its
    first input), the op deterministic and without a subgraph, and its result read."""
    for value in node.inputs:
        if value is None:
            continue
        data = value.constant_data()   # its dtype, without reading a weight
        if data is None or data.dtype.kind not in NUMERIC_KINDS:
            return False
    if node.op_type in NOT_FOLDED or node.body is not None or node.implicit_inputs or any(
            True for _ in subgraph_attributes(node.attrs)):
        return False
    if not any(v is not None and (v.uses or v.is_graph_output) for v in node.outputs):
        return False  # nobody reads it: dead-code elimination's job, not worth computing
    return all(v is None or v.is_tensor for v in node.outputs)


def _fold(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> None:
    if not _foldable(node):
        return
    if produces_graph_output(node):
        result.decline(node, "fold", (
            "its output is a graph output; an initializer cannot take its name"))
        return
    data = [v.constant_data() if v is not None else None for v in node.inputs]
    size = predicted_bytes(graph, node, data)   # from sizes: nothing is read to decline
    if size is None or size > ctx.fold_size_limit:
        reason = ("the size of its result cannot be known before computing it" if size is None
                  else f"its result would take {size:,} bytes, more than the folding limit "
                       f"of {ctx.fold_size_limit:,}")
        result.decline(node, "fold", reason)
        return
    try:
        outputs = evaluate(graph, node, [values_of(d) if d is not None else None for d in data])
    except EvaluationError as err:
        result.decline(node, "fold", str(err))
        return
    replace_with_constants(graph, node, outputs)
    result.rewrites += 1
