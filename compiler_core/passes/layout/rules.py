"""What each op needs in order to run on NHWC tensors (used by the layout conversion pass).

Three kinds of ops can join a channels-last region:
- kernels ONNX defines for NCHW only (Conv, pooling, BatchNormalization, ...), and fused nodes
  whose body feeds an input straight into one (a Conv+Relu fusion): they become fused `Nhwc...`
  nodes;
- element-wise ops: unchanged, as long as every operand is NHWC too (constants are re-laid out,
  one-element operands broadcast the same way in any layout);
- ops with an axis (Concat, Split, Softmax, reductions, Pad): the axis is remapped.
Everything else (Flatten, Reshape, Gemm, ...) sees the memory order and stays outside.  Shape
only reads metadata: it reads the NHWC tensor and a Gather puts its answer back in NCHW order.
"""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Provenance, Value
from ..framework.base import PassContext
from ..analyses.op_kinds import ELEMENTWISE
from ..framework.rewrite import insert_after

TO_NHWC = (0, 2, 3, 1)   # perm of Transpose(NCHW) -> NHWC
TO_NCHW = (0, 3, 1, 2)   # perm of Transpose(NHWC) -> NCHW

KERNELS = frozenset({
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
    "GlobalMaxPool", "GlobalLpPool", "BatchNormalization", "InstanceNormalization", "LRN",
})
AXIS_ATTRIBUTE_OPS = frozenset({"Concat", "Split", "Softmax", "LogSoftmax", "Hardmax"})
REDUCTIONS = frozenset({
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
    "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare",
})
_ONE_ACTIVATION = KERNELS | REDUCTIONS | {"Split", "Softmax", "LogSoftmax", "Hardmax", "Pad"}


def permute(shape: tuple | None, perm: tuple[int, ...]) -> tuple | None:
    return None if shape is None else tuple(shape[axis] for axis in perm)


def nhwc_axis(axis: int) -> int:
    """Where NCHW axis ``axis`` lives in the NHWC tensor (C: 1 -> 3, H: 2 -> 1, W: 3 -> 2)."""
    return TO_NHWC.index(axis % 4)


def has_rule(node: Node) -> bool:
    return is_kernel(node) or node.domain == "" and node.body is None and (
        node.op_type in _ONE_ACTIVATION or node.op_type in ELEMENTWISE
        or node.op_type == "Concat")


def is_kernel(node: Node) -> bool:
    """An op ONNX defines for NCHW tensors only, or a fused node built around one.

    A fused node counts when its body feeds one of its inputs straight into such an op; a node
    this pass already converted does not, because its body reads through a Transpose first."""
    if node.body is None:
        return node.domain == "" and node.op_type in KERNELS
    inputs = {v.name for v in node.body.inputs}
    return any(is_kernel(inner) and inner.inputs[0] is not None
               and inner.inputs[0].name in inputs for inner in node.body.nodes)


def reads_shape_only(node: Node) -> bool:
    """Shape reads a tensor's dimensions, never its data (see read_shape_in_nchw_order)."""
    return node.op_type == "Shape" and node.domain == ""


def layout_inputs(node: Node) -> list[int]:
    """Indices of the inputs that carry activations (and so must share the region's layout)."""
    if not has_rule(node):
        return []
    if node.body is not None:  # a fused kernel: every 4-D input computed at run time
        return [i for i, v in enumerate(node.inputs)
                if v is not None and v.rank == 4 and not v.is_constant]
    if node.op_type in _ONE_ACTIVATION:
        return [0]
    return [i for i, v in enumerate(node.inputs) if v is not None]


def why_not(node: Node, opset: int) -> str | None:
    """Why ``node`` cannot run on NHWC tensors; None when it can, "" when no rule applies."""
    if not has_rule(node):
        return ""
    outputs = [v for v in node.outputs if v is not None]
    if is_kernel(node) and len(outputs) != 1:
        return (f"{node.op_type} with {len(outputs)} outputs: the extra outputs (indices, "
                f"statistics) are defined in NCHW terms")
    activation = node.inputs[0] if node.op_type in _ONE_ACTIVATION else outputs[0]
    if any(v.rank != 4 for v in outputs) or activation is None or activation.rank != 4:
        return "only 4-D (N, C, H, W) tensors are converted"
    if node.op_type in ("Softmax", "LogSoftmax", "Hardmax") and opset < 13:
        return (f"before opset 13, {node.op_type} flattens every axis from `axis` on, which "
                f"depends on the layout")
    if node.op_type in REDUCTIONS:
        return _why_not_reduction(node)
    if node.op_type == "Pad":
        return _why_not_pad(node)
    for index in layout_inputs(node):
        value = node.inputs[index]
        if (value.rank != 4 and not value.is_constant
                and not (value.shape is not None and all(d == 1 for d in value.shape))):
            return (f"its operand {value.name} ({value.describe_type()}) is computed at run "
                    f"time and is not 4-D; only constants can be re-laid out")
    return None


def _why_not_reduction(node: Node) -> str | None:
    if not node.attr("keepdims", 1):
        return "keepdims=0 drops axes, so the result is no longer a 4-D NHWC tensor"
    axes_input = node.input(1)
    if axes_input is not None and not axes_input.is_constant:
        return f"its axes ({axes_input.name}) are computed at run time"
    return None


def _why_not_pad(node: Node) -> str | None:
    if node.input(3) is not None:
        return "Pad with an `axes` input is not converted"
    return None


def adapt(graph: Graph, ctx: PassContext, node: Node) -> None:
    """Rewrite a layout-agnostic op's axis attributes or axis inputs for NHWC operands."""
    if node.op_type in AXIS_ATTRIBUTE_OPS:
        default = 0 if node.op_type in ("Concat", "Split") else -1
        graph.set_node_attr(node, "axis", nhwc_axis(node.attr("axis", default)))
    elif node.op_type in REDUCTIONS:
        _adapt_reduction(graph, node)
    elif node.op_type == "Pad":
        _adapt_pad(graph, ctx, node)


def _adapt_reduction(graph: Graph, node: Node) -> None:
    if "axes" in node.attrs:
        graph.set_node_attr(node, "axes", tuple(nhwc_axis(a) for a in node.attrs["axes"]))
    elif node.input(1) is not None:
        axes = node.input(1).constant_value()
        remapped = np.array([nhwc_axis(int(a)) for a in axes.reshape(-1)], np.int64)
        node.replace_input(1, graph.add_initializer(f"{node.name}_axes_nhwc", remapped))


def _adapt_pad(graph: Graph, ctx: PassContext, node: Node) -> None:
    """pads = [begin per axis..., end per axis...]: reorder both halves like the axes."""
    order = list(TO_NHWC) + [4 + axis for axis in TO_NHWC]
    if "pads" in node.attrs:  # before opset 11
        graph.set_node_attr(node, "pads", tuple(node.attrs["pads"][i] for i in order))
        return
    pads = node.input(1)
    constant = pads.constant_value()
    if constant is not None:
        reordered = graph.add_initializer(f"{node.name}_pads_nhwc", constant[order])
    else:  # computed at run time: reorder at run time (8 integers, not a tensor transpose)
        reordered = _gather(graph, pads, order, f"{node.name}_pads_nhwc",
                           ctx.provenance("reorder_pads", [node]))
    node.replace_input(1, reordered)


def read_shape_in_nchw_order(graph: Graph, ctx: PassContext, shape: Node) -> None:
    """Let a Shape node read an NHWC tensor and still answer in NCHW order.

    Shape(x)[start:end] == Gather(Shape(x_nhwc), TO_NCHW[start:end]), so a model's shape
    arithmetic never needs the NCHW tensor itself."""
    indices = list(TO_NCHW)[shape.attr("start", 0):shape.attr("end", 4)]
    for attr in ("start", "end"):
        graph.remove_node_attr(shape, attr)
    result = shape.outputs[0]
    order = graph.add_initializer(f"{shape.name}_nchw_order", np.array(indices, np.int64))
    answer = insert_after(graph, result, "Gather", renamed=f"{result.name}_nhwc",
                          operands=[order], attrs={"axis": 0}, name=f"{shape.name}_nchw_order",
                          provenance=ctx.provenance("shape_in_nchw_order", [shape]))
    answer.outputs[0].elem_type = result.elem_type
    answer.outputs[0].shape = (len(indices),)
    result.shape = (4,)


def _gather(graph: Graph, vector: Value, indices: list[int], name: str,
            provenance: Provenance) -> Value:
    """``vector[indices]`` as a Gather node (for index vectors known only at run time)."""
    index_value = graph.add_initializer(f"{name}_order", np.array(indices, np.int64))
    node = graph.add_node("Gather", [vector, index_value], [graph.unique_name(name)],
                          attrs={"axis": 0}, name=name, provenance=provenance,
                          order=vector.producer.order + 0.5 if vector.producer else None)
    node.outputs[0].elem_type = vector.elem_type
    node.outputs[0].shape = (len(indices),)
    return node.outputs[0]
